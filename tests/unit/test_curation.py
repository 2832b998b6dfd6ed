"""Curation: the corpus prepared once (streamed, capped, de-duplicated, leakage guarded) in the embedding
layout; ranking from the embed stage's embeddings with mining's margin settings (curation may override them);
the NMT table of the report with its controls and paired-bootstrap marks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lem.core.embeddings import write_embeddings
from lem.core.inputs import InputError
from lem.curate import CurationSettings, curate
from lem.data.webmined import FilterSettings, prepare_curation_corpus, prepare_test_set, script_share
from lem.report.markdown import markdown
from lem.report.tables import nmt_rows, summarise


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


NO_FILTERS = FilterSettings(identical=False, script_share=0)  # Latin placeholders on the si side


def test_prepare_drops_duplicates_empty_sides_and_evaluation_sentences(tmp_path):
    corpus = write(tmp_path / "noisy.tsv", "src\ttgt\tlabel\n" + "".join([
        "a one\tA one\tclean\n",
        "a one\tA  ONE!\tclean\n",  # the same pair after normalisation
        "b two\t\tmisaligned\n",  # an empty side
        "c three\tthe test sentence\tclean\n",  # a test sentence on the target side
        "d four\tD four\tuntranslated\n",
        "e five\tE five\tclean\n",
    ]))  # fmt: skip
    test = write(tmp_path / "test.tsv", "src\ttgt\nx\tThe test sentence.\n")
    stats = prepare_curation_corpus(
        "si-en", tmp_path / "out", corpus=corpus, exclude=[test], filters=NO_FILTERS
    )
    assert stats["kept"] == 3 and stats["read"] == 6
    assert (stats["dropped_duplicate"], stats["dropped_empty"], stats["dropped_leakage"]) == (1, 1, 1)
    assert stats["kept_clean"] == 2 and stats["kept_untranslated"] == 1
    assert len(stats["source_sha256"][str(corpus)]) == 64
    pairs = (tmp_path / "out/pairs.tsv").read_text().splitlines()
    assert pairs == [
        "src\ttgt\tlabel",
        "a one\tA one\tclean",
        "d four\tD four\tuntranslated",
        "e five\tE five\tclean",
    ]
    assert (tmp_path / "out/si.tsv").read_text().splitlines() == [
        "id\ttext",
        "c0\ta one",
        "c1\td four",
        "c2\te five",
    ]
    assert (tmp_path / "out/en.tsv").read_text().splitlines()[1:] == ["c0\tA one", "c1\tD four", "c2\tE five"]


def test_prepare_streams_line_aligned_files_up_to_the_cap(tmp_path):
    src = write(tmp_path / "c.si", "".join(f"s{i}\n" for i in range(100)))
    tgt = write(tmp_path / "c.en", "".join(f"t{i}\n" for i in range(100)))
    stats = prepare_curation_corpus(
        "si-en", tmp_path / "out", src_file=src, tgt_file=tgt, max_pairs=10, filters=NO_FILTERS
    )
    assert stats["kept"] == 10 and stats["read"] == 10 and stats["stopped_at_cap"] == 1
    assert (tmp_path / "out/pairs.tsv").read_text().splitlines()[0] == "src\ttgt"
    short = write(tmp_path / "short.en", "t0\n")
    with pytest.raises(InputError, match="more lines than its line-aligned partner"):
        prepare_curation_corpus("si-en", tmp_path / "bad", src_file=src, tgt_file=short)
    with pytest.raises(InputError, match=r"bad\.tsv:1: expected the header"):
        prepare_curation_corpus("si-en", tmp_path / "bad", corpus=write(tmp_path / "bad.tsv", "x\ty\n"))


@pytest.mark.parametrize(
    ("n_src", "n_tgt", "longer", "line"),
    [(50, 49, "c.si", 50), (49, 50, "c.en", 50), (52, 49, "c.si", 50), (50, 50, None, None)],
)
def test_prepare_refuses_line_aligned_files_of_different_lengths(tmp_path, n_src, n_tgt, longer, line):
    """One extra source line was read by zip and lost: every pair after it shifted by one, kept as clean."""
    src = write(tmp_path / "c.si", "".join(f"s{i}\n" for i in range(n_src)))
    tgt = write(tmp_path / "c.en", "".join(f"t{i}\n" for i in range(n_tgt)))
    if longer is None:
        stats = prepare_curation_corpus(
            "si-en", tmp_path / "out", src_file=src, tgt_file=tgt, filters=NO_FILTERS
        )
        assert stats["kept"] == n_src
        assert (tmp_path / "out/pairs.tsv").read_text().splitlines()[-1] == f"s{n_src - 1}\tt{n_tgt - 1}"
        return
    with pytest.raises(
        InputError, match=rf"{longer}:{line}: more lines than its line-aligned partner"
    ) as err:
        prepare_curation_corpus("si-en", tmp_path / "out", src_file=src, tgt_file=tgt, filters=NO_FILTERS)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out/pairs.tsv").exists()


def test_prepare_filters_copies_and_sides_in_another_script(tmp_path):
    corpus = write(tmp_path / "noisy.tsv", "src\ttgt\tlabel\n" + "".join([
        "අම්මා ගෙදර යයි\tMother goes home\tclean\n",
        "අම්මා ගෙදර නැත\tඅම්මා ගෙදර නැත\tuntranslated\n",  # a copy: identical sides
        "ගමට යයි\tஅம்மா வீட்டுக்குப் போகிறார்\twrong_language\n",  # Tamil on the English side
        "Kamal goes home\tKamal goes home now\twrong_language\n",  # English on the Sinhala side
        "කමල් 2024 Colombo ගියා\tKamal went to Colombo in 2024\tclean\n",  # a Latin name: 8/15 letters Sinhala
        "2024\t2024.\tclean\n",  # no letters: no script to check, but the same text
        "1999\tNineteen ninety-nine\tclean\n",  # no letters on one side: passes
    ]))  # fmt: skip
    stats = prepare_curation_corpus("si-en", tmp_path / "out", corpus=corpus)
    assert stats["kept"] == 3 and stats["kept_clean"] == 3
    assert (stats["dropped_identical"], stats["dropped_script"]) == (2, 2)
    assert stats["dropped_identical_untranslated"] == 1 and stats["dropped_script_wrong_language"] == 2
    assert stats["filters"] == {
        "identical": True, "script_share": 0.5, "scripts": {"si": "SINHALA", "en": "LATIN"}
    }  # fmt: skip
    kept = [line.split("\t")[1] for line in (tmp_path / "out/pairs.tsv").read_text().splitlines()[1:]]
    assert kept == ["Mother goes home", "Kamal went to Colombo in 2024", "Nineteen ninety-nine"]
    # a stricter share drops the mixed-script pair; a language without a script is not checked
    strict = FilterSettings.from_dict({"script_share": 0.9, "scripts": {"en": "LATIN"}})
    stats = prepare_curation_corpus("si-en", tmp_path / "strict", corpus=corpus, filters=strict)
    assert stats["dropped_script"] == 1 and stats["kept"] == 4  # only Tamil on the English side
    assert script_share("කමල් Colombo", "SINHALA") == pytest.approx(4 / 11)  # virama counted
    assert script_share("2024 !", "LATIN") is None
    # nothing left: the message names the file and the filters
    only_copies = write(tmp_path / "copies.tsv", "src\ttgt\nඑක\tඑක\n")
    with pytest.raises(InputError, match=r"copies\.tsv: no pair left .*1 identical.*curation\.filters"):
        prepare_curation_corpus("si-en", tmp_path / "copies", corpus=only_copies)


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"identical": "yes"}, "identical='yes': expected true or false"),
        ({"script_share": 1.5}, r"script_share=1\.5: expected a share in \[0, 1\]"),
        ({"script_share": True}, "script_share=True"),
        ({"scripts": {"si": "sinhala"}}, "upper-case first word"),
        ({"scrpts": {}}, "scrpts"),
    ],
)
def test_filter_settings_refuse_bad_values(bad, match):
    with pytest.raises(ValueError, match=match):
        FilterSettings.from_dict(bad)


def test_prepare_test_set_from_line_aligned_files(tmp_path):
    src = write(tmp_path / "sin_Sinh.devtest", "එක\nදෙක\n")
    tgt = write(tmp_path / "eng_Latn.devtest", "one\ntwo\n")
    assert prepare_test_set(tmp_path / "test.tsv", src_file=src, tgt_file=tgt) == 2
    assert (tmp_path / "test.tsv").read_text().splitlines() == ["src\ttgt", "එක\tone", "දෙක\ttwo"]


def test_margin_settings_come_from_mining_unless_curation_sets_them():
    s = CurationSettings.from_dict({"mining": {"k": 6, "neighbourhood": "pooled"}})
    assert s.margin_settings() == (6, "ratio", "pooled")
    s = CurationSettings.from_dict({"k": 2, "neighbourhood": "mean", "mining": {"k": 6}})
    assert s.margin_settings() == (2, "ratio", "mean")
    with pytest.raises(ValueError, match="mining setting margin='bad'"):
        CurationSettings.from_dict({"mining": {"margin": "bad"}})


def test_rank_reads_the_embeddings_and_puts_aligned_pairs_first(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    labels = ["clean" if i % 2 == 0 else "misaligned" for i in range(n)]
    lines = "".join(f"s{i}\tt{i}\t{lbl}\n" for i, lbl in enumerate(labels))
    corpus = write(tmp_path / "noisy.tsv", "src\ttgt\tlabel\n" + lines)
    prepare_curation_corpus("si-en", tmp_path / "prep", corpus=corpus, filters=NO_FILTERS)
    x = rng.normal(size=(n, 16))
    y = np.where(
        np.array(labels)[:, None] == "clean", x + 0.1 * rng.normal(size=(n, 16)), rng.normal(size=(n, 16))
    )
    x, y = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (x, y))
    ids = [f"c{i}" for i in range(n)]
    write_embeddings(tmp_path / "emb/si.npy", x, ids, {})
    write_embeddings(tmp_path / "emb/en.npy", y, ids, {})
    settings = CurationSettings.from_dict({"keep_fractions": [0.5], "mining": {"k": 3}})
    m = curate(str(tmp_path / "prep/pairs.tsv"), str(tmp_path / "emb/si.npy"), str(tmp_path / "emb/en.npy"),
               str(tmp_path / "prep/si.tsv"), str(tmp_path / "prep/en.tsv"), settings,
               str(tmp_path / "scores.tsv"), str(tmp_path / "m.json"), {"task": "curation"})  # fmt: skip
    assert m["precision_at_0.5"] == 1.0 and m["margin"] == {
        "k": 3,
        "margin": "ratio",
        "neighbourhood": "pooled",
    }
    assert json.loads((tmp_path / "m.json").read_text())["keys"] == {"task": "curation"}
    # embeddings of another corpus: the ids disagree with the sentence file
    write_embeddings(tmp_path / "emb/en.npy", y, [f"x{i}" for i in range(n)], {})
    with pytest.raises(ValueError, match=r"en\.ids\.txt:1: id 'x0' differs from 'c0'"):
        curate(str(tmp_path / "prep/pairs.tsv"), str(tmp_path / "emb/si.npy"), str(tmp_path / "emb/en.npy"),
               str(tmp_path / "prep/si.tsv"), str(tmp_path / "prep/en.tsv"), settings,
               str(tmp_path / "scores.tsv"), str(tmp_path / "m.json"))  # fmt: skip


@pytest.mark.parametrize("signal", [True, False])
def test_report_nmt_table_compares_rows_over_seeds_only_when_the_oracle_beats_random(tmp_path, signal):
    """NMT per pre-training seed: mean +- seed s.d.; the oracle-vs-random control decides whether the share
    has signal; only then are the rows compared (paired over seeds, Holm with the rest) and marked."""
    from lem.report import comparisons

    bleu = {
        "mlm_tlm": (20.0, 21.0, 19.5),
        "base": (10.0, 11.5, 9.0),
        "random": (5.0, 6.0, 5.5),
        "oracle": (30.0, 29.0, 31.0) if signal else (5.5, 5.0, 6.5),
    }
    paths = []
    for row, scores in {**bleu, "no_filter": (8.0, 8.0, 8.0)}.items():
        for seed, b in zip(("13", "14", "15"), scores, strict=True):
            share = "1" if row == "no_filter" else "0.5"
            keys = {
                "task": "nmt",
                "variant": row,
                "dataset": "curation",
                "pair": "si-en",
                "share": share,
                "seed": seed,
            }
            paths.append(
                str(
                    write(
                        tmp_path / f"{row}{seed}.json", json.dumps({"bleu": b, "chrf": 2 * b, "keys": keys})
                    )
                )
            )
    items = comparisons.Items()
    summary = summarise(pd.DataFrame(nmt_rows(paths, items)))
    comparisons = comparisons.compare(items, ["base", "mlm_tlm"])
    control = comparisons[comparisons.role == "control"].iloc[0]
    assert (control.a, control.b, control.dataset, bool(control.significant)) == (
        "oracle",
        "random",
        "curation keep 0.5",
        signal,
    )
    row = comparisons[comparisons.a == "mlm_tlm"].iloc[0]
    assert row.seeds == 3 and row["diff"] == pytest.approx(np.mean(bleu["mlm_tlm"]) - np.mean(bleu["base"]))
    md = markdown(summary, ["base", "mlm_tlm"], None, comparisons)
    table = md.split("## Curation: NMT", 1)[1].split("\n## ", 1)[0]
    assert "| row | si-en keep 0.5 BLEU | si-en keep 0.5 chrF |" in table
    assert "| *no_filter* | 8.0 ± 0.0 | 16.0 ± 0.0 |" in table
    if signal:
        assert row.significant and not np.isnan(row.p_holm)
        assert "| mlm_tlm | 20.2 ± 0.8 ▲ | 40.3 ± 1.5 |" in table and ": signal." in table
    else:
        assert np.isnan(row.p) and not row.significant and row.test.startswith("none (no signal")
        rows = [line for line in table.splitlines() if line.startswith("| ")]
        assert not any("▲" in line or "▼" in line for line in rows) and "**no signal**" in table


def test_curation_rankings_reach_the_seed_level_comparison(tmp_path):
    """Each labelled ranking's per-pair items reach the comparisons: the precision of clean pairs in the
    largest kept share, mlm_tlm against base and lem against mlm_tlm, one ranking per pre-training seed,
    paired over seeds; a single seed is listed untested (one ranking says nothing of the recipe)."""
    from lem.report import comparisons

    rng = np.random.default_rng(1)
    n = 200
    labels = ["clean" if i % 2 == 0 else "misaligned" for i in range(n)]
    corpus = write(tmp_path / "noisy.tsv", "src\ttgt\tlabel\n" + "".join(
        f"s{i}\tt{i}\t{lbl}\n" for i, lbl in enumerate(labels)
    ))  # fmt: skip
    prepare_curation_corpus("si-en", tmp_path / "prep", corpus=corpus, filters=NO_FILTERS)
    x = rng.normal(size=(n, 16))
    clean = np.array(labels)[:, None] == "clean"
    ids = [f"c{i}" for i in range(n)]
    settings = CurationSettings.from_dict({"keep_fractions": [0.25, 0.5], "mining": {"k": 3}})
    items, first, metrics = comparisons.Items(), comparisons.Items(), {}
    for seed in ("13", "14", "15"):
        for variant, noise in (("base", 5.0), ("mlm_tlm", 0.1), ("lem", 0.1)):
            y = np.where(clean, x + noise * rng.normal(size=(n, 16)), rng.normal(size=(n, 16)))
            d = tmp_path / variant / seed
            write_embeddings(d / "si.npy", x, ids, {})
            write_embeddings(d / "en.npy", y, ids, {})
            m = curate(str(tmp_path / "prep/pairs.tsv"), str(d / "si.npy"), str(d / "en.npy"),
                       str(tmp_path / "prep/si.tsv"), str(tmp_path / "prep/en.tsv"), settings,
                       str(d / "scores.tsv"), str(d / "m.json"))  # fmt: skip
            assert sorted(m["items"]["rank"]) == list(range(1, n + 1)) and sum(m["items"]["clean"]) == n // 2
            metrics.setdefault(variant, []).append(m["precision_at_0.5"])
            key = {"dataset": "noisy", "pair": "si-en", "variant": variant, "seed": seed}
            items.add_curation(key, m, variant)
            if seed == "13":
                first.add_curation(key, m, variant)
    table = comparisons.compare(items, ["base", "mlm_tlm", "lem"])
    rows = {(r.a, r.b): r for r in table.itertuples()}
    assert set(rows) == {("lem", "mlm_tlm"), ("mlm_tlm", "base")}
    better = rows[("mlm_tlm", "base")]
    assert better.metric == "precision_at_0.5" and better.units == "200 pairs" and better.seeds == 3
    assert (
        better.value_a == pytest.approx(np.mean(metrics["mlm_tlm"])) and better.value_a > better.value_b + 0.2
    )
    assert better.significant and not rows[("lem", "mlm_tlm")].significant
    one = comparisons.compare(first, ["base", "mlm_tlm", "lem"])
    assert (one.seeds == 1).all() and one.p.isna().all() and not one.significant.any()
    assert (one.test == "none (fewer than 2 paired seeds)").all()
    # a metrics file from before the items: a clear message, not a silent gap in the comparisons
    old = {k: v for k, v in m.items() if k != "items"}
    with pytest.raises(ValueError, match=r"old\.json: a curation metrics file without per-pair `items`"):
        items.add_curation({"dataset": "noisy", "pair": "si-en", "variant": "lem"}, old, "old.json")
