"""Controls for the evaluation: encoders whose scores are known in advance, to show the metrics work.

- Positive control: `lexical_embeddings`, a sentence encoder built from a bilingual dictionary. Each word
  is looked up in a `Dictionary` (concept ids shared across languages); a sentence is its bag of concepts,
  idf-weighted, projected to `dim` dimensions with a seeded random Gaussian vector per feature (the same
  vector for a concept in every language) and L2-normalised. Words the dictionary lacks are features of
  their own, keyed by their (case-folded) string in every language: numbers, names written alike and
  punctuation then match across languages too. A mining metric that cannot tell this encoder from chance
  is broken. Dictionaries: `lem.embed.generated_dictionary()` (the embedded generated world: every
  inflected form of a lexicon row is one concept) or `Dictionary.from_tsv(path, src, tgt)` for real data.
- Negative controls: `random_embeddings` (must score at chance, `lem.mine.chance`), and
  `shuffle_gold_within_documents` (gold targets permuted within their documents: any encoder must then
  score at `lem.mine.chance.mining_chance_permutation`'s level).

Which pairs have the positive control: `lexical_dictionaries` (config `controls.lexical`; a mined pair
without a dictionary has no `control_lexical` row and is marked `NO_DICTIONARY`, `lexical_control_lines`;
`mining.evalsets.<set>.controls.lexical: false` drops it for one set or pair). Every setting of a control is
resolved per evaluation set and pair by `cell_settings`: `mining.evalsets.<set>.controls.<key>` (a value, or
{pair: value}), else `controls.<key>`, else `DEFAULTS`.

The positive verdict, `positive_control_verdict` (`positive_lift`, `positive_alpha`): the intersection F1 must
reach chance + lift x (ceiling - chance), and its correct pairs must be more than chance gives by an exact
one-sided binomial test at level alpha (`chance_p_value`). The test is what proves the chain on real text: a
broken evaluation chain (gold ids that do not name the sentences scored, sides or documents mixed up) scores
at chance whatever the encoder, so a dictionary encoder beating chance with p < alpha shows the chain carries
the signal; the lift asks in addition for a share of the reachable links, which a full generated lexicon
reaches (0.5) and a sparse real glossary on comparable news does not (set it low or 0 for such a set).

The negative verdict, `negative_control_verdict` (`negative_alpha`): the random control's draws (one per seed,
`controls.random_seeds`) pooled, their correct pairs tested against chance by an exact two-sided binomial test;
"at chance" means that test does not reject chance at `negative_alpha`, not an F1 under some bar. Both
verdicts carry the Clopper-Pearson interval of the control's precision beside chance's.

A control that fails marks its (task, set, pair) cell "no signal" (`no_signal_cells`): the report shows the
cell's values without marks, `lem.report.comparisons.compare` tests none of its comparisons, and the run ends
with a failed `controls_gate` job naming the cells and the keys that govern them; every other cell is built.
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
from lem.core.settings import Settings
from lem.core.text import words

# Imported inside functions: scipy (planning and `lem report --help` import this module and need no scipy)


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
    the gold side. Mining against it measures `lem.mine.chance.mining_chance_permutation`'s chance (permuting
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


def chance_p_value(
    n_correct: float, n_pred: float, chance_precision: float, alternative: str = "greater"
) -> float:
    """p of `n_correct` correct pairs among `n_pred` mined if the system knew nothing, each mined pair being
    gold with the pooled chance probability (`lem.mine.chance`): an exact binomial test (counts rounded
    to integers), one-sided (`greater`: more correct than chance) or `two-sided`. Mutual-best pairs compete
    for the same sentences, which makes the true count less spread than the binomial: the p is on the safe
    side."""
    from scipy.stats import binomtest

    k, n = int(round(n_correct)), int(round(n_pred))
    q = min(max(float(chance_precision), 0.0), 1.0)
    if n <= 0 or (alternative == "greater" and k <= 0):
        return 1.0
    return float(binomtest(min(k, n), n, q, alternative=alternative).pvalue)


def precision_interval(n_correct: float, n_pred: float, level: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson (exact) interval of a precision `n_correct / n_pred` ((nan, nan) with no pair)."""
    from scipy.stats import binomtest

    k, n = int(round(n_correct)), int(round(n_pred))
    if n <= 0:
        return float("nan"), float("nan")
    ci = binomtest(min(k, n), n, 0.5).proportion_ci(level, method="exact")
    return float(ci.low), float(ci.high)


def positive_control_verdict(
    metrics: Mapping[str, Any], evalset: str, pair: str, bar: PositiveBar, row: str = "control_lexical"
) -> tuple[bool, str]:
    """Whether a positive-control row passes on one evaluation set and pair, from its mining metrics
    (`lem mine run`'s JSON: `intersection`, `chance.intersection`, `ceiling.intersection`), and one line
    saying why: F1 >= chance + lift x (ceiling - chance) and `chance_p_value` < alpha, with the precision's
    95 % interval beside chance's."""
    got, chance, ceiling = (
        metrics["intersection"],
        metrics["chance"]["intersection"],
        metrics["ceiling"]["intersection"],
    )
    lift = bar.lift_for(evalset)
    need = chance["f1"] + lift * (ceiling["f1"] - chance["f1"])
    expected = got["n_pred"] * chance["precision"]
    p = chance_p_value(got["n_correct"], got["n_pred"], chance["precision"])
    low, high = precision_interval(got["n_correct"], got["n_pred"])
    ok = got["f1"] >= need and p < bar.alpha
    line = (
        f"{evalset} {pair}: {row} intersection F1 {got['f1']:.3f} {'>=' if got['f1'] >= need else '<'} "
        f"{need:.3f} (chance {chance['f1']:.3f} + {lift:g} x (ceiling {ceiling['f1']:.3f} - chance)); "
        f"{got['n_correct']:g} correct of {got['n_pred']:g} mined, {expected:.1f} by chance, p = {p:.2g} "
        f"{'<' if p < bar.alpha else '>='} alpha {bar.alpha:g} (binomial, one-sided); precision "
        f"{_share(got['n_correct'], got['n_pred'])} [{low:.3f}, {high:.3f}] vs chance {chance['precision']:.3f}"
    )
    return ok, line


def _share(k: float, n: float) -> str:
    return f"{k / n:.3f}" if n else "-"


def negative_control_verdict(
    runs: Sequence[Mapping[str, Any]], evalset: str, pair: str, alpha: float, row: str = "control_random"
) -> tuple[bool, str]:
    """Whether the negative control is at chance on one evaluation set and pair, from the mining metrics of
    its draws (one per seed): the correct intersection pairs of every draw pooled and tested against the
    pooled chance count by an exact two-sided binomial test; it passes when the test does not reject chance
    at `alpha`. One line says why, with the pooled precision's 95 % interval and chance's precision."""
    if not runs:
        raise ValueError(f"negative control {evalset} {pair}: no run")
    k = sum(float(r["intersection"]["n_correct"]) for r in runs)
    n = sum(float(r["intersection"]["n_pred"]) for r in runs)
    expected = sum(
        float(r["intersection"]["n_pred"]) * float(r["chance"]["intersection"]["precision"]) for r in runs
    )
    q = expected / n if n else 0.0
    p = chance_p_value(k, n, q, alternative="two-sided")
    low, high = precision_interval(k, n)
    ok = p >= alpha
    line = (
        f"{evalset} {pair}: {row} over {len(runs)} draw(s): {k:g} correct of {n:g} mined, {expected:.1f} by "
        f"chance, p = {p:.2g} {'>=' if ok else '<'} alpha {alpha:g} (binomial, two-sided: "
        f"{'at chance' if ok else 'not at chance'}); precision {_share(k, n)} [{low:.3f}, {high:.3f}] vs "
        f"chance {q:.3f}"
    )
    return ok, line


# ---------------------------------------------------------------- per set and pair, and the cells they mark


@dataclass(frozen=True)
class ControlSettings(Settings):
    """The config's `controls` section: the rows that prove the evaluation chain (config/README.md,
    `controls`). The report reads the positive control's bar (`positive_lift`, `positive_alpha`), the
    negative control's level (`negative_alpha`) and the dictionaries (`lexical`); the controls' rules read
    `random`, `dim` and `random_seeds`. A set's own `mining.evalsets.<name>.controls` comes first
    (`cell_settings`)."""

    SECTION = "controls"

    lexical: str | dict[str, str] | None = None
    random: bool = False
    dim: int = 256
    positive_lift: float | dict[str, float] = 0.5
    positive_alpha: float = 0.01
    negative_alpha: float = 0.01
    random_seeds: int | None = None


_DEFAULT = ControlSettings()
# a cell's settings when neither its set nor `controls` gives one: ControlSettings' defaults, the lexical
# control on (it runs where the set's pair has a dictionary)
DEFAULTS: dict[str, Any] = {
    "positive_lift": _DEFAULT.positive_lift,
    "positive_alpha": _DEFAULT.positive_alpha,
    "negative_alpha": _DEFAULT.negative_alpha,
    "lexical": True,
}
KEYS = {  # the config keys that govern each kind of control (the report's and the gate's messages)
    "positive": ("controls.positive_lift", "controls.positive_alpha", "controls.lexical (the dictionary)"),
    "negative": ("controls.negative_alpha", "controls.random_seeds"),
}


def cell_settings(
    controls: Mapping[str, Any] | None, evalsets: Mapping[str, Any] | None, evalset: str, pair: str
) -> dict[str, Any]:
    """The controls' settings of one evaluation set and pair: `mining.evalsets.<set>.controls.<key>` (a value
    or {pair: value}; a pair not listed falls through), else `controls.<key>` (`positive_lift` may be
    {evalset: lift}), else `DEFAULTS`. Keys: positive_lift, positive_alpha, negative_alpha, lexical."""
    controls = controls or {}
    own = (((evalsets or {}).get(evalset) or {}).get("controls")) or {}
    out = {}
    for key, default in DEFAULTS.items():
        value = default
        general = controls.get(key)
        if key == "positive_lift" and isinstance(general, Mapping):
            general = general.get(evalset)
        if general is not None and key != "lexical":
            value = general
        mine = own.get(key)
        if isinstance(mine, Mapping):
            mine = mine.get(pair)
        if mine is not None:
            value = mine
        out[key] = value
    return out


@dataclass(frozen=True)
class ControlVerdict:
    """One control row's verdict on one cell (task, dataset, pair): passed or not, why, and the keys that
    govern it (`KEYS`, the set's own `mining.evalsets.<set>.controls` first)."""

    task: str
    dataset: str
    pair: str
    row: str
    ok: bool
    line: str
    keys: tuple[str, ...] = ()

    @property
    def cell(self) -> tuple[str, str, str]:
        return self.task, self.dataset, self.pair

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "dataset": self.dataset, "pair": self.pair, "row": self.row,
                "ok": self.ok, "line": self.line, "keys": list(self.keys)}  # fmt: skip


def no_signal_cells(verdicts: Iterable[ControlVerdict]) -> dict[tuple[str, str, str], str]:
    """(task, dataset, pair) -> why the cell has no signal, for every cell with a failed control: the data
    `lem.report.comparisons.compare(no_signal=...)` reads to test none of the cell's comparisons, and the
    report reads to mark the cell in every table."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for v in verdicts:
        if not v.ok:
            out.setdefault(v.cell, []).append(f"{v.row} failed")
    return {cell: ", ".join(reasons) for cell, reasons in out.items()}


def failed_lines(verdicts: Iterable[ControlVerdict]) -> list[str]:
    """One line per failed control: the cell, the row, the verdict and the keys that govern it."""
    return [
        f"{v.dataset} {v.pair} ({v.task}): {v.row} failed: {v.line.split(': ', 1)[-1]} [keys: {', '.join(v.keys)}]"
        for v in verdicts
        if not v.ok
    ]
