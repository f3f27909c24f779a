"""The sandboxed Jinja environment that renders a combination template and the job step's bash.

Templates are code written by platform teams, so they run in a sandbox (bounded in steps, time
and size: :mod:`.bounds`) with ``StrictUndefined``
(a typo fails instead of rendering an empty string), keep their trailing newline, and are loaded
only through the catalogue, which keeps them inside the folders of the search path. Every Jinja
failure becomes a :class:`TemplateError` naming the template (and line, for syntax). The job
step's templates (``templates/_step/``) are rendered by the same environment, from the built-in
templates alone (:func:`render_builtin`): the step's bash is the package's, not an override's.
Values enter YAML through the ``scalar`` filter and bash through the ``sh`` filter, one each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._common.errors import TemplateError
from .bounds import render_bounded
from .catalogue import TemplateInfo, TemplateSet, template_set
from .scalar import joined, scalar
from .shell import shell_words


def render_template(templates: TemplateSet, info: TemplateInfo, context: dict[str, Any]) -> str:
    return _render(templates, info.name, context)


def render_builtin(name: str, context: dict[str, Any]) -> str:
    """A built-in template (the job step's), whatever override directories are in effect."""
    return _render(template_set(()), name, context)


def _render(templates: TemplateSet, name: str, context: dict[str, Any]) -> str:
    from jinja2 import TemplateError as JinjaError
    from jinja2 import TemplateNotFound, TemplateSyntaxError, UndefinedError

    try:
        template = _environment(templates).get_template(name)
        return render_bounded(lambda: template.generate(context))
    except TemplateError:
        raise
    except RecursionError:  # compiling an expression nested thousands of levels deep
        raise TemplateError(name, "nests too deeply to compile; flatten its expressions") from None
    except TemplateSyntaxError as exc:
        raise TemplateError(
            f"{exc.name or name}:{exc.lineno}", f"{exc.message}; fix the template syntax"
        ) from None
    except TemplateNotFound as exc:
        raise TemplateError(
            name,
            f"includes or extends {exc.name!r}, which is not found in the search path; fix the name",
        ) from None
    except UndefinedError as exc:
        raise TemplateError(
            name, f"{exc.message}; use only the documented template variables"
        ) from None
    except JinjaError as exc:
        raise TemplateError(name, f"{exc}; fix the template") from None
    except (TypeError, ValueError) as exc:
        raise TemplateError(name, f"a value cannot be rendered: {exc}") from None


@functools.cache
def _environment(templates: TemplateSet) -> Any:
    """One environment per template set: Jinja compiles each template once and keeps it."""
    from jinja2 import BaseLoader, StrictUndefined, TemplateNotFound, Undefined

    from .bounds import BoundedSandbox

    class Loader(BaseLoader):
        def get_source(
            self, environment: Any, template: str
        ) -> tuple[str, str, Callable[[], bool]]:
            located = templates.locate(template)
            if located is None:
                raise TemplateNotFound(template)
            return located[0].read_text(encoding="utf-8"), template, lambda: True

    env = BoundedSandbox(
        loader=Loader(),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )

    def defined(render: Callable[[Any], str]) -> Callable[[Any], str]:
        def rendered(value: Any) -> str:
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()  # raises UndefinedError naming the variable
            return render(value)

        return rendered

    env.filters["scalar"] = defined(scalar)
    env.filters["sh"] = defined(shell_words)
    env.globals["joined"] = joined
    return env
