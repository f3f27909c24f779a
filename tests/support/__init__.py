"""What the tests share, beside the tests: the repository's files and the CLI (``helpers``), the
corpora of collector configs, and the real parts the end-to-end tests run (collectors, backends,
Slurm jobs, producers of telemetry). Nothing here is a test; pytest collects only ``test_*.py``.
"""
