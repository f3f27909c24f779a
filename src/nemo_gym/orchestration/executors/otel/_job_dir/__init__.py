"""Stage 6, reading a job directory back: what the collector received and delivered."""
