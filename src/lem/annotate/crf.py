"""CRF sequence taggers (python-crfsuite, the engine under sklearn-crfsuite) for POS and NER.

Models are stored in crfsuite's own binary format (never pickle) with a JSON sidecar `MODEL.json` saying
what the model tags (task, language, labels, feature version).
"""

from __future__ import annotations

import logging
import os
import time
import unicodedata
from pathlib import Path

import pycrfsuite

from lem.core.entities import TAGSETS, check_tagset, coarse_map, repair_iob2
from lem.core.files import atomic_path, read_json, write_json
from lem.core.inputs import InputError

log = logging.getLogger(__name__)
FEATURES_VERSION = 1


def _shape(word: str) -> str:
    out = []
    for c in word:
        s = "d" if c.isdigit() else "X" if c.isupper() else "x" if c.isalpha() else "p"
        if not out or out[-1] != s:
            out.append(s)
    return "".join(out[:4])


def word_features(words: list[str], i: int) -> dict[str, str | float]:
    """Features of word i: the word, its affixes (characters, so Indic vowel signs count), shape, and the
    neighbouring words within two positions."""
    w = unicodedata.normalize("NFC", words[i])
    lw = w.casefold()
    f: dict[str, str | float] = {
        "bias": 1.0,
        "w": lw,
        "shape": _shape(w),
        "title": float(w[:1].isupper()),
        "len": str(min(len(w), 12)),
    }
    for k in (1, 2, 3, 4):
        if len(lw) > k:
            f[f"suf{k}"] = lw[-k:]
            f[f"pre{k}"] = lw[:k]
    for d in (-2, -1, 1, 2):
        j = i + d
        if 0 <= j < len(words):
            n = words[j].casefold()
            f[f"{d}:w"] = n
            f[f"{d}:suf2"] = n[-2:]
            f[f"{d}:title"] = float(words[j][:1].isupper())
        else:
            f[f"{d}:pad"] = 1.0
    return f


def sentence_features(words: list[str]) -> list[dict[str, str | float]]:
    return [word_features(words, i) for i in range(len(words))]


def train_crf(
    sentences: list[list[tuple[str, str]]],
    out: str | os.PathLike,
    task: str,
    lang: str,
    c1: float = 0.05,
    c2: float = 0.05,
    max_iterations: int = 100,
    tagset: str | None = None,
) -> dict:
    """Train a CRF on sentences of (word, tag) and write MODEL and MODEL.json atomically; returns the sidecar.
    `tagset` (POS: required): the tag set of the training tags (`upos` for CoNLL-U), recorded in the sidecar
    so that annotation maps the model's tags to NOUN/VERB with the right table."""
    if task not in ("pos", "ner"):
        raise ValueError(f"task must be pos or ner, got {task!r}")
    if task == "pos":
        if not tagset:
            raise ValueError(f"a POS CRF needs the tag set of its training tags (one of {list(TAGSETS)})")
        check_tagset(tagset, "train_crf")
    elif tagset:
        raise ValueError("tagset is for POS models only")
    sentences = [s for s in sentences if s]
    if not sentences:
        raise InputError("no training sentences")
    labels = sorted({t for s in sentences for _, t in s})
    if task == "pos" and not set(coarse_map(tagset)) & set(labels):
        raise InputError(
            f"none of the training tags {labels[:20]} is a NOUN or VERB tag of tag set {tagset!r}: "
            "a wrong tag column or tag set"
        )
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for sent in sentences:
        words = [w for w, _ in sent]
        trainer.append(sentence_features(words), [t for _, t in sent])
    trainer.set_params(
        {"c1": c1, "c2": c2, "max_iterations": max_iterations, "feature.possible_transitions": True}
    )
    with atomic_path(out) as tmp:
        trainer.train(str(tmp))
    meta = {
        "task": task,
        "lang": lang,
        **({"tagset": tagset} if task == "pos" else {}),
        "labels": labels,
        "features_version": FEATURES_VERSION,
        "n_sentences": len(sentences),
        "n_words": sum(len(s) for s in sentences),
        "c1": c1,
        "c2": c2,
        "max_iterations": max_iterations,
        "train_seconds": round(time.perf_counter() - t0, 2),
    }
    write_json(str(out) + ".json", meta)
    log.info(
        "crf %s/%s: %d sentences, %d labels, %.1fs -> %s",
        task,
        lang,
        len(sentences),
        len(labels),
        meta["train_seconds"],
        out,
    )
    return meta


class CRFTagger:
    """A trained CRF model; `tag` returns POS tags (of `tagset`, from the sidecar; None when a model trained
    before the sidecar recorded it) or IOB2 NER labels per word."""

    def __init__(self, path: str | os.PathLike) -> None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"CRF model {path} not found (train it with `lem annotate train-crf`)")
        meta_path = Path(str(path) + ".json")
        self.meta = read_json(meta_path) if meta_path.is_file() else {}
        if self.meta.get("features_version", FEATURES_VERSION) != FEATURES_VERSION:
            raise InputError(
                f"{path}: features version {self.meta['features_version']}, expected {FEATURES_VERSION}"
            )
        self.tagset = self.meta.get("tagset")
        self.tagger = pycrfsuite.Tagger()
        self.tagger.open(str(path))

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        out = []
        for words in sentences:
            tags = list(self.tagger.tag(sentence_features(words))) if words else []
            out.append(repair_iob2(tags) if self.meta.get("task") == "ner" else tags)
        return out
