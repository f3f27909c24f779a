"""Finding, describing and loading collector templates.

Templates are code written by platform teams, so they run in a sandboxed Jinja environment with
``StrictUndefined`` (a typo fails instead of rendering an empty string), keep their trailing
newline, and are loaded only from inside the folders of the search path.

Search path and override rule: the directories of ``--template-dir`` / ``NEMO_GYM_OTEL_TEMPLATE_PATH``
come first, the built-in templates last. A template named like a built-in one (``current/file.yaml.j2``)
replaces it whole; to change only a part, an override ``{% extends "builtin/<same name>" %}`` and
redefines named blocks. Nothing is merged implicitly.

Every combination template starts with a front-matter comment that says which line it belongs to,
which collector releases it supports and which package it needs::

    {#- nemo-gym-otel
    line: current
    combination: otlp_http+file
    template_version: 1
    collector_min: 0.151.0
    collector_max:
    requires_package: 0.1.0
    -#}

``collector_max`` is exclusive and empty for an open range.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ._constants import EXPORTER_KINDS, TEMPLATE_PATH_ENV
from ._errors import TemplateError
from ._resources import builtin_templates
from ._scalar import joined, scalar

TEMPLATE_SUFFIX = ".yaml.j2"
BUILTIN_PREFIX = "builtin/"
_FRONT_MATTER = re.compile(r"\A\{#-?\s*nemo-gym-otel\s*\n(?P<body>.*?)\n\s*-?#\}", re.DOTALL)
_FIELDS = (
    "line",
    "combination",
    "template_version",
    "collector_min",
    "collector_max",
    "requires_package",
)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")

Version = tuple[int, int, int]


def parse_version(text: str, path: str) -> Version:
    match = _VERSION.match(text.strip())
    if not match:
        raise TemplateError(path, f"{text!r} is not a release like 0.161.0")
    return int(match[1]), int(match[2]), int(match[3])


def format_version(version: Version) -> str:
    return ".".join(map(str, version))


def combination_name(exporters: Sequence[str]) -> str:
    """The template name for a set of exporters, in a fixed order (``otlp_http+file``)."""
    return "+".join(kind for kind in EXPORTER_KINDS if kind in exporters)


ALL_COMBINATIONS = ("otlp_http+file", "otlp_http", "file")


@dataclass(frozen=True)
class TemplateInfo:
    """What one combination template says about itself in its front matter."""

    name: str
    line: str
    combination: str
    template_version: str
    collector_min: Version
    collector_max: Version | None
    requires_package: Version
    origin: str  # "built-in" or the override directory it came from

    def supports(self, collector: Version) -> bool:
        return self.collector_min <= collector and (
            self.collector_max is None or collector < self.collector_max
        )

    @property
    def collector_range(self) -> str:
        upper = f", <{format_version(self.collector_max)}" if self.collector_max else ""
        return f">={format_version(self.collector_min)}{upper}"


@dataclass(frozen=True)
class Line:
    """A template line: one set of combination templates for a range of collector releases."""

    name: str
    collector_min: Version
    collector_max: Version | None
    templates: dict[str, TemplateInfo]

    @property
    def collector_range(self) -> str:
        return next(iter(self.templates.values())).collector_range

    def supports(self, collector: Version) -> bool:
        return next(iter(self.templates.values())).supports(collector)


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
        if not self.root.is_dir():
            return
        for line_dir in self.root.iterdir():
            if line_dir.is_dir() and not line_dir.name.startswith(("_", ".")):
                for entry in line_dir.iterdir():
                    if entry.name.endswith(TEMPLATE_SUFFIX) and not entry.name.startswith("_"):
                        yield f"{line_dir.name}/{entry.name}"


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
    """The templates visible through one search path, with their lines and a compiled cache."""

    def __init__(self, overrides: tuple[str, ...]) -> None:
        self.overrides = overrides
        self._sources = [_Source(Path(d), d) for d in overrides]
        self._builtin = _Source(builtin_templates(), "built-in")
        self._env: Any = None

    # -- lookup -----------------------------------------------------------------------------

    def _locate(self, name: str) -> tuple[Traversable, str] | None:
        if name.startswith(BUILTIN_PREFIX):
            found = self._builtin.find(name[len(BUILTIN_PREFIX) :])
            return (found, "built-in") if found else None
        for source in [*self._sources, self._builtin]:
            found = source.find(name)
            if found is not None:
                return found, source.origin
        return None

    def source_text(self, name: str) -> str:
        located = self._locate(name)
        if located is None:
            raise TemplateError(
                name, "template not found in the search path; check the name and --template-dir"
            )
        return located[0].read_text(encoding="utf-8")

    @functools.cached_property
    def lines(self) -> dict[str, Line]:
        names = sorted({n for s in [*self._sources, self._builtin] for n in s.names()})
        by_line: dict[str, dict[str, TemplateInfo]] = {}
        for name in names:
            located = self._locate(name)
            assert located is not None
            info = _front_matter(name, located[0].read_text(encoding="utf-8"), located[1])
            by_line.setdefault(info.line, {})[info.combination] = info
        lines = {}
        for line_name, templates in by_line.items():
            first = next(iter(templates.values()))
            for info in templates.values():
                if (info.collector_min, info.collector_max) != (
                    first.collector_min,
                    first.collector_max,
                ):
                    raise TemplateError(
                        info.name,
                        f"claims collector {info.collector_range} but {first.name} claims "
                        f"{first.collector_range}; all templates of line {line_name!r} must agree",
                    )
            lines[line_name] = Line(line_name, first.collector_min, first.collector_max, templates)
        _check_disjoint(list(lines.values()))
        return dict(sorted(lines.items(), key=lambda item: item[1].collector_min))

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

    # -- rendering --------------------------------------------------------------------------

    def environment(self) -> Any:
        if self._env is None:
            self._env = _make_environment(self)
        return self._env

    def render(self, info: TemplateInfo, context: dict[str, Any]) -> str:
        from jinja2 import TemplateError as JinjaError
        from jinja2 import TemplateNotFound, TemplateSyntaxError, UndefinedError

        try:
            template = self.environment().get_template(info.name)
            return template.render(context)
        except TemplateError:
            raise
        except TemplateSyntaxError as exc:
            raise TemplateError(
                f"{exc.name or info.name}:{exc.lineno}", f"{exc.message}; fix the template syntax"
            ) from None
        except TemplateNotFound as exc:
            raise TemplateError(
                info.name,
                f"includes or extends {exc.name!r}, which is not found in the search path; fix the name",
            ) from None
        except UndefinedError as exc:
            raise TemplateError(
                info.name, f"{exc.message}; use only the documented template variables"
            ) from None
        except JinjaError as exc:
            raise TemplateError(info.name, f"{exc}; fix the template") from None
        except (TypeError, ValueError) as exc:
            raise TemplateError(info.name, f"a value cannot be rendered: {exc}") from None


def _make_environment(templates: TemplateSet) -> Any:
    from jinja2 import BaseLoader, StrictUndefined, TemplateNotFound, Undefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Loader(BaseLoader):
        def get_source(
            self, environment: Any, template: str
        ) -> tuple[str, str, Callable[[], bool]]:
            try:
                return templates.source_text(template), template, lambda: True
            except TemplateError as exc:
                if "not found" in exc.message:
                    raise TemplateNotFound(template) from None
                raise

    env = ImmutableSandboxedEnvironment(
        loader=Loader(),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )

    def scalar_filter(value: Any) -> str:
        if isinstance(value, Undefined):
            value._fail_with_undefined_error()  # raises UndefinedError naming the variable
        return scalar(value)

    env.filters["scalar"] = scalar_filter
    env.globals["joined"] = joined
    return env


def _front_matter(name: str, text: str, origin: str) -> TemplateInfo:
    match = _FRONT_MATTER.match(text)
    if not match:
        raise TemplateError(
            name,
            "has no front matter; start it with a '{#- nemo-gym-otel' comment naming line, combination, "
            "template_version, collector_min, collector_max and requires_package",
        )
    fields: dict[str, str] = {}
    for number, raw in enumerate(match["body"].splitlines(), start=2):
        if not raw.strip():
            continue
        key, sep, value = raw.partition(":")
        key = key.strip()
        if not sep or key not in _FIELDS:
            raise TemplateError(
                f"{name}:{number}",
                f"unknown front-matter line {raw.strip()!r}; known keys: {', '.join(_FIELDS)}",
            )
        fields[key] = value.strip()
    missing = [
        key for key in _FIELDS if key not in fields or (not fields[key] and key != "collector_max")
    ]
    if missing:
        raise TemplateError(name, f"front matter lacks {', '.join(missing)}; add them")
    line_dir, _, file_name = name.partition("/")
    if fields["line"] != line_dir or f"{fields['combination']}{TEMPLATE_SUFFIX}" != file_name:
        raise TemplateError(
            name,
            f"front matter says line {fields['line']!r}, combination {fields['combination']!r}; they must match the file's folder and name",
        )
    if fields["combination"] not in ALL_COMBINATIONS:
        raise TemplateError(
            name,
            f"unknown combination {fields['combination']!r}; use one of {', '.join(ALL_COMBINATIONS)}",
        )
    info = TemplateInfo(
        name=name,
        line=fields["line"],
        combination=fields["combination"],
        template_version=fields["template_version"],
        collector_min=parse_version(fields["collector_min"], name),
        collector_max=parse_version(fields["collector_max"], name)
        if fields["collector_max"]
        else None,
        requires_package=parse_version(fields["requires_package"], name),
        origin=origin,
    )
    return info


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
    """One compiled template set per search path, shared by every render in the process."""
    return TemplateSet(overrides)
