"""multiNER (3-way parallel en/si/ta CoNLL NER) into a fixed, seeded train/valid/test split.

Sentence i of each language translates sentence i of the others, so one split of sentence indices
serves all three languages and no translation of a test sentence is ever trained on.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lem.annotate.readers import read_conll_ner
from lem.core.files import atomic_path, write_json
from lem.core.inputs import InputError, read_text
from lem.core.settings import Settings, SettingsError

log = logging.getLogger(__name__)

MULTINER_FILES = {"en": "Final_English.txt", "si": "Final_Sinhala.txt", "ta": "Final_Tamil.txt"}


@dataclass
class MultinerSettings(Settings):
    SECTION = "multiner settings"

    valid: float = 0.1
    test: float = 0.1
    seed: int = 13
    skip_sentences: list[int] = field(default_factory=lambda: [0])  # sentence 0 is a title block
    on_error: str = "skip"  # malformed CoNLL lines: skip (counted) or raise

    def validate(self) -> None:
        if self.valid < 0 or self.test < 0 or self.valid + self.test >= 1:
            raise SettingsError(
                f"multiner settings: valid + test must be in [0, 1), got {self.valid + self.test}"
            )


def split_indices(n: int, valid: float, test: float, seed: int, skip: list[int] = ()) -> dict[str, list[int]]:
    """Seeded split of sentence indices 0..n-1 (minus `skip`) into sorted train/valid/test lists."""
    idx = np.array([i for i in range(n) if i not in set(skip)])
    np.random.default_rng(seed).shuffle(idx)
    n_test, n_valid = int(round(len(idx) * test)), int(round(len(idx) * valid))
    parts = {"test": idx[:n_test], "valid": idx[n_test : n_test + n_valid], "train": idx[n_test + n_valid :]}
    return {k: sorted(int(i) for i in v) for k, v in parts.items()}


def irregular_spacing_lines(path: str | os.PathLike) -> int:
    """Lines whose single-space split is not `token TAG` (double or trailing spaces): counted, not fatal."""
    lines = read_text(path).splitlines()
    return sum(1 for x in lines if x.strip() and len(x.split(" ")) != 2)


def find_file(root: Path, name: str) -> Path:
    """`root/name`, or the one file of that name below `root` (archives add a top folder)."""
    if (root / name).is_file():
        return root / name
    found = sorted(root.rglob(name))
    if len(found) != 1:
        raise FileNotFoundError(f"{root}: expected one {name} in this folder or below it, found {len(found)}")
    return found[0]


def multiner_files(root: str | os.PathLike) -> list[Path]:
    """The three files `split_multiner` reads (`MULTINER_FILES`, found by `find_file`)."""
    return [find_file(Path(root), name) for name in MULTINER_FILES.values()]


def split_multiner(
    root: str | os.PathLike, settings: MultinerSettings, out_dir: str | os.PathLike
) -> dict[str, Any]:
    """Write `{lang}.{split}.conll` (`token<TAB>TAG`, blank line between sentences) and `stats.json`."""
    started = time.monotonic()
    root, out_dir = Path(root), Path(out_dir)
    files = dict(zip(MULTINER_FILES, multiner_files(root), strict=True))
    sents = {lang: read_conll_ner(path, on_error=settings.on_error) for lang, path in files.items()}
    sizes = {lang: len(s) for lang, s in sents.items()}
    if len(set(sizes.values())) != 1:
        raise InputError(
            f"{root}: multiNER languages have different sentence counts {sizes}; not 3-way parallel"
        )
    n = sizes["en"]
    splits = split_indices(n, settings.valid, settings.test, settings.seed, settings.skip_sentences)
    for lang, s in sents.items():
        for name, idx in splits.items():
            with atomic_path(out_dir / f"{lang}.{name}.conll") as tmp:
                with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                    for i in idx:
                        f.writelines(f"{tok}\t{tag}\n" for tok, tag in s[i])
                        f.write("\n")
    stats = {
        "sentences": n,
        "skipped_sentences": sorted(settings.skip_sentences),
        "split_sizes": {k: len(v) for k, v in splits.items()},
        "malformed_lines_skipped": {lang: s.skipped for lang, s in sents.items()},
        "irregular_spacing_lines": {lang: irregular_spacing_lines(path) for lang, path in files.items()},
        "settings": settings.__dict__,
    }
    write_json(out_dir / "stats.json", stats)
    log.info(
        "multiner %s: %d sentences x 3 -> %s; malformed %s, irregular spacing %s; %.1fs",
        root,
        n,
        stats["split_sizes"],
        stats["malformed_lines_skipped"],
        stats["irregular_spacing_lines"],
        time.monotonic() - started,
    )
    return stats


def split_conll(path: str | os.PathLike, valid_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Sentence blocks of a CoNLL file (any column count) split into seeded train / valid lists."""
    blocks, cur = [], []
    for line in read_text(path).splitlines():
        if line.strip():
            cur.append(line.rstrip("\r"))
        elif cur:
            blocks.append("\n".join(cur))
            cur = []
    if cur:
        blocks.append("\n".join(cur))
    n_valid = int(round(valid_fraction * len(blocks)))
    if not 0 < n_valid < len(blocks):
        raise InputError(
            f"{path}: expected sentences (blocks of lines between blank lines) to give a valid share of "
            f"{valid_fraction}, got {len(blocks)}"
        )
    held = set(np.random.default_rng(seed).permutation(len(blocks))[:n_valid].tolist())
    train = [b for i, b in enumerate(blocks) if i not in held]
    valid = [b for i, b in enumerate(blocks) if i in held]
    return train, valid


def write_conll_blocks(blocks: list[str], out: str | os.PathLike) -> None:
    with atomic_path(out) as tmp:
        tmp.write_text("".join(b + "\n\n" for b in blocks), encoding="utf-8")
