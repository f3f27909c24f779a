"""Configuration objects the orchestration layer hands to its executors."""

from __future__ import annotations

from .executors.otel._submit.config import SubmitConfig

__all__ = ["SubmitConfig"]
