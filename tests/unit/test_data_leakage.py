"""Leakage guard: exact and normalised overlaps between training text and evaluation sets (on the real
corpora: tests/realdata/test_data_leakage_real.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def news_set(root: Path) -> Path:
    """A site in the news benchmark's layout (Tamil-English/Army_news) whose English holds the one-word
    sentence "No." (issue 37: it equals, normalised, a side of the NLPC glossary's `இலக்கம்<TAB>No`)."""
    site = root / "Tamil-English" / "Army_news"
    (site / "Tamil").mkdir(parents=True)
    (site / "English").mkdir(parents=True)
    ta = [f"ta_7_{k}\tதமிழ் வாக்கியம் {k}" for k in range(30)]
    en = [f"en_7_{k}\tEnglish sentence number {k} here" for k in range(29)] + ["en_7_29\tNo."]
    (site / "Tamil" / "7").write_text("\n".join(ta) + "\n", encoding="utf-8")
    (site / "English" / "7").write_text("\n".join(en) + "\n", encoding="utf-8")
    gold = "".join(f"ta_7_{k}\ten_7_{k}\n" for k in range(30))
    (site / "ArmyNews-ta-en").write_text(gold, encoding="utf-8")
    return root


def prepared_set(tmp_path: Path) -> Path:
    from lem.data.news import load_news, write_news

    out = tmp_path / "results/eval/prepared/news_army/ta-en"
    write_news(load_news(news_set(tmp_path / "raw"), "Army_News", "ta-en"), out)
    return out


def guard_report(tmp_path: Path, evals: list[str]) -> Path:
    path = tmp_path / "leakage.json"
    path.write_text(json.dumps({"evals": evals}))
    return path


def test_a_one_word_sentence_equal_to_training_text_is_dropped_not_the_set(tmp_path: Path) -> None:
    """Issue 37 item 1: the set added after the guard keeps every sentence but "No."; its gold link goes with
    it; the drop is counted per reason and listed with file and id in stats.json (and the report's gold
    table); the training text and the guard are untouched."""
    from lem.data.news import gold_counts_markdown

    prepared = prepared_set(tmp_path)
    train = tmp_path / "para.tsv"
    train.write_text("இலக்கம்\tNo\nசொல்\tword\n", encoding="utf-8")
    report = guard_report(tmp_path, ["results/eval/prepared/news_gen/si-en/si.tsv"])
    out = tmp_path / "clean"
    assert main(["leakage-items", "--name", "news_army", "--pair", "ta-en", "--prepared", str(prepared),
                 "--train", str(train), "--guard-report", str(report), "--out-dir", str(out)]) == 0  # fmt: skip
    stats = json.loads((out / "stats.json").read_text())
    lk = stats["leakage"]
    assert lk["status"] == "checked" and lk["sentences_dropped"] == {"ta": 0, "en": 1}
    assert lk["by_reason"] == {"exact": 0, "normalised": 1} and lk["gold_links_dropped"] == 1
    assert lk["items"] == [{"file": str(prepared / "en.tsv"), "id": "en_7_29", "lang": "en",
                            "reason": "normalised", "train_file": str(train), "text": "No."}]  # fmt: skip
    assert stats["gold_links"] == 29 and stats["tgt_sentences"] == 29 and stats["src_sentences"] == 30
    assert "en_7_29" not in (out / "en.tsv").read_text() and "ta_7_29" in (out / "ta.tsv").read_text()
    assert (out / "gold.tsv").read_text().splitlines()[0] == "src_id\ttgt_id"
    assert (
        "ta_7_29" not in (out / "gold.tsv").read_text()
        and len((out / "gold.tsv").read_text().splitlines()) == 30
    )
    assert stats["gold_links_read"] == stats["gold_links"] + sum(
        v for k, v in stats["gold_dropped"].items() if k != "malformed_lines"
    )
    (clean_dir := tmp_path / "results/eval/clean/news_army/ta-en").mkdir(parents=True)
    (clean_dir / "stats.json").write_text((out / "stats.json").read_text())
    row = gold_counts_markdown([clean_dir / "stats.json"])[2]
    assert row.startswith("| news_army | ta-en | Army_news |")
    assert row.endswith("| a sentence equal to pre-training text 1 | ta 0 + en 1 (normalised 1) |")
    assert train.read_text(encoding="utf-8") == "இலக்கம்\tNo\nசொல்\tword\n"


def test_the_sets_own_rule_and_its_limit(tmp_path: Path) -> None:
    """min_chars (the set's setting) keeps "No." (2 characters normalised); a set losing more than
    max_dropped_share of a side is refused naming the set, the key, an item's file and id and the training
    file; a set the guard was built with is copied unread ("guarded")."""
    from lem.data.leakage import EvalLeakageSettings, LeakageError, drop_leaked_items

    prepared = prepared_set(tmp_path)
    train = tmp_path / "mono.txt"
    train.write_text(
        "No\nEnglish sentence number 3 here\nenglish sentence number 4 here!\n", encoding="utf-8"
    )
    report = guard_report(tmp_path, [])
    stats = drop_leaked_items("news_army", "ta-en", prepared, tmp_path / "a", [train], report,
                              EvalLeakageSettings(min_chars=3, max_dropped_share=0.1))  # fmt: skip
    assert stats["leakage"]["by_reason"] == {"exact": 1, "normalised": 1}
    assert [i["id"] for i in stats["leakage"]["items"]] == ["en_7_3", "en_7_4"]
    with pytest.raises(LeakageError, match=r"^evaluation set 'news_army' ta-en: 3 of its 30 en sentences \(10\.0%\) "
                       r"equal pre-training text, more than mining\.evalsets\.news_army\.leakage\.max_dropped_share "
                       r"= 0\.05 \(e\.g\. .*en\.tsv id en_7_3"):  # fmt: skip
        drop_leaked_items(
            "news_army", "ta-en", prepared, tmp_path / "b", [train], report, EvalLeakageSettings()
        )
    assert not (tmp_path / "b").exists()
    guarded = guard_report(tmp_path, [str(prepared / "ta.tsv"), str(prepared / "en.tsv")])
    stats = drop_leaked_items(
        "news_army", "ta-en", prepared, tmp_path / "c", [train], guarded, EvalLeakageSettings()
    )
    assert stats["leakage"]["status"] == "guarded" and stats["leakage"]["items"] == []
    assert (tmp_path / "c" / "en.tsv").read_text() == (prepared / "en.tsv").read_text()


def test_training_matches_ignores_sentences_without_text(tmp_path: Path) -> None:
    """A sentence of punctuation alone (a lone `“` on ITN's Tamil side) normalises to nothing: it would match
    every blank training line, so it never matches."""
    from lem.data.leakage import training_matches

    train = tmp_path / "t.txt"
    train.write_text("\nThe road.\n--\n", encoding="utf-8")
    assert training_matches(["“", "the road", "The road.", "other"], [train]) == {
        "the road": ("normalised", str(train)),
        "The road.": ("exact", str(train)),
    }
