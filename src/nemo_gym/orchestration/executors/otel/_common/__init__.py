"""Shared by every stage: constants, the error family, the version, packaged files, the
strict YAML loader, JSON Schema checks that name paths, the atomic file write.
"""
