"""The generated code-mixed sentiment set: romanised-Sinhala/English comments whose polarity words give their
label, in the class shares of the real CMCS set, with label noise."""

from __future__ import annotations

import random

from lem.corpus import lexicon as lx
from lem.corpus.settings import GenerateSettings

SENTIMENT_PRIORS = {"Neutral": 0.62, "Negative": 0.27, "Positive": 0.11}  # close to the real CMCS set

_FILLERS_START = ["", "", "", "machan ", "ane ", "bro ", "mn hithanne "]
_FILLERS_END = ["", "", "", " ..", " !!", " machan", " bn", " neda"]


def _flip(p: str) -> str:
    return {"positive": "negative", "negative": "positive"}[p]


def sentiment_comment(rng: random.Random, label: str, negation: float) -> str:
    """A romanised-Sinhala/English comment whose polarity words (negation flips them) give `label`."""
    noun_en, noun_rom = rng.choice(lx.SENTIMENT_NOUNS)
    org = rng.choice(lx.entries("ORG")).key
    place = rng.choice(lx.entries("LOC")).key
    if label == "Neutral":
        style = rng.random()
        if style < 0.6:
            en, rom = rng.choice(lx.SENTIMENT_NEUTRAL)
            body = (en if rng.random() < 0.4 else rom).format(n=noun_en, r=noun_rom, l=place)
        else:
            adj = rng.choice([e for e in lx.entries("ADJ") if e.polarity == "neutral"])
            body = rng.choice(
                [
                    f"mage {noun_rom} {adj.rom}",
                    f"{org} eke {noun_rom} {adj.key} ne",
                    f"{place} wala {noun_en} eka {adj.rom}",
                ]
            )
    else:
        target = label.lower()
        negate = rng.random() < negation
        polarity = _flip(target) if negate else target
        if rng.random() < 0.6:
            adj = rng.choice([e for e in lx.entries("ADJ") if e.polarity == polarity])
            body = rng.choice(
                [
                    f"{org} eke {noun_rom} {adj.rom}" + (" na" if negate else "i"),
                    f"me {noun_rom} nam {adj.rom}" + (" na" if negate else ""),
                    f"{noun_rom} is {'not ' if negate else 'very '}{adj.key}",
                    f"{place} wala {noun_en} eka {adj.key}" + (" na" if negate else ""),
                ]
            )
        else:
            en, en_neg, rom, rom_neg, _ = rng.choice([v for v in lx.SENTIMENT_VERBS if v[4] == polarity])
            body = rng.choice(
                [
                    f"{org} eke {noun_rom} {rom_neg if negate else rom}",
                    f"{noun_rom} {en_neg if negate else en}",
                ]
            )
    return (rng.choice(_FILLERS_START) + body + rng.choice(_FILLERS_END)).strip()


def sentiment_set(s: GenerateSettings) -> list[tuple[str, str]]:
    rng = random.Random(f"{s.seed}/sentiment")
    labels = list(SENTIMENT_PRIORS)
    n = s.sentiment_examples
    want = {lb: round(p * n) for lb, p in SENTIMENT_PRIORS.items()}
    want["Neutral"] += n - sum(want.values())
    order = [lb for lb in labels for _ in range(want[lb])]
    rng.shuffle(order)
    rows, seen = [], set()
    for label in order:  # exact class shares before noise; distinct comments
        for _ in range(1000):
            text = sentiment_comment(rng, label, s.sentiment_negation)
            if text not in seen:
                break
        else:
            raise RuntimeError(f"sentiment: too few distinct {label} comments for {n} examples")
        seen.add(text)
        if rng.random() < s.sentiment_label_noise:
            label = rng.choice([lb for lb in labels if lb != label])
        rows.append((text, label))
    return rows
