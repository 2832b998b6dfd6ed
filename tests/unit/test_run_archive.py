"""Run archives: the report job archives every file it read; a report, a documented block and a comparison
with a rerun are recomputed from the archive alone."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from lem.core.inputs import InputError
from lem.report.archive import ReportInputs, config_digest, read_archive, write_archive
from lem.report.blocks import archive_report, page_blocks, rebuild_blocks
from lem.report.build import build_report, compute_report, write_tables
from lem.report.rerun import DIFFERENT, IDENTICAL, WITHIN, compare_runs, documented_match
from lem.report.settings import ReportSettings

VARIANTS = ["base", "mlm_tlm", "lem"]
SEEDS = [13, 14, 15]
CONFIG = {"pretrain": {"seeds": SEEDS}, "variants": VARIANTS}
SETTINGS = {"evidence": {"families": {"primary": [{"a": "lem", "b": "mlm_tlm", "tasks": ["mining"]}]}}}


def mining_file(root: Path, variant: str, seed: int, shift: int = 0) -> str:
    """A mining metrics file with 12 documents whose counts depend on the variant and seed (relative path);
    `shift` more correct links on the first document (1) or on every document (more)."""
    base = {"base": 2, "mlm_tlm": 4, "lem": 5}[variant]
    counts = [
        [min(8, base + (d + seed) % 3 + (shift if d == 0 or shift > 1 else 0)), 8, 8] for d in range(12)
    ]
    correct = sum(c[0] for c in counts)
    prf = {"precision": correct / 96, "recall": correct / 96, "f1": correct / 96, "n_pred": 96, "n_gold": 96,
           "n_correct": correct}  # fmt: skip
    path = Path(f"results/mine/{variant}/seed{seed}/news/si-en.metrics.json")
    keys = {"task": "mining", "variant": variant, "dataset": "news", "pair": "si-en", "seed": str(seed)}
    units = {"kind": "document", "columns": ["n_correct", "n_pred", "n_gold"], "units": [f"d{i}" for i in range(12)],
             **{d: counts for d in ("forward", "backward", "intersection")}}  # fmt: skip
    provenance = {"code": {"version": "0.1.0", "commit": "a" * 40, "dirty": False},
                  "hardware": {"cpu": "Test CPU", "cpu_numerics": "portable"}}  # fmt: skip
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    data = {"keys": keys, **{d: prf for d in ("forward", "backward", "intersection")}, "units": units,
            "provenance": provenance}  # fmt: skip
    (root / path).write_text(json.dumps(data), encoding="utf-8")
    return path.as_posix()


def run(root: Path, shift: dict | None = None, archive: bool = True, figures: bool = False) -> list[str]:
    """A finished run's report in `root` (the working folder): results/report with its archive; the whole
    report job (`build_report`, figures too) with `figures`, else its tables, config and archive alone."""
    shift = shift or {}
    files = [mining_file(root, v, s, shift.get((v, s), 0)) for v in VARIANTS for s in SEEDS]
    out = root / "results/report"
    settings = ReportSettings.from_dict(SETTINGS)
    if figures:
        build_report(
            variants=VARIANTS, out_dir=out, settings=settings, mining=files, config=CONFIG,
            archive=out / "archive.tar.gz" if archive else None, settings_json=SETTINGS, training_code="ab" * 32,
        )  # fmt: skip
        return files
    inputs = ReportInputs(variants=tuple(VARIANTS), settings=SETTINGS, mining=tuple(files))
    write_tables(compute_report(inputs, settings), out)
    (out / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    if archive:
        write_archive(out / "archive.tar.gz", inputs, CONFIG)
    return files


def test_the_archive_holds_every_file_read_and_rebuilds_the_same_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = run(tmp_path, figures=True)  # the report job itself
    archive = read_archive("results/report/archive.tar.gz")
    assert sorted(archive.files) == sorted(files)
    m = archive.manifest
    assert m["config"] == CONFIG and m["config_sha256"] == config_digest(CONFIG)
    assert m["report"]["mining"] == files and m["report"]["variants"] == VARIANTS
    assert [s["seed"] for s in m["seeds"]] == ["13", "14", "15"]
    assert (
        m["training_code"] == "ab" * 32
    )  # what pre-trained every model (the rules' training_code parameter)
    assert m["seeds"][0]["codes"] == ["0.1.0 at aaaaaaa"] and m["seeds"][0]["machines"] == [
        "Test CPU (portable)"
    ]
    # the report recomputed from the archive alone (elsewhere: the run's files removed) is the run's own
    md = (tmp_path / "results/report/summary.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path.parent)
    assert archive_report(archive).md == md


def test_an_archive_depends_on_its_inputs_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = [mining_file(tmp_path, v, s) for v in VARIANTS for s in SEEDS]
    inputs = ReportInputs(variants=tuple(VARIANTS), settings=SETTINGS, mining=tuple(files))
    write_archive(tmp_path / "a.tar.gz", inputs, CONFIG)
    write_archive(tmp_path / "b.tar.gz", inputs, CONFIG)
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()


def test_a_changed_or_escaping_member_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(tmp_path)
    path = tmp_path / "results/report/archive.tar.gz"
    with tarfile.open(path) as tar:
        members = {i.name: tar.extractfile(i).read() for i in tar.getmembers()}
    name = next(n for n in members if n.endswith(".metrics.json"))

    def rewrite(target: Path, files: dict[str, bytes]) -> None:
        with tarfile.open(target, "w:gz") as tar:
            for n, data in files.items():
                info = tarfile.TarInfo(n)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    rewrite(tmp_path / "changed.tar.gz", {**members, name: members[name].replace(b'"f1": 0', b'"f1": 1')})
    with pytest.raises(InputError, match="does not match its sha256"):
        read_archive(tmp_path / "changed.tar.gz")
    rewrite(tmp_path / "escape.tar.gz", {**members, "../outside.json": b"{}"})
    with pytest.raises(InputError, match="not a plain file inside the archive"):
        read_archive(tmp_path / "escape.tar.gz")
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(InputError, match="expected a run archive"):
        read_archive(tmp_path / "junk.tar.gz")


def test_an_input_outside_the_run_folder_is_refused(tmp_path, monkeypatch):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    f = mining_file(outside, "base", 13)
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")
    inputs = ReportInputs(variants=("base",), mining=(str(outside / f),))
    with pytest.raises(InputError, match="outside the run's folder"):
        write_archive(tmp_path / "x.tar.gz", inputs, None)


def page(root: Path, name: str = "results") -> Path:
    p = root / "docs/results.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(
        f"# Results\n\n<!-- {name}: begin (generated by `lem report readme --block {name}`; do not edit) -->\n"
        f"old\n<!-- {name}: end -->\n\nafter\n",
        encoding="utf-8",
    )
    return p


def index(root: Path, blocks: str) -> Path:
    p = root / "docs/runs/blocks.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(
        f"archives:\n  demo: {{file: demo.tar.gz, run: 'a test run'}}\nblocks:\n{blocks}", encoding="utf-8"
    )
    return p


def test_every_block_is_rebuilt_from_its_archive_and_checked(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run(work)
    repo = tmp_path / "repo"
    doc = page(repo, "demo_block")
    idx = index(repo, "  - {page: docs/results.md, block: demo_block, archive: demo, note: 'A demo run.'}\n")
    (repo / "docs/runs/demo.tar.gz").write_bytes((work / "results/report/archive.tar.gz").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert [o.status for o in rebuild_blocks(idx, check=True)] == ["differs"]
    assert [o.status for o in rebuild_blocks(idx)] == ["rewritten"]
    text = doc.read_text(encoding="utf-8")
    assert (
        "A demo run.\n\nRebuilt by `lem report blocks` from the run archive `docs/runs/demo.tar.gz`" in text
    )
    assert "pre-training seeds 13, 14, 15" in text and "### Bitext mining F1" in text
    assert text.endswith("<!-- demo_block: end -->\n\nafter\n")
    assert [o.status for o in rebuild_blocks(idx, check=True)] == ["identical"]
    doc.write_text(text.replace("Bitext mining F1", "Bitext mining F2", 1), encoding="utf-8")
    (outcome,) = rebuild_blocks(idx, check=True)
    assert outcome.status == "differs" and "Bitext mining F2" in outcome.detail
    assert page_blocks(repo) == {("docs/results.md", "demo_block")}


def test_an_index_entry_without_archive_must_say_why(tmp_path):
    idx = index(tmp_path, "  - {page: docs/results.md, block: x, archive: null}\n")
    with pytest.raises(InputError, match="must say why"):
        rebuild_blocks(idx, check=True)
    idx = index(tmp_path, "  - {page: docs/results.md, block: x, archive: other}\n")
    with pytest.raises(InputError, match="archive 'other' is not one of"):
        rebuild_blocks(idx, check=True)


def test_a_rerun_is_compared_metric_by_metric_and_verdict_by_verdict(tmp_path, monkeypatch):
    doc = tmp_path / "doc"
    doc.mkdir()
    monkeypatch.chdir(doc)
    run(doc)
    documented = doc / "results/report/archive.tar.gz"
    same = compare_runs(doc / "results/report", documented)
    assert set(same.metrics["status"]) == {IDENTICAL}
    assert bool(same.verdicts["agrees"].all()) and len(same.verdicts) >= 1
    assert "0 within tolerance, 0 different" in same.lines()[0]
    # another machine: one document of each seed counts one more link (a small change), or every one 2 more
    for name, shift, status in (("near", 1, WITHIN), ("far", 2, DIFFERENT)):
        other = tmp_path / name
        other.mkdir()
        monkeypatch.chdir(other)
        run(other, shift={("lem", s): shift for s in SEEDS}, archive=False)
        result = compare_runs(other / "results/report", documented)
        lem_f1 = result.metrics[
            (result.metrics["variant"] == "lem") & (result.metrics["metric"] == "intersection_f1")
        ]
        assert list(lem_f1["status"]) == [status], (name, lem_f1.to_dict("records"))
        assert set(result.metrics[result.metrics["variant"] == "base"]["status"]) == {IDENTICAL}
        assert any(status in line for line in result.lines()[2:])


def test_the_documented_run_of_a_configuration_is_found_by_its_digest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(tmp_path)
    idx = index(tmp_path, "")
    (tmp_path / "docs/runs/demo.tar.gz").write_bytes(
        (tmp_path / "results/report/archive.tar.gz").read_bytes()
    )
    assert documented_match(CONFIG, idx) == idx.parent / "demo.tar.gz"
    assert documented_match({**CONFIG, "variants": ["base"]}, idx) is None
    # a key a later schema added with the default null leaves the run the same
    assert documented_match({**CONFIG, "later_key": None}, idx) == idx.parent / "demo.tar.gz"
    assert documented_match(None, idx) is None


def test_a_report_folder_with_no_declared_comparison_is_read(tmp_path):
    """A run with no comparison (an empty comparisons.tsv, e.g. the GPU smoke test) still says where it stands."""
    from lem.report.rerun import run_tables

    (tmp_path / "summary.tsv").write_text(
        "task\tdataset\tpair\tmetric\tvariant\tmean\nmining\tn\tsi-en\tf1\tbase\t0.5\n"
    )
    (tmp_path / "comparisons.tsv").write_text("\n")
    tables = run_tables(tmp_path)
    assert tables.comparisons.empty and len(tables.summary) == 1 and tables.config is None
