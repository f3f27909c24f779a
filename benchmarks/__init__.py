"""Benchmarks of the renderer and of the collector it configures: ``python -m benchmarks``."""

import sys
from pathlib import Path

# The collector benchmark reuses the end-to-end tests' support code (tests/support/): the
# collector process, the backend's routes and tenant check, the scrape fixtures.
_TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if _TESTS not in sys.path:
    sys.path.append(_TESTS)
