"""The digest that names the code a pre-training job runs (lem.run.training_code): what counts, and what
does not (a Snakemake rerun on a changed digest: tests/dag/test_workflow.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from lem.run.training_code import (
    cache_dir,
    compute_training_code,
    source_key,
    training_code,
    training_modules,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "lem"


def test_the_training_code_is_what_lem_pretrain_imports_and_nothing_else():
    modules = training_modules(SRC)
    for needed in ("lem", "lem.cli", "lem.pretrain.stage", "lem.masking.collate", "lem.core.training.trainer",
                   "lem.core.numerics", "lem.core.training"):  # fmt: skip
        assert needed in modules, needed
    for other in (
        "lem.mine",
        "lem.report",
        "lem.run",
        "lem.embed",
        "lem.sentiment",
        "lem.nmt",
        "lem.annotate",
    ):
        assert not [m for m in modules if m == other or m.startswith(other + ".")], other


def copy_package(tmp_path: Path) -> Path:
    package = tmp_path / "lem"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def test_a_code_edit_of_a_training_module_changes_it_a_comment_docstring_or_other_module_does_not(tmp_path):
    package = copy_package(tmp_path)
    before = training_code(package)
    assert before == training_code(SRC)  # the same code in another folder: the same digest
    stage = package / "pretrain" / "stage.py"
    text = stage.read_text(encoding="utf-8")
    stage.write_text(
        text.replace('"""One training stage', '"""One training stage, edited', 1) + "# a comment\n"
    )
    (package / "mine" / "__init__.py").write_text("X = 1\n")  # mining is no training code
    training_code.cache_clear()
    assert training_code(package) == before
    stage.write_text(text + "\nEDITED = 1\n")
    training_code.cache_clear()
    assert training_code(package) != before
    training_code.cache_clear()


def test_a_module_imported_inside_a_function_counts(tmp_path):
    package = copy_package(tmp_path)
    (package / "extra.py").write_text("Y = 2\n")
    cli = package / "pretrain" / "cli.py"
    cli.write_text(cli.read_text(encoding="utf-8") + "\n\ndef _late():\n    from lem import extra  # noqa\n")
    assert "lem.extra" in training_modules(package)


def test_the_digest_is_kept_under_a_key_of_every_file_and_read_back(tmp_path, monkeypatch):
    """The cache: an entry named by the package's source key holds the computed digest; a later call reads it
    (a planted entry is what it returns); an edit anywhere, a comment's included, names another entry; a
    corrupt entry or an unwritable cache folder is computed over, never returned."""
    monkeypatch.setenv("LEM_CACHE_DIR", str(tmp_path / "cache"))
    package = copy_package(tmp_path)
    training_code.cache_clear()
    digest = training_code(package)
    entry = cache_dir() / source_key(package)
    assert entry.read_text() == digest + "\n" and digest == compute_training_code(package)
    entry.write_text("f" * 64 + "\n")  # planted: proves the entry is read, not recomputed
    training_code.cache_clear()
    assert training_code(package) == "f" * 64
    (package / "pretrain" / "stage.py").write_text((package / "pretrain" / "stage.py").read_text() + "# c\n")
    assert source_key(package) != entry.name  # a comment: another key (the same digest, computed again)
    training_code.cache_clear()
    assert training_code(package) == digest
    entry.write_text("not a digest")
    (package / "pretrain" / "stage.py").write_text((package / "pretrain" / "stage.py").read_text()[:-4])
    assert source_key(package) == entry.name
    training_code.cache_clear()
    assert training_code(package) == digest and entry.read_text() == digest + "\n"  # corrupt: repaired
    monkeypatch.setenv("LEM_CACHE_DIR", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")  # the cache folder cannot be made
    training_code.cache_clear()
    assert training_code(package) == digest
    training_code.cache_clear()
