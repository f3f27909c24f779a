"""JSON Schema validation that reports violations as ``<dotted path>: <what to do>``.

jsonschema's own messages quote the offending value, which may be a secret (an inline header, a
``lit:`` environment value), and point anyOf/oneOf failures at an arbitrary branch. Here each
error is reduced to its deepest relevant cause, string values are never echoed, and unknown keys
get the closest known key suggested.

jsonschema explains an invalid document by validating all of it again in Python, which on a
megabyte of config costs seconds (``unevaluatedProperties`` re-validates every part of an object
to learn which keys were evaluated). So it is given a narrowed copy: large lists and mappings keep
only their first entry and the entries on a path where jsonschema-rs found an error. The copy is
used only if jsonschema-rs finds in it the errors of the places to explain (same places, same
schema keywords) and no error the document does not have, which is what makes the explanation
of the copy that of the document; otherwise a copy narrowing only the lists is tried, then the
whole document is explained. Of a document wrong in thousands of places, the first
``MAX_EXPLAINED`` places are explained and the rest counted.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .errors import Violation, dotted
from .resources import load_schema, schema_names

_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}
_LITERAL_PATTERN = re.compile(r"^\^\(?([A-Za-z0-9_]+)")
_CLOSING = ("additionalProperties", "unevaluatedProperties")


@functools.cache
def _registry() -> Any:
    """Every shipped schema under its ``$id``, for the cross-file ``$ref``s."""
    from referencing import Registry, Resource

    registry: Registry = Registry()
    for name in schema_names():
        contents = load_schema(name)
        registry = registry.with_resource(
            contents.get("$id", name), Resource.from_contents(contents)
        )
    return registry


@functools.cache
def _validator(schema_name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(schema_name), registry=_registry())


@functools.cache
def _fast_validator(schema_name: str) -> Any:
    """jsonschema-rs (compiled Rust): it answers whether a document is valid, so a valid one, the
    common case, never reaches the Python validator, and finds where an invalid one fails."""
    import jsonschema_rs

    by_id = {load_schema(name).get("$id", name): load_schema(name) for name in schema_names()}
    return jsonschema_rs.Draft202012Validator(load_schema(schema_name), retriever=by_id.__getitem__)


def _is_valid(schema_name: str) -> Callable[[Any], bool]:
    return _fast_validator(schema_name).is_valid


# Lists and mappings with more entries than this are narrowed before jsonschema explains them.
_NARROW_ABOVE = 8
_Location = tuple[Any, ...]  # a path into a document: keys and list indices


# At most this many places with errors are explained (about a millisecond each); the rest are
# counted in one more line. A document wrong in thousands of places gets a bounded answer.
MAX_EXPLAINED = 100


# An error as jsonschema-rs's evaluation reports it: (JSON Pointer to the instance location,
# schema location). Kept as the strings it gives: tens of thousands of errors stay small.
_Error = tuple[str, str]


def _errors(schema_name: str, instance: Any) -> list[_Error]:
    """Where jsonschema-rs finds errors, in its order. Its ``evaluate`` lists them as plain data;
    ``iter_errors`` builds a full error object for each, about 10 KB: tens of thousands of errors
    then cost seconds and hundreds of megabytes."""
    items = _fast_validator(schema_name).evaluate(instance).errors()
    return list(dict.fromkeys((item["instanceLocation"], item["schemaLocation"]) for item in items))


def _places(errors: list[_Error]) -> list[str]:
    """The places that are wrong, in order: error locations with no error below them. Errors
    above them are consequences (an object whose property failed is reported again by its
    ``unevaluatedProperties``); one place may carry several (each branch of a failed ``anyOf``)."""
    pointers = list(dict.fromkeys(pointer for pointer, _ in errors))
    above = {pointer[:n] for pointer in pointers for n, char in enumerate(pointer) if char == "/"}
    return [pointer for pointer in pointers if pointer not in above]


def _pointer(path: Sequence[Any]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _path_of(instance: Any, pointer: str) -> _Location:
    """A JSON Pointer into ``instance`` as keys and list indices."""
    path: list[Any] = []
    node = instance
    for token in pointer.split("/")[1:]:
        part: Any = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            part = int(part)
        path.append(part)
        node = node[part] if isinstance(node, (list, dict)) and part in _indices(node) else None
    return tuple(path)


def _indices(node: list[Any] | dict[Any, Any]) -> Any:
    return range(len(node)) if isinstance(node, list) else node


class _Narrowed:
    """A copy of a document keeping, in each large list (and mapping, with ``mappings``), the
    first entry and those on a path to an error; ``original`` maps a path in the copy back to
    the document."""

    def __init__(self, instance: Any, failing: set[_Location], *, mappings: bool) -> None:
        self._on_path = {path[:n] for path in failing for n in range(len(path) + 1)}
        self._mappings = mappings
        self._kept_indices: dict[_Location, list[int]] = {}  # by the list's path in the document
        self.copy = self._narrow(instance, ())

    def _narrow(self, node: Any, path: _Location) -> Any:
        if isinstance(node, dict):
            whole = not self._mappings or len(node) <= _NARROW_ABOVE
            keys = [
                key
                for n, key in enumerate(node)
                if n == 0 or whole or (*path, key) in self._on_path
            ]
            return {key: self._narrow(node[key], (*path, key)) for key in keys}
        if isinstance(node, list):
            kept = [
                n
                for n in range(len(node))
                if n == 0 or len(node) <= _NARROW_ABOVE or (*path, n) in self._on_path
            ]
            self._kept_indices[path] = kept
            return [self._narrow(node[n], (*path, n)) for n in kept]
        return node

    def original(self, path: Sequence[Any]) -> _Location:
        found: list[Any] = []
        for part in path:
            kept = self._kept_indices.get(tuple(found))
            found.append(kept[part] if kept is not None and isinstance(part, int) else part)
        return tuple(found)


def _explained_instance(
    instance: Any, schema_name: str
) -> tuple[Any, Callable[[Any], _Location], int]:
    """What jsonschema is given to explain, how its paths map back to ``instance``, and how many
    of the wrong places it leaves out. The narrowest copy is taken that keeps the errors of the
    first ``MAX_EXPLAINED`` places and adds none (narrowing a mapping may drop a key that is
    required; narrowing lists seldom changes anything), else the document itself."""
    try:
        errors = _errors(schema_name, instance)
        places = _places(errors)
        first = places[:MAX_EXPLAINED]
        # The first places, and the consequences above them, which the copy must keep as well.
        shown = {p[:n] for p in first for n, char in enumerate(p) if char == "/"} | set(first)
        told = {error for error in errors if error[0] in shown}
        failing = {_path_of(instance, pointer) for pointer, _ in told}
        for mappings in (True, False):
            narrowed = _Narrowed(instance, failing, mappings=mappings)
            kept = {
                (_pointer(narrowed.original(_path_of(narrowed.copy, pointer))), keyword)
                for pointer, keyword in _errors(schema_name, narrowed.copy)
            }
            if told <= kept <= set(errors):
                explained = {pointer for pointer, _ in kept}
                return narrowed.copy, narrowed.original, len(set(places) - explained)
    except ValueError:  # a value JSON has no type for (a YAML date, a set): jsonschema names it
        pass
    return instance, tuple, 0


def describe(value: Any) -> str:
    """What kind of value was found; a string's content is never shown (it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        shown = repr(value)
        return shown if len(shown) <= 20 else f"a number of {len(shown)} characters"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


# Keywords whose subschemas add keys that an object closed with unevaluatedProperties knows.
_COMBINED = ("allOf", "anyOf", "oneOf")
_BRANCHES = ("then", "else")


def _known_keys(schema: dict[str, Any], root: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Keys and key patterns ``schema`` declares, through local ``$ref``s and combinations (an
    object closed with ``unevaluatedProperties`` knows the keys of every part it is made of)."""
    keys: list[str] = []
    patterns: list[str] = []
    seen: set[int] = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        keys.extend(node.get("properties", {}))
        patterns.extend(node.get("patternProperties", {}))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            todo.append(root.get("$defs", {}).get(ref.removeprefix("#/$defs/")))
        for keyword in _COMBINED:
            todo.extend(node.get(keyword, []))
        todo.extend(node[keyword] for keyword in _BRANCHES if keyword in node)
    for pattern in patterns:
        match = _LITERAL_PATTERN.match(pattern)
        if match:
            keys.append(match.group(1))
    return keys, patterns


def _unknown_key_violations(
    error: Any, base: Sequence[Any], root: dict[str, Any]
) -> Iterator[Violation]:
    """Keys of the object that no part of its schema declares. A key reported only because a
    part failed (unevaluatedProperties then forgets that part's keys) is left to that failure."""
    known, patterns = _known_keys(error.schema, root)
    allowed_patterns = [re.compile(p) for p in patterns]
    for key in error.instance:
        if key in known or any(p.search(key) for p in allowed_patterns):
            continue
        type_part = str(key).split("/", 1)[0]
        close = difflib.get_close_matches(type_part, known, n=1, cutoff=0.6)
        if close:
            hint = f"unknown key; did you mean '{close[0]}'?"
        elif known:
            hint = f"unknown key; known keys here: {', '.join(sorted(set(known)))}"
        else:
            hint = "unknown key; remove it"
        yield Violation(dotted([*base, key]), hint)


def _deepest(error: Any) -> Any:
    from jsonschema.exceptions import best_match

    while error.context:
        if _scalar_alternatives(error):
            return error  # each way to write the value failed; its own message says them all
        error = best_match(error.context)
    return error


def _scalar_alternatives(error: Any) -> bool:
    """An anyOf/oneOf over a value that is no mapping or list (a duration: a string or an
    integer), with its own message; one branch's complaint ('must be an integer') would mislead."""
    return (
        error.validator in ("anyOf", "oneOf")
        and not isinstance(error.instance, (dict, list))
        and isinstance(error.schema, dict)
        and "x-message" in error.schema
    )


def _message(error: Any) -> str:
    custom = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if custom:
        return custom
    keyword, expected = error.validator, error.validator_value
    got = describe(error.instance)
    if keyword == "type":
        names = [expected] if isinstance(expected, str) else expected
        if error.schema.get("x-integer"):  # a Go integer, which takes any number (truncated)
            names = ["integer" if n == "number" else n for n in names]
        return "must be " + " or ".join(_TYPE_NAMES.get(n, n) for n in names) + f", not {got}"
    if keyword == "enum":
        return "must be one of: " + ", ".join(map(str, expected))
    if keyword == "const":
        return f"must be {expected!r}"
    if keyword == "pattern":
        return f"has the wrong format (expected a value matching {expected})"
    if keyword in ("minimum", "exclusiveMinimum"):
        return f"must be at least {expected}, not {got}"
    if keyword in ("maximum", "exclusiveMaximum"):
        return f"must be at most {expected}, not {got}"
    if keyword == "minLength":
        return "must not be empty"
    if keyword == "maxLength":
        return f"must be at most {expected} characters long"
    if keyword == "minItems":
        return f"must have at least {expected} item(s)"
    if keyword == "maxItems":
        return f"must have at most {expected} item(s)"
    if keyword == "minProperties":
        return f"must have at least {expected} entr{'y' if expected == 1 else 'ies'}"
    if keyword == "uniqueItems":
        return "must not repeat an item"
    if keyword == "not":
        return "is not allowed here"
    return f"is invalid ({keyword})"  # jsonschema's own message would quote the value


def violations(instance: Any, schema_name: str) -> list[Violation]:
    """Every schema violation of ``instance``, sorted by path, with duplicates removed.

    A valid instance is recognised by jsonschema-rs alone; jsonschema only explains an invalid one.
    A value of the wrong type gets that one line, not also its range's (``port: .inf``).
    """
    try:
        if _is_valid(schema_name)(instance):
            return []
    except ValueError:  # a value JSON has no type for (a YAML date, a set): jsonschema names it
        pass
    explained, original_path, untold = _explained_instance(instance, schema_name)
    found: dict[tuple[str, str], Violation] = {}
    wrong_type: set[str] = set()
    for raw in _validator(schema_name).iter_errors(explained):
        error = _deepest(raw)
        base = list(original_path(error.absolute_path))
        if error.validator in _CLOSING and isinstance(error.instance, dict):
            items = list(_unknown_key_violations(error, base, load_schema(schema_name)))
        elif error.validator == "required":
            missing = [k for k in error.validator_value if k not in error.instance]
            items = [Violation(dotted([*base, k]), "is required; add it") for k in missing]
        elif "propertyNames" in error.absolute_schema_path:
            # The offending key is the instance here, and the path stops at its parent.
            shown = repr(error.instance)
            named = f"key {shown}" if len(shown) <= 40 else "a long key"
            items = [Violation(dotted(base), f"{named} {_message(error)}")]
        else:
            items = [Violation(dotted(base), _message(error))]
            if error.validator == "type":
                wrong_type.add(items[0].path)
                found = {k: v for k, v in found.items() if k[0] != items[0].path}
            elif items[0].path in wrong_type:
                continue
        for item in items:
            found.setdefault((item.path, item.message), item)
    listed = sorted(found.values(), key=lambda v: v.path)
    if untold:
        listed.append(
            Violation(
                "",
                f"{untold} more schema violations are not listed (the first {MAX_EXPLAINED} "
                "are explained); fix those above and check again",
            )
        )
    return listed
