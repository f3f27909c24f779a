"""Configuration objects the orchestration layer hands to its executors."""

from __future__ import annotations

from .executors.otel._config import SubmitConfig

__all__ = ["SubmitConfig"]
