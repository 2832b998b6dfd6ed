"""`Run`, the model of one run of a config: its rows, seeds, scopes and model folders (lem.run.rows.Rows), with
its corpus, annotation and evaluation sets (`run.sets`: lem.run.evalsets.EvalSets) and its job grid
(`run.grid`: lem.run.grid.Grid) as parts of their own that read them. The settings each rule passes are plain
functions of a `Run` (lem.run.settings)."""

from __future__ import annotations

from typing import Any

from lem.run.evalsets import EvalSets
from lem.run.grid import Grid
from lem.run.rows import Rows


class Run(Rows):
    """The model of one run of a config (see lem.run's docstring): the rows, seeds, scopes and model folders of
    `Rows`, `sets` its corpus, annotation and evaluation sets and `grid` its jobs."""

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.sets = EvalSets(self)
        self.grid = Grid(self)
