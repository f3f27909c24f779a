"""Stage 5, the collector's Slurm job step: start, health wait, grace, TERM, bounded wait."""
