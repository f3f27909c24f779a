"""Every user-supplied string reaches the collector exactly as written.

The rendered YAML is parsed, the collector's own expansion rules are applied to it, and the
resulting values are compared with the inputs. Values no collector could hold (control
characters) are refused with an error naming their key.
"""

from __future__ import annotations

import copy
import string

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support import helpers
from support.collector_expansion import expand_tree

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import SubmitConfigError, render_collector_config

COLLECTOR_ENV = {"SLURM_JOB_ID": "4242", "OTEL_TOKEN": "tok", "HOME": "/home/collector"}

# Any printable text: YAML and collector syntax included, control characters excluded.
free_text = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs"),
        blacklist_characters="\x85",
    ),
    min_size=1,
    max_size=40,
)
tricky = st.sampled_from(
    [
        '"',
        "'",
        ":",
        ": ",
        "#",
        " #",
        "&a",
        "*a",
        "!tag",
        "{",
        "}",
        "[",
        "]",
        "$",
        "$$",
        "${env:HOME}",
        "${HOME}",
        "$${x}",
        "{{ x }}",
        "{% if %}",
        "\\",
        "\\n",
        "ü",
        "模型",
        "🚀",
        "\u2028",
        "\ufeff",
        " ",
        "-",
        "?",
    ]
)
user_text = st.one_of(
    free_text, st.lists(st.one_of(tricky, free_text), min_size=1, max_size=5).map("".join)
)
# What a job directory may not hold (its own tests: test_job_dir.py, the hostile corpus): the
# glob characters where there is something to scrape (Prometheus reads the targets files' paths
# as patterns), and what breaks the Prometheus receiver's YAML.
PROMETHEUS_REFUSES = "\u2028\u2029\ufffe\uffff"
REFUSED_IN_JOB_DIR = "*?[\\" + PROMETHEUS_REFUSES


def _folder_ok(text: str) -> bool:
    return not any(char in REFUSED_IN_JOB_DIR for char in text)


# Path segments: anything but "/" and NUL (which POSIX forbids), the dot entries and the above.
segment = (
    user_text.map(lambda s: s.replace("/", "_"))
    .filter(lambda s: s not in (".", ".."))
    .filter(_folder_ok)
)


def _attributes(parsed: dict) -> dict:
    return {
        a["key"]: a["value"]
        for a in parsed["processors"]["resource/job"]["attributes"]
        if "value" in a
    }


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    model=user_text,
    benchmark=user_text,
    gym_job_id=segment,
    output_leaf=segment,
    service_name=user_text,
    # The scrape jobs' prefix reaches the Prometheus receiver, whose YAML breaks on what the job
    # directory may not hold either (tests/data/malformed/59-*); a '%' in a URL starts an escape
    # (61-*), so it is written as one.
    component=user_text.filter(lambda s: not any(c in PROMETHEUS_REFUSES for c in s)),
    url_path=user_text.map(lambda s: "".join("_" if c.isspace() else c for c in s)).map(
        lambda s: s.replace("%", "%25")
    ),
    line=st.sampled_from(sorted(helpers.line_versions())),
)
def test_user_strings_survive_rendering_and_collector_expansion(
    example_mapping: dict,
    model: str,
    benchmark: str,
    gym_job_id: str,
    output_leaf: str,
    service_name: str,
    component: str,
    url_path: str,
    line: str,
) -> None:
    mapping = copy.deepcopy(example_mapping)
    mapping["services"]["policy"]["served_model_name"] = model
    mapping["driver"]["benchmarks"] = {benchmark: {}}
    mapping["job"]["output_path"] = f"/lustre/{output_leaf}"
    mapping["otel"].update(
        service_name=service_name,
        component=component,
        endpoint=f"https://otlp.example.internal/{url_path}",
        collector_version=helpers.line_versions()[line],
    )
    config = SubmitConfig.from_dict(mapping)
    # The benchmark's folder: a path segment, so no "/" and never "." or ".." (both refused).
    leaf = benchmark.replace("/", "_")
    assume(_folder_ok(leaf))  # the benchmark's value may hold anything; its folder may not
    bench_dir = f"/lustre/{output_leaf}/{gym_job_id}/{'_' + leaf if leaf in ('.', '..') else leaf}"
    text = render_collector_config(config, benchmark, bench_dir)
    seen = expand_tree(yaml.safe_load(text), COLLECTOR_ENV)

    attributes = _attributes(seen)
    assert attributes["model"] == model
    assert attributes["benchmark"] == benchmark
    assert attributes["service.name"] == service_name
    assert attributes["run_id"] == gym_job_id
    assert attributes["slurm_job_id"] == "4242"
    exporters = seen["exporters"]
    suffix = helpers.FILE_SUFFIXES[line]
    assert exporters["file/traces"]["path"] == f"{bench_dir}/otel/traces{suffix}"
    backend = next(v for k, v in exporters.items() if k.endswith("/backend"))
    assert backend["endpoint"] == f"https://otlp.example.internal/{url_path}"
    assert backend["headers"]["Authorization"] == "Bearer tok"
    jobs = [j["job_name"] for j in seen["receivers"]["prometheus"]["config"]["scrape_configs"]]
    assert f"{component}/policy" in jobs


@pytest.mark.parametrize(
    ("key", "edit"),
    [
        (
            "services.policy.served_model_name",
            lambda m: m["services"]["policy"].update(served_model_name="a\nb"),
        ),
        (
            "services.policy.model",  # no served_model_name: the model attribute is model
            lambda m: m["services"].update(policy={"type": "vllm", "model": "org/m\nv2"}),
        ),
        ("otel.component", lambda m: m["otel"].update(component="tab\there")),
        ("otel.service_name", lambda m: m["otel"].update(service_name="bell\x07")),
        ("remote_bench_dir", lambda m: m["job"].update(output_path="/runs\r")),
    ],
)
def test_control_characters_are_refused_naming_the_key(
    example_mapping: dict, key: str, edit
) -> None:
    edit(example_mapping)
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError, match="control character") as caught:
        render_collector_config(config, "aime25", f"{config.job.output_path}/g1/aime25")
    assert caught.value.path == key


def test_newline_in_benchmark_name_is_refused(example_mapping: dict) -> None:
    example_mapping["driver"]["benchmarks"] = {"aime\n25": {}}
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError, match="control character") as caught:
        render_collector_config(config, "aime\n25", "/runs/g1/aime25")
    assert caught.value.path == 'driver.benchmarks["aime\\n25"]', "one line, even for this key"


@pytest.mark.parametrize("bench_dir", ["/runs/g1/.", "/runs/g1/..", "/runs/./g1/aime25"])
def test_dot_segments_in_the_job_dir_are_refused(example_mapping: dict, bench_dir: str) -> None:
    """run_id is the job directory's parent's name; "." or ".." would make it another folder's."""
    config = SubmitConfig.from_dict(example_mapping)
    with pytest.raises(SubmitConfigError, match=r"'\.' or '\.\.'") as caught:
        render_collector_config(config, "aime25", bench_dir)
    assert caught.value.path == "remote_bench_dir"


def test_hostile_fixture_reaches_collector_verbatim() -> None:
    """The hand-picked hostile config, checked value by value against its own source file."""
    source = helpers.load_mapping(helpers.REPO / "tests" / "data" / "configs" / "hostile.yaml")
    config = SubmitConfig.from_dict(source)
    benchmark = next(iter(source["driver"]["benchmarks"]))
    bench_dir = f"{source['job']['output_path']}/g1/{benchmark}"
    seen = expand_tree(
        yaml.safe_load(render_collector_config(config, benchmark, bench_dir)), COLLECTOR_ENV
    )
    attributes = _attributes(seen)
    assert attributes["model"] == source["services"]["policy"]["served_model_name"]
    assert attributes["benchmark"] == benchmark
    assert attributes["cluster"] == "eos-2"
    assert seen["exporters"]["file/logs"]["path"] == f"{bench_dir}/otel/logs.jsonl.zst"
    assert "${" not in "".join(string.printable)  # sanity of the alphabet used above
