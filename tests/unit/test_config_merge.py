"""A config given with --configfile in a deployed folder is merged over the folder's config/config.yaml unless
--replace-workflow-config is given (issue 45): workflow/rules/common.smk says so in one line when the merge
changes the job grid (`lem.config_check.merge.merge_note`); an overlay, meant to be merged, is not flagged."""

from __future__ import annotations

from pathlib import Path

import yaml

from lem.config_check import check_workflow_config
from lem.config_check.merge import merge_note, merged

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT, TEST, NMT = (
    str(REPO / p) for p in ("config/config.yaml", ".test/config/config.yaml", "config/nmt.yaml")
)


def as_snakemake_merges(*files: str) -> dict:
    return check_workflow_config(
        merged([yaml.safe_load(Path(f).read_text(encoding="utf-8")) for f in files]), SCHEMA
    )


def test_a_complete_config_merged_over_the_deployed_default_is_said_in_one_line():
    note = merge_note(as_snakemake_merges(DEFAULT, TEST), [TEST], [DEFAULT, TEST], SCHEMA, replaced=False)
    assert note is not None and "\n" not in note
    assert note.startswith(f"config: --configfile {TEST} was merged over this workflow's {DEFAULT}")
    assert "add --replace-workflow-config to run it alone" in note
    counts = [int(w) for w in note.replace(",", " ").split() if w.isdigit()]
    assert len(counts) == 2 and counts[0] > counts[1]


def test_no_note_for_an_overlay_a_replaced_config_or_no_merge():
    assert (
        merge_note(as_snakemake_merges(DEFAULT, NMT), [NMT], [DEFAULT, NMT], SCHEMA, replaced=False) is None
    )
    assert merge_note(as_snakemake_merges(TEST), [TEST], [DEFAULT, TEST], SCHEMA, replaced=True) is None
    assert merge_note(as_snakemake_merges(TEST), [TEST], [TEST], SCHEMA, replaced=False) is None


def test_merged_follows_snakemakes_rule():
    from snakemake.utils import update_config

    a, b = {"x": {"y": 1, "z": [1]}, "w": 1}, {"x": {"z": [2], "v": 3}, "w": {"k": 1}}
    theirs = yaml.safe_load(yaml.safe_dump(a))
    update_config(theirs, b)
    assert merged([a, b]) == theirs
