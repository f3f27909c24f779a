"""The collector's start-up expansion, written from its documented rules (SPEC section 5).

Kept apart from the package's escaping code on purpose: the property tests compare the two.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def expand(text: str, environ: Mapping[str, str]) -> str:
    """``$$`` -> ``$``; ``${env:NAME}`` / ``${NAME}`` -> the variable; a bare ``$`` stays."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = text.index("}", i)
            ref = text[i + 2 : end]
            name = ref[4:] if ref.startswith("env:") else ref
            if not _NAME.fullmatch(name):
                raise ValueError(f"invalid expansion ${{{ref}}}")
            out.append(environ.get(name, ""))
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def expand_tree(node: Any, environ: Mapping[str, str]) -> Any:
    if isinstance(node, dict):
        return {expand_tree(k, environ): expand_tree(v, environ) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_tree(v, environ) for v in node]
    if isinstance(node, str):
        return expand(node, environ)
    return node
