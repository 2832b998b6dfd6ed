"""Annotation coverage: the NE, NOUN and VERB shares of each language's configured annotation on a seeded
sample of its own training text, checked against the entity types the configured LEM variants mask.

A share of zero means the masking of every variant that uses that type silently degrades to something
else (e.g. UPOS tags read as Penn tags made every English noun OTHER): this check fails before training,
naming the language and the type. Types that no configured variant masks are reported, never fatal.
"""

from __future__ import annotations

import logging
import os
import random
import time
from dataclasses import dataclass

from lem.annotate.settings import AnnotateSettings
from lem.core.entities import ENTITY_BITS, ENTITY_TYPES
from lem.core.files import write_json
from lem.core.settings import Settings, SettingsByName, SettingsError
from lem.core.stage import UsageError
from lem.masking.collate import MaskingSettings

# Imported inside functions: lem.annotate.run, which loads pyarrow (planning imports this module, for the
# masked entity types, and needs no pyarrow)

log = logging.getLogger(__name__)


class CoverageError(ValueError):
    """An enabled entity type has a zero (or too small) share in a language's annotation."""


@dataclass
class CoverageSettings(Settings):
    """`sample`: sentences drawn (seeded, uniformly, non-empty lines) from each language's text; `min_share`:
    an enabled type's share must be above zero and at least this; `seed`: the sampling seed."""

    SECTION = "coverage settings"

    sample: int = 2000
    min_share: float = 0.0
    seed: int = 0

    def validate(self) -> None:
        if self.sample < 1:
            raise SettingsError(f"coverage settings: sample must be an integer >= 1, got {self.sample!r}")
        if not 0.0 <= float(self.min_share) < 1.0:
            raise SettingsError(f"coverage settings: min_share must be in [0, 1), got {self.min_share!r}")


# `lem annotate coverage --settings`: language -> its annotation settings (the config's `annotation`)
ANNOTATION_BY_LANGUAGE = SettingsByName(AnnotateSettings)


def enabled_entity_types(variants: dict[str, dict]) -> dict[str, list[str]]:
    """Entity type -> the variants whose masking uses it (only `lem` strategies mask by type; a variant
    without `entity_types` uses the masking default, all three)."""
    used: dict[str, list[str]] = {}
    for name, masking in sorted(variants.items()):
        m = MaskingSettings.from_dict(masking)
        if m.strategy == "lem":
            for t in m.entity_types:
                used.setdefault(t, []).append(name)
    return {t: used[t] for t in ENTITY_TYPES if t in used}


def sample_sentences(
    path: str | os.PathLike, n: int, seed: int, on_error: str = "raise"
) -> tuple[list[str], int]:
    """A seeded uniform sample of `n` non-empty lines (reservoir sampling: one streamed pass, memory for `n`
    lines), in file order; and the number of non-empty lines."""
    from lem.annotate.run import iter_sentences

    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    seen = 0
    for text in iter_sentences(path, None, on_error):
        if not text:
            continue
        if seen < n:
            reservoir.append((seen, text))
        else:
            j = rng.randrange(seen + 1)
            if j < n:
                reservoir[j] = (seen, text)
        seen += 1
    return [t for _, t in sorted(reservoir)], seen


def language_coverage(
    lang: str, path: str | os.PathLike, settings: AnnotateSettings, s: CoverageSettings
) -> dict:
    """Annotate a sample of `path` with `settings` and count words per entity type."""
    from lem.annotate.run import Annotator, chunks

    texts, lines = sample_sentences(path, s.sample, s.seed, settings.on_error)
    annotator = Annotator(lang, settings)
    words = untagged = 0
    counts = dict.fromkeys(ENTITY_TYPES, 0)
    for chunk in chunks(texts, settings.chunk_lines):
        for row in annotator.annotate(chunk):
            words += len(row.words)
            untagged += sum(p == "" for p in row.pos)
            for f in row.flags:
                for t, bit in ENTITY_BITS.items():
                    counts[t] += bool(f & bit)
    return {
        "input": str(path),
        "lines": lines,
        "sentences": len(texts),
        "words": words,
        "words_by_type": counts,
        "shares": {t: round(counts[t] / words, 6) if words else 0.0 for t in ENTITY_TYPES},
        "pos_untagged_share": round(untagged / words, 6) if words else 0.0,
        "pos_backend": settings.pos.backend,
        "pos_tagset": annotator.pos_tagset,
        "ner_backend": settings.ner.backend,
    }


def check_coverage(
    languages: dict[str, dict], enabled: dict[str, list[str]], min_share: float = 0.0
) -> list[str]:
    """One message per (language, enabled type) whose share is zero or below `min_share`."""
    problems = []
    for lang, cov in languages.items():
        for t, variants in enabled.items():
            n, share = cov["words_by_type"][t], cov["shares"][t]
            if n == 0 or share < min_share:
                problems.append(
                    f"{lang}: {t.upper()} share is {share:.4f} ({n} of {cov['words']} words in a sample of "
                    f"{cov['sentences']} sentences of {cov['input']}; required > 0"
                    + (f" and >= {min_share}" if min_share else "")
                    + (
                        f" because {t} is masked by {', '.join(variants)}); "
                        if variants
                        else f" because a trained LEM variant masks {t}); "
                    )
                    + f"annotation: pos {cov['pos_backend']} (tag set {cov['pos_tagset']}), ner {cov['ner_backend']}"
                )
    return problems


def annotation_coverage(
    texts: dict[str, str | os.PathLike],
    settings: dict[str, AnnotateSettings | dict],
    variants: dict[str, dict],
    s: CoverageSettings,
    out: str | os.PathLike | None = None,
    types: list[str] | None = None,
) -> dict:
    """Coverage of every language in `texts` with its `settings`; written to `out` (JSON, atomically) when
    every type the `variants` mask (or, given instead, every one of `types`: the workflow passes the types
    alone, so that adding or removing a variant that masks no new type reruns no annotation) has a share
    above zero (and `s.min_share`), else CoverageError naming each language and type (nothing written)."""
    enabled = enabled_entity_types(variants)
    if types is not None:
        unknown = sorted(set(types) - set(ENTITY_TYPES))
        if unknown:
            raise UsageError(
                f"annotation coverage: unknown entity type(s) {unknown}; known: {list(ENTITY_TYPES)}"
            )
        enabled = {t: enabled.get(t, []) for t in ENTITY_TYPES if t in types}
    missing = sorted(set(texts) - set(settings))
    if missing:
        raise UsageError(f"annotation coverage: no annotation settings for {missing}")
    languages = {}
    for lang, path in texts.items():
        t0 = time.perf_counter()
        spec = settings[lang]
        spec = spec if isinstance(spec, AnnotateSettings) else AnnotateSettings.from_dict(spec)
        cov = language_coverage(lang, path, spec, s)
        languages[lang] = cov
        log.info(
            "coverage %s: %d sentences, %d words: NE %.3f NOUN %.3f VERB %.3f, POS untagged %.3f "
            "(pos %s/%s, ner %s), %.1fs",
            lang, cov["sentences"], cov["words"], cov["shares"]["ne"], cov["shares"]["noun"],
            cov["shares"]["verb"], cov["pos_untagged_share"], cov["pos_backend"], cov["pos_tagset"],
            cov["ner_backend"], time.perf_counter() - t0,
        )  # fmt: skip
    problems = check_coverage(languages, enabled, s.min_share)
    result = {
        "sample": s.sample,
        "seed": s.seed,
        "min_share": s.min_share,
        "enabled": enabled,
        "languages": languages,
    }
    if problems:
        raise CoverageError(
            "annotation coverage: an entity type that LEM variants mask has no words; masking would silently "
            "fall back to other words:\n  " + "\n  ".join(problems)
        )
    if out is not None:
        write_json(out, result)
    return result
