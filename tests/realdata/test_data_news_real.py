"""News gold-alignment loader on the real copies of ../shared/data (ITN; Army and Hiru): their counts and defects,
every site and pair against an independent count of the raw files, and the three sites pooled as
config/local.yaml reads them. Each test skips, saying why, where a copy is absent. On small files:
tests/unit/test_data_news.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lem.data.news import (
    GOLD_DROPPED,
    REPAIR_RULES,
    document_site,
    find_dir,
    gold_counts_markdown,
    language_folder,
    load_news,
    load_sites,
    write_news,
)


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


ARMY_HIRU = "sent-align-news-army-hiru"
# site, pair -> document pairs, gold lines, links read, kept, and the defects (stats.json `defects`) the
# README of ../shared/data lists for the pair, as counted on the files (two independent counts agree there)
ARMY_HIRU_COUNTS = {
    ("Army_News", "si-en"): (79, 300, 300, 300, {"gold_crlf": 1}),
    ("Army_News", "si-ta"): (101, 302, 303, 301,
                             {"multi_id_expanded": 1, "gold_duplicate_links": 1, "gold_ambiguous_id": 1}),
    ("Army_News", "ta-en"): (87, 300, 300, 300, {"gold_file_name_nonstandard": 1, "gold_cross_document_links": 1}),
    ("Hiru", "si-en"): (195, 301, 301, 301, {"gold_id_prefix_case_fixed": 9}),
    ("Hiru", "si-ta"): (169, 300, 300, 299, {"gold_ambiguous_id": 1}),
    ("Hiru", "ta-en"): (131, 300, 300, 298, {"gold_missing_tgt_id": 2}),
}  # fmt: skip


def army_hiru(shared_data: Path) -> Path:
    root = shared_data / ARMY_HIRU
    if not root.is_dir():
        pytest.skip(
            f"{root} is absent: the Army and Hiru sites of the news benchmark are not on this machine"
        )
    return root


@pytest.mark.parametrize(("site", "pair"), list(ARMY_HIRU_COUNTS))
def test_real_army_and_hiru_counts_and_defects(shared_data: Path, site: str, pair: str) -> None:
    docs, lines, read, kept, defects = ARMY_HIRU_COUNTS[(site, pair)]
    b = load_news(army_hiru(shared_data), site, pair)
    st = b.stats
    assert (st["doc_pairs_total"], st["doc_pairs_used"]) == (docs, docs)  # only gold-named documents here
    assert (st["gold_lines"], st["gold_links_read"], st["gold_links"]) == (lines, read, kept)
    assert {k: st["defects"].get(k, 0) for k in defects} == defects
    gold_defects = {k for k, v in st["defects"].items() if v and k.startswith(("gold_", "multi_"))}
    assert gold_defects - {"gold_src_ids_repeated", "gold_tgt_ids_repeated"} == set(defects)  # nothing else
    assert st["gold_links_read"] == st["gold_links"] + sum(
        v for k, v in st["gold_dropped"].items() if k != "malformed_lines"
    )
    dropped_listed = [
        e for e in st["gold_events"] if e["what"] in {k.removeprefix("gold_") for k in GOLD_DROPPED}
    ]
    assert len(dropped_listed) == sum(v for k, v in st["gold_dropped"].items() if k != "malformed_lines")


@pytest.mark.parametrize(("site", "line", "link"), [
    ("Army_News", 245, ["ta_32668_6", "ta_32668_5"]), ("Hiru", 29, ["ta_52579_2", "ta_52579_0"]),
])  # fmt: skip
def test_real_si_ta_links_with_the_target_prefix_are_dropped_and_listed_in_the_gold_table(
    shared_data: Path, tmp_path: Path, site: str, line: int, link: list[str]
) -> None:
    """Army si-ta line 245 and Hiru si-ta line 29: a Tamil id in the Sinhala column; which Sinhala sentence was
    meant cannot be known, so each is dropped, counted and listed with its file and line, in stats.json and in
    the report's gold-alignment table."""
    b = load_news(army_hiru(shared_data), site, "si-ta")
    (amb,) = b.stats["gold_ambiguous"]
    assert (amb["line"], amb["link"], amb["reason"]) == (line, link, "ambiguous_id")
    assert Path(amb["file"]).parent.name in ("Army_news", "Hiru")
    write_news(b, tmp_path / "news" / "si-ta")
    row = gold_counts_markdown([tmp_path / "news" / "si-ta" / "stats.json"])[2]
    dropped = row.split(" | ")[-2]
    assert (
        f"an id to rewrite (other language's prefix or swapped; no repair rule set) 1 (line {line})"
        in dropped
    )


def test_real_three_sites_pool_per_pair_with_the_site_as_stratum(shared_data: Path, tmp_path: Path) -> None:
    """config/local.yaml's news set: ITN, Army and Hiru read from ../shared/data's two copies and pooled; si-ta
    goes from ITN's 22 gold documents to 292. The gold table lists Army si-ta line 245 and Hiru si-ta line 29
    as dropped, each in its site's row."""
    army_hiru(shared_data)
    if not (shared_data / "sent-align-news-itn").is_dir():
        pytest.skip(f"{shared_data / 'sent-align-news-itn'} is absent: the ITN site is not on this machine")
    used = {}
    for pair in ("si-en", "si-ta", "ta-en"):
        b = load_sites(shared_data, ["ITN", "Army_News", "Hiru"], pair)
        used[pair] = b.stats["doc_pairs_used"]
        assert [s["site"] for s in b.stats["sites"]] == ["ITN", "Army_news", "Hiru"]
        assert {document_site(d) for _, d, _ in b.src} == {"ITN", "Army_news", "Hiru"}
        assert len({r[0] for r in b.src}) == len(b.src) and len({r[0] for r in b.tgt}) == len(b.tgt)
        write_news(b, tmp_path / "news" / pair)
    assert used == {"si-en": 93 + 79 + 195, "si-ta": 22 + 101 + 169, "ta-en": 77 + 87 + 131}
    rows = gold_counts_markdown(sorted((tmp_path / "news").glob("*/stats.json")))[2:]
    by_site = {(r.split(" | ")[1], r.split(" | ")[2]): r for r in rows}
    assert "(line 245)" in by_site[("si-ta", "Army_news")].split(" | ")[-2]
    assert "(line 29)" in by_site[("si-ta", "Hiru")].split(" | ")[-2]
    assert by_site[("si-ta", "pooled: 3 sites")].startswith(
        "| news | si-ta | pooled: 3 sites | 292 / 304 (gold) |"
    )


def test_the_army_and_hiru_copy_matches_an_independent_count(shared_data: Path) -> None:
    """Every site and pair of the Army and Hiru copy against `independent_count`, as the archive test above
    does for the ITN copy; a link the loader drops as needing a rewrite names no sentence of its side there."""
    root = army_hiru(shared_data)
    sites = archive_sites(root)
    assert len(sites) == 6
    for site, pair in sites:
        b = load_news(root, site, pair)
        src, tgt = pair.split("-")
        folder = find_dir(find_dir(root, f"{language_folder(src)}-{language_folder(tgt)}"), site)
        expected = independent_count(folder, pair)
        assert {k: b.stats[k] for k in expected} == expected, (site, pair)
