"""Shared fixtures. Real public data lives in ../shared/data beside the repository (never copied in).

The tests assume the CPU (its float32 numbers; no autocast, no CUDA nondeterminism): on a GPU node they see
no GPU unless `LEM_TEST_DEVICE=cuda` asks for it. Every package of `pyproject.toml`'s dependencies is
required: a missing one stops the session at set-up, by name, instead of failing (or skipping) tests one by one.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

if os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before anything imports torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LEM_SHARED_DATA", REPO.parent / "shared" / "data"))


def missing_required_packages(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The requirements of `[project].dependencies` that are not installed (name only: versions may differ
    on a machine with its own preinstalled stack, e.g. a GPU image)."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    missing = []
    for req in deps:
        name = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(req)
    return missing


def pytest_configure(config):
    missing = missing_required_packages()
    if missing:
        raise pytest.UsageError(
            f"required packages are not installed: {', '.join(missing)} "
            "(run `bash scripts/setup.sh`, or install them from wheels: see README, 'On a GPU node')"
        )


@pytest.fixture(scope="session")
def dag_config(tiny_sentence_transformer) -> dict:
    """The shrunken embedded default of every DAG-level test (tests/dag.py), with a tiny local
    sentence-transformers model as reference encoder row `ref_tiny`."""
    from dag import small_config

    return small_config(tiny_sentence_transformer)


@pytest.fixture(scope="session")
def dag_reference(tmp_path_factory, dag_config) -> Path:
    """The whole shrunken DAG, run once per session, uninterrupted: the one whole-DAG run of the suite, read
    by the workflow, curation, interruption and reproducibility tests (they rerun parts of it, never all)."""
    from dag import run_dag

    return run_dag(tmp_path_factory.mktemp("dag"), dag_config)


@pytest.fixture(scope="session")
def paper_plan(tmp_path_factory) -> str:
    """What `snakemake -n -p` prints for config/paper.yaml in an empty folder: planned once per session for
    the tests that read the paper DAG's jobs and commands (tests/test_pins.py, tests/test_refenc.py)."""
    import subprocess
    import sys

    workdir = tmp_path_factory.mktemp("paper-plan")
    cmd = [sys.executable, "-m", "snakemake", "-n", "-p", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(REPO / "config" / "paper.yaml")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def tiny_sentence_transformer(tmp_path_factory) -> Path:
    """A tiny random sentence-transformers model (BERT, 1 layer, width 16, mean pooling) in a local folder:
    the `sentence_transformers` reference-encoder backend run for real, offline."""
    pytest.importorskip("sentence_transformers")
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("st")
    hf = root / "hf"
    hf.mkdir()
    words = ["the", "cat", "dog", "sat", "ran", "and", "a", "."]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"abcdefghijklmnopqrstuvwxyz"]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(root / "vocab.txt")).save_pretrained(hf)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)  # fmt: skip
    BertModel(config).save_pretrained(hf)
    word = Transformer(str(hf))
    model = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "mean")], device="cpu")
    out = root / "labse-tiny"
    model.save(str(out))
    return out


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets; tests that need it skip, saying why, when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set LEM_SHARED_DATA to point at it)")
    return SHARED_DATA


def english_features(root: Path, mono_sentences: int, para_train: int, vocab_size: int, valid: float) -> dict:
    """A generated world in `root` (English text annotated with its lexicons), a tokenizer trained on the
    English text (`root/tok`) and MLM features of it (`root/feat`, max length 40): the training tests'
    common start. Returns the paths and the English annotation settings."""
    from lem.annotate.run import annotate_file
    from lem.annotate.settings import AnnotateSettings
    from lem.corpus.generate import GenerateSettings, generate
    from lem.features import build_mono_features
    from lem.tokenizer import train_tokenizer

    generate(
        GenerateSettings.from_dict(
            {"mono_sentences": mono_sentences, "para_train": para_train, "para_valid": 5, "news_documents": 2,
             "sentiment_examples": 20, "noisy_pairs": 8,
             "composed_share": 0.0, "date_share": 0.0, "number_max": 0}  # the lexicon's small, predictable world
        ),
        root / "corpus", root / "eval",
    )  # fmt: skip
    lex = root / "corpus" / "lexicon"
    settings = AnnotateSettings.from_dict(
        {"pos": {"backend": "lexicon", "format": "tsv", "path": str(lex / "en.pos.tsv")},
         "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(lex / "en.ner.tsv")}}
    )  # fmt: skip
    annotate_file("en", root / "corpus" / "mono" / "en.txt", root / "en.parquet", settings)
    train_tokenizer([root / "corpus" / "mono" / "en.txt"], vocab_size, root / "tok", seed=1)
    build_mono_features(root / "tok", root / "en.parquet", "en", 40, valid, 1, root / "feat")
    return {"lexicon": lex, "tok": root / "tok", "feat": root / "feat", "en_settings": settings}
