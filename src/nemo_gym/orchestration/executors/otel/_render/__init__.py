"""Stage 4, rendering: render a template, check the result, and only then write it."""
