"""Bounds on what one rendering may cost, so a hostile or broken override ends with a clean
error instead of running for minutes or filling memory.

Jinja's sandbox keeps templates away from Python's internals but not from exhausting the
machine: a macro that calls itself, ``"x" * 10**9``, nested loops over ``range(100000)``, a
string doubled in a loop. Per rendering, in a sandbox subclass:

- ``MAX_STEPS`` loop iterations and calls (macros, methods, ``range``) in all, and
  ``MAX_SECONDS`` of wall time, checked at every step;
- ``MAX_TEXT`` characters for any one value a template makes or prints (``*``, ``+``, ``~``,
  filters, methods, output), predicted before the operations that could multiply it; a value
  is weighed by the text it stands for, so a list holding one long string a thousand times
  weighs a thousand strings;
- ``MAX_OUTPUT`` characters produced in all (output, captured blocks and ``~`` included);
- integers a template passes to filters and methods up to ``MAX_ARGUMENT`` (widths, counts),
  and ``**`` up to ``MAX_POWER_BITS`` bits;
- recursion deeper than Python allows ends as an error, not a crash;
- ``%``-formatting and ``str.format`` are not available (a field width multiplies the text),
  nor the filters ``center``, ``format``, ``wordwrap``, ``batch`` and ``slice`` or the
  ``lipsum`` global; the collector config needs none of them.

A rendered collector config is about 5,000 characters, made in a few hundred steps: the bounds
are a hundred times what any real template needs.

Why the template's syntax tree is rewritten (through the environment's ``_parse``) rather than
bounded through the sandbox's public hooks alone (``call``, ``call_binop``, the output of
``generate``): a loop over a list runs none of them. Measured for issue 20 with a budget in
``call`` only: ``{% set xs = [0] * 30000 %}`` and two nested loops over ``xs`` ran 9 * 10**8
iterations in 19 s with not one step counted, and yielded no output to count until the end;
with 99,999 items (the hostile case ``c2-loop-over-a-list-for-minutes``) it would run for
minutes. Only loops rewritten to count their iterations (``bounded_loop``) end it in time, so
the rewrite stays, as small as that allows: loops, output pieces and ``~``.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

MAX_STEPS = 100_000
MAX_SECONDS = 2.0
MAX_TEXT = 1_000_000
MAX_OUTPUT = 2_000_000
MAX_ARGUMENT = 100_000
MAX_POWER_BITS = 100_000
_REMOVED_FILTERS = ("center", "format", "wordwrap", "batch", "slice")
_REMOVED_GLOBALS = ("lipsum",)
_REFUSED_METHODS = frozenset({"format", "format_map", "expandtabs"})


class BudgetExceeded(SecurityError):
    """A rendering went past one of the bounds; the message says which."""


class Budget:
    """What one rendering has spent."""

    def __init__(self) -> None:
        self.steps = 0
        self.produced = 0
        self.deadline = time.monotonic() + MAX_SECONDS

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise BudgetExceeded(
                f"ran more than {MAX_STEPS} loop iterations and calls; a template must not loop "
                "or recurse without end"
            )
        if self.steps % 64 == 0 and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"took longer than {MAX_SECONDS:g}s to render; simplify it")

    def produce(self, text: str) -> str:
        self.produced += len(text)
        if self.produced > MAX_OUTPUT:
            raise BudgetExceeded(
                f"produced more than {MAX_OUTPUT} characters; a collector config is a few thousand"
            )
        return text


_CURRENT: contextvars.ContextVar[Budget] = contextvars.ContextVar("nemo_gym_otel_render_budget")


def render_bounded(render: Callable[[], Iterable[str]]) -> str:
    """Run ``render`` (a template's ``generate``) under a fresh budget."""
    token = _CURRENT.set(Budget())
    try:
        return "".join(render())
    except RecursionError:
        raise BudgetExceeded(
            "recurses too deeply; a macro, include or extends must not call itself without end"
        ) from None
    finally:
        _CURRENT.reset(token)


def _budget() -> Budget:
    budget = _CURRENT.get(None)
    if budget is None:  # rendered outside render_bounded: still bounded
        budget = Budget()
        _CURRENT.set(budget)
    return budget


def weight(value: Any, limit: int = MAX_TEXT) -> int:
    """The characters and items ``value`` stands for, counted until past ``limit``: a list that
    holds one long string a thousand times weighs a thousand strings (its text would)."""
    if isinstance(value, str):
        return len(value)
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            total += 1
    return total


def _sized(value: Any) -> Any:
    if weight(value) > MAX_TEXT:
        raise BudgetExceeded(f"made a value longer than {MAX_TEXT} characters or items")
    return value


def _check_arguments(args: Iterable[Any]) -> None:
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_ARGUMENT:
            raise BudgetExceeded(f"passed a number above {MAX_ARGUMENT} to a filter or method")


def _predicted_length(method: Any, args: tuple[Any, ...]) -> int:
    """The length ``str.replace`` or ``str.join`` would produce, before producing it."""
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, str):
        return 0
    if (
        name == "replace"
        and len(args) >= 2
        and isinstance(args[0], str)
        and isinstance(args[1], str)
    ):
        return len(owner) + (owner.count(args[0]) + 1) * len(args[1])
    if name == "join" and args:
        return len(owner) * weight(args[0]) + weight(args[0])
    return 0


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox with the bounds above."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for name in _REMOVED_FILTERS:
            self.filters.pop(name, None)
        for name in _REMOVED_GLOBALS:
            self.globals.pop(name, None)
        self.filters = {name: _bounded_filter(f, name) for name, f in self.filters.items()}
        self.filters["bounded_loop"] = _bounded_loop
        self.filters["bounded_text"] = _bounded_text
        self.filters["counted"] = _counted
        self.filters["bounded_concat"] = _bounded_concat

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        _instrument(tree)
        return tree

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _budget().step()
        if getattr(__obj, "__name__", "") in _REFUSED_METHODS and isinstance(
            getattr(__obj, "__self__", None), str
        ):
            raise BudgetExceeded(
                "str.format, format_map and expandtabs are not available; join text with ~"
            )
        _check_arguments([*args, *kwargs.values()])
        _sized_total(_predicted_length(__obj, args))
        return _sized(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        sequences = (str, list, tuple)
        if operator == "%" and isinstance(left, str):
            raise BudgetExceeded("string formatting with % is not available; join text with ~")
        repeated = max(
            (
                weight(seq) * times
                for seq, times in ((left, right), (right, left))
                if isinstance(seq, sequences) and isinstance(times, int)
            ),
            default=0,
        )
        if operator == "*" and repeated > MAX_TEXT:
            raise BudgetExceeded(f"would repeat a value past {MAX_TEXT} characters or items")
        if operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
            _sized_total(weight(left) + weight(right))
        powers = operator == "**" and isinstance(left, int) and isinstance(right, int)
        if powers and right > 0 and right * abs(left).bit_length() > MAX_POWER_BITS:
            raise BudgetExceeded(f"would make a number of more than {MAX_POWER_BITS} bits")
        return super().call_binop(context, operator, left, right)


def _sized_total(length: int) -> None:
    if length > MAX_TEXT:
        raise BudgetExceeded(f"would make a value longer than {MAX_TEXT} characters or items")


def _bounded_filter(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``original`` taking and giving values within the bounds, its size predicted first where
    it could multiply its input; filters marked to receive a context or environment get it as
    their first argument."""
    offset = 1 if hasattr(original, "jinja_pass_arg") else 0

    def bounded(*args: Any, **kwargs: Any) -> Any:
        value, rest = (args[offset], args[offset + 1 :]) if len(args) > offset else ("", ())
        _sized(value)
        _check_arguments([*rest, *kwargs.values()])
        if name == "indent" and isinstance(value, str):
            width = rest[0] if rest else kwargs.get("width", 4)
            _sized_total((value.count("\n") + 1) * (width + 1) if isinstance(width, int) else 0)
        if name == "replace" and isinstance(value, str) and len(rest) >= 2:
            _sized_total(len(value) + (value.count(str(rest[0])) + 1) * len(str(rest[1])))
        if name == "join" and isinstance(value, (list, tuple)):
            separator = str(rest[0] if rest else kwargs.get("d", ""))
            _sized_total(len(separator) * len(value) + weight(value))
        if name == "sum" and isinstance(value, (list, tuple)):
            _sized_total(weight(value))
        return _sized(original(*args, **kwargs))

    bounded.__dict__.update(getattr(original, "__dict__", {}))  # keeps jinja's pass_* marks
    return bounded


# Both take the context so that Jinja never folds them into constants at compile time.
@pass_context
def _bounded_loop(context: Any, iterable: Any) -> Iterator[Any]:
    budget = _budget()
    for item in iterable:
        budget.step()
        yield item


@pass_context
def _bounded_text(context: Any, value: Any) -> Any:
    """Output or ``~``: weighed before Jinja turns it into text (``{{ big_list }}``)."""
    size = weight(value)
    if size > MAX_TEXT:
        raise BudgetExceeded(f"made a value longer than {MAX_TEXT} characters or items")
    budget = _budget()
    budget.produced += size
    if budget.produced > MAX_OUTPUT:
        budget.produce("")
    return value


@pass_context
def _bounded_concat(context: Any, parts: list[Any]) -> str:
    """``a ~ b ~ ...``: every part weighed before any becomes text, then joined as Jinja does."""
    _sized_total(sum(weight(part) for part in parts))
    return _bounded_text(context, "".join(str(part) for part in parts))


@pass_context
def _counted(context: Any, length: int) -> str:
    """The literal text of one output node, counted once per run of the node."""
    budget = _budget()
    budget.produced += length
    if budget.produced > MAX_OUTPUT:
        budget.produce("")
    return ""


def _instrument(tree: nodes.Template) -> None:
    """Every loop counts its iterations; every piece of output and every ``~`` is weighed (a
    ``~`` becomes one filter over the list of its parts)."""
    for loop in tree.find_all(nodes.For):
        loop.iter = _filter(loop.iter, "bounded_loop")
    for output in tree.find_all(nodes.Output):
        literal = sum(len(p.data) for p in output.nodes if isinstance(p, nodes.TemplateData))
        output.nodes = [
            _filter(nodes.Const(literal, lineno=output.lineno), "counted"),
            *(
                piece if isinstance(piece, nodes.TemplateData) else _filter(piece, "bounded_text")
                for piece in output.nodes
            ),
        ]
    for node in list(tree.find_all(nodes.Node)):
        if isinstance(node, nodes.Filter) and node.name == "bounded_text":
            continue
        for field, value in node.iter_fields():
            if isinstance(value, nodes.Concat):
                setattr(node, field, _concat(value))
            elif isinstance(value, list):
                value[:] = [_concat(v) if isinstance(v, nodes.Concat) else v for v in value]


def _concat(node: nodes.Concat) -> nodes.Filter:
    return _filter(nodes.List(node.nodes, lineno=node.lineno), "bounded_concat")


def _filter(node: nodes.Expr, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)
