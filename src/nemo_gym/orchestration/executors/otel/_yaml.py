"""YAML parsing that reports where a document is broken and refuses duplicate keys.

PyYAML keeps the last of two equal keys without a word; in a config that silently drops a
setting, so a duplicate is reported like any syntax error, with its line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._errors import OtelConfigError


def _loader_class() -> type:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


_LOADER: type | None = None


def parse_yaml(text: str, source: str, error: Callable[[str, str], OtelConfigError]) -> Any:
    """Parse one YAML document; a syntax error becomes ``error(path, message)`` naming ``source:line``."""
    import yaml

    global _LOADER
    if _LOADER is None:
        _LOADER = _loader_class()
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = exc.problem or exc.context or "malformed YAML"
        raise error(where, f"{problem}; fix the YAML syntax at that line") from None
    except yaml.YAMLError as exc:
        raise error(source, f"not valid YAML ({exc}); fix the YAML syntax") from None
