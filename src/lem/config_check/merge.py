"""A config given with `--configfile` in a deployed folder: Snakemake merges it over the folder's own
`configfile:` (config/config.yaml, the embedded default) unless `--replace-workflow-config` is given, so a
complete config (`config/paper.yaml`, `.test/config/config.yaml`) silently gains the default's rows and sets.
`merge_note` says so in one line when the merge changes the run's job grid (`lem.run.grid.Grid.jobs`)."""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any

import yaml

from lem.config_check import check_workflow_config
from lem.config_check.errors import ConfigError
from lem.run import Run


def merged(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """Config mappings merged in order as Snakemake does (a later key replaces, a mapping merges key by key)."""

    def update(into: dict[str, Any], new: dict[str, Any]) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                update(into[key], value)
            else:
                into[key] = copy.deepcopy(value)

    out: dict[str, Any] = {}
    for c in configs:
        update(out, c)
    return out


def grid_size(config: dict[str, Any]) -> int:
    return sum(len(outputs) for outputs in Run(config).grid.jobs().values())


def merge_note(
    config: dict[str, Any], given: list[Any], loaded: list[Any], schema_path: str | Path, replaced: bool
) -> str | None:
    """One line when Snakemake merged the `--configfile` files `given` over a workflow's own `configfile:`
    (`loaded` holds both) and the merge changes the job grid, against the given files alone; None when there
    was no such merge, when the given files alone are no complete config (an overlay: the merge is meant),
    or when the grids are the same. `config`: the merged config as checked."""

    given_paths = {Path(p).resolve() for p in given or ()}
    workflow_files = [str(p) for p in loaded or () if Path(p).resolve() not in given_paths]
    if replaced or not given_paths or not workflow_files:
        return None
    try:
        alone = merged([yaml.safe_load(Path(p).read_text(encoding="utf-8")) or {} for p in given])
        with contextlib.redirect_stderr(io.StringIO()):  # its warnings are the merged config's to give
            check_workflow_config(alone, schema_path)
        n_merged, n_alone = grid_size(config), grid_size(alone)
    except (ConfigError, OSError, ValueError, TypeError, KeyError, yaml.YAMLError):
        return None  # not a complete config alone (or unreadable: Snakemake read it): the merge is the run
    if n_merged == n_alone:
        return None
    names = " ".join(str(p) for p in given)
    return (
        f"config: --configfile {names} was merged over this workflow's {', '.join(workflow_files)} (Snakemake "
        f"does so without --replace-workflow-config): {n_merged} training and evaluation jobs, {n_alone} with "
        f"{names} alone; add --replace-workflow-config to run it alone"
    )
