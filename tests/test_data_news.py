"""News gold-alignment loader: every defect of the real layout, on a small fixture and on the ITN copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lem.cli import command
from lem.data.news import load_news

main = command("data")


def make_site(root: Path) -> None:
    """Army_News si-en with: wrong-case prefixes, a `_6,7` link, CRLF gold, a duplicate line, a missing ID."""
    site = root / "Sinhala-English" / "Army_News"
    (site / "Sinhala").mkdir(parents=True)
    (site / "English").mkdir(parents=True)
    (site / "Sinhala" / "11").write_text("si_11_0\tසිංහල එක\nSi_11_1\tසිංහල දෙක\n", encoding="utf-8")
    (site / "English" / "11").write_text(
        "en_11_0\tone\r\nen_11_1\ttwo\r\nen_11_2\tthree\r\n", encoding="utf-8"
    )
    (site / "Sinhala" / "12").write_text("si_12_0\tවෙනත්\n", encoding="utf-8")
    (site / "English" / "12").write_text("en_12_0\tother\n", encoding="utf-8")
    (site / "Sinhala" / "13").write_text("si_13_0\tතනි\n", encoding="utf-8")  # no English counterpart
    gold = "Si_11_0\tEn_11_0\r\nsi_11_1\ten_11_1,2\r\nsi_11_0\ten_11_0\r\nsi_11_9\ten_11_0\r\n"
    (site / "Armynews.si-en").write_bytes(gold.encode())


def test_fixture_defects_counted(tmp_path: Path) -> None:
    make_site(tmp_path)
    b = load_news(tmp_path, "Army_News", "si-en")
    assert b.gold == [("si_11_0", "en_11_0"), ("si_11_1", "en_11_1"), ("si_11_1", "en_11_2")]
    d = b.stats["defects"]
    assert d["id_prefix_case_fixed"] == 3  # Si_11_1 in the document, Si_/En_ in gold
    assert d["multi_id_expanded"] == 1
    assert d["gold_duplicate_links"] == 1
    assert d["gold_missing_src_id"] == 1
    assert d["gold_crlf"] == 1 and d["crlf_files"] == 1
    assert d["docs_only_src"] == 1
    assert b.stats["doc_pairs_used"] == 1 and b.stats["doc_pairs_total"] == 2
    assert [r[0] for r in b.src] == ["si_11_0", "si_11_1"]
    assert len(load_news(tmp_path, "armynews", "si-en", "all").src) == 3  # folder matched loosely


def test_cli_writes_contract_files(tmp_path: Path) -> None:
    make_site(tmp_path / "root")
    out = tmp_path / "out"
    assert main(["news", "--root", str(tmp_path / "root"), "--site", "Army_News", "--pair", "si-en",
                 "--out-dir", str(out)]) == 0  # fmt: skip
    assert (out / "si.tsv").read_text(encoding="utf-8").splitlines()[0] == "id\tdoc\ttext"
    assert (out / "en.tsv").read_text(encoding="utf-8").splitlines()[1] == "en_11_0\t11\tone"
    assert (out / "gold.tsv").read_text().splitlines() == ["src_id\ttgt_id", "si_11_0\ten_11_0",
                                                          "si_11_1\ten_11_1", "si_11_1\ten_11_2"]  # fmt: skip
    stats = json.loads((out / "stats.json").read_text())
    assert stats["doc_pairs"] == "gold" and stats["gold_links"] == 3


@pytest.mark.parametrize(
    ("pair", "docs", "gold_docs", "links", "missing", "src_sents"),
    [("si-en", 352, 93, 300, 0, 776), ("si-ta", 34, 22, 78, 0, 188), ("ta-en", 112, 77, 285, 2, 605)],
)
def test_real_itn(shared_data: Path, pair, docs, gold_docs, links, missing, src_sents) -> None:
    b = load_news(shared_data / "sent-align-news-itn", "ITN", pair)
    assert b.stats["doc_pairs_total"] == docs
    assert b.stats["doc_pairs_used"] == gold_docs
    assert b.stats["gold_links"] == links
    assert b.stats["defects"].get("gold_missing_src_id", 0) == missing  # ta-en: 2 IDs of absent documents
    assert len(b.src) == src_sents
    ids = {r[0] for r in b.src} | {r[0] for r in b.tgt}
    assert all(s in ids and t in ids for s, t in b.gold)
    if pair == "si-en":
        assert b.stats["defects"]["gold_tgt_ids_repeated"] == 1
    assert load_news(shared_data / "sent-align-news-itn", "ITN", pair, "all").stats["doc_pairs_used"] == docs
