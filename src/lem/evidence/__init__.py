"""Evidence, the statistics that know no stage (a layer between `lem.core` and the stages, which may use it:
tests/unit/test_layers.py): intervals and tests over seeds and units (`stats`), the two-level test over seeds and
test items (`crossed`), power (`power`) and calibration (`simulate`), the declared comparison families and the
`evidence` settings (`compare`; the report tests them, `lem.report.comparisons`), chance levels of
classification and curation (`chance`; mining's are `lem.mine.chance`), and the lexical and random controls
(`controls`)."""
