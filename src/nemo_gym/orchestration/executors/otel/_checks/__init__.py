"""Stage 3, checks of a collector config: its line's JSON Schema, then the pipeline-graph rules
the schema cannot express; ``validate_collector_config`` for any collector YAML.
"""
