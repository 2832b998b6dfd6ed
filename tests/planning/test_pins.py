"""Hub pins: a branch, tag or missing revision is refused at config load unless allowed, and every hub
fetch records the commit it resolved to (the hub is mocked: no network here)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from support.dag import snakemake

from lem.data import download
from lem.data.download import (
    FetchError,
    UnpinnedError,
    fetch_hf,
    is_commit,
    sha256_file,
    unpinned_hub_sources,
    unpinned_url_sources,
)

REPO = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def test_what_counts_as_a_pin():
    assert is_commit(COMMIT)
    for rev in ("main", "v1.0", COMMIT[:7], COMMIT.upper(), "", None):
        assert not is_commit(rev), rev


def test_the_paper_config_is_pinned():
    assert unpinned_hub_sources(PAPER) == [] and unpinned_url_sources(PAPER) == []
    for name, spec in PAPER["sources"]["files"].items():  # a sha256, or unpinned on purpose and said why
        assert spec.get("sha256") or (spec.get("allow_unpinned") and spec.get("note")), name
    assert is_commit(PAPER["base_model"]["hub"]["revision"])
    assert is_commit(PAPER["sources"]["madlad"]["settings"]["revision"])


def test_unpinned_sources_are_named_with_what_to_do():
    cfg = copy.deepcopy(PAPER)
    cfg["base_model"]["hub"]["revision"] = "main"
    del cfg["sources"]["madlad"]["settings"]["revision"]
    model, madlad = unpinned_hub_sources(cfg)
    assert (
        model.startswith("base_model.hub.revision is 'main'")
        and "base_model.hub.allow_unpinned: true" in model
    )
    assert "git ls-remote https://huggingface.co/FacebookAI/xlm-roberta-base" in model
    assert madlad.startswith("sources.madlad.settings.revision is missing")
    assert (
        "sources.madlad.allow_unpinned: true" in madlad
        and "huggingface.co/datasets/allenai/madlad-400" in madlad
    )
    assert "\n" not in model + madlad
    cfg["base_model"]["hub"]["allow_unpinned"] = True
    cfg["sources"]["madlad"]["allow_unpinned"] = True
    assert unpinned_hub_sources(cfg) == []
    cfg["base_model"]["path"] = "my/model"  # a local folder: nothing is fetched
    cfg["base_model"]["hub"]["allow_unpinned"] = False
    cfg["sources"]["madlad"]["settings"]["revision"] = "v1.0"
    cfg["sources"]["madlad"]["allow_unpinned"] = False
    assert [p.split(" is ")[0] for p in unpinned_hub_sources(cfg)] == ["sources.madlad.settings.revision"]


def dry_run(tmp_path: Path, cfg: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return snakemake(tmp_path, "-n", "-p", config=path)


def test_an_unpinned_config_fails_before_any_job(tmp_path):
    cfg = copy.deepcopy(PAPER)
    cfg["base_model"]["hub"]["revision"] = "main"
    proc = dry_run(tmp_path, cfg)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "base_model.hub.revision is 'main'" in out and "Job stats" not in out
    cfg["base_model"]["hub"]["allow_unpinned"] = True
    proc = dry_run(tmp_path, cfg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lem data fetch-hf --repo FacebookAI/xlm-roberta-base --revision main" in proc.stdout + proc.stderr
    assert "--allow-unpinned" in proc.stdout + proc.stderr


def test_a_url_file_with_no_pin_fails_before_any_job(tmp_path, paper_plan):
    cfg = copy.deepcopy(PAPER)
    del cfg["sources"]["files"]["multiner.zip"]["allow_unpinned"]
    proc = dry_run(tmp_path, cfg)
    out = proc.stdout + proc.stderr
    assert (
        proc.returncode != 0 and "sources.files.multiner.zip has no sha256" in out and "Job stats" not in out
    )
    out = paper_plan  # the paper config as shipped, planned once for the session (tests/conftest.py)
    fetch = next(line for line in out.splitlines() if "fetch-url" in line and "multiner.zip" in line)
    assert "--allow-unpinned" in fetch and "--download resources/downloads/multiner.zip" in fetch
    assert "--provenance resources/provenance/multiner.zip.json" in fetch
    pinned = next(line for line in out.splitlines() if "fetch-url" in line and "cmcs.csv" in line)
    assert "--sha256" in pinned and "--allow-unpinned" not in pinned


class FakeHub:
    """repo_info and snapshot_download as huggingface_hub does them, for a repo whose `main` is COMMIT."""

    def __init__(self, monkeypatch, commit: str = COMMIT, metadata_commit: str | None = None):
        import huggingface_hub

        self.calls: list[tuple] = []
        self.commit, self.metadata_commit = commit, metadata_commit or commit
        monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", self.repo_info)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self.snapshot_download)

    def repo_info(self, repo_id, repo_type=None, revision=None, **kw):
        self.calls.append(("repo_info", repo_id, repo_type, revision))
        return SimpleNamespace(sha=self.commit if revision in ("main", self.commit) else revision)

    def snapshot_download(self, repo_id, repo_type, revision, local_dir, allow_patterns=None, endpoint=None):
        self.calls.append(("snapshot_download", repo_id, repo_type, revision))
        out = Path(local_dir)
        meta = out / ".cache" / "huggingface" / "download"
        meta.mkdir(parents=True, exist_ok=True)
        for name, body in {
            "config.json": b'{"model_type": "xlm-roberta"}',
            "model.safetensors": b"weights",
        }.items():
            (out / name).write_bytes(body)
            (meta / f"{name}.metadata").write_text(f"{self.metadata_commit}\netag\n1.0\n")
        return str(out)


def test_fetch_records_the_commit_a_branch_resolved_to(tmp_path, monkeypatch):
    hub = FakeHub(monkeypatch)
    out = tmp_path / "hf" / "org" / "model" / "main"
    fetch_hf("org/model", "main", "model", out, ["*.json", "*.safetensors"], allow_unpinned=True)
    # resolved first, then the snapshot taken at that commit (not at the moving branch)
    assert hub.calls == [
        ("repo_info", "org/model", "model", "main"),
        ("snapshot_download", "org/model", "model", COMMIT),
    ]
    prov = json.loads((out / "provenance.json").read_text())
    assert (
        prov["requested_revision"] == "main" and prov["resolved_commit"] == COMMIT and prov["pinned"] is False
    )
    assert prov["files"]["model.safetensors"] == {
        "bytes": 7,
        "sha256": sha256_file(out / "model.safetensors"),
    }
    assert set(prov["files"]) == {"config.json", "model.safetensors"}  # not the marker, not .cache
    fetch_hf("org/model", "main", "model", out, ["*.json", "*.safetensors"], allow_unpinned=True)
    assert len(hub.calls) == 2  # already there: no hub call


def test_fetch_of_a_pinned_commit(tmp_path, monkeypatch):
    hub = FakeHub(monkeypatch)
    fetch_hf("org/model", COMMIT, "model", tmp_path / "m")
    prov = json.loads((tmp_path / "m" / "provenance.json").read_text())
    assert prov["pinned"] is True and prov["resolved_commit"] == COMMIT
    assert hub.calls[-1][-1] == COMMIT


def test_unpinned_fetch_is_refused_before_any_hub_call(tmp_path, monkeypatch):
    hub = FakeHub(monkeypatch)
    with pytest.raises(UnpinnedError, match="'main' is not a 40-hex commit"):
        fetch_hf("org/model", "main", "model", tmp_path / "m")
    assert hub.calls == [] and not (tmp_path / "m").exists()
    proc = subprocess.run(
        [sys.executable, "-m", "lem.cli", "data", "fetch-hf", "--repo", "org/model", "--revision", "main",
         "--kind", "model", "--out", str(tmp_path / "m")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1 and "--allow-unpinned" in proc.stderr and "Traceback" not in proc.stderr


def test_files_of_another_commit_fail_loudly(tmp_path, monkeypatch):
    FakeHub(monkeypatch, metadata_commit=OTHER)
    with pytest.raises(FetchError, match=OTHER):
        fetch_hf("org/model", COMMIT, "model", tmp_path / "m")
    assert (
        not (tmp_path / "m" / "provenance.json").exists()
        and not (tmp_path / "m" / ".lem-fetch.json").exists()
    )


def test_a_copy_placed_by_hand_gets_its_provenance_from_the_download_metadata(tmp_path, monkeypatch):
    FakeHub(monkeypatch).snapshot_download(
        "org/model", "model", COMMIT, tmp_path / "m"
    )  # `hf download` elsewhere
    record = {"repo": "org/model", "revision": "main", "kind": "model", "allow_patterns": None}
    download.write_fetch_marker(tmp_path / "m", record)
    hub = FakeHub(monkeypatch)
    fetch_hf("org/model", "main", "model", tmp_path / "m", allow_unpinned=True)
    assert hub.calls == []
    assert json.loads((tmp_path / "m" / "provenance.json").read_text())["resolved_commit"] == COMMIT


def test_madlad_streams_at_the_resolved_commit_and_records_it(tmp_path, monkeypatch):
    from lem.data import madlad

    seen = {}

    def fake_iter_hub(lang, settings, commit=None):
        seen["commit"] = commit
        yield "Title\\nTitle again\\nThe first sentence of the document is long enough to keep."

    FakeHub(monkeypatch)
    monkeypatch.setattr(madlad, "iter_hub", fake_iter_hub)
    settings = madlad.MadladSettings.from_dict({"size": 5, "revision": "main", "dataset": "org/data"})
    with pytest.raises(UnpinnedError):
        madlad.extract_to_file("en", settings, tmp_path / "en.txt", provenance=tmp_path / "p.json")
    madlad.extract_to_file(
        "en", settings, tmp_path / "en.txt", provenance=tmp_path / "p.json", allow_unpinned=True
    )
    prov = json.loads((tmp_path / "p.json").read_text())
    assert (
        seen["commit"] == COMMIT
        and prov["resolved_commit"] == COMMIT
        and prov["requested_revision"] == "main"
    )
    assert prov["data_files"] == f"hf://datasets/org/data@{COMMIT}/data/en/en_clean_*.jsonl.gz"
    assert prov["sentences"] == len((tmp_path / "en.txt").read_text().splitlines()) == 1
