"""Benchmarks of the renderer and of the collector it configures: ``python -m benchmarks``."""
