"""News gold-alignment loader on the real ITN copy of ../shared/data: its counts, and every site and pair of the
archive against an independent count of the raw files. On a small fixture: tests/unit/test_data_news.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lem.data.news import REPAIR_RULES, find_dir, language_folder, load_news


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


def independent_count(site: Path, pair: str) -> dict[str, int]:
    """The raw files counted without the loader: shared document files, gold lines, and the gold links (ids
    lower-cased, `_6,7` expanded) whose both sentences are in a shared document, deduplicated."""
    src, tgt = pair.split("-")
    names = {"si": "Sinhala", "ta": "Tamil", "en": "English"}
    sides = {
        lang: next(p for p in site.iterdir() if p.name.lower() == names[lang].lower()) for lang in (src, tgt)
    }
    shared = {p.name for p in sides[src].iterdir()} & {p.name for p in sides[tgt].iterdir()}
    ids = {
        lang: {line.split("\t")[0].strip().lower() for d in shared
               for line in (sides[lang] / d).read_text(encoding="utf-8-sig").splitlines() if "\t" in line}
        for lang in (src, tgt)
    }  # fmt: skip
    (gold_file,) = [p for p in site.iterdir() if p.is_file()]
    lines = [line.split() for line in gold_file.read_text(encoding="utf-8-sig").splitlines() if line.strip()]

    def expand(sid: str) -> list[str]:
        head, _, ks = sid.lower().rpartition("_")
        return [f"{head}_{k}" for k in ks.split(",")]

    links = {
        (s, t) for a, b in lines for s in expand(a) for t in expand(b) if s in ids[src] and t in ids[tgt]
    }
    return {"doc_pairs_total": len(shared), "gold_lines": len(lines), "gold_links": len(links)}


def archive_sites(root: Path) -> list[tuple[str, str]]:
    pairs = {"sinhalaenglish": "si-en", "sinhalatamil": "si-ta", "tamilenglish": "ta-en"}
    return [
        (site.name, pairs[re.sub(r"[\s_-]", "", folder.name).lower()])
        for folder in sorted(root.iterdir()) if folder.is_dir()
        for site in sorted(folder.iterdir()) if site.is_dir()
    ]  # fmt: skip


def test_every_site_and_pair_of_the_real_archive_matches_an_independent_count(shared_data: Path) -> None:
    """Every site and pair of the archive on disk (ITN here; all four sites where the full archive is
    placed) loads, and its counts equal the raw files' (`independent_count`), repairs aside."""
    root = shared_data / "sent-align-news-itn"
    if not root.is_dir():
        pytest.skip(f"{root} is absent: the news archive copy is not on this machine")
    sites = archive_sites(root)
    assert len(sites) >= 3
    for site, pair in sites:
        b = load_news(root, site, pair, repairs=REPAIR_RULES)
        src, tgt = pair.split("-")
        folder = find_dir(find_dir(root, f"{language_folder(src)}-{language_folder(tgt)}"), site)
        expected = independent_count(folder, pair)
        repaired = sum(
            v for k, v in b.stats["gold_repaired"].items() if "other_language" in k or "swapped" in k
        )
        got = {k: b.stats[k] for k in expected}
        assert got == {**expected, "gold_links": expected["gold_links"] + repaired}, (site, pair)
        assert b.stats["gold_links_read"] == b.stats["gold_links"] + sum(
            v for k, v in b.stats["gold_dropped"].items() if k != "malformed_lines"
        )
