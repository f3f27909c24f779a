"""Reading one OTTL statement or condition: its syntax, the functions it calls, the paths it reads.

The collector parses OTTL with a participle grammar (``pkg/ottl/grammar.go``: ``parsedStatement``,
``booleanExpression`` and the lexer of ``buildLexer``; ``parser.go``: ``newParser`` with unlimited
lookahead). Without this reader a misspelt statement passes the package and stops the collector
at start-up, on the node. The grammar is written here as a parser with ordered choice and
backtracking, which is what participle does with unlimited lookahead; it follows the newest
grammar of the lines (v0.161.0, which added lambdas), so an older line's statements are read
with at least the freedom their collector has. Standard library only, as the rest of the checks.

Only what the grammar itself refuses is an error here (``OttlSyntaxError``), with the custom
checks upstream runs right after parsing (``grammarCustomErrorsVisitor``: an editor used as a
value, a converter as the statement, an indexed editor). Which functions and paths exist is the
caller's to judge, from :class:`Reading`.

The reader recurses once per level of nesting and Python's stack is bounded, where Go's grows:
the collector reads a condition in a thousand parentheses, and so must the package, or say that
it did not. Text nested deeper than :data:`MAX_NESTING` is not read (``OttlTooDeep``), before
any recursion.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

# pkg/ottl/grammar.go buildLexer, in its order: the first rule that matches wins (not the longest).
_RULES = (
    ("Bytes", r"0x[a-fA-F0-9]+"),
    ("Float", r"(\d+\.\d*|\d*\.\d+)([eE][-+]?\d+)?"),
    ("Int", r"\d+"),
    ("String", r'"(\\.|[^\\"])*"'),
    ("Nil", r"\b(nil)\b"),
    ("OpNot", r"\b(not)\b"),
    ("OpOr", r"\b(or)\b"),
    ("OpAnd", r"\b(and)\b"),
    ("OpComparison", r"==|!=|>=|<=|>|<"),
    ("LambdaArrow", r"=>"),
    ("OpAddSub", r"\+|\-"),
    ("OpMultDiv", r"\/|\*"),
    ("Boolean", r"\b(true|false)\b"),
    ("Equal", r"="),
    ("LParen", r"\("),
    ("RParen", r"\)"),
    ("LBrace", r"\{"),
    ("RBrace", r"\}"),
    ("Colon", r"\:"),
    ("Punct", r"[,.\[\]]"),
    ("Uppercase", r"[A-Z][A-Z0-9_]*"),
    ("Lowercase", r"[a-z][a-z0-9_]*"),
    ("whitespace", r"\s+"),
    ("Underscore", r"\b(_)\b"),
)
# Participle tries the rules in order against the rest of the text, whose start is a word
# boundary before a word character, as every rule starting with \b has. Here one alternation
# of named groups, which Python's re also tries in order, matched in place: slicing the rest
# for each token made the lexer quadratic, and trying each rule in turn slow. In place, a
# leading \b would look at the character before, so it is dropped. (No rule matches empty.)
_LEADING_BOUNDARY = r"\b"
_LEXER = re.compile(
    "|".join(f"(?P<{kind}>{pattern.removeprefix(_LEADING_BOUNDARY)})" for kind, pattern in _RULES),
    re.ASCII,
)


class OttlSyntaxError(ValueError):
    """The collector's parser refuses the text; the message says where."""


class OttlTooDeep(ValueError):
    """The text nests deeper than the reader follows; the collector, whose parser has no such
    bound, judges it."""


# Levels of brackets, parentheses and braces, plus lambda arrows (each a level, nested or not),
# that the reader follows. A level costs up to 15 Python frames (indexes in indexes), so 32
# stay far inside the default recursion limit whoever calls; written OTTL nests a few levels.
MAX_NESTING = 32
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    offset: int


# What an argument is, as pkg/ottl buildArg tells values apart: the first item one of nil, int,
# float, path, converter, math, lambda, bytes, string, bool, enum, map, list or function (a
# function's name alone); a list's further items are its elements' first items.
ArgumentKind = tuple[str, ...]


@dataclass
class Reading:
    """What a statement or condition that parses uses: its function calls as (kind, name), kind
    ``editor`` or ``converter``; its paths as their dotted segments (paths whose first segment
    is a lambda's parameter are left out: they are local); the offsets of its lambdas; the
    arguments that are a string literal alone, as (function, position or name, the literal as
    written, quotes and escapes included); each call's arguments, as (function, the name of
    each argument in order, empty for a positional one, and the kind of each, see
    :data:`ArgumentKind`); and the enum symbols used as values."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    paths: list[tuple[str, ...]] = field(default_factory=list)
    lambdas: list[int] = field(default_factory=list)
    literals: list[tuple[str, int | str, str]] = field(default_factory=list)
    arguments: list[tuple[str, tuple[str, ...], tuple[ArgumentKind, ...]]] = field(
        default_factory=list
    )
    enums: list[str] = field(default_factory=list)


def tokens(text: str) -> list[Token]:
    """The lexer's tokens without whitespace. Like participle's simple lexer, a rule's ``\\b`` is
    judged on the rest of the text, whose start counts as a word boundary."""
    found = []
    offset = 0
    while offset < len(text):
        match = _LEXER.match(text, offset)
        if match is None:
            rest = text[offset : offset + 10]
            raise OttlSyntaxError(f"invalid input text {rest!r} at offset {offset}")
        if match.lastgroup != "whitespace":
            found.append(Token(str(match.lastgroup), match[0], offset))
        offset = match.end()
    return found


def read_statement(text: str) -> Reading:
    """An editor call, then an optional ``where`` condition (grammar.go ``parsedStatement``)."""
    return _Parser(text).statement()


def read_condition(text: str) -> Reading:
    """A boolean expression (grammar.go ``booleanExpression``), as conditions are parsed."""
    return _Parser(text).condition()


# Go's strconv.Unquote in a double-quoted string: one-character escapes, then \x, \u, \U with
# their hex digits and three octal digits.
_SIMPLE_ESCAPES = dict(zip('abfnrtv\\"', '\a\b\f\n\r\t\v\\"', strict=True))
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def string_value(literal: str) -> str | None:
    """The value of a String token as the collector's parser unquotes it (participle's
    ``Unquote``, Go's ``strconv.Unquote``), or None where Go would not unquote it."""
    body, value, index = literal[1:-1], [], 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            value.append(char)
            index += 1
            continue
        escape = body[index + 1 : index + 2]
        if escape in _SIMPLE_ESCAPES:
            value.append(_SIMPLE_ESCAPES[escape])
            index += 2
        elif escape in _HEX_DIGITS or (escape in "01234567" and escape):
            size = _HEX_DIGITS.get(escape, 3)
            start = index + (2 if escape in _HEX_DIGITS else 1)
            digits = body[start : start + size]
            base = 8 if escape not in _HEX_DIGITS else 16
            allowed = "01234567" if base == 8 else "0123456789abcdefABCDEF"
            if len(digits) != size or any(d not in allowed for d in digits):
                return None
            code = int(digits, base)
            if code > (255 if escape in "x01234567" else 0x10FFFF) or 0xD800 <= code < 0xE000:
                return None
            value.append(chr(code))
            index = start + size
        else:
            return None
    return "".join(value)


# What a memoized rule did at a position: where it ended, what it appended to the records it
# added to (``_Parser.records``, by index; most add to none, and a megabyte of OTTL holds
# hundreds of thousands of outcomes) and the kind of value it read; None where it failed.
_Outcome = tuple[int, tuple[tuple[int, list[Any]], ...], ArgumentKind]
_Rule = TypeVar("_Rule", bound=Callable[..., bool])


def _memoized(rule: _Rule) -> _Rule:
    """A rule that reads each position once (packrat parsing). Ordered choice tries a value as a
    literal, then as an expression, and a key's contents as both: without the memo, text nested
    n levels and failing at the bottom was read 2**n times (18 levels: 24 s for 100 characters).
    Whether a rule matches depends on the position only; what it records also on the lambda
    parameters in scope, so they are part of the key."""

    @functools.wraps(rule)
    def read(self: _Parser, *args: Any) -> bool:
        key = (rule.__name__, args, self.i, tuple(self.locals))
        if key in self.memo:
            outcome = self.memo[key]
            if outcome is None:
                return False
            self.i, appended, self.kind = outcome
            for index, items in appended:
                self.records[index].extend(items)
            return True
        mark = self._mark()
        if not rule(self, *args):
            self.memo[key] = None
            return self._reset(mark)
        appended = tuple(
            (index, records[length:])
            for index, (records, length) in enumerate(zip(self.records, mark[1:], strict=True))
            if len(records) > length
        )
        self.memo[key] = (self.i, appended, self.kind)
        return True

    return read  # type: ignore[return-value]


def nesting(found: list[Token]) -> int:
    """How deep the reader would recurse on these tokens, in levels (:data:`MAX_NESTING`)."""
    depth = deepest = 0
    for token in found:
        if token.text in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif token.text in _CLOSING:
            depth -= 1
    return deepest + sum(1 for token in found if token.kind == "LambdaArrow")


# The tokens each rule can begin with (grammar.go): a literal is an editor, a converter, a number
# or a path; a math value a sign, a parenthesis or a literal; a value these three alone.
_LITERAL_STARTS = frozenset(("Lowercase", "Uppercase", "Float", "Int"))
_MATH_VALUE_STARTS = _LITERAL_STARTS | {"OpAddSub", "LParen"}
_LONE_TOKENS = frozenset(("Bytes", "String", "Boolean"))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokens(text)
        depth = nesting(self.tokens)
        if depth > MAX_NESTING:
            raise OttlTooDeep(f"nests {depth} levels deep, and the package reads {MAX_NESTING}")
        self.i = 0
        self.reading = Reading()
        self.errors: list[str] = []
        self.locals: list[frozenset[str]] = []
        self.furthest = 0
        self.kind: ArgumentKind = ()  # the kind of the value read last
        self.memo: dict[tuple[Any, ...], _Outcome | None] = {}
        # What a rule appends to as it reads, in the order of _mark's lengths.
        reading = self.reading
        self.records: tuple[list[Any], ...] = (
            reading.calls,
            reading.paths,
            self.errors,
            reading.lambdas,
            reading.literals,
            reading.arguments,
            reading.enums,
        )

    # -- entry points -------------------------------------------------------------------------

    def statement(self) -> Reading:
        if self._editor():
            pass
        elif self._converter():
            self.errors.append(
                f"editor names must start with a lowercase letter but got "
                f"'{self.reading.calls[0][1]}'"
            )
        else:
            self._fail()
        if self._peek("Lowercase", "where"):
            self.i += 1
            if not self._boolean_expression(whole=True):
                self._fail()
        return self._finish()

    def condition(self) -> Reading:
        if not self._boolean_expression(whole=True):
            self._fail()
        return self._finish()

    def _finish(self) -> Reading:
        if self.i != len(self.tokens):
            self.furthest = max(self.furthest, self.i)
            self._fail()
        if self.errors:
            raise OttlSyntaxError("; ".join(self.errors))
        return self.reading

    def _fail(self) -> None:
        if self.furthest < len(self.tokens):
            token = self.tokens[self.furthest]
            near = self.text[token.offset : token.offset + 10].strip()
            raise OttlSyntaxError(f"invalid syntax near `{near}`")
        raise OttlSyntaxError("invalid syntax: the text ends too early")

    # -- helpers ------------------------------------------------------------------------------

    def _peek(self, kind: str, text: str | None = None, ahead: int = 0) -> bool:
        at = self.i + ahead
        if at >= len(self.tokens):
            return False
        token = self.tokens[at]
        return token.kind == kind and (text is None or token.text == text)

    def _take(self, kind: str, text: str | None = None) -> Token | None:
        if self._peek(kind, text):
            self.i += 1
            self.furthest = max(self.furthest, self.i)
            return self.tokens[self.i - 1]
        self.furthest = max(self.furthest, self.i)
        return None

    def _mark(self) -> tuple[int, ...]:
        calls, paths, errors, lambdas, literals, arguments, enums = self.records
        return (
            self.i,
            len(calls),
            len(paths),
            len(errors),
            len(lambdas),
            len(literals),
            len(arguments),
            len(enums),
        )

    def _reset(self, mark: tuple[int, ...]) -> bool:
        self.i = mark[0]
        for records, length in zip(self.records, mark[1:], strict=True):
            if len(records) > length:
                del records[length:]
        return False

    def _attempt(self, rule) -> bool:  # type: ignore[no-untyped-def]
        mark = self._mark()
        return rule() or self._reset(mark)

    def _name(self, first: str) -> str | None:
        """``@(First (Uppercase | Lowercase)*)``: the tokens, whitespace elided, make one name."""
        token = self._take(first)
        if token is None:
            return None
        name = token.text
        while self._peek("Uppercase") or self._peek("Lowercase"):
            name += self._take(self.tokens[self.i].kind).text  # type: ignore[union-attr]
        return name

    # -- functions ----------------------------------------------------------------------------

    @_memoized
    def _call(self, kind: str, first: str) -> bool:
        mark = self._mark()
        name = self._name(first)
        names: list[str] = []
        kinds: list[ArgumentKind] = []
        if name is None or not self._arguments(name, names, kinds):
            return self._reset(mark)
        self.reading.calls.insert(mark[1], (kind, name))
        self.reading.arguments.insert(mark[6], (name, tuple(names), tuple(kinds)))
        keys = 0
        while self._attempt(self._key):
            keys += 1
        if keys and kind == "editor":
            self.errors.append(
                f"only paths and converters may be indexed, not editors, but got {name}"
            )
        return True

    def _editor(self) -> bool:
        return self._call("editor", "Lowercase")

    def _converter(self) -> bool:
        return self._call("converter", "Uppercase")

    def _arguments(self, function: str, names: list[str], kinds: list[ArgumentKind]) -> bool:
        if not self._take("LParen"):
            return False
        if self._attempt(lambda: self._argument(function, names, kinds)):
            while self._take("Punct", ","):
                if not self._argument(function, names, kinds):
                    return False
        return bool(self._take("RParen"))

    def _argument(self, function: str, names: list[str], kinds: list[ArgumentKind]) -> bool:
        """One argument, its name (or "") appended to ``names`` and its kind to ``kinds`` when
        it parses."""
        position = len(names)
        mark = self._mark()
        key: int | str = position
        name = self._name("Lowercase")
        if name and self._take("Equal"):
            key = name
        else:
            self._reset(mark)
        alone = self._peek("String") and (
            self._peek("Punct", ",", ahead=1) or self._peek("RParen", ahead=1)
        )
        if alone:
            self.reading.literals.append((function, key, self.tokens[self.i].text))
        if self._attempt(self._value) or (
            self._name("Uppercase") is not None and self._is("function")
        ):
            names.append(key if isinstance(key, str) else "")
            kinds.append(self.kind)
            return True
        return False

    # -- values -------------------------------------------------------------------------------

    def _is(self, *kind: str) -> bool:
        self.kind = kind
        return True

    def _starts(self, kinds: frozenset[str]) -> bool:
        """Whether the next token can begin a rule that begins with one of ``kinds``: a rule
        that cannot begin here fails at once, as its first ``_take`` would (furthest included),
        without trying its alternatives."""
        self.furthest = max(self.furthest, self.i)
        return self.i < len(self.tokens) and self.tokens[self.i].kind in kinds

    @_memoized
    def _value(self) -> bool:
        """A value, in the grammar's order of alternatives; ``self.kind`` says which it was."""
        if self._take("Nil"):
            return self._is("nil")
        if self._starts(_LONE_TOKENS):  # bytes, a string, a bool: no other value begins so
            token = self.tokens[self.i].kind
            self.i += 1
            return self._is("bool" if token == "Boolean" else token.lower())
        mark = self._mark()
        if self._math_literal() and not (self._peek("OpAddSub") or self._peek("OpMultDiv")):
            return True
        self._reset(mark)
        for rule, kind in ((self._lambda, "lambda"), (self._math_expression, "math")):
            if self._attempt(rule):
                return self._is(kind)
        if self._peek("Uppercase") and not self._peek("Lowercase", ahead=1):
            self.reading.enums.append(self.tokens[self.i].text)
            self.i += 1
            return self._is("enum")
        if self._attempt(self._map):
            return self._is("map")
        return self._attempt(self._list)

    @_memoized
    def _math_literal(self) -> bool:
        if not self._starts(_LITERAL_STARTS):
            return False
        mark = self._mark()
        if self._editor():
            self.errors.append(
                "converter names must start with an uppercase letter but got "
                f"'{self.reading.calls[mark[1]][1]}'"
            )
            return self._is("converter")
        if self._attempt(self._converter):
            return self._is("converter")
        for token in ("Float", "Int"):
            if self._take(token):
                return self._is(token.lower())
        return self._attempt(self._path) and self._is("path")

    def _path(self) -> bool:
        segments = []
        mark = self._mark()
        context = self._take("Lowercase")
        if context and self._take("Punct", "."):
            segments.append(context.text)
        else:
            self._reset(mark)
        while True:
            name = self._take("Lowercase")
            if name is None:
                return False
            segments.append(name.text)
            while self._attempt(self._key):
                pass
            if not (self._peek("Punct", ".") and self._peek("Lowercase", ahead=1)):
                break
            self.i += 1
        if not any(segments[0] in scope for scope in self.locals):
            self.reading.paths.append(tuple(segments))
        return True

    def _key(self) -> bool:
        """Each alternative is tried up to the closing bracket (``[1 + 2]`` is not ``[1``)."""
        if not self._take("Punct", "["):
            return False
        for rule in (
            lambda: self._take("String"),
            lambda: self._take("Int"),
            self._math_expression,
            self._math_literal,
        ):
            if self._attempt(lambda rule=rule: bool(rule()) and bool(self._take("Punct", "]"))):
                return True
        return False

    def _list(self) -> bool:
        if not self._take("Punct", "["):
            return False
        elements = []
        if self._attempt(self._value):
            elements.append(self.kind[0])
            while self._take("Punct", ","):
                if not self._value():
                    return False
                elements.append(self.kind[0])
        return bool(self._take("Punct", "]")) and self._is("list", *elements)

    def _map(self) -> bool:
        if not self._take("LBrace"):
            return False
        while self._peek("String"):
            self.i += 1
            if not (self._take("Colon") and self._value()):
                return False
            self._take("Punct", ",")
        return bool(self._take("RBrace"))

    def _lambda(self) -> bool:
        if not self._peek("LParen"):
            return False
        offset = self.tokens[self.i].offset
        if self._lambda_rest():
            self.reading.lambdas.append(offset)
            return True
        return False

    def _lambda_rest(self) -> bool:
        if not self._take("LParen"):
            return False
        params = []
        param = self._take("Lowercase") or self._take("Underscore")
        if param:
            params.append(param.text)
            while self._take("Punct", ","):
                param = self._take("Lowercase") or self._take("Underscore")
                if param is None:
                    return False
                params.append(param.text)
        if not (self._take("RParen") and self._take("LambdaArrow")):
            return False
        self.locals.append(frozenset(params))
        try:
            mark = self._mark()
            if self._value() and not any(
                self._peek(kind) for kind in ("OpOr", "OpAnd", "OpComparison")
            ):
                return True
            self._reset(mark)
            return self._boolean_expression()
        finally:
            self.locals.pop()

    # -- arithmetic ---------------------------------------------------------------------------

    def _chain(self, operand: Callable[[], bool], operator: str, settle: bool = False) -> bool:
        """``operand (operator operand)*``: an operator whose right side fails is left unread.
        ``settle``: nothing will read again what an operand read (the clauses of the whole
        condition), so the memo is emptied after each, and holds one clause at most."""
        if not operand():
            return False
        while self._peek(operator):
            if settle:
                self.memo.clear()
            mark = self._mark()
            self.i += 1
            if not operand():
                self._reset(mark)
                break
        return True

    @_memoized
    def _math_expression(self) -> bool:
        return self._chain(self._add_sub_term, "OpAddSub")

    def _add_sub_term(self) -> bool:
        return self._chain(self._math_value, "OpMultDiv")

    def _math_value(self) -> bool:
        if not self._starts(_MATH_VALUE_STARTS):
            return False
        mark = self._mark()
        self._take("OpAddSub")
        if self._attempt(self._math_literal):
            return True
        if self._take("LParen") and self._math_expression() and self._take("RParen"):
            return True
        return self._reset(mark)

    # -- booleans -----------------------------------------------------------------------------

    def _boolean_expression(self, whole: bool = False) -> bool:
        """``whole``: the statement's condition or the condition itself, not a part of one."""
        return self._chain(lambda: self._term(whole), "OpOr", settle=whole)

    def _term(self, whole: bool = False) -> bool:
        return self._chain(self._boolean_value, "OpAnd", settle=whole)

    def _boolean_value(self) -> bool:
        mark = self._mark()
        self._take("OpNot")
        if self._attempt(self._comparison):
            return True
        if self._take("Boolean") or self._attempt(self._converter):
            return True
        if self._take("LParen") and self._boolean_expression() and self._take("RParen"):
            return True
        return self._reset(mark)

    def _comparison(self) -> bool:
        return self._value() and bool(self._take("OpComparison")) and self._value()
