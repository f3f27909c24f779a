"""Where the packaged templates and schemas are found.

They live at the repository's top level and are mapped into the wheel by the build backend, so the
code only ever reaches them through ``importlib.resources``: a checkout path would break once the
package is installed somewhere else.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from .errors import TemplateError

_PACKAGE = __name__.rsplit(".", 2)[0]  # the otel package, where the build maps the files


def builtin_templates() -> Traversable:
    return resources.files(_PACKAGE) / "templates"


def _schemas() -> Traversable:
    return resources.files(_PACKAGE) / "schemas"


def schema_names() -> list[str]:
    return sorted(p.name for p in _schemas().iterdir() if p.name.endswith(".schema.json"))


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    resource = _schemas() / name
    if not resource.is_file():
        raise TemplateError(
            f"schemas/{name}",
            "schema is missing from the installed package; reinstall nemo-gym-otel",
        )
    return json.loads(resource.read_text(encoding="utf-8"))
