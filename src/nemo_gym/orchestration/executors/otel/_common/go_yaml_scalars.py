"""Plain scalars as the collector reads them: go.yaml.in/yaml/v3's ``resolve`` (resolve.go).

The collector parses its config with Go YAML v3 (confmap's ``NewRetrievedFromYAML``, v3.0.4 at
v0.141.0 and v3.0.5 at v0.161.0, whose ``resolve`` is the same), which follows YAML 1.2's core
schema more than 1.1: only ``true``/``True``/``TRUE`` and the three ``false`` spellings are
booleans (``yes``, ``on``, ``off``, ``y`` are text, which a boolean option then refuses), there
are no base-60 numbers (``1:30`` is text), ``0o17`` is octal (``017`` too), ``1e3`` is a float,
and underscores anywhere in a number are dropped. PyYAML reads YAML 1.1, so a collector config
read with its rules would be judged on values the collector never sees.

:func:`go_scalar` returns the tag and value of one plain scalar, following ``resolve`` step by
step: the first character picks the path (a sign or digit: number or timestamp; ``.``: a float;
one of ``yYnNtTfFoO~``: only the fixed spellings), everything else is text.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

NULL = "tag:yaml.org,2002:null"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
STR = "tag:yaml.org,2002:str"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
MERGE = "tag:yaml.org,2002:merge"

_FIXED: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
}
_NUMBER_START = frozenset("+-0123456789")
# strconv.ParseInt/ParseUint with base 0: a sign (ParseInt only), then 0x, 0o, 0b, a leading 0
# (octal) or decimal digits.
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")
_BASES = {"x": 16, "o": 8, "b": 2}
# resolve.go's yamlStyleFloat, then strconv.ParseFloat; a float starting with "." is any
# ParseFloat accepts from there (digits, an exponent).
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")
# parseTimestamp's layouts: 2006-1-2T15:4:5.999999999Z07:00 (T or t), 2006-1-2 15:4:5.999999999,
# 2006-1-2; time.Parse takes one or two digits where the layout has one.
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})([.,][0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})([.,][0-9]+)?))?\Z"
)
_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1


def go_scalar(text: str) -> tuple[str, Any]:
    """The YAML tag and the value Go YAML v3 gives the plain (unquoted, untagged) scalar ``text``."""
    fixed = _FIXED.get(text)
    if fixed is not None:
        return fixed
    first = text[:1]
    if first == ".":
        if _DOT_FLOAT.match(text):
            return FLOAT, float(text)
    elif first in _NUMBER_START:
        stamp = _timestamp(text)
        if stamp is not None:
            return TIMESTAMP, stamp
        plain = text.replace("_", "")
        number = _int(plain)
        if number is not None:
            return INT, number
        if _YAML_FLOAT.match(plain):
            value = float(plain)
            if not math.isinf(value):  # ParseFloat's ErrRange: the text stays text
                return FLOAT, value
    return STR, text  # yes, on, off, 1:30, inf: text


def _int(plain: str) -> int | None:
    found = _GO_INT.match(plain)
    if found is None:
        return None
    sign, digits = found.groups()
    base, body = 10, digits
    if digits[:1] == "0" and len(digits) > 1:
        prefix = digits[1].lower()
        base, body = (_BASES[prefix], digits[2:]) if prefix in _BASES else (8, digits)
    if len(body.lstrip("0")) > 64:
        return None  # past 64 bits in any base (and int() refuses 4300 digits)
    value = int(body, base)
    value = -value if sign == "-" else value
    if value > 2**63 - 1 and sign == "+":
        return None  # past ParseInt's range, and ParseUint takes no sign
    return value if _INT64_MIN <= value <= _UINT64_MAX else None


def _timestamp(text: str) -> datetime.datetime | datetime.date | None:
    found = _TIMESTAMP.match(text)
    if found is None:
        return None
    year, month, day = (int(part) for part in found.groups()[:3])
    t_time, space_time = found.groups()[3:8], found.groups()[8:12]
    try:
        if t_time[0] is not None:
            hour, minute, second, fraction, zone = t_time
            offset = datetime.timezone.utc
            if zone != "Z":
                hours, minutes = int(zone[1:3]), int(zone[4:6])
                delta = datetime.timedelta(hours=hours, minutes=minutes)
                offset = datetime.timezone(-delta if zone[0] == "-" else delta)
            return datetime.datetime(
                year, month, day, int(hour), int(minute), int(second), _micro(fraction), offset
            )
        if space_time[0] is not None:
            hour, minute, second, fraction = space_time
            return datetime.datetime(
                year, month, day, int(hour), int(minute), int(second), _micro(fraction)
            )
        return datetime.date(year, month, day)
    except ValueError:  # time.Parse refuses a day or hour out of range: the text stays text
        return None


def _micro(fraction: str | None) -> int:
    return int((fraction[1:] + "000000")[:6]) if fraction else 0
