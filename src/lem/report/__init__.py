"""The report: every variant on every task and language pair, in one table, plus figures (`lem report`,
`lem.report.cli`).

- `lem.report.tables`: every metrics file read by its `keys`, and the summary of each cell;
- `lem.report.comparisons`: the declared comparisons' two-level tests on the run's per-item rows, Holm within
  each family, the verdicts; `lem.report.verdicts`: the verdicts in words, the marks and the comparisons' table;
- `lem.report.controls`: the controls' verdicts on the mining cells and the gate on them;
- `lem.report.markdown`, `lem.report.figures`: `summary.md`, its HTML page and the PNG figures;
- `lem.report.build`: every output of `lem report build`; `lem.report.readme`: the README's generated blocks.
"""
