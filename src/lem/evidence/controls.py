"""Controls for the evaluation: encoders whose scores are known in advance, to show the metrics work.

- Positive control: `lexical_embeddings`, a sentence encoder built from a bilingual dictionary. Each word
  is looked up in a `Dictionary` (concept ids shared across languages); a sentence is its bag of concepts,
  idf-weighted, projected to `dim` dimensions with a seeded random Gaussian vector per feature (the same
  vector for a concept in every language) and L2-normalised. Words the dictionary lacks are features of
  their own, keyed by their (case-folded) string in every language: numbers, names written alike and
  punctuation then match across languages too. A mining metric that cannot tell this encoder from chance
  is broken. Dictionaries: `Dictionary.from_generated_lexicon()` (the embedded generated world: every
  inflected form of a lexicon row is one concept) or `Dictionary.from_tsv(path, src, tgt)` for real data.
- Negative controls: `random_embeddings` (must score at chance, `lem.evidence.chance`), and
  `shuffle_gold_within_documents` (gold targets permuted within their documents: any encoder must then
  score at `lem.evidence.chance.mining_chance_permutation`'s level).

Which pairs have the positive control: `lexical_dictionaries` (config `controls.lexical`; a mined pair
without a dictionary has no `control_lexical` row and is marked `NO_DICTIONARY`, `lexical_control_lines`).
Its verdict, `positive_control_verdict` (config `controls.positive_lift`, `controls.positive_alpha`): the
intersection F1 must reach chance + lift x (ceiling - chance), the lift per evaluation set, and its correct
pairs must be more than chance gives at level alpha (`chance_p_value`). The test is what proves the chain on
real text: a broken evaluation chain (gold ids that do not name the sentences scored, sides or documents
mixed up) scores at chance whatever the encoder, so a dictionary encoder beating chance with p < alpha
shows the chain carries the signal; the lift asks in addition for a share of the reachable links, which a
full generated lexicon reaches (0.5) and a sparse real glossary on comparable news does not (set it low or
0 for such an evaluation set, and let the test decide).
"""

from __future__ import annotations

import hashlib
import math
import os
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lem.core.inputs import InputError, long_line_message, read_lines, shown, too_long
from lem.core.text import words


def normalise(word: str) -> str:
    """The key a word is looked up by: NFC, case-folded (Sinhala and Tamil are unchanged by case folding)."""
    return unicodedata.normalize("NFC", word).casefold()


@dataclass
class Dictionary:
    """Concept ids across languages: `table[lang][word]` is the tuple of concepts a (normalised) word may
    express. A word listed under several concepts (a word shared by multi-word names, a polysemous word of
    a real dictionary) spreads its weight over them."""

    langs: tuple[str, ...]
    table: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    n_concepts: int = 0

    def concepts(self, lang: str, word: str) -> tuple[int, ...]:
        """The concepts of `word` in `lang` (empty when the dictionary lacks it)."""
        return self.table.get(lang, {}).get(normalise(word), ())

    def size(self, lang: str) -> int:
        """How many distinct words of `lang` the dictionary knows."""
        return len(self.table.get(lang, {}))

    @classmethod
    def from_entries(cls, langs: Sequence[str], entries: Iterable[dict[str, Iterable[str]]]) -> Dictionary:
        """One concept per entry: {lang: phrases} with every word of every phrase of the entry mapped to it."""
        table: dict[str, dict[str, list[int]]] = {lang: {} for lang in langs}
        n = 0
        for n, entry in enumerate(entries, start=1):
            for lang, phrases in entry.items():
                if lang not in table:
                    raise ValueError(f"dictionary entry {n}: language {lang!r} not among {list(langs)}")
                for phrase in phrases:
                    for w in words(phrase):
                        ids = table[lang].setdefault(normalise(w), [])
                        if not ids or ids[-1] != n - 1:
                            ids.append(n - 1)
        return cls(
            tuple(langs),
            {lang: {w: tuple(ids) for w, ids in t.items()} for lang, t in table.items()},
            n,
        )

    @classmethod
    def from_generated_lexicon(
        cls, data_dir: str | os.PathLike | None = None, codes: Mapping[str, str] | None = None
    ) -> Dictionary:
        """The generated world's lexicon (`lem.corpus.lexicon`, default the packaged TSVs): one concept per
        row, made of every form of the row in every language (en.base, en.pl, si.loc, ta.acc, ...), inline
        POS tags dropped and multi-word forms ("Kamal Perera") split into words that each map to the row.
        Words fixed in the generator's templates are not in the lexicon and count as unknown words. `codes`
        (code -> built-in language, config `corpus.generate.languages`) names languages as the config does."""
        from lem.corpus import lexicon as lx
        from lem.corpus.generate import GenerateSettings

        code = GenerateSettings.from_dict({"languages": dict(codes or {})}).codes

        lex = lx.load(data_dir)
        entries = []
        for e in lex.entries:
            entries.append(
                {
                    code[lang]: [
                        " ".join(w for w, _ in lx.parse_form(text, e.cat, lang, form))
                        for form, text in e.forms[lang].items()
                    ]
                    for lang in lx.LANGS
                }
            )
        return cls.from_entries([code[lang] for lang in lx.LANGS], entries)

    @classmethod
    def from_tsv(cls, path: str | os.PathLike, src_lang: str, tgt_lang: str) -> Dictionary:
        """A bilingual dictionary file: one `source<TAB>target` translation per line (UTF-8; blank lines and
        lines starting with `#` skipped; a first line `src<TAB>tgt` or `<src_lang><TAB><tgt_lang>` is a
        header). Each line is one concept; a phrase's words all map to it. InputError naming the file and
        line for a line without exactly two non-empty fields."""
        if src_lang == tgt_lang:
            raise ValueError(f"dictionary {path}: source and target language are both {src_lang!r}")
        entries = []
        for n, line in enumerate(read_lines(path), start=1):
            if too_long(line):
                raise InputError(long_line_message(path, n, line))
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split("\t")]
            if n == 1 and parts in (["src", "tgt"], [src_lang, tgt_lang]):
                continue
            if len(parts) != 2 or not all(parts) or not all(words(p) for p in parts):
                raise InputError(
                    f"{path}:{n}: expected 'source<TAB>target' (two non-empty fields), got {shown(line)}"
                )
            entries.append({src_lang: [parts[0]], tgt_lang: [parts[1]]})
        if not entries:
            raise InputError(f"{path}: expected 'source<TAB>target' lines, got no entries")
        return cls.from_entries((src_lang, tgt_lang), entries)


def _feature_vector(key: str, dim: int, seed: int) -> np.ndarray:
    """The seeded random direction of one feature: N(0, 1/dim) per dimension, from a stable hash of the key."""
    h = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")
    return np.random.default_rng([seed, h]).standard_normal(dim) / math.sqrt(dim)


def lexical_features(
    sentence: str, lang: str, dictionary: Dictionary, unknown: str = "hash"
) -> dict[str, float]:
    """Bag of features of a sentence: `c<id>` for each concept of a known word (weight 1 / its number of
    concepts), and, with `unknown="hash"`, `w<word>` for a word the dictionary lacks (the same key in every
    language); `unknown="drop"` leaves those out."""
    if unknown not in ("hash", "drop"):
        raise ValueError(f"lexical features: unknown={unknown!r}: expected 'hash' or 'drop'")
    bag: dict[str, float] = {}
    for w in words(sentence):
        ids = dictionary.concepts(lang, w)
        if ids:
            for c in ids:
                bag[f"c{c}"] = bag.get(f"c{c}", 0.0) + 1.0 / len(ids)
        elif unknown == "hash":
            key = "w" + normalise(w)
            bag[key] = bag.get(key, 0.0) + 1.0
    return bag


def lexical_embeddings(
    sentences: Sequence[str],
    lang: str,
    dictionary: Dictionary,
    dim: int = 512,
    seed: int = 0,
    idf: bool = True,
    unknown: str = "hash",
) -> np.ndarray:
    """The positive control's sentence embeddings: float32 (len(sentences), dim), L2-normalised rows (a zero
    row for a sentence with no feature).

    Each sentence is its bag of features (`lexical_features`), weighted by idf over these sentences when
    `idf` (log((1 + N) / (1 + df)) + 1, so that punctuation and words in every sentence count little), and
    projected with one seeded random Gaussian direction per feature (the same concept gets the same
    direction in every language; distinct features are nearly orthogonal for dim >> features per sentence).
    """
    if lang not in dictionary.langs:
        raise ValueError(
            f"lexical embeddings: language {lang!r} is not in the dictionary's {list(dictionary.langs)}"
        )
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"lexical embeddings: dim={dim!r}: expected an integer >= 1")
    bags = [lexical_features(s, lang, dictionary, unknown) for s in sentences]
    keys = sorted({k for b in bags for k in b})
    col = {k: i for i, k in enumerate(keys)}
    counts = np.zeros((len(bags), len(keys)))
    for r, b in enumerate(bags):
        for k, v in b.items():
            counts[r, col[k]] = v
    if idf and len(keys):
        df = (counts > 0).sum(axis=0)
        counts *= np.log((1 + len(bags)) / (1 + df)) + 1
    proj = np.stack([_feature_vector(k, dim, seed) for k in keys]) if keys else np.zeros((0, dim))
    emb = (counts @ proj).astype(np.float32)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.maximum(norms, 1e-12)


def random_embeddings(n: int, dim: int, seed: int) -> np.ndarray:
    """The negative control's embeddings: n seeded random unit vectors (float32, dim), uniform on the sphere."""
    if n < 0 or dim < 1:
        raise ValueError(f"random embeddings: n={n}, dim={dim}: expected n >= 0 and dim >= 1")
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def shuffle_gold_within_documents(
    gold: Iterable[tuple[str, str]], tgt_ids: Sequence[str], tgt_docs: Sequence[str], seed: int
) -> set[tuple[str, str]]:
    """Gold links with their targets relabelled by a seeded random permutation of each document's target
    ids (every target of the document, not only the gold ones), the sources kept: the negative control of
    the gold side. Mining against it measures `lem.evidence.chance.mining_chance_permutation`'s chance (permuting
    the target rows within documents is the same relabelling). A gold target not among `tgt_ids`:
    ValueError."""
    if len(tgt_ids) != len(tgt_docs):
        raise ValueError(f"shuffle gold: {len(tgt_ids)} target ids but {len(tgt_docs)} doc values")
    by_doc: dict[str, list[str]] = {}
    for t, d in zip(tgt_ids, tgt_docs, strict=True):
        by_doc.setdefault(d, []).append(t)
    rng = np.random.default_rng(seed)
    relabel: dict[str, str] = {}
    for d in sorted(by_doc):
        ids = by_doc[d]
        for a, b in zip(ids, rng.permutation(len(ids)), strict=True):
            relabel[a] = ids[b]
    gold = sorted(set(gold))
    missing = [t for _, t in gold if t not in relabel]
    if missing:
        raise ValueError(f"shuffle gold: gold target ids {missing[:5]} are not among the target sentences")
    return {(s, relabel[t]) for s, t in gold}


# ---------------------------------------------------------------- which pairs, and the positive verdict

NO_DICTIONARY = "no dictionary"


def lexical_dictionaries(
    lexical: str | Mapping[str, str] | None, pairs: Iterable[str]
) -> dict[str, str | None]:
    """Pair -> the positive control's dictionary (`generated` or a file) for each of `pairs`, None for a pair
    without one (config `controls.lexical`: `generated`, {pair: file}, or null): no `control_lexical` row
    for that pair, `NO_DICTIONARY` in the report, the other pairs keep theirs."""
    if lexical is None or isinstance(lexical, str):
        return dict.fromkeys(pairs, lexical)
    return {p: lexical.get(p) for p in pairs}


def lexical_control_lines(
    lexical: str | Mapping[str, str] | None, evalsets: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """One line per evaluation set with mined pairs that have no dictionary (`<evalset> <pair>, <pair>: no
    dictionary (no control_lexical row)`); none when the control is off (`lexical` null) or complete."""
    if lexical is None:
        return []
    lines = []
    for name, spec in evalsets.items():
        missing = [p for p, d in lexical_dictionaries(lexical, spec.get("pairs", [])).items() if d is None]
        if missing:
            lines.append(f"{name} {', '.join(missing)}: {NO_DICTIONARY} (no control_lexical row)")
    return lines


@dataclass(frozen=True)
class PositiveBar:
    """What the positive control must reach (config `controls.positive_lift` and `controls.positive_alpha`):
    `lift` of the span from chance to ceiling in intersection F1, one number or {evalset: lift} (an
    evaluation set not listed takes `default_lift`), and a one-sided test against chance at level `alpha`."""

    lift: float | Mapping[str, float] = 0.5
    alpha: float = 0.01
    default_lift: float = 0.5

    def __post_init__(self) -> None:
        lifts = self.lift.values() if isinstance(self.lift, Mapping) else [self.lift]
        if not all(0 <= x <= 1 for x in [*lifts, self.default_lift]):
            raise ValueError(f"positive control: lift {self.lift!r}: expected numbers in [0, 1]")
        if not 0 < self.alpha <= 1:
            raise ValueError(f"positive control: alpha {self.alpha!r}: expected 0 < alpha <= 1")

    def lift_for(self, evalset: str) -> float:
        if isinstance(self.lift, Mapping):
            return float(self.lift.get(evalset, self.default_lift))
        return float(self.lift)


def chance_p_value(n_correct: int, n_pred: float, chance_precision: float) -> float:
    """One-sided p of `n_correct` correct pairs among `n_pred` mined if the system knew nothing: P(X >=
    n_correct) for X ~ Poisson(n_pred x chance precision), each mined pair being gold with the pooled chance
    probability (`lem.evidence.chance`). A sum of independent Bernoulli trials is less spread than that Poisson, and
    mutual-best pairs compete for the same sentences, so the p is on the safe side."""
    from scipy.stats import poisson

    if n_correct <= 0:
        return 1.0
    return float(poisson.sf(n_correct - 1, max(n_pred * chance_precision, 0.0)))


def positive_control_verdict(
    metrics: Mapping[str, Any], evalset: str, pair: str, bar: PositiveBar, row: str = "control_lexical"
) -> tuple[bool, str]:
    """Whether a positive-control row passes on one evaluation set and pair, from its mining metrics
    (`lem mine run`'s JSON: `intersection`, `chance.intersection`, `ceiling.intersection`), and one line
    saying why: F1 >= chance + lift x (ceiling - chance) and `chance_p_value` < alpha."""
    got, chance, ceiling = (
        metrics["intersection"],
        metrics["chance"]["intersection"],
        metrics["ceiling"]["intersection"],
    )
    lift = bar.lift_for(evalset)
    need = chance["f1"] + lift * (ceiling["f1"] - chance["f1"])
    expected = got["n_pred"] * chance["precision"]
    p = chance_p_value(got["n_correct"], got["n_pred"], chance["precision"])
    ok = got["f1"] >= need and p < bar.alpha
    line = (
        f"{evalset} {pair}: {row} intersection F1 {got['f1']:.3f} {'>=' if got['f1'] >= need else '<'} "
        f"{need:.3f} (chance {chance['f1']:.3f} + {lift:g} x (ceiling {ceiling['f1']:.3f} - chance)); "
        f"{got['n_correct']} correct of {got['n_pred']} mined, {expected:.1f} by chance, p = {p:.2g} "
        f"{'<' if p < bar.alpha else '>='} alpha {bar.alpha:g}"
    )
    return ok, line
