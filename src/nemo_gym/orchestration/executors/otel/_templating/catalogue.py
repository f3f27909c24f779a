"""The catalogue of template lines and combination templates, and the choice of one for a config.

A line is one folder: ``<line>/line.yaml`` describes it once (the collector releases it
supports, the component type names its collectors know, the schema that checks its output), and
one combination template per exporter combination holds only what differs. Its front matter
says what the template itself is::

    {#- nemo-gym-otel
    template_version: 9
    requires_package: 0.1.0
    -#}

Search path and override rule: the directories of ``--template-dir`` /
``NEMO_GYM_OTEL_TEMPLATE_PATH`` come first, the built-in templates last. A file named like a
built-in one (``current/file.yaml.j2``, ``current/line.yaml``) replaces it whole; to change only
a part, an override ``{% extends "builtin/<same name>" %}`` and redefines named blocks. Nothing
is merged implicitly. A folder with a ``line.yaml`` of its own adds a line.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .._common.constants import EXPORTER_KINDS, TEMPLATE_PATH_ENV
from .._common.errors import TemplateError
from .._common.resources import builtin_templates, schema_names
from .._common.version import package_version, package_version_tuple

TEMPLATE_SUFFIX = ".yaml.j2"
LINE_FILE = "line.yaml"
STEP_DIR = "_step"  # the job step's bash templates, built in only
BUILTIN_PREFIX = "builtin/"
ALL_COMBINATIONS = ("otlp_http+file", "otlp_http", "file")
# The component roles the shared skeleton names; a line says which type name each one has.
COMPONENT_ROLES = ("otlp_http", "span_metrics")
_FRONT_MATTER = re.compile(r"\A\{#-?\s*nemo-gym-otel\s*\n(?P<body>.*?)\n\s*-?#\}", re.DOTALL)
_FRONT_MATTER_FIELDS = ("template_version", "requires_package")
_LINE_FIELDS = ("collector_min", "collector_max", "schema", "names")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

Version = tuple[int, int, int]


def parse_version(text: str, path: str) -> Version:
    match = _VERSION.match(str(text).strip())
    if not match:
        raise TemplateError(path, "is not a release like 0.161.0")
    return int(match[1]), int(match[2]), int(match[3])


def format_version(version: Version) -> str:
    return ".".join(map(str, version))


def combination_name(exporters: Sequence[str]) -> str:
    """The template name for a set of exporters, in a fixed order (``otlp_http+file``)."""
    return "+".join(kind for kind in EXPORTER_KINDS if kind in exporters)


@dataclass(frozen=True)
class TemplateInfo:
    """One combination template: what its path and its front matter say."""

    name: str
    line: str
    combination: str
    template_version: str
    requires_package: Version
    origin: str  # "built-in" or the override directory it came from


@dataclass(frozen=True)
class Line:
    """A template line, as its ``line.yaml`` describes it, with its combination templates.

    ``schema`` is a built-in schema's file name or the absolute path of one beside an
    override's ``line.yaml``; ``names`` maps each component role to its type name.
    """

    name: str
    collector_min: Version
    collector_max: Version | None
    schema: str
    names: Mapping[str, str]
    templates: Mapping[str, TemplateInfo]

    @property
    def collector_range(self) -> str:
        upper = f", <{format_version(self.collector_max)}" if self.collector_max else ""
        return f">={format_version(self.collector_min)}{upper}"

    def supports(self, collector: Version) -> bool:
        return self.collector_min <= collector and (
            self.collector_max is None or collector < self.collector_max
        )


class _Source:
    """One folder of the search path; refuses any file whose real path leaves the folder."""

    def __init__(self, root: Traversable, origin: str) -> None:
        self.root = root
        self.origin = origin
        self._real_root = os.path.realpath(str(root)) if isinstance(root, Path) else None

    def find(self, name: str) -> Traversable | None:
        parts = name.split("/")
        if any(part in ("", ".", "..") for part in parts) or "\\" in name:
            return None
        node = self.root
        for part in parts:
            node = node / part
        if not node.is_file():
            return None
        if self._real_root is not None:
            real = os.path.realpath(str(node))
            if os.path.commonpath([real, self._real_root]) != self._real_root:
                raise TemplateError(
                    name, f"resolves outside {self.origin}; templates must stay inside their folder"
                )
        return node

    def names(self) -> Iterator[str]:
        """``<line>/<file>`` of every combination template and line file in this folder."""
        if not self.root.is_dir():
            return
        for line_dir in self.root.iterdir():
            if line_dir.is_dir() and not line_dir.name.startswith(("_", ".")):
                for entry in line_dir.iterdir():
                    if entry.name == LINE_FILE or (
                        entry.name.endswith(TEMPLATE_SUFFIX) and not entry.name.startswith("_")
                    ):
                        yield f"{line_dir.name}/{entry.name}"


def _check_reserved_names(source: _Source, builtin: _Source) -> None:
    """An override folder named ``builtin`` would hide the built-in namespace, and a file
    named like a built-in one under a ``_`` folder (``_base/collector.yaml.j2``) would change
    every line's rendering while its header still says built-in: both are refused. The job
    step's bash (``_step/``) is never read from an override (:func:`.environment.render_builtin`);
    a file there that looks like one of it is refused too rather than silently ignored."""
    if not source.root.is_dir():
        return
    for entry in source.root.iterdir():
        if entry.name == BUILTIN_PREFIX.rstrip("/"):
            raise TemplateError(
                f"{source.origin}/{entry.name}",
                "is named like the built-in namespace (builtin/<name> reaches the built-in "
                "templates); rename this folder",
            )
        if entry.name.startswith("_") and entry.is_dir():
            for inner in entry.iterdir():
                name = f"{entry.name}/{inner.name}"
                if builtin.find(name) is not None:
                    raise TemplateError(
                        f"{source.origin}/{name}", _RESERVED.get(entry.name, _SKELETON)
                    )


_SKELETON = (
    "replaces the built-in skeleton every line shares, which an override may not do; override a "
    "line's combination template instead and redefine blocks of builtin/<its name>"
)
_RESERVED = {
    STEP_DIR: "is the job step's bash, which no override replaces (the step always runs the "
    "built-in one, checked by shellcheck); remove it",
}


def _check_contributes(source: _Source) -> None:
    """A folder that holds no template and no ``line.yaml`` at ``<line>/<file>`` changes nothing:
    usually the line folder itself was passed (``templates/current``), and every rendering would
    silently be the built-in one."""
    if next(source.names(), None) is None:
        raise TemplateError(
            source.origin,
            f"contributes no template: it holds no <line>/<combination>{TEMPLATE_SUFFIX} and no "
            f"<line>/{LINE_FILE} (pass the folder that holds the line folders, e.g. templates, "
            "not templates/current)",
        )


def search_path(template_dirs: Sequence[str | os.PathLike[str]] | None = None) -> tuple[str, ...]:
    """The override directories in effect: explicit ones, else ``NEMO_GYM_OTEL_TEMPLATE_PATH``."""
    if template_dirs is None:
        raw = os.environ.get(TEMPLATE_PATH_ENV, "")
        template_dirs = [p for p in raw.split(os.pathsep) if p]
    resolved = []
    for entry in template_dirs:
        path = Path(entry)
        if not path.is_dir():
            raise TemplateError(
                str(entry),
                "template directory does not exist; fix --template-dir or " + TEMPLATE_PATH_ENV,
            )
        resolved.append(str(path.resolve()))
    return tuple(resolved)


class TemplateSet:
    """The lines and templates visible through one search path."""

    def __init__(self, overrides: tuple[str, ...]) -> None:
        self.overrides = overrides
        self._sources = [_Source(Path(d), d) for d in overrides]
        self._builtin = _Source(builtin_templates(), "built-in")

    def locate(self, name: str) -> tuple[Traversable, str] | None:
        """The file a template name refers to, and the origin it comes from."""
        if name.startswith(BUILTIN_PREFIX):
            found = self._builtin.find(name[len(BUILTIN_PREFIX) :])
            return (found, "built-in") if found else None
        for source in [*self._sources, self._builtin]:
            found = source.find(name)
            if found is not None:
                return found, source.origin
        return None

    @functools.cached_property
    def lines(self) -> dict[str, Line]:
        """Every line, oldest collector range first."""
        for source in self._sources:
            _check_reserved_names(source, self._builtin)
            _check_contributes(source)
        names = sorted({n for s in [*self._sources, self._builtin] for n in s.names()})
        templates: dict[str, dict[str, TemplateInfo]] = {}
        for name in names:
            line_name, _, file_name = name.partition("/")
            if file_name != LINE_FILE:
                located = self.locate(name)
                assert located is not None
                info = _template_info(name, located[0].read_text(encoding="utf-8"), located[1])
                templates.setdefault(line_name, {})[info.combination] = info
        lines = [self._line(name, found) for name, found in templates.items()]
        _check_disjoint(lines)
        return {line.name: line for line in sorted(lines, key=lambda line: line.collector_min)}

    def _line(self, name: str, templates: dict[str, TemplateInfo]) -> Line:
        path = f"{name}/{LINE_FILE}"
        located = self.locate(path)
        if located is None:
            raise TemplateError(
                path,
                f"is missing: line {name!r} has templates but no {LINE_FILE}; add one naming "
                f"{', '.join(_LINE_FIELDS)}",
            )
        fields = _line_fields(path, located[0].read_text(encoding="utf-8"))
        return Line(
            name=name,
            collector_min=parse_version(fields["collector_min"], path),
            collector_max=parse_version(fields["collector_max"], path)
            if fields["collector_max"] is not None
            else None,
            schema=_schema_of(path, fields["schema"], located[0], located[1]),
            names=fields["names"],
            templates=dict(sorted(templates.items())),
        )

    def line_for(self, collector_version: str | None) -> Line:
        """The line supporting ``collector_version``; None picks the newest line."""
        lines = list(self.lines.values())
        if not lines:
            raise TemplateError("templates", "no template lines found; reinstall nemo-gym-otel")
        if collector_version is None:
            return lines[-1]
        wanted = parse_version(collector_version, "otel.collector_version")
        for line in lines:
            if line.supports(wanted):
                return line
        ranges = "; ".join(f"{line.name}: {line.collector_range}" for line in lines)
        raise TemplateError(
            "otel.collector_version",
            f"collector {collector_version} is not supported by any template line ({ranges}); "
            "use a release one of them supports, or add a template line",
        )

    def select(
        self, collector_version: str | None, exporters: Sequence[str]
    ) -> tuple[TemplateInfo, Line]:
        """The combination template for a collector release and a set of exporters."""
        line = self.line_for(collector_version)
        combination = combination_name(exporters)
        info = line.templates.get(combination)
        if info is None:
            raise TemplateError(
                f"{line.name}/{combination}",
                f"line {line.name!r} has no template for exporters {combination}; add one or change otel.exporters",
            )
        if info.requires_package > package_version_tuple():
            raise TemplateError(
                info.name,
                f"needs nemo-gym-otel {format_version(info.requires_package)} or newer, but {package_version()} is installed; "
                "upgrade the package or use an older template",
            )
        return info, line


def _template_info(name: str, text: str, origin: str) -> TemplateInfo:
    match = _FRONT_MATTER.match(text)
    if not match:
        raise TemplateError(
            name,
            "has no front matter; start it with a '{#- nemo-gym-otel' comment naming "
            f"{' and '.join(_FRONT_MATTER_FIELDS)}",
        )
    fields: dict[str, str] = {}
    for number, raw in enumerate(match["body"].splitlines(), start=2):
        if not raw.strip():
            continue
        key, sep, value = raw.partition(":")
        key = key.strip()
        if not sep or key not in _FRONT_MATTER_FIELDS:
            raise TemplateError(
                f"{name}:{number}",
                f"unknown front-matter line {raw.strip()!r}; known keys: {', '.join(_FRONT_MATTER_FIELDS)} "
                f"(the line's collector range and component names live in {LINE_FILE})",
            )
        fields[key] = value.strip()
    missing = [key for key in _FRONT_MATTER_FIELDS if not fields.get(key)]
    if missing:
        raise TemplateError(name, f"front matter lacks {', '.join(missing)}; add them")
    line, _, file_name = name.partition("/")
    combination = file_name.removesuffix(TEMPLATE_SUFFIX)
    if combination not in ALL_COMBINATIONS:
        raise TemplateError(
            name,
            f"unknown combination {combination!r}; name the file after one of {', '.join(ALL_COMBINATIONS)}",
        )
    return TemplateInfo(
        name=name,
        line=line,
        combination=combination,
        template_version=fields["template_version"],
        requires_package=parse_version(fields["requires_package"], name),
        origin=origin,
    )


def _line_fields(path: str, text: str) -> dict[str, Any]:
    from .._common.yaml_loader import parse_yaml

    fields = parse_yaml(text, path, TemplateError)  # bounded like any input
    if not isinstance(fields, dict):
        raise TemplateError(path, f"must be a mapping of {', '.join(_LINE_FIELDS)}")
    unknown = sorted(set(map(str, fields)) - set(_LINE_FIELDS))
    missing = [key for key in _LINE_FIELDS if key not in fields]
    if unknown or missing:
        problems = [f"unknown keys {', '.join(unknown)}"] if unknown else []
        problems += [f"lacks {', '.join(missing)}"] if missing else []
        raise TemplateError(
            path, f"{' and '.join(problems)}; its keys are {', '.join(_LINE_FIELDS)}"
        )
    names = fields["names"]
    if (
        not isinstance(names, dict)
        or set(names) != set(COMPONENT_ROLES)
        or not all(isinstance(v, str) and _TYPE_NAME.match(v) for v in names.values())
    ):
        raise TemplateError(
            f"{path}: names",
            f"must map exactly {', '.join(COMPONENT_ROLES)} to the component type names this "
            "line's collectors know (lower case, e.g. otlp_http: otlphttp)",
        )
    return fields


def _schema_of(path: str, schema: Any, line_file: Traversable, origin: str) -> str:
    """A schema beside an override's ``line.yaml`` (its absolute path), else a built-in one."""
    if not isinstance(schema, str) or "/" in schema or schema in ("", ".", ".."):
        raise TemplateError(
            f"{path}: schema",
            "must be the file name of a schema, e.g. collector-legacy.schema.json",
        )
    if origin != "built-in" and isinstance(line_file, Path):
        beside = line_file.parent / schema
        if beside.is_file():
            return str(beside.resolve())
    if schema in schema_names():
        return schema
    raise TemplateError(
        f"{path}: schema",
        f"{schema!r} is neither beside {path} nor built in ({', '.join(schema_names())}); "
        "put the schema file beside the line's templates or name a built-in one",
    )


def _check_disjoint(lines: list[Line]) -> None:
    ordered = sorted(lines, key=lambda line: line.collector_min)
    for lower, upper in itertools.pairwise(ordered):
        if lower.collector_max is None or lower.collector_max > upper.collector_min:
            raise TemplateError(
                f"{upper.name}/",
                f"collector range {upper.collector_range} overlaps line {lower.name!r} "
                f"({lower.collector_range}); make the lines' ranges disjoint",
            )


@functools.cache
def template_set(overrides: tuple[str, ...]) -> TemplateSet:
    """One template set per search path, shared by every render in the process."""
    return TemplateSet(overrides)
