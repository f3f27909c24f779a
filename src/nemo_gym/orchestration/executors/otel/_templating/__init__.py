"""Stage 2, templating: the catalogue of template lines (their metadata files) and
combination templates, the sandboxed Jinja environment, the context and the scalar filter.
"""
