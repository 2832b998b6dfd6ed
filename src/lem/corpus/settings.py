"""The generated world's settings (`GenerateSettings`, config `corpus.generate`): sizes, seed, shares and the
codes the built-in languages are written under."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from lem.core.entities import LANG_CODE
from lem.core.settings import Settings, SettingsError
from lem.corpus import lexicon as lx

PAIRS = ("si-en", "si-ta", "ta-en")  # the built-in pairs (written under the configured codes: `pair_code`)

# The generated world's sizes: every count (per language, pair or world) at most MAX_COUNT (config/README.md).
# The generator holds its sentences in memory: 20,000 monolingual sentences per language took 28 s and 161 MB
# at peak on the 2-core development machine (2,000: 8 s, 41 MB), so a million per language is about 25
# minutes and 7 GB; 10**12 noisy pairs was a MemoryError after planning.
MAX_COUNT = 1_000_000
COUNTS = (
    "mono_sentences",
    "para_train",
    "para_valid",
    "news_documents",
    "sentiment_examples",
    "noisy_pairs",
    "composed_people",
    "composed_places",
)
SHARES = (
    "news_gold_share",
    "news_entity_reuse",
    "composed_share",
    "date_share",
    "sentiment_label_noise",
    "sentiment_negation",
    "noisy_clean_fraction",
)


@dataclass
class GenerateSettings(Settings):
    """Sizes and seed of the generated world; the defaults generate everything in a few seconds."""

    SECTION = "corpus settings"

    seed: int = 13
    mono_sentences: int = 4000
    para_train: int = 2000
    para_valid: int = 200
    news_documents: int = 40
    news_aligned_min: int = 3
    news_aligned_max: int = 8
    news_extra_min: int = 1
    news_extra_max: int = 4
    news_gold_share: float = 0.7
    news_entity_reuse: float = 0.5
    composed_people: int = 3000
    composed_places: int = 1500
    composed_share: float = 0.7
    date_share: float = 0.5
    number_max: int = 5000
    sentiment_examples: int = 1500
    sentiment_label_noise: float = 0.05
    sentiment_negation: float = 0.25
    noisy_pairs: int = 600
    noisy_clean_fraction: float = 0.5
    # pair -> noisy pairs appended to that pair's corpus (the NMT pair's training pool), drawn from a stream of
    # their own, after everything else: no other file changes, and none of their sentences is in another one
    noisy_extra_pairs: dict[str, int] = field(default_factory=dict)
    # configured language code -> the built-in language (en, si, ta) it names: {xx: si} writes Sinhala as xx;
    # a built-in language not named keeps its own code
    languages: dict[str, str] = field(default_factory=dict)

    @property
    def codes(self) -> dict[str, str]:
        """Built-in language -> the code its files are written under."""
        named = {builtin: code for code, builtin in self.languages.items()}
        return {lg: named.get(lg, lg) for lg in lx.LANGS}

    def pair_code(self, pair: str) -> str:
        """A built-in pair under the configured codes (`si-en` -> `xx-en` with languages {xx: si})."""
        return "-".join(self.codes[lg] for lg in pair.split("-"))

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A whole number for a share reads as a float (1 -> 1.0), as the generator computes with it; each
        entry of `languages` and `noisy_extra_pairs` is checked here, so that a message names the entry."""
        _check_entries(data)
        floats = {f.name for f in fields(cls) if f.type in (float, "float")}
        return {k: float(v) if k in floats and type(v) is int else v for k, v in data.items()}

    def validate(self) -> None:
        _check_sizes(self)
        for k in SHARES:
            if not 0.0 <= getattr(self, k) <= 1.0:
                raise SettingsError(f"corpus settings: {k} must be in [0, 1], got {getattr(self, k)}")
        _check_languages(self)


def _check_entries(data: dict[str, Any]) -> None:
    """Each entry of `languages` and `noisy_extra_pairs` as read (before the types are checked)."""
    for code, builtin in (
        (data.get("languages") or {}).items() if isinstance(data.get("languages"), dict) else ()
    ):
        if not (isinstance(code, str) and LANG_CODE.fullmatch(code)) or builtin not in lx.LANGS:
            raise SettingsError(
                f"corpus settings: languages.{code}: expected a code of 2-3 lower-case letters naming one of "
                f"the built-in languages {', '.join(lx.LANGS)} (e.g. {{xx: si}}), got {code!r}: {builtin!r}"
            )
    extra = data.get("noisy_extra_pairs")
    for pair, n in extra.items() if isinstance(extra, dict) else ():
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_COUNT:
            raise SettingsError(
                f"corpus settings: noisy_extra_pairs.{pair}: expected an integer count in 0..{MAX_COUNT:,}, "
                f"got {n!r}"
            )


def _check_sizes(s: GenerateSettings) -> None:
    """Every count within 0..MAX_COUNT (mono_sentences from 1), and the ranges and sizes that go together."""
    for k in COUNTS:
        n = getattr(s, k)
        low = 1 if k == "mono_sentences" else 0
        if not low <= n <= MAX_COUNT:
            why = " (pre-training needs text)" if k == "mono_sentences" else ""
            raise SettingsError(
                f"corpus settings: {k}: expected an integer count in {low}..{MAX_COUNT:,}{why}, got {n}"
            )
    if not 0 <= s.number_max <= MAX_COUNT:
        raise SettingsError(f"corpus settings: number_max: expected 0..{MAX_COUNT:,}, got {s.number_max}")
    if not 1 <= s.news_aligned_min <= s.news_aligned_max:
        raise SettingsError("corpus settings: need 1 <= news_aligned_min <= news_aligned_max")
    if s.composed_share > 0 and not (s.composed_people and s.composed_places):
        raise SettingsError(
            "corpus settings: composed_share > 0 needs composed_people and composed_places > 0"
        )
    if 0 < s.number_max < 2:
        raise SettingsError("corpus settings: number_max must be 0 (the lexicon's numbers) or >= 2")
    if not 0 <= s.news_extra_min <= s.news_extra_max:
        raise SettingsError("corpus settings: need 0 <= news_extra_min <= news_extra_max")


def _check_languages(s: GenerateSettings) -> None:
    """`languages`: each code names a distinct built-in language and no two languages share a code;
    `noisy_extra_pairs`: pairs under those codes."""
    for code, builtin in s.languages.items():
        if not (isinstance(code, str) and LANG_CODE.fullmatch(code)) or builtin not in lx.LANGS:
            raise SettingsError(
                f"corpus settings: languages: {code}={builtin!r}: expected a language code -> the built-in "
                f"language it names, one of {', '.join(lx.LANGS)} (e.g. {{xx: si}})"
            )
    if len(set(s.languages.values())) < len(s.languages):
        raise SettingsError(
            f"corpus settings: languages: {s.languages!r}: two codes name the same built-in language"
        )
    codes = s.codes
    if len(set(codes.values())) < len(codes):
        raise SettingsError(
            f"corpus settings: languages: {s.languages!r}: two built-in languages would be written "
            f"under the same code ({', '.join(f'{b} as {c}' for b, c in codes.items())}); name each "
            "language whose code another one takes"
        )
    pairs = tuple(s.pair_code(p) for p in PAIRS)
    for pair, n in s.noisy_extra_pairs.items():
        if pair not in pairs or n < 0:
            raise SettingsError(
                f"corpus settings: noisy_extra_pairs: {pair}={n!r}: expected a pair of {pairs} and a "
                "count >= 0"
            )
