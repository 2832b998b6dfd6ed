"""NMT's held-out sets leave its training pairs at selection (`lem nmt select --exclude`), not when the curation
corpus is prepared, so that adding NMT to a finished run reruns no curation, leakage guard or pre-training
(issue 53; the plans: tests/dag/test_overlay_plans.py)."""

from __future__ import annotations

import pytest

from lem.cli import main
from lem.core.inputs import InputError
from lem.curate import held_out_overlap, select_top
from lem.data.noisy import read_noisy
from lem.nmt.data import read_pairs


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    rows = [(f"s{i} word", f"t{i} word", "clean" if i % 2 else "misaligned") for i in range(8)]
    rows[2] = ("s2 word", "The Test, sentence!", "clean")  # a test sentence after normalisation
    rows[5] = ("A valid source.", "t5 word", "clean")  # a validation source sentence, exactly
    path = write(tmp_path / "pairs.tsv", "src\ttgt\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows))
    ranking = [2, 3, 5, 1, 0, 7, 4, 6]
    scores = write(
        tmp_path / "scores.tsv",
        "rank\tindex\tscore\tlabel\n" + "".join(f"{r}\t{i}\t{1 - r / 10:.6f}\t{rows[i][2]}\n" for r, i in enumerate(ranking, 1)),
    )  # fmt: skip
    valid = write(tmp_path / "valid.tsv", "src\ttgt\nA valid source.\tits target\n")
    test = write(tmp_path / "test.tsv", "src\ttgt\nsome source\tthe test sentence\n")
    return path, scores, [valid, test]


def test_held_out_pairs_are_dropped_before_the_share_is_taken(tmp_path, corpus):
    pairs, scores, heldout = corpus
    src, tgt, _ = read_noisy(pairs)
    assert held_out_overlap(src, tgt, heldout) == {2, 5}
    got = select_top(scores, pairs, tmp_path / "top.tsv", share=0.5, exclude=heldout)
    # 6 pairs left of 8, half of them kept in the ranking's order (2 and 5 skipped)
    assert got["n_corpus"] == 8 and got["n_eligible"] == 6 and got["n_kept"] == 3 and got["share"] == 0.5
    assert got["held_out_dropped"] == 2 and got["held_out_files"] == [str(p) for p in heldout]
    assert read_pairs(tmp_path / "top.tsv") == [
        ("s3 word", "t3 word"),
        ("s1 word", "t1 word"),
        ("s0 word", "t0 word"),
    ]
    # without held-out sets, the selection and its counts are what they were
    plain = select_top(scores, pairs, tmp_path / "plain.tsv", share=0.5)
    assert plain == {"n_corpus": 8, "n_kept": 4, "share": 0.5, "clean_share_kept": 1.0}
    assert read_pairs(tmp_path / "plain.tsv")[:2] == [
        ("s2 word", "The Test, sentence!"),
        ("s3 word", "t3 word"),
    ]


def test_a_corpus_made_only_of_held_out_pairs_is_refused(tmp_path):
    pairs = write(tmp_path / "pairs.tsv", "src\ttgt\nx\ty\n")
    scores = write(tmp_path / "scores.tsv", "rank\tindex\tscore\tlabel\n1\t0\t0.5\t\n")
    test = write(tmp_path / "test.tsv", "src\ttgt\nX.\tz\n")
    with pytest.raises(
        InputError, match=r"pairs.tsv: every one of its 1 pairs has a side in the held-out sets"
    ):
        select_top(scores, pairs, tmp_path / "top.tsv", share=1.0, exclude=[test])


def test_nmt_select_takes_the_held_out_sets(tmp_path, corpus, caplog):
    pairs, scores, heldout = corpus
    out = tmp_path / "keep1.train.tsv"
    main(["nmt", "select", "--ranking", str(scores), "--pairs", str(pairs), "--share", "1",
          "--exclude", *map(str, heldout), "--out", str(out)])  # fmt: skip
    kept = read_pairs(out)
    assert len(kept) == 6 and ("s2 word", "The Test, sentence!") not in kept
    assert "2 dropped: a side in the held-out sets" in caplog.text
