"""What a rule reading a folder of one's own data declares as its input (lem.run.sources): the files its verb
reads, so that an edit inside the folder reruns it and a copy with the same content does not (the reruns
themselves: tests/dag/test_data_reruns.py)."""

from __future__ import annotations

from pathlib import Path

import yaml
from test_data_news import make_army_hiru, make_site

from lem.data.ner import MULTINER_FILES, multiner_files
from lem.data.news import load_sites, news_files
from lem.run.sources import RUN_OUTPUT_ROOTS, multiner_inputs, news_inputs, source_deps


def test_news_files_are_both_sides_documents_and_the_gold_of_each_site(tmp_path: Path) -> None:
    make_army_hiru(tmp_path)
    files = news_files(tmp_path, ["ITN", "Army_News", "Hiru"], "si-en")
    rel = sorted(str(p.relative_to(tmp_path)) for p in files)
    assert rel == sorted([
        "sent-align-news-itn/Sinhala-English/ITN/Sinhala/9", "sent-align-news-itn/Sinhala-English/ITN/Sinhala/10",
        "sent-align-news-itn/Sinhala-English/ITN/English/9", "sent-align-news-itn/Sinhala-English/ITN/English/10",
        "sent-align-news-itn/Sinhala-English/ITN/ITN.si-en",
        "sent-align-news-army-hiru/Sinhala-English/Army_news/Sinhala/1",
        "sent-align-news-army-hiru/Sinhala-English/Army_news/English/1",
        "sent-align-news-army-hiru/Sinhala-English/Army_news/ArmyNews.si-en",
        "sent-align-news-army-hiru/Sinhala-English/Hiru/Sinhala/9",
        "sent-align-news-army-hiru/Sinhala-English/Hiru/English/9",
        "sent-align-news-army-hiru/Sinhala-English/Hiru/Hiru.si-en",
    ])  # fmt: skip
    # no other pair's file: the si-ta and ta-en folders of the same sites are another job's
    assert not [p for p in files if "Tamil" in str(p)]
    assert load_sites(tmp_path, ["ITN", "Army_News", "Hiru"], "si-en").stats["gold_links"] == 6


def test_every_file_the_news_loader_opens_is_declared(tmp_path: Path, monkeypatch) -> None:
    """Record what load_news reads: nothing outside news_files (an undeclared file would go stale unseen)."""
    make_site(tmp_path)
    opened: list[Path] = []
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        opened.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    real_open = Path.open

    def path_open(self: Path, *a, **k):
        opened.append(self)
        return real_open(self, *a, **k)

    monkeypatch.setattr(Path, "open", path_open)
    load_sites(tmp_path, "Army_News", "si-en")
    assert opened, "the loader reads through pathlib (else this test sees nothing)"
    declared = set(news_files(tmp_path, "Army_News", "si-en"))
    assert set(opened) <= declared, set(opened) - declared


def test_multiner_files_are_the_three_files_split_multiner_reads(tmp_path: Path) -> None:
    for name in MULTINER_FILES.values():
        (tmp_path / "archive" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "archive" / name).write_text("w O\n\n")
    (tmp_path / "README.md").write_text("not read")
    assert multiner_files(tmp_path) == [tmp_path / "archive" / n for n in MULTINER_FILES.values()]
    assert multiner_inputs(str(tmp_path)) == [str(tmp_path / "archive" / n) for n in MULTINER_FILES.values()]


def test_a_folder_a_rule_writes_or_fetches_stays_one_input(tmp_path: Path, monkeypatch) -> None:
    """results/ and resources/ folders are rules' outputs (the embedded config's generated news): the folder
    links the rules, and its files are not there before the rule runs."""
    monkeypatch.chdir(tmp_path)
    make_site(tmp_path / "results" / "eval" / "news")
    assert RUN_OUTPUT_ROOTS == ("results/", "resources/")
    assert news_inputs({"root": "results/eval/news", "site": "Army_News"}, "si-en") == ["results/eval/news"]
    assert source_deps("unpacked:news.tar.gz/x/y", lambda r: ["never"]) == ["resources/unpacked/news.tar.gz"]
    assert source_deps("raw:a.zip", lambda r: ["never"]) == ["resources/raw/a.zip"]


def test_a_missing_folder_or_unfindable_files_leave_the_folder_for_the_job_to_name(tmp_path: Path) -> None:
    """Snakemake then refuses a missing folder at planning; a folder without the files makes the job fail
    naming what it expected (never a rule with no input, which would never rerun)."""
    assert news_inputs({"root": str(tmp_path / "absent"), "site": "ITN"}, "si-en") == [
        str(tmp_path / "absent")
    ]
    make_site(tmp_path)
    assert news_inputs({"root": str(tmp_path), "site": "Hiru"}, "si-en") == [str(tmp_path)]  # no such site
    assert multiner_inputs(str(tmp_path)) == [str(tmp_path)]  # no Final_*.txt
    assert source_deps(str(tmp_path), lambda r: []) == [str(tmp_path)]


def test_both_profiles_let_snakemake_compare_checksums_of_every_real_data_file() -> None:
    """profiles/default (every run) and profiles/slurm (which replaces it) set the same size, above the largest
    file of ../shared/data (3 MB) and far above Snakemake's 1 MB."""
    repo = Path(__file__).resolve().parents[2]
    sizes = {p: yaml.safe_load((repo / "profiles" / p / "config.yaml").read_text())["max-checksum-file-size"]
             for p in ("default", "slurm")}  # fmt: skip
    assert sizes == {"default": "256MB", "slurm": "256MB"}
