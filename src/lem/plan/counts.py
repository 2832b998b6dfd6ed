"""Counts of a config's training sets (`Counter`): the tokenized features, the run's files, MADLAD's sizes, the
generated world's sizes or `plan.estimates`, each marked."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.corpus.generate import GenerateSettings
from lem.plan.config import PlanError
from lem.run import paths
from lem.run.paths import fill

# Imported inside functions: pyarrow, datasets and lem.features, which loads pyarrow (`lem plan --help`
# imports this module and needs none)


@dataclass
class Split:
    """Examples of one training set: train and validation rows, their subwords when counted."""

    train: int
    valid: int
    train_tokens: float  # subwords of one pass over the train rows
    valid_tokens: float
    source: str  # features | lines | madlad | generate | estimate
    exact_tokens: bool

    def __add__(self, other: Split) -> Split:
        sources = dict.fromkeys(self.source.split("+") + other.source.split("+"))
        return Split(
            self.train + other.train,
            self.valid + other.valid,
            self.train_tokens + other.train_tokens,
            self.valid_tokens + other.valid_tokens,
            "+".join(sources),
            self.exact_tokens and other.exact_tokens,
        )


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def features_split(path: Path) -> Split:
    """Rows and subwords of a features folder (a DatasetDict with train and valid)."""
    import pyarrow.compute as pc
    from datasets import load_from_disk

    dd = load_from_disk(str(path))
    if "train" not in dd or "valid" not in dd:
        raise PlanError(f"{path}: expected a features folder with train and valid splits, found {list(dd)}")

    def tokens(ds) -> int:
        return int(pc.sum(pc.list_value_length(ds.data.column("input_ids"))).as_py() or 0)

    return Split(
        dd["train"].num_rows, dd["valid"].num_rows, tokens(dd["train"]), tokens(dd["valid"]), "features", True
    )


class Counter:
    """Counts of a config's training sets, looked up under `root` (the run's working directory)."""

    def __init__(self, config: dict[str, Any], root: Path):
        self.config, self.root = config, root
        self.estimates = config["plan"]["estimates"]
        self.max_length = int(config["pretrain"]["max_length"])
        sps = float(self.estimates["subwords_per_sentence"])
        self.mono_len = min(sps + 2, self.max_length)  # <s> A </s>
        self.pair_len = min(2 * sps + 4, self.max_length)  # <s> A </s></s> B </s>
        self._cache: dict[str, Split] = {}

    def path(self, rel: str) -> Path:
        return self.root / rel

    def generate(self) -> dict[str, Any] | None:
        if self.config["corpus"]["source"] != "generate":
            return None

        return dataclasses.asdict(GenerateSettings.from_dict(self.config["corpus"].get("generate")))

    def mono(self, lang: str) -> Split:
        if f"mono:{lang}" not in self._cache:
            self._cache[f"mono:{lang}"] = self._mono(lang)
        return self._cache[f"mono:{lang}"]

    def _mono_rows(self, n: int, source: str) -> Split:
        from lem.features import mono_split

        train, valid = mono_split(
            n, float(self.config["pretrain"]["valid_fraction"]), int(self.config["seed"])
        )
        return Split(
            len(train), len(valid), len(train) * self.mono_len, len(valid) * self.mono_len, source, False
        )

    def _mono(self, lang: str) -> Split:
        feats = self.path(fill(paths.FEATURES_MONO, lang=lang))
        if feats.is_dir():
            return features_split(feats)
        corpus = self.config["corpus"]
        candidates = [fill(paths.GUARDED_MONO, lang=lang), fill(paths.CORPUS_MONO, lang=lang)]
        configured = (
            corpus.get("files", {}).get("mono", {}).get(lang) if corpus["source"] == "files" else None
        )
        if configured:
            candidates.append(configured)
        for rel in candidates:
            if self.path(rel).is_file():
                return self._mono_rows(count_lines(self.path(rel)), "lines")
        madlad = self.config["sources"].get("madlad", {})
        if configured and configured.startswith("resources/madlad/") and lang in madlad.get("sizes", {}):
            return self._mono_rows(int(madlad["sizes"][lang]), "madlad")
        if lang in self.estimates["mono_sentences"]:
            return self._mono_rows(int(self.estimates["mono_sentences"][lang]), "estimate")
        gen = self.generate()
        if gen is not None:
            return self._mono_rows(int(gen["mono_sentences"]), "generate")
        raise PlanError(
            f"no count for the monolingual text of {lang!r}: none of {candidates} exists and no size is "
            f"configured; set plan.estimates.mono_sentences.{lang}"
        )

    def para(self, pair: str) -> Split:
        if f"para:{pair}" not in self._cache:
            self._cache[f"para:{pair}"] = self._para(pair)
        return self._cache[f"para:{pair}"]

    def _pairs(self, train: int, valid: int, source: str) -> Split:
        return Split(train, valid, train * self.pair_len, valid * self.pair_len, source, False)

    def _para(self, pair: str) -> Split:
        feats = self.path(fill(paths.FEATURES_PARA, pair=pair))
        if feats.is_dir():
            return features_split(feats)
        train_rel = [fill(paths.GUARDED_PARA, pair=pair), fill(paths.CORPUS_PARA_TRAIN, pair=pair)]
        valid_rel = self.path(fill(paths.PARA_VALID, pair=pair))
        for rel in train_rel:
            if self.path(rel).is_file() and valid_rel.is_file():
                return self._pairs(count_lines(self.path(rel)), count_lines(valid_rel), "lines")
        corpus = self.config["corpus"]
        spec = corpus.get("files", {}).get("para", {}).get(pair) if corpus["source"] == "files" else None
        valid_est = self.estimates["para_valid_pairs"].get(pair)
        if spec:
            train_files = [spec["train"]] if isinstance(spec["train"], str) else list(spec["train"])
            valid_files = (
                [spec["valid"]] if isinstance(spec.get("valid"), str) else list(spec.get("valid", []))
            )
            if all(self.path(f).is_file() for f in train_files + valid_files):
                # duplicates are dropped when the files are merged: an upper bound
                train = sum(count_lines(self.path(f)) for f in train_files)
                valid = sum(count_lines(self.path(f)) for f in valid_files)
                if not valid_files and spec.get("valid_size"):  # held out of train (lem data pairs)
                    train, valid = train - int(spec["valid_size"]), int(spec["valid_size"])
                return self._pairs(train, valid, "lines")
            if not valid_files and spec.get("valid_size"):
                valid_est = int(spec["valid_size"])
        if pair in self.estimates["para_pairs"]:
            if valid_est is None:
                raise PlanError(
                    f"plan.estimates.para_pairs.{pair} is set but not the size of its validation set: "
                    f"set plan.estimates.para_valid_pairs.{pair}"
                )
            return self._pairs(int(self.estimates["para_pairs"][pair]), int(valid_est), "estimate")
        gen = self.generate()
        if gen is not None:
            return self._pairs(int(gen["para_train"]), int(gen["para_valid"]), "generate")
        raise PlanError(
            f"no count for the parallel text of {pair!r}: its files do not exist yet; set "
            f"plan.estimates.para_pairs.{pair} and plan.estimates.para_valid_pairs.{pair}"
        )


def conll_sentences(path: Path) -> int:
    """Sentences of a CoNLL file: blocks of non-empty lines."""
    n, inside = 0, False
    with path.open("rb") as f:
        for line in f:
            blank = not line.strip()
            n += not blank and not inside
            inside = not blank
    return n
