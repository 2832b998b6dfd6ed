"""Evidence: intervals and tests over seeds and units (`stats`), power and calibration (`power`),
the report's comparisons (`compare`), chance levels (`chance`), the lexical and random controls
(`controls`) and the report's figures (`figures`)."""
