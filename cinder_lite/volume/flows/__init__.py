"""Taskflow flows of the volume service: small tasks, each side effect with
a revert."""
