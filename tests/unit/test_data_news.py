"""News gold-alignment loader: every defect of the real layout, on a small fixture (on the ITN copy:
tests/realdata/test_data_news_real.py)."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from lem.cli import command
from lem.config_check import check_workflow_config
from lem.core.inputs import InputError
from lem.data.news import (
    REPAIR_RULES,
    document_site,
    find_gold,
    find_site,
    gold_counts_markdown,
    gold_name_re,
    load_news,
    load_sites,
    write_news,
)

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
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


def make_archive(root: Path) -> None:
    """Three sites in the public archive's own layout and names (`Tamil-English/Army_news/ArmyNews-ta-en`),
    with its quirks: CRLF gold, a `_6,7` link, a cross-document link, ids with the other language's prefix
    (Newsfirst si-en `en_4439030_0 en_4439030_0`, Army si-ta `ta_32668_6 ta_32668_5`), a swapped link, and
    an other-prefix id whose right-language sentence does not exist (not repairable: dropped)."""

    def docs(site: Path, lang: str, files: dict[str, int]) -> None:
        (site / lang).mkdir(parents=True)
        for doc, n in files.items():
            code = {"Tamil": "ta", "English": "en", "Sinhala": "si"}[lang]
            (site / lang / doc).write_text("".join(f"{code}_{doc}_{k}\t{lang} {doc} {k}\n" for k in range(n)))

    army = root / "Tamil-English" / "Army_news"
    docs(army, "Tamil", {"125": 3, "49143": 1, "49433": 2})
    docs(army, "English", {"125": 9, "49143": 1, "49433": 2})
    (army / "ArmyNews-ta-en").write_bytes(
        b"ta_125_0\ten_125_0\r\nta_125_1\ten_125_6,7\r\nta_49433_0\ten_49143_0\r\nta_49433_1\ten_49433_1\r\n"
    )
    news = root / "Sinhala-English" / "Newsfirst"
    docs(news, "Sinhala", {"4439030": 2})
    docs(news, "English", {"4439030": 2})
    (news / "Newsfirst.si-en").write_text(
        "en_4439030_0\ten_4439030_0\nen_4439030_1\tsi_4439030_1\nen_4439030_9\ten_4439030_1\n"
    )
    army_st = root / "Sinhala-Tamil" / "Army_news"
    docs(army_st, "Sinhala", {"32668": 7})
    docs(army_st, "Tamil", {"32668": 6})
    (army_st / "ArmyNews.si-ta").write_text("ta_32668_6\tta_32668_5\nsi_32668_0\tta_32668_0\n")


def test_real_archive_layout_and_quirks(tmp_path: Path) -> None:
    make_archive(tmp_path)
    ta = load_news(tmp_path, "Army_News", "ta-en")  # the config's site name matches `Army_news`
    assert ta.gold == [("ta_125_0", "en_125_0"), ("ta_125_1", "en_125_6"), ("ta_125_1", "en_125_7"),
                       ("ta_49433_0", "en_49143_0"), ("ta_49433_1", "en_49433_1")]  # fmt: skip
    assert ta.stats["defects"]["gold_crlf"] == 1 and ta.stats["gold_lines"] == 4
    assert ta.stats["gold_cross_document_links"] == 1 and ta.stats["gold_repaired"]["multi_id_expanded"] == 1
    assert ta.stats["doc_pairs_used"] == 3  # 49143 holds a cross-document link's target
    si = load_news(tmp_path, "Newsfirst", "si-en", repairs=REPAIR_RULES)
    assert si.gold == [("si_4439030_0", "en_4439030_0"), ("si_4439030_1", "en_4439030_1")]
    assert si.stats["gold_repaired"]["src_other_language_prefix_repaired"] == 1
    assert si.stats["gold_repaired"]["swapped_repaired"] == 1
    assert si.stats["gold_dropped"]["missing_src_id"] == 1  # en_4439030_9: no si_4439030_9 to repair it to
    st = load_news(tmp_path, "ArmyNews", "si-ta", repairs=REPAIR_RULES)
    assert st.gold == [("si_32668_6", "ta_32668_5"), ("si_32668_0", "ta_32668_0")]
    for b in (ta, si, st):  # every link read is kept or dropped for one counted reason
        dropped = b.stats["gold_dropped"]
        assert b.stats["gold_links_read"] == b.stats["gold_links"] + sum(
            v for k, v in dropped.items() if k != "malformed_lines"
        )


@pytest.mark.parametrize("name", ["ITN.si-en", "ArmyNews-si-en", "hiru_SI_EN", "Newsfirst.Si-En", "si-en"])
def test_gold_file_found_whatever_its_separator_and_case(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("")
    (tmp_path / "Sinhala").mkdir()
    (tmp_path / "Armynews.ta-en").write_text("")
    assert find_gold(tmp_path, "si-en").name == name


def test_gold_file_missing_or_ambiguous_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "ArmyNews.ta-en").write_text("")
    with pytest.raises(
        InputError, match=rf"^{tmp_path}: expected one gold file .* got 0: \['ArmyNews.ta-en'\]"
    ):
        find_gold(tmp_path, "si-en")
    (tmp_path / "a.si-en").write_text("")
    (tmp_path / "b-si-en").write_text("")
    with pytest.raises(InputError, match=r"got 2: \['a.si-en', 'b-si-en'\]"):
        find_gold(tmp_path, "si-en")
    assert not gold_name_re("si-en").search("tasi-en") and not gold_name_re("si-en").search("si-ens")


def test_gold_counts_markdown(tmp_path: Path) -> None:
    make_archive(tmp_path / "raw")
    for site, pair in (("Army_News", "ta-en"), ("Newsfirst", "si-en")):
        bench = load_news(tmp_path / "raw", site, pair, repairs=REPAIR_RULES)
        write_news(bench, tmp_path / "prepared" / f"news_{site}" / pair)
    files = sorted((tmp_path / "prepared").glob("*/*/stats.json"))
    lines = gold_counts_markdown(files)
    assert lines[0].startswith("| evaluation set | pair | site |") and len(lines) == 4
    assert lines[2] == (
        "| news_Army_News | ta-en | Army_news | 3 / 3 (gold) | 4 (file named `ArmyNews-ta-en`; CRLF line "
        "endings) | 5 | 1 (line 3) | one-to-many ids expanded 1 (line 2) | none | - |"
    )
    assert lines[3] == (
        "| news_Newsfirst | si-en | Newsfirst | 1 / 1 (gold) | 3 | 2 | 0 | source id with the other language's "
        "prefix 1 (line 1), ids swapped 1 (line 2) | source id in no shared document 1 (line 3) | - |"
    )
    assert gold_counts_markdown([]) == []


def test_prefix_repair_only_when_provably_right(tmp_path: Path) -> None:
    """Army si-ta's `ta_32668_6<TAB>ta_32668_5`: repaired to `si_32668_6` when no other gold line names that
    sentence (unambiguous), dropped and counted `ambiguous` when one does (the issue's false gold link);
    each repair listed with its gold line number."""
    make_archive(tmp_path / "clear")
    st = load_news(tmp_path / "clear", "ArmyNews", "si-ta", repairs=["other_language_prefix"])
    assert st.gold == [("si_32668_6", "ta_32668_5"), ("si_32668_0", "ta_32668_0")]
    assert st.stats["gold_repairs"] == [
        {"line": 1, "from": ["ta_32668_6", "ta_32668_5"], "to": ["si_32668_6", "ta_32668_5"],
         "reason": "src_other_language_prefix_repaired"}
    ]  # fmt: skip
    make_archive(tmp_path / "ambiguous")
    gold = tmp_path / "ambiguous" / "Sinhala-Tamil" / "Army_news" / "ArmyNews.si-ta"
    gold.write_text(gold.read_text() + "si_32668_6\tta_32668_4\nsi_32668_4\tta_32668_5\n")
    amb = load_news(tmp_path / "ambiguous", "ArmyNews", "si-ta", repairs=REPAIR_RULES)
    assert ("si_32668_6", "ta_32668_5") not in amb.gold
    assert amb.gold == [
        ("si_32668_0", "ta_32668_0"),
        ("si_32668_6", "ta_32668_4"),
        ("si_32668_4", "ta_32668_5"),
    ]
    assert amb.stats["gold_dropped"]["ambiguous_repair"] == 1
    assert amb.stats["gold_repairs"] == []
    assert amb.stats["gold_ambiguous"] == [
        {"file": str(gold), "line": 1, "link": ["ta_32668_6", "ta_32668_5"], "reason": "ambiguous_repair"}
    ]
    assert amb.stats["gold_links_read"] == amb.stats["gold_links"] + sum(
        v for k, v in amb.stats["gold_dropped"].items() if k != "malformed_lines"
    )
    line = gold_counts_markdown([_write(amb, tmp_path / "prep" / "army" / "si-ta")])[2]
    assert line.endswith(
        "| none | ambiguous repair (the repaired id is named by another line) 1 (line 1) | - |"
    )


def _write(bench, out: Path) -> Path:
    write_news(bench, out)
    return out / "stats.json"


def test_gold_ranges_expanded_or_dropped_by_name(tmp_path: Path, caplog) -> None:
    """`_6-7` (issue 38) is a range: expanded like `_6,7`; a descending or over-long range is dropped as a
    malformed line, logged with the file and line."""
    make_archive(tmp_path)
    gold = tmp_path / "Tamil-English" / "Army_news" / "ArmyNews-ta-en"
    gold.write_bytes(b"ta_125_0\ten_125_6-8\r\nta_125_1\ten_125_7-6\r\nta_125_2\ten_125_0-99\r\n")
    with caplog.at_level("WARNING", logger="lem.data.news"):
        b = load_news(tmp_path, "Army_News", "ta-en")
    assert b.gold == [("ta_125_0", "en_125_6"), ("ta_125_0", "en_125_7"), ("ta_125_0", "en_125_8")]
    assert b.stats["defects"]["gold_id_range_expanded"] == 1
    assert b.stats["gold_dropped"]["malformed_lines"] == 2
    assert f"{gold}:2: a sentence range 'en_125_7-6'" in caplog.text


def test_non_utf8_document_file_name_refused_naming_it(tmp_path: Path) -> None:
    make_archive(tmp_path)
    folder = tmp_path / "Tamil-English" / "Army_news" / "Tamil"
    try:
        (folder / os.fsdecode(b"bad\xff")).write_text("ta_1_0\tx\n")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses a non-UTF-8 file name")
    with pytest.raises(InputError, match=r"bad\\udcff: expected a document file name in UTF-8"):
        load_news(tmp_path, "Army_News", "ta-en")


def test_gold_links_needing_a_rewrite_are_dropped_by_default_with_their_file_and_line(tmp_path: Path) -> None:
    """Army si-ta's `ta_32668_6<TAB>ta_32668_5` (a Tamil id in the Sinhala column; `si_32668_6` is about six
    suspects, `ta_32668_5` about a school programme: no translation) is dropped and counted, not guessed;
    so are Newsfirst's other-prefix and swapped links; a case-only prefix fix is still made."""
    make_archive(tmp_path)
    st = load_news(tmp_path, "ArmyNews", "si-ta")
    gold = tmp_path / "Sinhala-Tamil" / "Army_news" / "ArmyNews.si-ta"
    assert st.gold == [("si_32668_0", "ta_32668_0")]
    assert st.stats["gold_ambiguous"] == [
        {"file": str(gold), "line": 1, "link": ["ta_32668_6", "ta_32668_5"], "reason": "ambiguous_id"}
    ]
    assert st.stats["gold_dropped"]["ambiguous_id"] == 1 and st.stats["gold_repairs"] == []
    assert st.stats["gold_repair_rules"] == []
    with pytest.raises(InputError, match=r"Newsfirst.si-en: .*3 links, none naming .*needing a rewrite: 3"):
        load_news(tmp_path, "Newsfirst", "si-en")  # its three links all need a rewrite: nothing to score
    with pytest.raises(ValueError, match="no repair rule"):
        load_news(tmp_path, "ArmyNews", "si-ta", repairs=["guess"])


def test_news_cli_opts_into_repair_rules_by_name(tmp_path: Path) -> None:
    make_archive(tmp_path)
    for repairs, links in (([], 1), (["other_language_prefix"], 2)):
        out = tmp_path / f"out{len(repairs)}"
        main(["news", "--root", str(tmp_path), "--site", "ArmyNews", "--pair", "si-ta",
                 "--out-dir", str(out), "--gold-repairs", *repairs])  # fmt: skip
        assert json.loads((out / "stats.json").read_text())["gold_links"] == links


def _docs(site: Path, lang: str, files: dict[str, int]) -> None:
    """`files`: document -> sentences, written `<code>_<doc>_<k>\\t<lang> <doc> <k>`."""
    code = {"Tamil": "ta", "English": "en", "Sinhala": "si"}[lang]
    (site / lang).mkdir(parents=True, exist_ok=True)
    for doc, n in files.items():
        (site / lang / doc).write_text("".join(f"{code}_{doc}_{k}\t{lang} {doc} {k}\n" for k in range(n)))


def make_army_hiru(root: Path) -> Path:
    """The Army and Hiru sites' defects (../shared/data/README.md) on small files, in a copy of the benchmark
    inside `root` (as ../shared/data holds them), beside an ITN copy whose si-en document 9 Hiru reuses:
    Army si-en CRLF gold; Army si-ta a 1-to-2 link (line 2), a repeated link (line 3) and a source id with the
    target's prefix (line 4, as the real line 245); Army ta-en a gold file named with a hyphen and a link across
    documents (line 2); Hiru si-en lower-case prefix fixes (line 1); Hiru si-ta a source id with the target's
    prefix (line 2, as the real line 29); Hiru ta-en two ids in no document (lines 2, 3). Returns the copy."""
    copy = root / "sent-align-news-army-hiru"
    army, hiru = "Army_news", "Hiru"
    st = copy / "Sinhala-English" / army
    _docs(st, "Sinhala", {"1": 2})
    _docs(st, "English", {"1": 2})
    (st / "ArmyNews.si-en").write_bytes(b"si_1_0\ten_1_0\r\nsi_1_1\ten_1_1\r\n")
    st = copy / "Sinhala-Tamil" / army
    _docs(st, "Sinhala", {"5": 4})
    _docs(st, "Tamil", {"5": 4})
    (st / "ArmyNews.si-ta").write_text("si_5_0\tta_5_0\nsi_5_1\tta_5_1,2\nsi_5_0\tta_5_0\nta_5_3\tta_5_2\n")
    st = copy / "Tamil-English" / army
    _docs(st, "Tamil", {"7": 2, "8": 1})
    _docs(st, "English", {"7": 2, "8": 1})
    (st / "ArmyNews-ta-en").write_text("ta_7_0\ten_7_0\nta_7_1\ten_8_0\n")
    st = copy / "Sinhala-English" / hiru
    _docs(st, "Sinhala", {"9": 2})
    _docs(st, "English", {"9": 2})
    (st / "Hiru.si-en").write_text("Si_9_0\tEn_9_0\nsi_9_1\ten_9_1\n")
    st = copy / "Sinhala-Tamil" / hiru
    _docs(st, "Sinhala", {"52": 3})
    _docs(st, "Tamil", {"52": 3})
    (st / "Hiru.si-ta").write_text("si_52_0\tta_52_0\nta_52_2\tta_52_0\nsi_52_1\tta_52_1\n")
    st = copy / "Tamil-English" / hiru
    _docs(st, "Tamil", {"3": 3})
    _docs(st, "English", {"3": 2})
    (st / "Hiru.ta-en").write_text("ta_3_0\ten_3_0\nta_3_1\ten_3_7\nta_3_2\ten_4_0\nta_3_1\ten_3_1\n")
    itn = root / "sent-align-news-itn" / "Sinhala-English" / "ITN"
    _docs(itn, "Sinhala", {"9": 1, "10": 1})
    _docs(itn, "English", {"9": 1, "10": 1})
    (itn / "ITN.si-en").write_text("si_9_0\ten_9_0\nsi_10_0\ten_10_0\n")
    return copy


def _accounted(b) -> None:
    """Every link read is kept or dropped for one counted reason, and every drop is listed with its line."""
    dropped = {k: v for k, v in b.stats["gold_dropped"].items() if k != "malformed_lines"}
    assert b.stats["gold_links_read"] == b.stats["gold_links"] + sum(dropped.values())
    listed = Counter(e["what"] for e in b.stats["gold_events"])
    assert all(listed[k] == v for k, v in dropped.items() if v), (dropped, listed)


@pytest.mark.parametrize(
    ("site", "pair", "kept", "defects", "events"),
    [
        ("Army_News", "si-en", 2, {"gold_crlf": 1}, []),
        ("Army_News", "si-ta", 3,
         {"multi_id_expanded": 1, "gold_duplicate_links": 1, "gold_ambiguous_id": 1},
         [(2, "multi_id_expanded"), (3, "duplicate_links"), (4, "ambiguous_id")]),
        ("Army_News", "ta-en", 2, {"gold_file_name_nonstandard": 1, "gold_cross_document_links": 1},
         [(2, "cross_document_links")]),
        ("Hiru", "si-en", 2, {"gold_id_prefix_case_fixed": 2}, [(1, "id_prefix_case_fixed")]),
        ("Hiru", "si-ta", 2, {"gold_ambiguous_id": 1}, [(2, "ambiguous_id")]),
        ("Hiru", "ta-en", 2, {"gold_missing_tgt_id": 2}, [(2, "missing_tgt_id"), (3, "missing_tgt_id")]),
    ],
)  # fmt: skip
def test_every_defect_of_the_army_and_hiru_sites_is_counted_and_said_with_its_line(
    tmp_path: Path, caplog, site, pair, kept, defects, events
) -> None:
    """Each defect ../shared/data/README.md lists for Army and Hiru, on small files: handled, counted in
    stats.json, said in a log line naming the gold file (and line), and shown in the report's gold table;
    a link whose source id has the target's prefix is dropped (which Sinhala sentence was meant cannot be
    known), never guessed."""
    make_army_hiru(tmp_path)
    with caplog.at_level("INFO", logger="lem.data.news"):
        b = load_news(tmp_path, site, pair)  # the site found in the one copy holding it
    assert b.stats["gold_links"] == kept
    assert {k: b.stats["defects"].get(k) for k in defects} == defects
    assert [(e["line"], e["what"]) for e in b.stats["gold_events"]] == events
    gold = Path(b.stats["gold_file"])
    for line, _ in events:
        assert f"{gold}:{line}: " in caplog.text
    if "gold_crlf" in defects:
        assert f"{gold}: CRLF line endings (2 lines; read as LF)" in caplog.text
    if "gold_file_name_nonstandard" in defects:
        assert f"{gold}: a gold file not named '<site>.ta-en'" in caplog.text
    _accounted(b)
    row = gold_counts_markdown([_write(b, tmp_path / "clean" / "news_x" / pair)])[2]
    for line, what in events:
        assert f"(line {line})" in row or f"lines {line}" in row or f", {line}" in row, (what, row)
    assert ("CRLF line endings" in row) == ("gold_crlf" in defects)
    assert ("file named `ArmyNews-ta-en`" in row) == ("gold_file_name_nonstandard" in defects)


def test_a_link_with_the_target_prefix_on_both_sides_is_dropped_not_repaired_by_default(
    tmp_path: Path,
) -> None:
    """Army si-ta line 4 (as the real line 245, `ta_32668_6<TAB>ta_32668_5`): listed in `gold_ambiguous` with
    its file and line, and in the table's dropped cell with its line; the real files: tests/realdata."""
    make_army_hiru(tmp_path)
    b = load_news(tmp_path, "Army_News", "si-ta")
    gold = tmp_path / "sent-align-news-army-hiru" / "Sinhala-Tamil" / "Army_news" / "ArmyNews.si-ta"
    assert b.stats["gold_ambiguous"] == [
        {"file": str(gold), "line": 4, "link": ["ta_5_3", "ta_5_2"], "reason": "ambiguous_id"}
    ]
    assert ("si_5_3", "ta_5_2") not in b.gold and b.gold == [
        ("si_5_0", "ta_5_0"), ("si_5_1", "ta_5_1"), ("si_5_1", "ta_5_2")
    ]  # fmt: skip
    row = gold_counts_markdown([_write(b, tmp_path / "clean" / "news_army" / "si-ta")])[2]
    assert row.endswith(
        "| one-to-many ids expanded 1 (line 2) | repeated links 1 (line 3), an id to rewrite (other language's "
        "prefix or swapped; no repair rule set) 1 (line 4) | - |"
    )


def test_a_site_is_read_from_the_one_copy_of_the_benchmark_holding_it(tmp_path: Path) -> None:
    make_army_hiru(tmp_path)
    assert find_site(tmp_path, "Sinhala-English", "ITN").parent.parent.name == "sent-align-news-itn"
    assert find_site(tmp_path, "Sinhala-English", "hiru").parent.parent.name == "sent-align-news-army-hiru"
    with pytest.raises(
        InputError, match=r"'Sinhala-English/Newsfirst' in exactly one of its copies .*got none"
    ):
        find_site(tmp_path, "Sinhala-English", "Newsfirst")
    itn = tmp_path / "sent-align-news-itn" / "Sinhala-English" / "ITN"
    shutil.copytree(itn, tmp_path / "sent-align-news-army-hiru" / "Sinhala-English" / "ITN")
    with pytest.raises(InputError, match=r"'Sinhala-English/ITN' in exactly one of its copies .*got 2: "):
        find_site(tmp_path, "Sinhala-English", "ITN")
    with pytest.raises(FileNotFoundError, match=r"no folder 'Sinhala-English' in "):
        find_site(tmp_path / "sent-align-news-itn" / "Sinhala-English", "Sinhala-English", "ITN")


def test_sites_pool_into_one_set_whose_items_carry_their_site(tmp_path: Path) -> None:
    """ITN and Hiru si-en both have a document 9: pooled, every id is `<site>/<id>`, each site read and counted
    alone (stats.json `sites`), the pooled counts their sums, and the report's table a row per site then the
    pooled row; the documents' sites are the strata of the test items (`document_site`)."""
    make_army_hiru(tmp_path)
    b = load_sites(tmp_path, ["ITN", "Hiru"], "si-en")
    assert b.site == "ITN + Hiru" and b.stats["strata"] == "site"
    assert b.gold == [("ITN/si_9_0", "ITN/en_9_0"), ("ITN/si_10_0", "ITN/en_10_0"),
                      ("Hiru/si_9_0", "Hiru/en_9_0"), ("Hiru/si_9_1", "Hiru/en_9_1")]  # fmt: skip
    assert [r[:2] for r in b.src] == [("ITN/si_10_0", "ITN/10"), ("ITN/si_9_0", "ITN/9"),
                                      ("Hiru/si_9_0", "Hiru/9"), ("Hiru/si_9_1", "Hiru/9")]  # fmt: skip
    assert len({r[0] for r in b.src}) == len(b.src) and len({r[0] for r in b.tgt}) == len(b.tgt)
    assert [document_site(d) for _, d, _ in b.src] == ["ITN", "ITN", "Hiru", "Hiru"]
    assert document_site("9") == "" and document_site("si_all_3") == ""
    assert [s["site"] for s in b.stats["sites"]] == ["ITN", "Hiru"]
    for key in ("doc_pairs_used", "doc_pairs_total", "gold_links", "gold_lines", "gold_links_read"):
        assert b.stats[key] == sum(s[key] for s in b.stats["sites"]), key
    assert b.stats["defects"]["gold_id_prefix_case_fixed"] == 2
    _accounted(b)
    lines = gold_counts_markdown([_write(b, tmp_path / "clean" / "news" / "si-en")])
    assert [line.split(" | ")[2] for line in lines[2:]] == ["ITN", "Hiru", "pooled: 2 sites"]
    assert lines[3].endswith("| 2 | 2 | 0 | id prefix case 2 (line 1) | none | (pooled row) |")
    assert (
        lines[4]
        == "| news | si-en | pooled: 2 sites | 3 / 3 (gold) | 4 | 4 | 0 | id prefix case 2 | none | - |"
    )
    assert load_sites(tmp_path, "Hiru", "si-en").gold == [("si_9_0", "en_9_0"), ("si_9_1", "en_9_1")]
    with pytest.raises(ValueError, match=r"sites \['ITN', 'itn'\] are named twice"):
        load_sites(tmp_path, ["ITN", "itn"], "si-en")


def test_news_cli_pools_the_sites_it_is_given(tmp_path: Path) -> None:
    make_army_hiru(tmp_path)
    out = tmp_path / "out"
    assert main(["news", "--root", str(tmp_path), "--site", "ITN", "Army_News", "Hiru", "--pair", "si-en",
                 "--out-dir", str(out)]) == 0  # fmt: skip
    stats = json.loads((out / "stats.json").read_text())
    assert stats["site"] == "ITN + Army_news + Hiru" and stats["gold_links"] == 6
    assert (out / "gold.tsv").read_text().splitlines()[1] == "ITN/si_9_0\tITN/en_9_0"
    assert (out / "si.tsv").read_text(encoding="utf-8").splitlines()[1] == "ITN/si_10_0\tITN/10\tSinhala 10 0"


def test_the_local_config_pools_three_sites_of_the_news_benchmark() -> None:
    """config/local.yaml's news set: ITN, Army and Hiru pooled, read from ../shared/data's two copies; its
    schema takes one site or a list."""
    cfg = check_workflow_config(
        yaml.safe_load((REPO / "config" / "local.yaml").read_text(encoding="utf-8")), SCHEMA
    )
    news = cfg["mining"]["evalsets"]["news"]
    assert news["site"] == ["ITN", "Army_News", "Hiru"] and news["root"].endswith("shared/data")
    assert "news_itn" not in cfg["mining"]["evalsets"]
