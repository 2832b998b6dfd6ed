"""The data fixtures build, one function each (the fixtures call them: tests/conftest.py's for the whole
session, a test file's for its own tests), so that test files of several tiers that read the same data build it
the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

from support import REPO


def tiny_sentence_transformer(root: Path) -> Path:
    """A tiny random sentence-transformers model (BERT, 1 layer, width 16, mean pooling) in `root`: the
    `sentence_transformers` reference-encoder backend run for real, offline. Returns its folder."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

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


def tiny_init_model(root: Path, dropout: bool = True) -> Path:
    """A random tiny model (1 layer, width 32, 40 positions) for the tokenizer of `root/tok`, saved with it in
    `root/init` (its folder, returned); without `dropout`, data-parallel and one-process runs agree to float
    precision."""
    from transformers import AutoTokenizer

    from lem.pretrain import ModelSettings, new_model

    tok = AutoTokenizer.from_pretrained(str(root / "tok"))
    model = new_model(
        tok,
        ModelSettings(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_length=40
        ),
        seed=1,
    )
    if not dropout:
        model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
    model.save_pretrained(str(root / "init"))
    tok.save_pretrained(str(root / "init"))
    return root / "init"


def pretraining_world(root: Path) -> dict[str, Path]:
    """A generated corpus, its annotations, a tokenizer, English MLM features, si-en TLM features (20
    training pairs) and a random tiny model: the pre-training tests' (tests/unit/test_pretrain.py,
    tests/dag/test_pretrain_processes.py)."""
    from lem.annotate.run import annotate_file
    from lem.annotate.settings import AnnotateSettings
    from lem.features import build_pair_features

    made = english_features(root, mono_sentences=600, para_train=20, vocab_size=600, valid=0.1)
    lex, settings = made["lexicon"], made["en_settings"]
    si_settings = AnnotateSettings.from_dict(
        {"pos": {"backend": "lexicon", "format": "tsv", "path": str(lex / "si.pos.tsv")},
         "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(lex / "si.ner.tsv")}}
    )  # fmt: skip
    para = {}
    for split in ("train", "valid"):
        tsv = root / "corpus" / "para" / f"si-en.{split}.tsv"
        for col, (lang, s) in enumerate([("si", si_settings), ("en", settings)]):
            para[split, lang] = root / f"para.{split}.{lang}.parquet"
            annotate_file(lang, tsv, para[split, lang], s, column=col)
    build_pair_features(
        root / "tok", "si-en", para["train", "si"], para["train", "en"], para["valid", "si"],
        para["valid", "en"], 40, root / "para_feat",
    )  # fmt: skip
    tiny_init_model(root)
    return {"root": root, "init": root / "init", "features": root / "feat", "para": root / "para_feat"}


def training_world(root: Path) -> dict[str, Path]:
    """Generated English text, its annotation, a tokenizer, MLM features, and a random tiny model without
    dropout (so that data-parallel and one-process runs can agree to float precision): the training tests'
    (tests/unit/test_training.py, tests/dag/test_training_torchrun.py)."""
    english_features(root, mono_sentences=300, para_train=10, vocab_size=500, valid=0.15)
    tiny_init_model(root, dropout=False)
    return {"root": root, "init": root / "init", "features": root / "feat"}


# The generated news benchmark of every pair (30 documents): the chance-level and control tests'.
NEWS_SETTINGS = {"mono_sentences": 10, "para_train": 10, "para_valid": 5, "news_documents": 30,
                 "sentiment_examples": 20, "noisy_pairs": 8}  # fmt: skip
NEWS_PAIRS = ("si-en", "si-ta", "ta-en")


def news_benches(root: Path) -> dict:
    """The generated news benchmark of every pair, prepared as `lem data news` prepares it: pair -> its
    benchmark (tests/unit/test_chance.py, tests/unit/test_controls.py, tests/dag/test_controls_chain.py)."""
    from lem.corpus.generate import GenerateSettings, generate
    from lem.data.news import load_news

    generate(GenerateSettings.from_dict(NEWS_SETTINGS), root / "corpus", root / "eval")
    return {pair: load_news(root / "eval" / "news", "GEN", pair) for pair in NEWS_PAIRS}


def columns(rows):
    """A benchmark side's rows as (ids, documents, texts)."""
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def write(folder: Path, name: str, data: bytes | str) -> Path:
    """`data` (text as UTF-8) in `folder/name`, its folders made: a user's file, as the input tests write it."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


# What `snakedeploy deploy-workflow <repo> DIR --tag vX` writes (the module's snakefile a local path here;
# snakedeploy writes github("<owner>/<repo>", path="workflow/Snakefile", tag="vX")), with the user's overlay
# named after the copy of config/config.yaml that snakedeploy places beside it.
DEPLOYED_SNAKEFILE = """from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"
configfile: "config/overlay.yaml"


module lem_pipeline:
    snakefile:
        "@SNAKEFILE@"
    config:
        config


use rule * from lem_pipeline
"""

# The user's overlay of six keys: their rows and seed, no sentiment, NMT on si-en (config/nmt.yaml's key), a
# LASER reference encoder (its rule runs the workflow's own script), and a small generated world.
OVERLAY = """variants: [base, lem]
pretrain: {seeds: [7]}
sentiment: {enabled: false}
curation: {nmt: {pairs: [si-en]}}
reference_encoders: {laser: {settings: {backend: laser}}}
corpus:
  generate: {mono_sentences: 40, para_train: 20, para_valid: 5, news_documents: 2, sentiment_examples: 20,
             noisy_pairs: 8, noisy_extra_pairs: {si-en: 10}}
"""


def deployed_module(root: Path) -> Path:
    """The workflow deployed as a module in `root/my-lem` (its folder, returned), as snakedeploy lays it out,
    with the user's overlay (tests/planning/test_module.py, tests/dag/test_module_run.py)."""
    root = root / "my-lem"
    (root / "workflow").mkdir(parents=True)
    (root / "config").mkdir()
    snakefile = DEPLOYED_SNAKEFILE.replace("@SNAKEFILE@", str(REPO / "workflow" / "Snakefile"))
    (root / "workflow" / "Snakefile").write_text(snakefile)
    shutil.copy(REPO / "config" / "config.yaml", root / "config" / "config.yaml")
    (root / "config" / "overlay.yaml").write_text(OVERLAY)
    return root
