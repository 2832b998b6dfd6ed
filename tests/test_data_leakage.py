"""Leakage guard: exact and normalised overlaps between training text and evaluation sets."""

from __future__ import annotations

import json
from pathlib import Path

from lem.cli import command
from lem.data.leakage import normalise

main = command("data")


def test_normalise() -> None:
    assert normalise("The  road, closed.") == normalise("the road closed")
    assert normalise("ශ්\u200dරී") == normalise("ශ්රී")


def test_guard_counts_and_drops(tmp_path: Path) -> None:
    (tmp_path / "mono.txt").write_text("The road closed.\nthe road, closed\nA new line.\n")
    (tmp_path / "para.tsv").write_text("x y z\tThe road closed.\nfree\tpair\n")
    (tmp_path / "eval.tsv").write_text("id\tdoc\ttext\nen_1_0\t1\tThe road closed.\n")
    clean = [tmp_path / "mono.clean.txt", tmp_path / "para.clean.tsv"]
    assert main(["leakage", "--train", str(tmp_path / "mono.txt"), str(tmp_path / "para.tsv"),
                 "--eval", str(tmp_path / "eval.tsv"), "--out-clean", *map(str, clean),
                 "--report", str(tmp_path / "r.json")]) == 0  # fmt: skip
    r = json.loads((tmp_path / "r.json").read_text())
    mono = r["train"][str(tmp_path / "mono.txt")]
    assert (mono["lines"], mono["exact_overlap"], mono["normalised_overlap"], mono["dropped"]) == (3, 1, 2, 2)
    assert r["train"][str(tmp_path / "para.tsv")]["dropped"] == 1
    assert clean[0].read_text() == "A new line.\n" and clean[1].read_text() == "free\tpair\n"
    assert r["eval_sentences_seen_in_training"][str(tmp_path / "eval.tsv")] == 1


def test_report_only(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("same\n")
    (tmp_path / "e.txt").write_text("same\n")
    main(["leakage", "--train", str(tmp_path / "t.txt"), "--eval", str(tmp_path / "e.txt"),
          "--settings", '{"drop": false}', "--report", str(tmp_path / "r.json")])  # fmt: skip
    assert json.loads((tmp_path / "r.json").read_text())["train"][str(tmp_path / "t.txt")]["dropped"] == 0


def test_real_multiner_vs_nlpc_overlap(shared_data: Path, tmp_path: Path) -> None:
    """The README warns nlpc-en-ta-gov overlaps multiNER: the guard must find it."""
    d = shared_data / "nlpc-en-ta-gov"
    main(["lines", "--src", str(d / "En-Ta English.txt"), "--tgt", str(d / "En-Ta Tamil.txt"), "--format", "nlpc",
          "--out", str(tmp_path / "gov.tsv")])  # fmt: skip
    main(["multiner", "--dir", str(shared_data / "multiner"), "--out-dir", str(tmp_path / "ner")])
    main(["leakage", "--train", str(tmp_path / "gov.tsv"), "--eval", str(tmp_path / "ner" / "en.test.conll"),
          str(tmp_path / "ner" / "ta.test.conll"), "--report", str(tmp_path / "r.json")])  # fmt: skip
    r = json.loads((tmp_path / "r.json").read_text())["train"][str(tmp_path / "gov.tsv")]
    assert r["normalised_overlap"] > 0 and r["dropped"] == r["normalised_overlap"]


def guarded_run(tmp_path: Path) -> tuple[list[str], Path]:
    """A guard run against one evaluation set: the guarded training text and the guard's report."""
    (tmp_path / "mono.txt").write_text("The road closed.\nRain in the hills.\nA new line.\n")
    (tmp_path / "old.tsv").write_text("id\tdoc\ttext\nen_1_0\t1\tThe road closed.\n")
    clean = str(tmp_path / "mono.clean.txt")
    main(["leakage", "--train", str(tmp_path / "mono.txt"), "--eval", str(tmp_path / "old.tsv"),
          "--out-clean", clean, "--report", str(tmp_path / "leakage.json")])  # fmt: skip
    assert json.loads((tmp_path / "leakage.json").read_text())["evals"] == [str(tmp_path / "old.tsv")]
    return [clean], tmp_path / "leakage.json"


def test_a_set_the_guard_was_built_with_passes_unread(tmp_path: Path) -> None:
    train, report = guarded_run(tmp_path)
    out = tmp_path / "checked.json"
    args = ["leakage-check", "--name", "mining/old", "--eval", str(tmp_path / "old.tsv"), "--train", *train]
    assert main([*args, "--guard-report", str(report), "--out", str(out)]) == 0
    checked = json.loads(out.read_text())
    assert (checked["guarded"], checked["checked"], checked["overlap"]) == (
        [str(tmp_path / "old.tsv")],
        [],
        0,
    )


def test_a_set_added_later_is_checked_and_refused_by_name_when_it_overlaps(tmp_path: Path, capsys) -> None:
    train, report = guarded_run(tmp_path)
    (tmp_path / "clean.tsv").write_text("id\tdoc\ttext\nen_2_0\t2\tSnow on the coast.\n")
    (tmp_path / "leaky.tsv").write_text("id\tdoc\ttext\nen_3_0\t3\train in the hills\n")
    out = tmp_path / "checked.json"
    base = ["leakage-check", "--train", *train, "--guard-report", str(report), "--out", str(out)]
    assert main([*base, "--name", "mining/clean", "--eval", str(tmp_path / "clean.tsv")]) == 0
    assert json.loads(out.read_text())["checked"] == [str(tmp_path / "clean.tsv")]
    out.unlink()
    assert main([*base, "--name", "mining/leaky", "--eval", str(tmp_path / "leaky.tsv")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "evaluation set 'mining/leaky'" in err[0] and "shares 1 sentence(s)" in err[0]
    assert str(report) in err[0] and not out.exists()
