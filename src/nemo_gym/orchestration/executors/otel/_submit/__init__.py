"""Stage 1, the submit config: its strict schema, the frozen dataclasses, every rule that
needs only the config, the driver's environment and the ingest token.
"""
