"""OTTL statements and conditions, judged by the package as the line's collector judges them.

The reader follows upstream's grammar (pkg/ottl/grammar.go); function and path names come from
the generated facts (tools/generate-ottl-facts). Each refused case names the YAML path of the
string and says what to fix; the accepted cases are shapes the collector accepts (the upstream
corpus, tests/test_upstream_corpus.py, puts every valid upstream config before both judges).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.executors.otel import (
    CollectorConfigError,
    CollectorConfigWarning,
    validate_collector_config,
)
from nemo_gym.orchestration.executors.otel._checks import ottl as ottl_reader
from nemo_gym.orchestration.executors.otel._checks.ottl import (
    MAX_NESTING,
    OttlSyntaxError,
    OttlTooDeep,
    read_condition,
    read_statement,
    tokens,
)
from nemo_gym.orchestration.executors.otel._checks.ottl_rules import _Judge, ottl_facts


def _validate(kind: str, body: str, signal: str = "traces", version: str = "0.161.0") -> None:
    text = helpers.one_processor_config(kind, body, signal)
    validate_collector_config(text, collector_version=version)


REFUSED = [
    (
        "transform",
        "log_statements:\n  - context: log\n    statements:\n"
        '      - \'set(attributes["l"], Filter(attributes["a"], (x) => x > 2))\'',
        "processors.transform/x.log_statements[0].statements[0]",
        "passes a lambda expression .* feature gate ottl.functions.enableLambda",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        '      - \'set(name, "bear" where attributes["a"] == "b"\'',
        "processors.transform/x.trace_statements[0].statements[0]",
        "invalid syntax near `where attr`",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'keep_key(attributes, [\"a\"])'",
        "processors.transform/x.trace_statements[0].statements[0]",
        "calls 'keep_key', which is not an OTTL editor of the transform processor in the "
        "span context at v0.1[46]1.0; did you mean 'keep_keys'?",
    ),
    (
        "transform",
        'trace_statements:\n  - \'set(span.name, Concatt([span.name, "x"], ""))\'',
        "processors.transform/x.trace_statements[0]",
        "calls 'Concatt', which is not an OTTL converter .* did you mean 'Concat'?",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'set(attributes[\"a\"], attributes[test])'",
        "processors.transform/x.trace_statements[0].statements[0]",
        "reads 'test', which is not a path of the span context .* quote a map key",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'set(attributes[\"a\"], resource.nmae)'",
        "processors.transform/x.trace_statements[0].statements[0]",
        "reads 'resource.nmae', which is not a path of the span context",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements: ['Set(name, \"x\")']",
        "processors.transform/x.trace_statements[0].statements[0]",
        "editor names must start with a lowercase letter but got 'Set'",
    ),
    (  # both platform binaries: undefined function "extract_sum_metric"
        "transform",
        "metric_statements:\n  - context: datapoint\n    statements:\n"
        "      - 'extract_sum_metric(true) where metric.type == METRIC_DATA_TYPE_HISTOGRAM'",
        "processors.transform/x.metric_statements[0].statements[0]",
        "not an OTTL editor of the transform processor in the datapoint context .* "
        "registered in the metric context only",
    ),
    (  # both platform binaries: undefined function "HasAttrOnDatapoint"
        "filter",
        'metrics:\n  datapoint:\n    - \'HasAttrOnDatapoint("a", "b")\'',
        "processors.filter/x.metrics.datapoint[0]",
        "calls 'HasAttrOnDatapoint', .* registered in the metric context only",
    ),
    (
        "filter",
        "traces:\n  span:\n    - attributes[\"a\"] == 'single'",
        "processors.filter/x.traces.span[0]",
        "invalid input text .* use double quotes",
    ),
    (
        "filter",
        'trace_conditions:\n  - context: abc\n    conditions: [\'attributes["a"] == "b"\']',
        "processors.filter/x.trace_conditions[0].context",
        "'abc' is not an OTTL context of the filter processor .* use one of resource, "
        "scope, span, spanevent",
    ),
    (
        "filter",
        "trace_conditions:\n  - 'span.attributes[\"a\"] == '",
        "processors.filter/x.trace_conditions[0]",
        "OTTL condition .* invalid syntax",
    ),
    (
        "filter",
        "traces:\n  span:\n    - 'is_match(name, \"x\")'",
        "processors.filter/x.traces.span[0]",
        "is_match.* invalid syntax",
    ),
]

# Arguments as pkg/ottl buildArgs counts and names them (functions.go), on both lines.
REFUSED += [
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n      - 'set(name)'",
        "processors.transform/x.trace_statements[0].statements[0]",
        r"calls set with 1 argument\(s\), and it takes 2 \(target, value\)",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'set(name, Concat([name, \"x\"]))'",
        "processors.transform/x.trace_statements[0].statements[0]",
        r"calls Concat with 1 argument\(s\), and it takes 2 \(vals, delimiter\)",
    ),
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        '      - \'replace_pattern(name, "a", replace="b")\'',
        "processors.transform/x.trace_statements[0].statements[0]",
        "calls replace_pattern with the argument name 'replace', and its parameters are target, "
        "regex_pattern, replacement, function, replacement_format",
    ),
    (
        "filter",
        "traces:\n  span:\n    - 'IsMatch(target=name, \"x\")'",
        "processors.filter/x.traces.span[0]",
        "calls IsMatch with a positional argument after a named one",
    ),
]

# Enum symbols as each context's parseEnum takes them (its own SymbolTable; none in resource).
REFUSED += [
    (
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'set(name, \"x\") where kind == SPAN_KIND_SERVR'",
        "processors.transform/x.trace_statements[0].statements[0]",
        "uses the enum symbol SPAN_KIND_SERVR, which the span context does not know at "
        "v0.1[46]1.0; did you mean SPAN_KIND_SERVER?",
    ),
    (
        "transform",
        "trace_statements:\n  - context: resource\n    statements:\n"
        '      - \'set(attributes["k"], "x") where SPAN_KIND_SERVER == 1\'',
        "processors.transform/x.trace_statements[0].statements[0]",
        "uses the enum symbol SPAN_KIND_SERVER, which the resource context does not know .* "
        "the span and spanevent contexts have it",
    ),
]


# Argument values as pkg/ottl buildArg takes them for their field's type, on both lines.
REFUSED += [
    (  # Limit int64: -1 is an expression (the lexer's Int has no sign)
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'truncate_all(attributes, -1)'",
        "processors.transform/x.trace_statements[0].statements[0]",
        r"calls truncate_all with limit \(argument 2\) not of its type: it must be an int",
    ),
    (  # Target GetSetter: a converter's result cannot be set
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n      - 'set(String(name), \"x\")'",
        "processors.transform/x.trace_statements[0].statements[0]",
        r"calls set with target \(argument 1\) not of its type: it must be a path",
    ),
    (  # PriorityKeys []string: each element a string literal
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        "      - 'limit(attributes, 10, [\"a\", name])'",
        "processors.transform/x.trace_statements[0].statements[0]",
        "calls limit with priority_keys .* has at list index 1 an element that must be a string",
    ),
    (  # Function FunctionGetter, named
        "transform",
        "trace_statements:\n  - context: span\n    statements:\n"
        '      - \'replace_pattern(name, "a", "b", function="SHA256")\'',
        "processors.transform/x.trace_statements[0].statements[0]",
        r"calls replace_pattern with function \(argument 4\) not of its type: it must name a",
    ),
]


def test_text_nested_past_the_bound_is_left_to_the_collector_with_a_warning() -> None:
    """Each level of nesting costs the reader Python frames; past MAX_NESTING it reads nothing
    (no RecursionError, whoever calls) and says so, and up to it it judges as ever."""
    at_bound = "(" * MAX_NESTING + "nmae == 1" + ")" * MAX_NESTING
    with pytest.raises(CollectorConfigError, match="reads 'nmae', which is not a path"):
        _validate("filter", f"traces:\n  span:\n    - '{at_bound}'")
    for depth in (MAX_NESTING + 1, 1000, 50_000):
        deep = "(" * depth + "nmae == 1" + ")" * depth
        with pytest.warns(CollectorConfigWarning) as caught:
            _validate("filter", f"traces:\n  span:\n    - '{deep}'")
        [message] = [str(w.message) for w in caught if "OTTL" in str(w.message)]
        assert message == (
            f"processors.filter/x.traces.span[0]: OTTL condition nests {depth} levels deep, "
            f"and the package reads {MAX_NESTING}; it is left to the collector: run `check` "
            "or `validate` with --collector, or nest it less"
        )
    # A lambda's body may be a lambda, nesting without brackets: each arrow counts, here on top
    # of the three levels of parentheses.
    lambdas = "set(name, F(" + "(x) => " * MAX_NESTING + "1))"
    with pytest.raises(OttlTooDeep, match=f"nests {MAX_NESTING + 3} levels deep"):
        read_statement(lambdas)


def _upstream_e2e_strings(release: str) -> list[tuple[str, str]]:
    """(mode, text) of every statement and condition ``pkg/ottl``'s own end-to-end tests run
    at ``release`` (``e2e/e2e_test.go`` in the Go module cache, which ``tools/build-otelcol``
    fills), but those of the test of bare value expressions, which are neither."""
    go = shutil.which("go")
    if go is None:
        helpers.unavailable(
            "go is not on PATH: the test reads pkg/ottl's tests in the Go module cache"
        )
    cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    source = (
        Path(cache.stdout.strip())
        / "github.com/open-telemetry/opentelemetry-collector-contrib/pkg"
        / f"ottl@{release}/e2e/e2e_test.go"
    )
    if not source.is_file():
        helpers.unavailable(
            f"{source} is missing: run tools/build-otelcol to fill the Go module cache"
        )
    tests = source.read_text(encoding="utf-8").split("\nfunc ")
    found = []
    for test in tests:
        if test.startswith("Test_e2e_ottl_value_expressions("):
            continue
        for mode, literal in re.findall(
            r'(statement|condition):\s*(`[^`]*`|"(?:\\.|[^"\\])*")', test
        ):
            text = literal[1:-1] if literal[0] == "`" else json.loads(literal)
            found.append((mode, text))
    return found


@pytest.mark.parametrize("line", ["current", "legacy"])
def test_upstream_s_own_e2e_statements_are_read_and_their_calls_accepted(line: str) -> None:
    """Data nobody here wrote: every statement and condition of pkg/ottl's end-to-end tests at
    the line's release parses, and no call in it is refused for its arguments' count, names or
    kinds (the tests run them through the real parser with the standard functions)."""
    facts = ottl_facts(f"collector-{line}.schema.json")
    assert facts is not None
    strings = _upstream_e2e_strings(facts["release"])
    assert len(strings) > 200  # 288 at v0.161.0, 219 at v0.141.0
    judge = _Judge(facts, "transform")
    refused = []
    for mode, text in strings:
        reading = read_statement(text) if mode == "statement" else read_condition(text)
        for function, names, kinds in reading.arguments:
            refusal = judge._arguments_refusal(function, names, kinds)
            if refusal:
                refused.append(f"{text}: {function} {refusal}")
    assert refused == []


def test_each_argument_is_read_with_its_kind() -> None:
    """The kinds buildArg tells apart: a lone number is a literal, a signed one or one with an
    operator an expression; a path keeps its keys, a converter its index; a list says what its
    elements are; a function's name alone is a function, a lone symbol an enum."""
    reading = read_statement(
        'f(1, 1.5, -1, 1 + 2, name, attributes["a"], Int(name)["k"], "s", true, nil, 0x0a, '
        '{"k": 1}, ["a", 2, name], SPAN_KIND_SERVER, Sha256)'
    )
    [(function, names, kinds)] = reading.arguments[:1]
    assert function == "f" and names == ("",) * 15
    assert kinds == (
        ("int",),
        ("float",),
        ("math",),
        ("math",),
        ("path",),
        ("path",),
        ("converter",),
        ("string",),
        ("bool",),
        ("nil",),
        ("bytes",),
        ("map",),
        ("list", "string", "int", "path"),
        ("enum",),
        ("function",),
    )
    assert read_condition('IsMatch(target=name, pattern="x")').arguments == [
        ("IsMatch", ("target", "pattern"), (("path",), ("string",)))
    ]


@pytest.mark.parametrize(
    ("kind", "body", "path", "says", "version"),
    [
        (*case, version)
        for case in REFUSED
        for version in ("0.161.0", "0.141.0")
        # the context-inferred filter lists came after v0.141.0
        if not ("_conditions" in case[1] and version == "0.141.0")
    ],
)
def test_a_refused_ottl_string_is_named_with_its_fix(
    kind: str, body: str, path: str, says: str, version: str
) -> None:
    with pytest.raises(CollectorConfigError) as caught:
        _validate(kind, body, version=version)
    lines = [line for line in str(caught.value).splitlines() if line.lstrip().startswith(path)]
    assert lines, str(caught.value)
    assert any(re.search(says, line) for line in lines), lines


@pytest.mark.parametrize(
    ("kind", "body", "signal"),
    [
        (
            "transform",
            "trace_statements:\n  - context: spanevent\n    statements:\n"
            "      - 'set(attributes[\"n\"], span.name) where span.kind == SPAN_KIND_SERVER'\n"
            '      - \'set(cache["x"], Split(name, ",")[0])\'\n'
            "      - 'set(attributes[\"s\"], instrumentation_scope.name)'",
            "traces",
        ),
        (
            "transform",
            "metric_statements:\n  - context: datapoint\n    statements:\n"
            "      - 'set(attributes[\"m\"], metric.name) where value_double > 1.5 * (2 + -1)'\n"
            "  - context: metric\n    statements:\n"
            "      - 'extract_sum_metric(true) where metric.type == METRIC_DATA_TYPE_HISTOGRAM'",
            "metrics",
        ),
        (
            "transform",
            "log_statements:\n  - context: log\n    conditions: ['IsMap(body)']\n    statements:\n"
            '      - \'merge_maps(attributes, ParseJSON(body), "upsert") where '
            'body != nil and not IsMatch(body, "^x")\'\n'
            '      - \'set(attributes["m"], {"a": [1, 2], "b": 0x0a})\'',
            "logs",
        ),
        (
            "filter",
            'metrics:\n  metric:\n    - \'HasAttrOnDatapoint("a", "b")\'\n'
            '  datapoint:\n    - \'metric.name == "x" and attributes["k"] != nil\'',
            "metrics",
        ),
    ],
)
def test_statements_the_collector_accepts_pass(kind: str, body: str, signal: str) -> None:
    """Each body as both lines' platform collectors accepted it (validate, v0.161.0 and
    v0.141.0)."""
    for version in ("0.161.0", "0.141.0"):
        _validate(kind, body, signal=signal, version=version)


def test_the_lexer_takes_the_first_rule_that_matches() -> None:
    """As participle's simple lexer: ``nil`` alone is Nil, inside a word it is a name;
    ``IsMatch`` is four tokens that the grammar joins into one function name."""
    assert [t.kind for t in tokens("nil nilly")] == ["Nil", "Lowercase"]
    assert [t.text for t in tokens("IsMatch")] == ["I", "s", "M", "atch"]
    assert read_condition('IsMatch(name, "x")').calls == [("converter", "IsMatch")]
    with pytest.raises(OttlSyntaxError, match="invalid input text"):
        tokens("a && b")
    with pytest.raises(OttlSyntaxError, match="converter names must start with an uppercase"):
        read_statement("set(name, set(name, 1))")
    assert read_statement('delete_key(resource.attributes, "k")').paths == [
        ("resource", "attributes")
    ]


def _participle_tokens(text: str) -> list[tuple[str, str, int]] | int:
    """Participle's simple lexer as written: each rule in order against the rest of the text
    (sliced, so a leading \\b sees a boundary), the first that matches wins; the offset where
    none does."""
    rules = [(kind, re.compile(pattern, re.ASCII)) for kind, pattern in ottl_reader._RULES]
    found, offset = [], 0
    while offset < len(text):
        rest = text[offset:]
        for kind, pattern in rules:
            match = pattern.match(rest)
            if match and match.end():
                if kind != "whitespace":
                    found.append((kind, match[0], offset))
                offset += match.end()
                break
        else:
            return offset
    return found


def test_the_lexer_tokenises_as_participle_does() -> None:
    """The lexer matches one alternation in place (linear); participle tries each rule on the
    rest of the text. Same tokens on 20,000 strings of the pieces where they could differ
    (keywords after a letter, \\b, numbers, strings, operators)."""
    pieces = [*'aAnN_x019 ."\\()[]{}:,=<>!+-*/&|\t', "nil", "not", "or", "and", "true", "0x1f"]
    pieces += ["1.5e3", "false", "=>", "=="]
    chooser = random.Random(20261206)
    for _ in range(20_000):
        text = "".join(chooser.choice(pieces) for _ in range(chooser.randint(1, 16)))
        try:
            ours: list[tuple[str, str, int]] | int = [
                (t.kind, t.text, t.offset) for t in tokens(text)
            ]
        except OttlSyntaxError as exc:
            ours = int(str(exc).rsplit(" ", 1)[1])
        assert ours == _participle_tokens(text), text


def test_the_facts_name_the_standard_functions_of_each_line() -> None:
    """Spot checks against upstream's sources: ``set`` on both lines, ``delete_index`` and the
    ``otelcol`` context only at v0.161.0 (absent from v0.141.0's ottlfuncs and contexts), the
    metric-only functions of the transform processor (internal/metrics/functions.go
    MetricFunctions) and the filter processor (filterottl StandardMetricFuncs)."""
    current = json.loads((helpers.REPO / "schemas" / "ottl-current.json").read_text("utf-8"))
    legacy = json.loads((helpers.REPO / "schemas" / "ottl-legacy.json").read_text("utf-8"))
    transform = current["functions"]["transform"]
    assert "set" in transform["span"]["editors"]
    assert "set" in legacy["functions"]["transform"]["span"]["editors"]
    assert "delete_index" in transform["log"]["editors"]
    assert "delete_index" not in legacy["functions"]["transform"]["log"]["editors"]
    assert "extract_sum_metric" in transform["metric"]["editors"]
    assert "extract_sum_metric" not in transform["datapoint"]["editors"]
    assert "IsRootSpan" in transform["span"]["converters"]
    assert "IsRootSpan" not in transform["log"]["converters"]
    assert "HasAttrOnDatapoint" in current["functions"]["filter"]["metric"]["converters"]
    # Each factory's arguments struct (func_replace_pattern.go ReplacePatternArguments, its
    # Optional[FunctionGetter[K]] read as FunctionGetter; Now's factory takes nil), read the same
    # at both releases.
    for facts in (current, legacy):
        signatures = facts["arguments"]["transform"]
        assert signatures["replace_pattern"] == [
            {
                "fields": [
                    "Target",
                    "RegexPattern",
                    "Replacement",
                    "Function",
                    "ReplacementFormat",
                ],
                "required": 3,
                "types": [
                    "GetSetter",
                    "StringGetter",
                    "StringGetter",
                    "FunctionGetter",
                    "StringGetter",
                ],
            }
        ]
        assert signatures["Now"] == [None]
        # contexts/internal/ctxspan/symbols.go; ctxdatapoint copies ctxmetric's table in.
        assert "SPAN_KIND_SERVER" in facts["contexts"]["span"]["enums"]
        assert facts["contexts"]["resource"]["enums"] == []
        assert {"FLAG_NONE", "METRIC_DATA_TYPE_SUM"} <= set(facts["contexts"]["datapoint"]["enums"])
        assert signatures["extract_sum_metric"] == [
            {"fields": ["Monotonic", "Suffix"], "required": 1, "types": ["bool", "string"]}
        ]
    assert "HasAttrOnDatapoint" not in current["functions"]["filter"]["datapoint"]["converters"]
    assert "otelcol" in current["contexts"]["span"]["paths"]
    assert "otelcol" not in legacy["contexts"]["span"]["paths"]
