"""A compiled yes/no check for the shipped JSON Schemas: the fast path of schema validation.

jsonschema interprets a schema afresh for every instance: each keyword of each subschema is
looked up, each ``$ref`` resolved, and a validator object made per step. Rendering a collector
config spent most of its time there. ``compile_schema`` turns a schema, once, into nested
closures that only answer "valid?". When the answer is yes (every render of a working template),
that is the whole check; when it is no, jsonschema runs as before and reports the violations.

The closures implement the keywords the shipped schemas use, with jsonschema's own semantics
(``Draft202012Validator`` without a format checker: its type checker, ``re.search`` for
patterns, patterns joined with ``|`` for ``additionalProperties``, ``True`` never equal to
``1``). A schema with any other keyword, or an ``enum``/``const`` that is not a plain scalar, is
not compiled (``None``), and jsonschema alone checks it. The tests compare both on every golden
file and on mutated documents.
"""

from __future__ import annotations

import numbers
import operator
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urldefrag, urljoin

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "x-message",
    }
)
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: _is_number(v),
    "integer": lambda v: (
        not isinstance(v, bool)
        and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))
    ),
}
_SCALARS = (str, int, float, bool, type(None))
_MEMBERS = ("properties", "patternProperties", "additionalProperties")
_PLANS_KEPT = 4096  # keys remembered per mapping schema (component ids are user-chosen)


class NotCompilable(Exception):
    pass


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _equal_scalar(value: Any, expected: Any) -> bool:
    """jsonschema's ``equal`` when ``expected`` is a scalar: booleans equal only booleans."""
    if value is expected:
        return True
    if isinstance(value, str) or isinstance(expected, str):
        return value == expected
    if isinstance(value, bool) or isinstance(expected, bool):
        return False  # the same booleans were caught by ``is`` above
    return value == expected


def _scalars(values: Any, keyword: str) -> list[Any]:
    if not all(isinstance(v, _SCALARS) for v in values):
        raise NotCompilable(f"{keyword} with a non-scalar value")
    return list(values)


# Bounds on numbers; any other value passes, as in jsonschema.
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": operator.ge,
    "maximum": operator.le,
    "exclusiveMinimum": operator.gt,
    "exclusiveMaximum": operator.lt,
}
# Bounds on the length of strings, lists and mappings; other values pass.
_SIZES: dict[str, tuple[type, Callable[[Any, Any], bool]]] = {
    "minLength": (str, operator.ge),
    "maxLength": (str, operator.le),
    "minItems": (list, operator.ge),
    "maxItems": (list, operator.le),
    "minProperties": (dict, operator.ge),
    "maxProperties": (dict, operator.le),
}


def _comparison(
    keyword: str, holds: Callable[[Any, Any], bool]
) -> Callable[[dict[str, Any], str], Check]:
    def build(schema: dict[str, Any], base: str) -> Check:
        limit = schema[keyword]
        return lambda value: not _is_number(value) or holds(value, limit)

    return build


def _size(
    keyword: str, kind: type, holds: Callable[[Any, Any], bool]
) -> Callable[[dict[str, Any], str], Check]:
    def build(schema: dict[str, Any], base: str) -> Check:
        limit = schema[keyword]
        return lambda value: not isinstance(value, kind) or holds(len(value), limit)

    return build


def _chain(checks: list[Check]) -> Check:
    """All of ``checks``: two as one ``and``, more in one generator (the hot path: the fewer
    frames per value, the faster)."""
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    chained = tuple(checks)
    return lambda value: all(check(value) for check in chained)


class _Compiler:
    def __init__(self, registry: Any) -> None:
        self._registry = registry
        self._refs: dict[str, Check] = {}

    def compile(self, schema: Any, base: str) -> Check:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise NotCompilable("a schema that is neither an object nor a boolean")
        if "$id" in schema:
            base = urljoin(base, schema["$id"])
        checks: list[Check] = []
        handled = set(_ANNOTATIONS)
        for keyword, build in self._keywords():
            if keyword in schema:
                handled.add(keyword)
                checks.append(build(schema, base))
        if any(keyword in schema for keyword in _MEMBERS):
            handled.update(_MEMBERS)
            checks.append(self._members(schema, base))
        handled |= {"then", "else"}  # parts of "if"; alone they do nothing
        unknown = set(schema) - handled
        if unknown:
            raise NotCompilable(f"keywords {sorted(unknown)}")
        return _chain(checks)

    def _keywords(self) -> list[tuple[str, Callable[[dict[str, Any], str], Check]]]:
        builders: list[tuple[str, Callable[[dict[str, Any], str], Check]]] = [
            ("type", self._type),
            ("$ref", self._ref),
            ("enum", self._enum),
            ("const", self._const),
        ]
        builders += [
            (keyword, _comparison(keyword, holds)) for keyword, holds in _COMPARISONS.items()
        ]
        builders += [(keyword, _size(keyword, *rule)) for keyword, rule in _SIZES.items()]
        builders += [
            ("pattern", self._pattern),
            ("items", self._items),
            ("required", self._required),
            ("propertyNames", self._property_names),
            ("allOf", self._all_of),
            ("anyOf", self._any_of),
            ("oneOf", self._one_of),
            ("not", self._not),
            ("if", self._if),
        ]
        return builders

    # -- keywords, each as jsonschema's function of the same name ------------------------------

    def _type(self, schema: dict[str, Any], base: str) -> Check:
        names = schema["type"]
        names = [names] if isinstance(names, str) else list(names)
        if any(name not in _TYPES for name in names):
            raise NotCompilable(f"type {names}")
        checks = [_TYPES[name] for name in names]
        if len(checks) == 1:
            return checks[0]
        return lambda value: any(check(value) for check in checks)

    def _ref(self, schema: dict[str, Any], base: str) -> Check:
        target = urljoin(base, schema["$ref"])
        if target not in self._refs:
            self._refs[target] = _never  # a placeholder while the target compiles
            resolved = self._registry.resolver(base_uri=base).lookup(schema["$ref"])
            self._refs[target] = self.compile(resolved.contents, urldefrag(target).url)
            return self._refs[target]
        if self._refs[target] is not _never:
            return self._refs[target]
        refs = self._refs  # a recursive reference: look the target up once it is compiled
        return lambda value: refs[target](value)

    def _enum(self, schema: dict[str, Any], base: str) -> Check:
        options = _scalars(schema["enum"], "enum")
        strings = frozenset(option for option in options if isinstance(option, str))

        def enum(value: Any) -> bool:
            if type(value) is str:  # a string equals only strings: one set lookup
                return value in strings
            return any(_equal_scalar(value, option) for option in options)

        return enum

    def _const(self, schema: dict[str, Any], base: str) -> Check:
        (expected,) = _scalars([schema["const"]], "const")
        return lambda value: _equal_scalar(value, expected)

    def _pattern(self, schema: dict[str, Any], base: str) -> Check:
        regex = re.compile(schema["pattern"])
        return lambda value: not isinstance(value, str) or regex.search(value) is not None

    def _items(self, schema: dict[str, Any], base: str) -> Check:
        if "prefixItems" in schema:
            raise NotCompilable("prefixItems")
        check = self.compile(schema["items"], base)

        def items(value: Any) -> bool:
            if isinstance(value, list):
                for item in value:
                    if not check(item):
                        return False
            return True

        return items

    def _required(self, schema: dict[str, Any], base: str) -> Check:
        required = frozenset(schema["required"])
        return lambda value: not isinstance(value, dict) or required <= value.keys()

    def _members(self, schema: dict[str, Any], base: str) -> Check:
        """``properties``, ``patternProperties`` and ``additionalProperties`` in one pass over the
        mapping; a key not in ``properties`` is additional unless the patterns joined with ``|``
        match it, as in jsonschema. Which subschemas apply depends on the key alone, so each
        key's list is worked out once (the same keys recur in every config)."""
        properties = {
            key: self.compile(sub, base) for key, sub in schema.get("properties", {}).items()
        }
        pattern_schemas = schema.get("patternProperties", {})
        patterns = [(re.compile(p), self.compile(sub, base)) for p, sub in pattern_schemas.items()]
        any_pattern = re.compile("|".join(pattern_schemas)) if pattern_schemas else None
        additional = (
            self.compile(schema["additionalProperties"], base)
            if "additionalProperties" in schema
            else None
        )
        plans: dict[str, tuple[Check, ...]] = {}

        def plan(key: str) -> tuple[Check, ...]:
            own = properties.get(key)
            found = [] if own is None else [own]
            found += [sub for regex, sub in patterns if regex.search(key)]
            if (
                additional is not None
                and own is None
                and not (any_pattern and any_pattern.search(key))
            ):
                found.append(additional)
            planned = tuple(found)
            if len(plans) < _PLANS_KEPT:
                plans[key] = planned
            return planned

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for key, item in value.items():
                subs = plans.get(key)
                for sub in plan(key) if subs is None else subs:
                    if not sub(item):
                        return False
            return True

        return check

    def _property_names(self, schema: dict[str, Any], base: str) -> Check:
        sub = self.compile(schema["propertyNames"], base)
        return lambda value: not isinstance(value, dict) or all(sub(key) for key in value)

    def _all_of(self, schema: dict[str, Any], base: str) -> Check:
        return _chain([self.compile(s, base) for s in schema["allOf"]])

    def _any_of(self, schema: dict[str, Any], base: str) -> Check:
        subs = tuple(self.compile(s, base) for s in schema["anyOf"])
        return lambda value: any(sub(value) for sub in subs)

    def _one_of(self, schema: dict[str, Any], base: str) -> Check:
        subs = [self.compile(s, base) for s in schema["oneOf"]]
        return lambda value: sum(1 for sub in subs if sub(value)) == 1

    def _not(self, schema: dict[str, Any], base: str) -> Check:
        sub = self.compile(schema["not"], base)
        return lambda value: not sub(value)

    def _if(self, schema: dict[str, Any], base: str) -> Check:
        condition = self.compile(schema["if"], base)
        then = self.compile(schema["then"], base) if "then" in schema else _always
        otherwise = self.compile(schema["else"], base) if "else" in schema else _always
        return lambda value: then(value) if condition(value) else otherwise(value)


def compile_schema(schema: dict[str, Any], registry: Any) -> Check | None:
    """A check equivalent to ``Draft202012Validator(schema, registry=registry).is_valid``, or
    None when the schema uses something this module does not compile."""
    try:
        return _Compiler(registry).compile(schema, schema.get("$id", ""))
    except NotCompilable:
        return None
