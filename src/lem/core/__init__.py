"""Shared pieces that know no stage: settings, user files, words and entities, training, the stage
machinery of the `lem` command, numerics, interruption and GPU shares. Nothing here imports a stage or
`lem.evidence.compare` (tests/unit/test_imports.py)."""
