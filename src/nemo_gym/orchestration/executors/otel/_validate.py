"""``validate_collector_config``: the package's checks for any collector YAML, hand-written too."""

from __future__ import annotations

from ._collector_check import check_collector_config
from ._errors import CollectorConfigError, Violation
from ._templates import search_path, template_set


def validate_collector_config(
    text: str, collector_version: str | None = None, *, source: str = "collector config"
) -> None:
    """Check collector YAML against the schema of the line for ``collector_version``.

    None checks against the newest line. Raises :class:`CollectorConfigError` with every
    violation, one per line as ``<yaml path>: <message>``; a YAML syntax error names its line.
    """
    from ._yaml import parse_yaml

    line = template_set(search_path([])).line_for(collector_version).name
    parsed = parse_yaml(
        text, source, lambda path, message: CollectorConfigError([Violation(path, message)], source)
    )
    check_collector_config(parsed, line, source)
