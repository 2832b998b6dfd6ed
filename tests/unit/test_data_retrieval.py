"""A line-aligned parallel test set as a retrieval mining set (lem.data.retrieval, `format: parallel`): the
prepared files in the news layout, what is dropped and why, the refusals, and the config check of the set."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from lem.cli import command
from lem.config_check import ConfigError, check_workflow_config
from lem.core.inputs import InputError
from lem.data.news import gold_counts_markdown, write_news
from lem.data.retrieval import load_retrieval

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
main = command("data")


def files(tmp: Path, src: list[str], tgt: list[str]) -> tuple[Path, Path]:
    s, t = tmp / "si.test.txt", tmp / "en.test.txt"
    s.write_text("".join(f"{line}\n" for line in src), encoding="utf-8")
    t.write_text("".join(f"{line}\n" for line in tgt), encoding="utf-8")
    return s, t


def test_each_line_is_one_gold_link_in_one_document(tmp_path):
    s, t = files(tmp_path, ["ශ්‍රී ලංකාව", "  දෙක  තුන ", "හතර"], ["Sri Lanka", "two three", "four"])
    b = load_retrieval(s, t, "si-en")
    assert b.src == [
        ("si_all_0", "all", "ශ්‍රී ලංකාව"),
        ("si_all_1", "all", "දෙක තුන"),
        ("si_all_2", "all", "හතර"),
    ]
    assert b.gold == [("si_all_0", "en_all_0"), ("si_all_1", "en_all_1"), ("si_all_2", "en_all_2")]
    assert b.stats["gold_links"] == 3 and b.stats["gold_lines"] == 3 and b.stats["doc_pairs_used"] == 1


def test_empty_lines_and_repeated_texts_are_no_pair_and_are_counted(tmp_path):
    """A repeated text makes the retrieval target ambiguous (two identical candidates): every line holding
    it is dropped, on whichever side it repeats."""
    s, t = files(tmp_path, ["a", "", "b", "c", "b", "d"], ["A", "B", "C", "D", "E", "C"])
    b = load_retrieval(s, t, "si-en")
    assert b.gold == [("si_all_0", "en_all_0"), ("si_all_3", "en_all_3")]
    d = b.stats["gold_dropped"]  # line 2 holds a repeated text on both sides: counted once, as the source's
    assert d["empty_line"] == 1 and d["repeated_src_text"] == 2 and d["repeated_tgt_text"] == 1
    assert b.stats["gold_links_read"] == b.stats["gold_links"] + sum(d.values())
    out = tmp_path / "prepared" / "multiner_test" / "si-en"
    write_news(b, out)
    line = gold_counts_markdown([out / "stats.json"])[2]
    assert line.startswith("| multiner_test | si-en | line-aligned | 1 / 1 (all) | 6 | 2 |")
    assert "a line empty on either side 1" in line and "a source text repeated in the set 2" in line


def test_files_that_are_not_line_aligned_are_refused_naming_both(tmp_path):
    s, t = files(tmp_path, ["a", "b"], ["A"])
    with pytest.raises(
        InputError, match=r"si.test.txt \(2 lines\) and .*en.test.txt \(1 lines\): expected line-aligned"
    ):
        load_retrieval(s, t, "si-en")
    s, t = files(tmp_path, ["", "a"], ["A", ""])
    with pytest.raises(InputError, match="no line with a distinct sentence on both sides"):
        load_retrieval(s, t, "si-en")
    s.write_bytes(b"\xff\xfe\n")
    t.write_text("A\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"si.test.txt:1: expected UTF-8"):
        load_retrieval(s, t, "si-en")


def test_the_cli_writes_the_news_layout(tmp_path):
    s, t = files(tmp_path, ["a", "b"], ["A", "B"])
    out = tmp_path / "out"
    assert (
        main(["retrieval", "--src", str(s), "--tgt", str(t), "--pair", "si-en", "--out-dir", str(out)]) == 0
    )
    assert (out / "si.tsv").read_text(
        encoding="utf-8"
    ) == "id\tdoc\ttext\nsi_all_0\tall\ta\nsi_all_1\tall\tb\n"
    assert (out / "gold.tsv").read_text(
        encoding="utf-8"
    ) == "src_id\ttgt_id\nsi_all_0\ten_all_0\nsi_all_1\ten_all_1\n"
    assert json.loads((out / "stats.json").read_text(encoding="utf-8"))["format"] == "parallel"


def local_config() -> dict:
    return yaml.safe_load((REPO / "config" / "local.yaml").read_text(encoding="utf-8"))


def test_local_config_mines_multiner_test_as_a_retrieval_set():
    cfg = check_workflow_config(local_config(), SCHEMA)
    spec = cfg["mining"]["evalsets"]["multiner_test"]
    assert spec["format"] == "parallel" and set(spec["files"]) == {"en", "si", "ta"}
    assert cfg["mining"]["evalsets"]["news"]["format"] == "news"
    assert cfg["mining"]["evalsets"]["news"]["gold_repairs"] == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda e: e["multiner_test"]["files"].pop("ta"),
            "mining.evalsets.multiner_test.files: no file for ta",
        ),
        (lambda e: e["multiner_test"].pop("files"), "mining.evalsets.multiner_test.files: missing"),
        (lambda e: e["news"].pop("site"), "mining.evalsets.news.site: missing"),
        (lambda e: e["news"].update(gold_repairs=["guess"]), "gold_repairs"),
    ],
    ids=["parallel-missing-language", "parallel-no-files", "news-no-site", "news-unknown-repair"],
)
def test_a_mining_set_missing_what_its_format_reads_is_refused_in_one_line(change, message):
    cfg = copy.deepcopy(local_config())
    change(cfg["mining"]["evalsets"])
    with pytest.raises(ConfigError) as err:
        check_workflow_config(cfg, SCHEMA)
    assert message in str(err.value) and "\n" not in str(err.value)
