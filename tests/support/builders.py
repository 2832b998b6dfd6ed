"""The data fixtures build, one function each (the fixtures call them: tests/conftest.py's for the whole
session, a test file's for its own tests), so that test files of several tiers that read the same data build it
the same way."""

from __future__ import annotations

from pathlib import Path


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
