"""The OTTL of the transform and filter processors, judged as the line's collector judges it.

The collector parses every statement and condition when it builds the processor
(transformprocessor ``factory.go`` through ``internal/common``; filterprocessor ``factory.go``
through ``filterottl``) and refuses to start on bad syntax, a function its processor does not
register, or a path its context does not have. A schema cannot see inside the strings, so this
rule reads them (``ottl.py``) and looks names up in the facts generated from the line's Go sources
(``schemas/ottl-<line>.json``, written by ``tools/generate-ottl-facts``).

It may accept what the collector refuses, never the reverse: a statement whose context is inferred
may call any function, read any path and use any enum symbol of any context of its signal;
the values a function checks when it is created (a time zone) are left to the collector (``check
--collector`` runs it). A call's arguments are counted, named and typed against the function's
arguments struct, as ``pkg/ottl`` ``buildArgs`` and ``buildArg`` do.
The literal patterns of the functions that compile one when the statement is parsed are read as
Go reads them (``go_regexp.py``). A line without facts (an override's own schema) is not judged.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .._common.errors import TemplateError, Violation, dotted
from .._common.resources import load_schema
from .go_regexp import go_regexp_error
from .ottl import (
    ArgumentKind,
    OttlSyntaxError,
    OttlTooDeep,
    Reading,
    read_condition,
    read_statement,
    string_value,
)

# The contexts a statement of each signal may name, lowest last (transformprocessor
# internal/common/config.go, filterprocessor config.go: the parser collections per signal); the
# transform processor's metric statements also the exemplar context (v0.161.0; a line whose
# facts lack a context never offers it). Names are read in any case (ContextID.UnmarshalText).
SIGNAL_CONTEXTS = {
    "traces": ("resource", "scope", "span", "spanevent"),
    "metrics": ("resource", "scope", "metric", "datapoint"),
    "logs": ("resource", "scope", "log"),
    "profiles": ("resource", "scope", "profile"),
}
_STATEMENT_KEYS = {f"{s[:-1]}_statements": s for s in ("traces", "metrics", "logs", "profiles")}
_CONDITION_KEYS = {f"{s[:-1]}_conditions": s for s in ("traces", "metrics", "logs", "profiles")}
# The filter processor's per-context condition lists (filterprocessor config.go: TraceFilters,
# MetricFilters, LogFilters, ProfileFilters): section -> key -> context.
_FILTER_LISTS = {
    "traces": {"resource": "resource", "span": "span", "spanevent": "spanevent"},
    "metrics": {"resource": "resource", "metric": "metric", "datapoint": "datapoint"},
    "logs": {"resource": "resource", "log_record": "log"},
    "profiles": {"resource": "resource", "profile": "profile"},
}
_TRANSFORM_CONTEXTS = {**SIGNAL_CONTEXTS, "metrics": (*SIGNAL_CONTEXTS["metrics"], "exemplar")}
# The functions that compile a literal pattern when the statement is parsed (pkg/ottl ottlfuncs,
# newDynamicRegex, the same six at v0.141.0 and v0.161.0): the pattern's position and name.
_PATTERN_ARGUMENTS = {
    "IsMatch": (1, "pattern"),
    "ExtractPatterns": (1, "pattern"),
    "delete_matching_keys": (1, "pattern"),
    "keep_matching_keys": (1, "pattern"),
    "replace_pattern": (1, "regex_pattern"),
    "replace_all_patterns": (2, "regex_pattern"),
}
# pkg/ottl internal/metadata/generated_feature_gates.go (v0.161.0): lambda arguments need it.
LAMBDA_GATE = "ottl.functions.enableLambda"


@functools.cache
def ottl_facts(schema_name: str) -> Mapping[str, Any] | None:
    """The generated facts beside a built-in line schema, or None (an override's schema)."""
    if "/" in schema_name or not schema_name.startswith("collector-"):
        return None
    name = schema_name.replace("collector-", "ottl-", 1).replace(".schema.json", ".json")
    try:
        return load_schema(name)
    except TemplateError:
        return None


def ottl_findings(
    config: Mapping[str, Any], schema_name: str
) -> tuple[list[Violation], list[Violation]]:
    """Every OTTL string of the config's transform and filter processors that the line's
    collector would refuse, and every one the package could not read (a warning: the collector
    judges it), each named by its YAML path."""
    facts = ottl_facts(schema_name)
    processors = config.get("processors")
    if facts is None or not isinstance(processors, Mapping):
        return [], []
    refused, unread = [], []
    for component_id, body in processors.items():
        kind = str(component_id).split("/", 1)[0]
        if kind not in ("transform", "filter") or not isinstance(body, Mapping):
            continue
        for path, text, mode, contexts in _strings(kind, body):
            where = dotted(["processors", component_id, *path])
            judged = _messages if len(text) <= _CACHED_TEXT else _messages.__wrapped__
            messages, deep = judged(schema_name, kind, text, mode, tuple(contexts))
            refused.extend(Violation(where, message) for message in messages)
            if deep:
                unread.append(
                    Violation(
                        where,
                        f"OTTL {mode} {deep}; it is left to the collector: run `check` or "
                        "`validate` with --collector, or nest it less",
                    )
                )
    return refused, unread


# Statements longer than this are judged afresh each time, so a hostile config cannot make the
# cache hold megabytes of text after its check.
_CACHED_TEXT = 2000


@functools.lru_cache(maxsize=4096)
def _messages(
    schema_name: str, kind: str, text: str, mode: str, contexts: tuple[str, ...]
) -> tuple[tuple[str, ...], str]:
    """What is wrong with one OTTL string, and why it was not read ("" when it was), judged once
    per process: every rendering carries the same statements, and reading them again cost the
    500-job write a third of its time (2.7 s against 1.8 s, measured side by side with
    ``python -m benchmarks --only write``)."""
    facts = ottl_facts(schema_name)
    assert facts is not None  # ottl_findings asks only for lines that have facts
    try:
        return tuple(_Judge(facts, kind).messages(text, mode, contexts)), ""
    except OttlTooDeep as exc:
        return (), str(exc)


def _strings(kind: str, body: Mapping[str, Any]) -> Iterator[tuple[list[Any], str, str, Any]]:
    """(path in the body, text, "statement" or "condition", the contexts it may use, or a
    context name to check) for every OTTL string of a processor's body."""
    groups = _STATEMENT_KEYS if kind == "transform" else _CONDITION_KEYS
    signal_contexts = _TRANSFORM_CONTEXTS if kind == "transform" else SIGNAL_CONTEXTS
    for key, signal in groups.items():
        entries = body.get(key)
        if not isinstance(entries, list):
            continue
        flat = "statement" if kind == "transform" else "condition"
        for index, entry in enumerate(entries):
            if isinstance(entry, str):
                yield [key, index], entry, flat, signal_contexts[signal]
            elif isinstance(entry, Mapping):
                context = entry.get("context")
                named = (context.lower(),) if isinstance(context, str) else ()
                if isinstance(context, str):
                    yield [key, index, "context"], context, "context", signal_contexts[signal]
                # A context the signal lacks is refused above; its strings are judged as if
                # inferred.
                own = signal_contexts[signal]
                contexts = named if named and named[0] in own else own
                for field, mode in (("statements", "statement"), ("conditions", "condition")):
                    items = entry.get(field)
                    for number, text in enumerate(items if isinstance(items, list) else []):
                        if isinstance(text, str):
                            yield [key, index, field, number], text, mode, contexts
    if kind == "filter":
        for section, lists in _FILTER_LISTS.items():
            block = body.get(section)
            if not isinstance(block, Mapping):
                continue
            for key, context in lists.items():
                items = block.get(key)
                for number, text in enumerate(items if isinstance(items, list) else []):
                    if isinstance(text, str):
                        yield [section, key, number], text, "condition", (context,)


class _Judge:
    def __init__(self, facts: Mapping[str, Any], kind: str) -> None:
        self.kind = kind
        self.functions = facts["functions"][kind]  # context -> editors, converters
        self.signatures = facts.get("arguments", {}).get(kind, {})  # function -> signatures
        self.contexts = {k: v for k, v in facts["contexts"].items() if k != "source"}
        self.release = facts["release"]

    def messages(self, text: str, mode: str, contexts: Any) -> list[str]:
        if mode == "context":
            offered = [c for c in contexts if c in self.contexts]
            if text.lower() in offered:
                return []
            names = ", ".join(offered)
            return [
                f"'{text}' is not an OTTL context of the {self.kind} processor at "
                f"{self.release}; use one of {names}"
            ]
        try:
            reading = read_statement(text) if mode == "statement" else read_condition(text)
        except OttlSyntaxError as exc:
            return [
                f"OTTL {mode} {text!r}: {exc} (the collector refuses it at start-up); "
                "fix the syntax: OTTL strings use double quotes, editors are lowercase, "
                "converters are capitalised"
            ]
        return list(self._names(reading, mode, contexts))

    def _names(self, reading: Reading, mode: str, contexts: Any) -> Iterator[str]:
        if reading.lambdas:  # pkg/ottl functions.go newLambdaExpression (v0.161.0)
            yield (
                f"OTTL {mode} passes a lambda expression ((x) => ...), which the collector "
                f"takes only with the feature gate {LAMBDA_GATE} (alpha since v0.155.0, "
                "unknown before); the job step turns on no feature gate: write it without one"
            )
        usable = [c for c in contexts if c in self.contexts]
        registering = [c for c in usable if c in self.functions] or list(self.functions)
        where = " or ".join(registering) if len(registering) < len(self.functions) else "any"
        for call_kind, name in reading.calls:
            group = "editors" if call_kind == "editor" else "converters"
            known = sorted({n for c in registering for n in self.functions[c][group]})
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                elsewhere = sorted(c for c in self.functions if name in self.functions[c][group])
                hint = (
                    f"it is registered in the {' and '.join(elsewhere)} context only"
                    if elsewhere
                    else f"did you mean '{close[0]}'?"
                    if close
                    else "see the OTTL function list"
                )
                yield (
                    f"OTTL {mode} calls '{name}', which is not an OTTL {call_kind} of the "
                    f"{self.kind} processor in the {where} context at {self.release}; {hint}"
                )
        for function, names, kinds in reading.arguments:
            refusal = self._arguments_refusal(function, names, kinds)
            if refusal:
                yield f"OTTL {mode} calls {function} {refusal} (the collector refuses it at start-up)"
        for function, key, literal in reading.literals:
            pattern = string_value(literal) if key in _PATTERN_ARGUMENTS.get(function, ()) else None
            error = None if pattern is None else go_regexp_error(pattern)
            if error:
                yield (
                    f"OTTL {mode} passes {function} the pattern {literal}, which Go does not "
                    f"compile ({error}); Go's syntax (RE2) has no lookarounds or "
                    "backreferences, and a backslash is written twice in an OTTL string"
                )
        if not usable:
            return
        yield from self._enum_refusals(reading.enums, mode, usable)
        for segments in reading.paths:
            if not any(self._has_path(context, segments) for context in usable):
                yield (
                    f"OTTL {mode} reads '{'.'.join(segments)}', which is not a path of the "
                    f"{' or '.join(usable)} context at {self.release}; check its spelling, "
                    'and quote a map key (attributes["key"])'
                )

    def _arguments_refusal(
        self, function: str, names: tuple[str, ...], kinds: tuple[ArgumentKind, ...]
    ) -> str | None:
        """What pkg/ottl buildArgs says of a call's arguments, or None: it counts them against
        the arguments struct's fields (the non-Optional ones required), looks a named one up as
        its field (strcase.ToCamel), wants no positional one after a named one, and gives each
        to buildArg for its field's type (:func:`_type_refusal`). A function whose factory
        takes no struct ignores its arguments; one not in the facts is not judged."""
        signatures = self.signatures.get(function)
        if not signatures or None in signatures:
            return None
        named = [name for name in names if name]
        if named and "" in names[names.index(named[0]) :]:
            return "with a positional argument after a named one; name every argument after it"
        refusals = []
        for signature in signatures:
            fields, required = signature["fields"], signature["required"]
            params = ", ".join(_snake(field) for field in fields)
            if not required <= len(names) <= len(fields):
                takes = f"{required} to {len(fields)}" if required < len(fields) else required
                refusals.append(
                    f"with {len(names)} argument(s), and it takes {takes} ({params}) at "
                    f"{self.release}"
                )
                continue
            unknown = [name for name in named if _camel(name) not in fields]
            if unknown:
                refusals.append(
                    f"with the argument name '{unknown[0]}', and its parameters are {params}"
                )
                continue
            types = signature["types"]
            for position, (name, kind) in enumerate(zip(names, kinds, strict=True)):
                index = fields.index(_camel(name)) if name else position
                refusal = _type_refusal(types[index], kind)
                if refusal:
                    refusals.append(
                        f"with {_snake(fields[index])} (argument {position + 1}) not of its "
                        f"type: it {refusal}"
                    )
                    break
            else:
                return None
        return refusals[0]

    def _enum_refusals(self, enums: list[str], mode: str, usable: list[str]) -> Iterator[str]:
        """Each context's ``parseEnum`` takes its own symbols only (none in resource, scope...);
        a symbol that names a function is a function argument's (``SHA256``, a FunctionGetter),
        which the package does not tell apart from an enum, so it passes."""
        if "enums" not in self.contexts[usable[0]]:
            return
        known = {symbol for context in usable for symbol in self.contexts[context].get("enums", ())}
        unknown = [symbol for symbol in dict.fromkeys(enums) if symbol not in known]
        if not unknown:  # the usual case: the tables below are built only for a refusal
            return
        functions = {
            name
            for groups in self.functions.values()
            for names in groups.values()
            for name in names
        }
        everywhere = sorted({s for c in self.contexts.values() for s in c.get("enums", ())})
        for symbol in unknown:
            if symbol in functions:
                continue
            close = difflib.get_close_matches(symbol, sorted(known) or everywhere, n=1)
            holders = sorted(
                c for c, facts in self.contexts.items() if symbol in facts.get("enums", ())
            )
            hint = (
                f"the {' and '.join(holders)} context{'s have' if len(holders) > 1 else ' has'} it"
                if holders
                else f"did you mean {close[0]}?"
                if close
                else "the context has no enum symbols"
            )
            yield (
                f"OTTL {mode} uses the enum symbol {symbol}, which the {' or '.join(usable)} "
                f"context does not know at {self.release}; {hint}"
            )

    def _has_path(self, context: str, segments: tuple[str, ...]) -> bool:
        """As ctxcommon.PathExpressionParser: a first segment naming a context of this one
        selects it, the next names its field; else the first is a field of this context."""
        parsers: Mapping[str, list[str]] = self.contexts[context]["paths"]
        first = segments[0]
        own = parsers.get(context, [])
        if first in ("cache", *own):
            return True
        if first in parsers and len(segments) > 1:
            return segments[1] in parsers[first] or (segments[1] == "cache" and first == context)
        return False


# pkg/ottl functions.go buildArg: a field of one of these types takes only this kind of value.
_LITERAL_TYPES = {"string": "string", "float64": "float", "int64": "int", "bool": "bool"}
_ARTICLE = {"string": "a", "float": "a", "int": "an", "bool": "a"}
# Why a number was not the literal its field wants, by what it was read as.
_NUMBER_HINTS = {
    ("float", "int"): " (write 2.0: a number without a point is an int)",
    ("float", "math"): " (a signed number is an expression, not a literal)",
    ("int", "math"): " (a signed number is an expression, not a literal)",
}


def _literal_refusal(wanted: str, found: str) -> str | None:
    if found == wanted:
        return None
    return f"must be {_ARTICLE[wanted]} {wanted}{_NUMBER_HINTS.get((wanted, found), '')}"


def _type_refusal(go_type: str, kind: ArgumentKind) -> str | None:
    """What buildArg and buildSliceArg say of a value for a field of ``go_type``, or None. A
    literal type wants its literal; a Setter (GetSetter, PMapGetSetter...) a path; a slice a list,
    whose elements of a literal type each want theirs; a function argument an enum-like name.
    Getters take any value (their type is judged when the statement runs); an unknown type is
    not judged."""
    if go_type in _LITERAL_TYPES:
        return _literal_refusal(_LITERAL_TYPES[go_type], kind[0])
    if go_type.endswith("Setter") and not go_type.startswith("[]"):
        return None if kind[0] == "path" else 'must be a path (name, attributes["key"])'
    if go_type == "FunctionGetter":
        return None if kind[0] in ("enum", "function") else "must name a function (SHA256)"
    if go_type == "[]byte":
        return None if kind[0] == "bytes" else "must be a byte slice literal (0x...)"
    if go_type.startswith("[]"):
        if kind[0] != "list":
            return f"must be a list of {go_type[2:]} ([...])"
        element = _LITERAL_TYPES.get(go_type[2:])
        for index, found in enumerate(kind[1:]):
            refusal = element and _literal_refusal(element, found)
            if refusal:
                return f"has at list index {index} an element that {refusal}"
    return None


def _camel(name: str) -> str:
    """strcase.ToCamel of an OTTL argument name (lower-case letters, digits and ``_``): a letter
    after ``_`` or a digit, and the first, in upper case; ``_`` dropped."""
    out, upper = [], True
    for char in name:
        if char == "_":
            upper = True
            continue
        out.append(char.upper() if upper else char)
        upper = char.isdigit()
    return "".join(out)


def _snake(field: str) -> str:
    """A Go field name as an OTTL argument name is written (RegexPattern -> regex_pattern)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", field).lower()
