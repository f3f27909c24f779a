"""Go's regular-expression syntax, read without Go.

The collector compiles the patterns of several components with ``regexp.Compile`` (RE2 syntax,
Perl flags) and refuses to start on one that does not compile; Python's ``re`` is another
dialect (it takes lookarounds and backreferences, which Go refuses, and refuses ``\\z``,
``\\Q...\\E``, ``\\pL`` or ``(?U)``, which Go takes), so it cannot stand in. This is a reading of
``regexp/syntax/parse.go`` (Go 1.26): its main loop, ``parsePerlFlags``, ``parseRepeat``,
``repeat`` with ``repeatIsValid``, ``parseEscape``, ``parseClass`` and its named, Unicode and Perl
classes, with the same error codes and the text they quote.

It may accept what Go refuses, never the reverse. Left to the collector: the size limits on the
compiled program and on a class's runes (``expression too large``, far beyond any config), and
Unicode class names (``\\p{Greek}``): any name of letters, digits, ``_``, ``-`` and spaces is
taken, since the tables grow with each Go release and a collector may be built with any.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MAX_REPEAT = 1000  # parse.go: a {n,m} count, and repeatIsValid's budget
_MAX_HEIGHT = 1000  # parse.go maxHeight
_PERL_CLASSES = frozenset(("\\d", "\\D", "\\s", "\\S", "\\w", "\\W"))
_POSIX_CLASSES = frozenset(
    f"[:{neg}{name}:]"
    for neg in ("", "^")
    for name in [
        "alnum",
        "alpha",
        "ascii",
        "blank",
        "cntrl",
        "digit",
        "graph",
        "lower",
        "print",
        "punct",
        "space",
        "upper",
        "word",
        "xdigit",
    ]
)
_CATEGORY_LETTERS = frozenset("CLMNPSZ")  # the one-letter Unicode categories (\pL)
_C_ESCAPES = frozenset("afnrtv")


class GoRegexpError(ValueError):
    """Go's ``regexp.Compile`` refuses the pattern; the message is Go's own."""

    def __init__(self, code: str, expr: str | _Text) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


class _Text:
    """The rest of a pattern from ``start``, as parse.go passes its string slices around. A
    slice of a Go string is free; a Python one copies, which made a 500 KB pattern cost seconds
    (quadratic). So ``t.rest(n)`` is another view of the same text, and only a bounded slice
    (``t[:n]``), an error's text or ``str(t)`` copies."""

    __slots__ = ("start", "text")

    def __init__(self, text: str, start: int = 0) -> None:
        self.text = text
        self.start = min(start, len(text))

    def __len__(self) -> int:
        return len(self.text) - self.start

    def __str__(self) -> str:
        return self.text[self.start :]

    def __getitem__(self, key: int | slice) -> str:
        """A character, or a bounded slice (``t[:n]``, ``t[a:b]``) as a string."""
        if isinstance(key, int):
            if not 0 <= key < len(self):
                raise IndexError(key)
            return self.text[self.start + key]
        assert key.stop is not None and key.step is None, "t.rest(n) is the view of t[n:]"
        return self.text[self.start + (key.start or 0) : self.start + key.stop]

    def rest(self, offset: int) -> _Text:
        """What Go writes ``t[offset:]``: the text after ``offset`` characters, not copied."""
        return _Text(self.text, self.start + offset)

    def startswith(self, prefix: str) -> bool:
        return self.text.startswith(prefix, self.start)

    def find(self, sub: str, offset: int = 0) -> int:
        found = self.text.find(sub, self.start + offset)
        return found - self.start if found >= 0 else -1


@dataclass
class _Node:
    """A node of the parse tree, as far as the checks need it: repeats with their counts (for
    ``repeatIsValid``), captures, the pseudo-nodes of the parse stack (``(`` and ``|``)."""

    op: str  # leaf, repeat, star, capture, concat, alternate; pseudo: paren, bar
    low: int = 0
    high: int = 0
    subs: list[_Node] = field(default_factory=list)
    capture: bool = False  # a paren's
    height: int = 1  # of the tree under it, counted as it is built (parse.go checkHeight)

    @property
    def pseudo(self) -> bool:
        return self.op in ("paren", "bar")


@dataclass(frozen=True)
class Captures:
    """The capturing groups of a pattern that compiles: their names in order, empty for an
    unnamed one (Go's ``SubexpNames`` without the whole match's), and the unnamed ones' offsets."""

    names: tuple[str, ...]
    unnamed: tuple[int, ...]


def check_go_regexp(pattern: str) -> Captures:
    """The pattern's capturing groups, or :class:`GoRegexpError` as ``regexp.Compile`` says it."""
    return _Parser(pattern).parse()


def go_regexp_error(pattern: str) -> str | None:
    """Go's error for the pattern, or None when it compiles."""
    try:
        check_go_regexp(pattern)
    except GoRegexpError as exc:
        return str(exc)
    return None


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.whole = pattern
        self.stack: list[_Node] = []
        self.names: list[str] = []
        self.unnamed: list[int] = []

    def parse(self) -> Captures:
        t = _Text(self.whole)
        last_repeat: _Text | None = None
        while t:
            repeat = None
            c = t[0]
            if c == "(":
                if t.startswith("(?"):
                    t = self._perl_flags(t)
                else:
                    self.unnamed.append(len(self.whole) - len(t))
                    self.names.append("")
                    self.stack.append(_Node("paren", capture=True))
                    t = t.rest(1)
            elif c == "|":
                self._bar()
                t = t.rest(1)
            elif c == ")":
                self._right_paren()
                t = t.rest(1)
            elif c in "^$.":
                self.stack.append(_Node("leaf"))
                t = t.rest(1)
            elif c == "[":
                t = self._class(t)
            elif c in "*+?":
                after = self._repeat("star", 0, 0, t, t.rest(1), last_repeat)
                repeat, t = t, after
            elif c == "{":
                parsed = _repeat_counts(t)
                if parsed is None:  # not a repeat: a literal {
                    self.stack.append(_Node("leaf"))
                    t = t.rest(1)
                else:
                    low, high, after = parsed
                    if low < 0 or low > _MAX_REPEAT or high > _MAX_REPEAT or 0 <= high < low:
                        raise GoRegexpError("invalid repeat count", t[: len(t) - len(after)])
                    after = self._repeat("repeat", low, high, t, after, last_repeat)
                    repeat, t = t, after
            elif c == "\\":
                t = self._backslash(t)
            else:
                self.stack.append(_Node("leaf"))
                t = t.rest(1)
            last_repeat = repeat
        self._concat()
        if self._swap_bar():
            self.stack.pop()
        self._alternate()
        if len(self.stack) != 1:
            raise GoRegexpError("missing closing )", self.whole)
        return Captures(tuple(self.names), tuple(self.unnamed))

    # -- the parse stack (parse.go push, concat, alternate, parseVerticalBar) ------------------

    def _collapse(self, op: str) -> None:
        """Replace the nodes above the topmost pseudo-node by one ``op`` node, its subs spliced
        in where they are ``op`` nodes themselves (parse.go concat, alternate, collapse)."""
        i = len(self.stack)
        while i > 0 and not self.stack[i - 1].pseudo:
            i -= 1
        subs = [
            leaf for node in self.stack[i:] for leaf in (node.subs if node.op == op else [node])
        ]
        del self.stack[i:]
        self.stack.append(subs[0] if len(subs) == 1 else self._built(_Node(op, subs=subs)))

    def _built(self, node: _Node) -> _Node:
        """The node with its height, or Go's refusal of a tree deeper than 1000."""
        node.height = 1 + max((sub.height for sub in node.subs), default=0)
        if node.height > _MAX_HEIGHT:
            raise GoRegexpError("expression nests too deeply", self.whole)
        return node

    def _concat(self) -> None:
        self._collapse("concat")

    def _alternate(self) -> None:
        self._collapse("alternate")

    def _bar(self) -> None:
        self._concat()
        if not self._swap_bar():
            self.stack.append(_Node("bar"))

    def _swap_bar(self) -> bool:
        """Keep a ``|`` pseudo-node on top, the alternative just read below it (parse.go
        swapVerticalBar); true if one is there."""
        if len(self.stack) >= 2 and self.stack[-2].op == "bar":
            self.stack[-2], self.stack[-1] = self.stack[-1], self.stack[-2]
            return True
        return False

    def _right_paren(self) -> None:
        self._concat()
        if self._swap_bar():
            self.stack.pop()
        self._alternate()
        if len(self.stack) < 2 or self.stack[-2].op != "paren":
            raise GoRegexpError("unexpected )", self.whole)
        inner = self.stack.pop()
        paren = self.stack.pop()
        self.stack.append(self._built(_Node("capture", subs=[inner])) if paren.capture else inner)

    def _repeat(
        self, op: str, low: int, high: int, before: _Text, after: _Text, last: _Text | None
    ) -> _Text:
        if after.startswith("?"):  # non-greedy
            after = after.rest(1)
        if last is not None:
            raise GoRegexpError(
                "invalid nested repetition operator", last[: len(last) - len(after)]
            )
        if not self.stack or self.stack[-1].pseudo:
            raise GoRegexpError(
                "missing argument to repetition operator", before[: len(before) - len(after)]
            )
        node = self._built(_Node(op, low=low, high=high, subs=[self.stack.pop()]))
        self.stack.append(node)
        if op == "repeat" and (low >= 2 or high >= 2) and not _repeat_is_valid(node, _MAX_REPEAT):
            raise GoRegexpError("invalid repeat count", before[: len(before) - len(after)])
        return after

    # -- groups and flags (parsePerlFlags) -----------------------------------------------------

    def _perl_flags(self, s: _Text) -> _Text:
        named = (s.startswith("(?P<") and len(s) > 4) or (s.startswith("(?<") and len(s) > 3)
        if named:
            start = 4 if s.startswith("(?P<") else 3
            end = s.find(">")
            if end < 0:
                raise GoRegexpError("invalid named capture", s)
            name = s[start:end]
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                raise GoRegexpError("invalid named capture", s[: end + 1])
            self.names.append(name)
            self.stack.append(_Node("paren", capture=True))
            return s.rest(end + 1)
        t = s.rest(2)  # flags change no verdict here: only their syntax is read
        negated = saw_flag = False
        while t:
            c, t = t[0], t.rest(1)
            if c in "imsU":
                saw_flag = True
            elif c == "-" and not negated:
                negated, saw_flag = True, False
            elif c in ":)":
                if negated and not saw_flag:
                    break
                if c == ":":
                    self.stack.append(_Node("paren"))
                return t
            else:
                break
        raise GoRegexpError("invalid or unsupported Perl syntax", s[: len(s) - len(t)])

    # -- escapes and classes ---------------------------------------------------------------

    def _backslash(self, t: _Text) -> _Text:
        if len(t) >= 2:
            kind = t[1]
            if kind in "AbBz":
                self.stack.append(_Node("leaf"))
                return t.rest(2)
            if kind == "C":
                raise GoRegexpError("invalid escape sequence", t[:2])
            if kind == "Q":
                end = t.find("\\E", 2)  # the literal runs to \E or to the end
                self.stack.extend(_Node("leaf") for _ in range((end if end >= 0 else len(t)) - 2))
                return t.rest(end + 2 if end >= 0 else len(t))
        rest = _unicode_class(t)
        if rest is None and t[:2] in _PERL_CLASSES:
            rest = t.rest(2)
        if rest is None:
            rest = _escape(t)
        self.stack.append(_Node("leaf"))
        return rest

    def _class(self, s: _Text) -> _Text:
        t = s.rest(1)
        if t.startswith("^"):
            t = t.rest(1)
        first = True
        while not t or t[0] != "]" or first:
            first = False
            if t.startswith("[:"):
                end = t.find(":]", 2)
                if end >= 0:
                    name = t[: end + 2]
                    if name not in _POSIX_CLASSES:
                        raise GoRegexpError("invalid character class range", name)
                    t = t.rest(end + 2)
                    continue
            rest = _unicode_class(t)
            if rest is None and t[:2] in _PERL_CLASSES:
                rest = t.rest(2)
            if rest is not None:
                t = rest
                continue
            whole = t
            low, t = _class_char(t, s)
            if len(t) >= 2 and t[0] == "-" and t[1] != "]":
                high, t = _class_char(t.rest(1), s)
                if high < low:
                    raise GoRegexpError(
                        "invalid character class range", whole[: len(whole) - len(t)]
                    )
        self.stack.append(_Node("leaf"))
        return t.rest(1)


def _repeat_counts(s: _Text) -> tuple[int, int, _Text] | None:
    """parse.go parseRepeat: (min, max, rest) of ``{n}``, ``{n,}`` (max -1), ``{n,m}``, min -1
    for a number too big; None when the text is not a repeat (then ``{`` is a literal)."""
    low_rest = _int(s.rest(1))
    if low_rest is None:
        return None
    low, t = low_rest
    if not t:
        return None
    if t[0] != ",":
        high = low
    else:
        t = t.rest(1)
        if not t:
            return None
        if t[0] == "}":
            high = -1
        else:
            high_rest = _int(t)
            if high_rest is None:
                return None
            high, t = high_rest
            if high < 0:
                low = -1
    if not t or t[0] != "}":
        return None
    return low, high, t.rest(1)


def _int(s: _Text) -> tuple[int, _Text] | None:
    """parse.go parseInt: decimal digits without a leading zero; -1 past nine digits (any count
    past 1000 is refused alike)."""
    if not s or not "0" <= s[0] <= "9" or (len(s) >= 2 and s[0] == "0" and "0" <= s[1] <= "9"):
        return None
    end = 0
    while end < len(s) and "0" <= s[end] <= "9":
        end += 1
    return (int(s[:end]) if end <= 9 else -1), s.rest(end)


def _repeat_is_valid(root: _Node, budget: int) -> bool:
    """parse.go repeatIsValid: nested counted repeats make no more than ``budget`` copies
    (walked with a list, not recursion: a tree may be 1000 deep)."""
    pending = [(root, budget)]
    while pending:
        node, left = pending.pop()
        if node.op == "repeat":
            count = node.high if node.high >= 0 else node.low
            if count == 0:
                continue
            if count > left:
                return False
            left //= count
        pending.extend((sub, left) for sub in node.subs)
    return True


def _unicode_class(t: _Text) -> _Text | None:
    """The rest after ``\\pX``, ``\\p{Name}`` (``P`` negates, ``^`` too), or None if ``t`` does
    not start with one."""
    if len(t) < 2 or t[0] != "\\" or t[1] not in "pP":
        return None
    if len(t) < 3:
        raise GoRegexpError("invalid character class range", t)
    if t[2] != "{":
        if t[2].upper() not in _CATEGORY_LETTERS:
            raise GoRegexpError("invalid character class range", t[:3])
        return t.rest(3)
    end = t.find("}")
    if end < 0:
        raise GoRegexpError("invalid character class range", t)
    name = t[3:end].removeprefix("^")
    if not name or not all(ch.isascii() and (ch.isalnum() or ch in "_- ") for ch in name):
        raise GoRegexpError("invalid character class range", t[: end + 1])
    return t.rest(end + 1)


def _class_char(t: _Text, whole_class: _Text) -> tuple[int, _Text]:
    """parse.go parseClassChar: one character of a class, escaped or not, as a code point."""
    if not t:
        raise GoRegexpError("missing closing ]", whole_class)
    if t[0] == "\\":
        return _escaped_rune(t)
    return ord(t[0]), t.rest(1)


def _escape(t: _Text) -> _Text:
    return _escaped_rune(t)[1]


def _escaped_rune(s: _Text) -> tuple[int, _Text]:
    """parse.go parseEscape: the code point of the escape at the start of ``s``, and the rest."""
    t = s.rest(1)
    if not t:
        raise GoRegexpError("trailing backslash at end of expression", "")
    c, t = t[0], t.rest(1)
    if c.isascii() and not c.isalnum():
        return ord(c), t
    if (c in "1234567" and t and "0" <= t[0] <= "7") or c == "0":
        value = int(c)
        for _ in range(2):
            if not t or not "0" <= t[0] <= "7":
                break
            value, t = value * 8 + int(t[0]), t.rest(1)
        return value, t
    if c == "x" and t:
        if t[0] == "{":
            t, value, digits = t.rest(1), 0, 0
            while t:  # any number of hex digits up to the largest code point, then }
                c, t = t[0], t.rest(1)
                if c == "}":
                    if digits:
                        return value, t
                    break
                if not _is_hex(c):
                    break
                value, digits = value * 16 + int(c, 16), digits + 1
                if value > 0x10FFFF:
                    break
        elif len(t) >= 2 and _is_hex(t[:2]):
            return int(t[:2], 16), t.rest(2)
        else:
            t = t.rest(2)
    elif c in _C_ESCAPES:
        return ord({"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}[c]), t
    raise GoRegexpError("invalid escape sequence", s[: len(s) - len(t)])


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in text)
