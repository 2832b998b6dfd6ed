"""Every generated block of README.md and docs/ is what its committed run archive gives (`lem report blocks
--check`), and every block is listed in docs/runs/blocks.yaml (archived, or said why not)."""

from __future__ import annotations

from pathlib import Path

from lem.report.blocks import page_blocks, read_index, rebuild_blocks

REPO = Path(__file__).resolve().parents[2]
INDEX = REPO / "docs/runs/blocks.yaml"


def test_every_generated_block_is_listed_in_the_index():
    index = read_index(INDEX)
    listed = {(b.page, b.block) for b in index.blocks}
    assert page_blocks(REPO) == listed, (
        "docs/runs/blocks.yaml must list every generated block, and only those"
    )
    for name in index.archives:
        assert index.archive_path(name).is_file(), (
            f"docs/runs/blocks.yaml names {name}, whose archive is missing"
        )


def test_every_archived_block_is_rebuilt_byte_identically_from_its_archive():
    outcomes = rebuild_blocks(INDEX, check=True)
    differ = [f"{o.entry.page} {o.entry.block}: {o.detail}" for o in outcomes if o.status == "differs"]
    assert not differ, "stale blocks (run `lem report blocks` and commit): " + "; ".join(differ)
