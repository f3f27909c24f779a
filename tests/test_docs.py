"""The README and the documentation site in ``docs/`` (issue 20).

What can be checked without MkDocs is checked here: the README stays a page (at most 400
lines), every relative link of the README and of ``docs/`` reaches a file and a heading that
exist, the README's ``otel`` table and the blocks tables agree with the schema and the template
skeleton they describe, the README's worked ``super()`` override renders exactly as shown, and
the API reference names every public name. The site itself is built with
``mkdocs build --strict`` in ``.ci/run``'s documentation step, once, and not here: the suite
then needs no MkDocs (the lowest-versions run installs only ``.[test]``), and nothing in it
skips for want of MkDocs, under ``CI=true`` or not.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors import otel

README = helpers.REPO / "README.md"
DOCS = helpers.REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
OVERRIDING = DOCS / "guide" / "overriding-templates.md"
API_PAGE = DOCS / "reference" / "api.md"
SKELETON = helpers.REPO / "templates" / "_base" / "collector.yaml.j2"

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\n)*?\]\(([^()\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without fenced code blocks (their ``#`` lines are no headings, their brackets
    no links)."""
    return _FENCE.sub("", text)


def _heading_text(raw: str) -> str:
    """A heading as the reader sees it: code spans, emphasis and link targets dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return text.replace("`", "").replace("*", "")


def _slug_site(text: str) -> str:
    """Python-Markdown's ``toc`` slug (what MkDocs makes of a heading)."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _slug_github(text: str) -> str:
    """GitHub's heading anchor (what a reader of the Markdown on GitHub follows)."""
    value = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return value.replace(" ", "-")


def _anchors(path: Path) -> list[str]:
    return [_slug_site(_heading_text(m[2])) for m in _HEADING.finditer(_prose(_read(path)))]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _links(path: Path) -> list[str]:
    return _LINK.findall(_CODE_SPAN.sub("``", _prose(_read(path))))


def test_the_readme_is_a_page() -> None:
    lines = _read(README).splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines; move the rest into docs/"
    assert "## Contents" in _read(README) or "**Contents:**" in _read(README)


def test_there_are_docs_and_every_page_is_in_the_nav() -> None:
    """MkDocs' ``omitted_files`` validation says the same in the strict build; this holds
    without MkDocs."""
    nav = yaml.safe_load(_read(helpers.REPO / "mkdocs.yml"))["nav"]

    def pages(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [p for item in entry for p in pages(item)]
        assert isinstance(entry, dict)
        return [p for value in entry.values() for p in pages(value)]

    listed = pages(nav)
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(p.relative_to(DOCS).as_posix() for p in PAGES)


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(helpers.REPO)))
def test_headings_have_one_anchor_on_github_and_on_the_site(path: Path) -> None:
    """Anchors are checked with one slug rule; it must be the one both renderers use, and a
    heading twice in a page would get a numbered anchor that differs between them."""
    headings = [_heading_text(m[2]) for m in _HEADING.finditer(_prose(_read(path)))]
    assert headings
    for heading in headings:
        assert _slug_site(heading) == _slug_github(heading), heading
    slugs = [_slug_site(h) for h in headings]
    assert len(slugs) == len(set(slugs)), f"a heading repeats in {path.name}"


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(helpers.REPO)))
def test_every_relative_link_resolves(path: Path) -> None:
    links = _links(path)
    broken = []
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto:: not ours to check
            continue
        target, _, anchor = link.partition("#")
        resolved = (path.parent / target).resolve() if target else path
        if not resolved.exists():
            broken.append(f"{link}: no file {resolved.relative_to(helpers.REPO)}")
            continue
        if path != README and not resolved.is_relative_to(DOCS.resolve()):
            broken.append(f"{link}: leaves docs/ (the site would not have it)")
        if anchor and (resolved.suffix != ".md" or anchor not in _anchors(resolved)):
            broken.append(f"{link}: no heading #{anchor} in {resolved.name}")
    assert broken == [], "\n".join(broken)


def test_the_link_check_is_not_vacuous() -> None:
    readme_links = _links(README)
    assert any(link.startswith("docs/guide/") and "#" in link for link in readme_links)
    assert any(link.startswith("#") for link in readme_links)
    assert any(link.startswith("../maintainers/") for p in PAGES for link in _links(p))


# --- the README's tables against what they describe -------------------------------------------


def _table_rows(section: str) -> list[list[str]]:
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def _section(text: str, heading: str) -> str:
    return text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]


def test_the_otel_table_is_the_schema() -> None:
    """Every key of ``otel`` in the submit-config schema, each with the schema's default."""
    schema = json.loads(_read(helpers.REPO / "schemas" / "submit-config.schema.json"))
    properties = schema["$defs"]["otel"]["properties"]
    rows = _table_rows(_section(_read(README), "## The `otel` section"))
    table = {row[0].strip("`"): row[1] for row in rows}
    assert list(table) == list(properties)
    for key, default in table.items():
        shown = yaml.safe_load(re.match(r"`([^`]*)`", default)[1])
        assert shown == properties[key]["default"], key


def _skeleton_blocks() -> dict[str, int]:
    """Each block of the skeleton and the column its first YAML line starts at."""
    lines = _read(SKELETON).splitlines()
    blocks = {}
    for i, line in enumerate(lines):
        found = re.fullmatch(r"\{% block (\w+) %\}", line)
        if found:
            body = (x for x in lines[i + 1 :] if x.strip() and not x.lstrip().startswith("{%"))
            first = next(body)
            blocks[found[1]] = len(first) - len(first.lstrip(" "))
    return blocks


@pytest.mark.parametrize("path", [README, OVERRIDING], ids=["README.md", "overriding-templates"])
def test_the_blocks_table_is_the_skeleton(path: Path) -> None:
    """The blocks an override may redefine, and the column their lines start at: the
    indentation a platform team must write (Jinja adds none)."""
    rows = [row for row in _table_rows(_prose(_read(path))) if len(row) == 3 and row[2].isdigit()]
    table = {row[0].strip("`"): int(row[2]) for row in rows}
    assert table == _skeleton_blocks()


# --- the worked super() example ---------------------------------------------------------------

_OVERRIDE = re.compile(r"<!-- override: (?P<path>\S+) -->\n```jinja\n(?P<body>.*?)```", re.DOTALL)
_COMMANDS = re.compile(r"<!-- override commands -->\n```bash\n(?P<body>.*?)```", re.DOTALL)
_RENDERED = re.compile(r"<!-- override rendered -->\n```yaml\n(?P<body>.*?)```", re.DOTALL)


def _stage_override_example(tmp_path: Path) -> tuple[list[str], list[str], str, str]:
    """The README's override written where it says, beside a copy of the bundled example:
    the ``check`` and ``render`` arguments it shows, the folder, and the rendering it shows."""
    readme = _read(README)
    override, commands, rendered = (p.search(readme) for p in (_OVERRIDE, _COMMANDS, _RENDERED))
    assert override and commands and rendered, "README.md lacks the marked override example"
    assert "{{ super() }}" in override["body"]
    template = tmp_path / override["path"]
    template.parent.mkdir(parents=True)
    template.write_text(override["body"], encoding="utf-8")
    (tmp_path / "examples").mkdir()
    shutil.copy(helpers.EXAMPLE, tmp_path / "examples" / "submit.yaml")
    check, render = commands["body"].replace("\\\n", " ").splitlines()
    folder = template.parts[len(tmp_path.parts)]
    assert check.split() == ["nemo-gym-otel", "check", "--template-dir", folder]
    assert render.startswith("nemo-gym-otel render ")
    return check.split()[1:], render.split()[1:], folder, rendered["body"]


def test_the_worked_override_example_renders_as_shown(tmp_path: Path) -> None:
    """Through the two commands the README shows: ``check`` passes the override, and the
    ``receivers:`` section of the rendering is exactly the README's."""
    check, render, folder, shown = _stage_override_example(tmp_path)
    env = helpers.cli_env(OTEL_TOKEN="docs-token")

    result = helpers.run_cli(*render, cwd=tmp_path, env=env)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    section = "receivers:\n" + result.stdout.split("\nreceivers:\n", 1)[1].split("\nprocessors:")[0]
    assert section.rstrip("\n") + "\n" == shown, (
        "README.md's rendered example differs from the rendering; paste the receivers: "
        "section of the command's output"
    )
    checked = helpers.run_cli(*check, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    [ok] = [x for x in checked.stdout.splitlines() if ": current/otlp_http+file " in x]
    assert ok.startswith("ok bundled example: ") and ok.endswith(f"{folder})"), ok
    assert "(override " in ok


@pytest.mark.collector
def test_the_worked_override_example_passes_the_real_collector(tmp_path: Path) -> None:
    """What a platform team's CI runs: ``check --collector`` puts the rendering before the
    line's own binary, which judges what no schema can."""
    check, _, folder, _ = _stage_override_example(tmp_path)
    binary = collector_binary("current")
    env = helpers.cli_env(OTEL_TOKEN="docs-token")

    checked = helpers.run_cli(*check, "--collector", binary, cwd=tmp_path, env=env)

    assert checked.returncode == 0, checked.stdout + checked.stderr
    [ok] = [x for x in checked.stdout.splitlines() if ": current/otlp_http+file " in x]
    assert f"{folder}) (collector " in ok and ok.endswith(": valid)"), ok


# --- the API reference --------------------------------------------------------------------------


def test_the_api_reference_names_every_public_name() -> None:
    """mkdocstrings renders what the page names; a public name missing from it would be
    undocumented without any build failing."""
    page = _read(API_PAGE)
    named = set(re.findall(r"^::: nemo_gym\.orchestration\.executors\.otel\.(\w+)$", page, re.M))
    assert named == set(otel.__all__)
    assert re.search(r"^::: nemo_gym\.orchestration\.api$", page, re.M)
