"""lem.nmt.bleu equal to sacrebleu on real sentences (../shared/data's NLPC en-ta government corpus)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.bleu import check_equal

GOV = "nlpc-en-ta-gov"  # 8,946 line-aligned en-ta government sentences


def corrupted(refs: list[str], seed: int) -> list[str]:
    """Hypotheses made from real references: words dropped, swapped, taken from another line, emptied."""
    rng = random.Random(seed)
    out = []
    for i, ref in enumerate(refs):
        words = ref.split()
        kind = rng.random()
        if kind < 0.1:
            out.append("")
        elif kind < 0.2:
            out.append(refs[(i + 7) % len(refs)])  # an unrelated real sentence
        elif kind < 0.3:
            out.append(" ".join(words[:2]))  # too short for 3- and 4-grams
        else:
            kept = [w for w in words if rng.random() > 0.25]
            if len(kept) > 2 and rng.random() < 0.5:
                j = rng.randrange(len(kept) - 1)
                kept[j], kept[j + 1] = kept[j + 1], kept[j]
            out.append(" ".join(kept))
    return out


def real_lines(shared_data: Path, name: str, n: int) -> list[str]:
    lines = (shared_data / GOV / name).read_text(encoding="utf-8-sig").splitlines()
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    return lines[:n]


@pytest.mark.parametrize(("name", "lang"), [("En-Ta English.txt", "en"), ("En-Ta Tamil.txt", "ta")])
def test_equals_sacrebleu_on_real_sentences(shared_data, name, lang):
    refs = real_lines(shared_data, name, 300)
    check_equal(corrupted(refs, seed=1), refs, lang=lang)


def test_equals_sacrebleu_on_small_real_samples_with_smoothing(shared_data):
    """A few sentences per sample: orders with no match (smoothed), orders with no n-gram, no match at all."""
    refs = real_lines(shared_data, "En-Ta English.txt", 400)
    hyps = corrupted(refs, seed=2)
    for start in range(0, 400, 4):
        check_equal(hyps[start : start + 4], refs[start : start + 4], draws=3, seed=start)
