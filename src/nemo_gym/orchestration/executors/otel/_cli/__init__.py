"""Stage 8, the command line: parses arguments, calls the stages, prints what they return."""

from .main import main

__all__ = ["main"]
