"""The generated world: the lexicon's pools a template slot draws from, the variety drawn per sentence (names
composed per world, dates, wide numbers), and the slot values of a frame (`sample_fill`)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from lem.corpus import lexicon as lx
from lem.corpus.templates import TEMPLATES, slots

if TYPE_CHECKING:
    from lem.corpus.settings import GenerateSettings


def pools() -> dict[str, list[lx.Entry]]:
    def adj(pol: str) -> list[lx.Entry]:
        return [e for e in lx.entries("ADJ") if e.polarity == pol]

    return {
        "S": lx.entries("PER") + lx.entries("ORG"),
        "P": lx.entries("PER"),
        "L": lx.entries("LOC"),
        "O": lx.entries("ORG"),
        "M": lx.entries("MISC"),
        "NF": lx.entries("NOUN", "F"),
        "NI": lx.entries("NOUN", "I"),
        "NP": lx.entries("NOUN", "P"),
        "A": lx.entries("ADJ"),
        "AP": adj("positive"),
        "AN": adj("negative"),
        "VC": lx.entries("VERB", "C"),
        "VA": lx.entries("VERB", "C") + lx.entries("VERB", "A"),
        "VP": lx.entries("VERB", "P"),
        "VI": lx.entries("VERB", "I"),
        "VS": lx.entries("VERB", "S"),
        "T": lx.entries("TIME"),
    }


POOLS = pools()
Fill = dict[str, Any]  # slot name -> Entry or int (numbers)


@dataclass(frozen=True)
class Variety:
    """What makes a sentence hard to guess from its own side: names composed per world (`composed`: PER and
    LOC entries, drawn for a person or place slot with probability `composed_share`), dates written with
    digits for a time slot (probability `date_share`) and numbers 2..`number_max` (0: the lexicon's)."""

    composed: dict[str, tuple[lx.Entry, ...]]
    composed_share: float = 0.0
    date_share: float = 0.0
    number_max: int = 0


@lru_cache(maxsize=8)
def _composed(seed: int, people: int, places: int) -> dict[str, tuple[lx.Entry, ...]]:
    """The world's composed names: `people` persons and `places` places, distinct from each other and from the
    lexicon's, drawn with the seed."""
    rng = random.Random(f"{seed}/names")
    taken = {e.key for e in lx.ENTRIES}
    out: dict[str, list[lx.Entry]] = {"PER": [], "LOC": []}
    for cat, n in (("PER", people), ("LOC", places)):
        tries = 0
        while len(out[cat]) < n:
            tries += 1
            if tries > 100 * n + 1000:
                raise RuntimeError(f"could not compose {n} distinct {cat} names: lower composed sizes")
            e = lx.composed_name(rng, cat)
            if e.key not in taken:
                taken.add(e.key)
                out[cat].append(e)
    return {cat: tuple(v) for cat, v in out.items()}


def variety(s: GenerateSettings) -> Variety:
    """The per-sentence variety of the settings `s`."""
    people = s.composed_people if s.composed_share > 0 else 0
    places = s.composed_places if s.composed_share > 0 else 0
    return Variety(_composed(s.seed, people, places), s.composed_share, s.date_share, s.number_max)


def world_entries(s: GenerateSettings) -> list[lx.Entry]:
    """Every named entry the world can write: the lexicon's and the composed names."""
    v = variety(s)
    return lx.ENTRIES + [e for cat in ("PER", "LOC") for e in v.composed[cat]]


def _date(rng: random.Random) -> lx.Entry:
    """A date written with digits in the three languages ("on 14 May 2023")."""
    day, year = rng.randint(1, 28), rng.randint(1990, 2025)
    en, si, ta = rng.choice(lx.MONTHS)
    forms = {
        "en": {"base": f"on/IN {day}/CD {en}/NNP {year}/CD"},
        "si": {"base": f"{year}/NUM {si}/NNC {day}/NUM දින/NNC"},
        "ta": {"base": f"{year}/NUM {ta}/NOUN {day}/NUM அன்று/ADV"},
    }
    return lx.Entry("TIME", f"{day} {en} {year}", forms)


_COMPOSED_POOL = {"P": "PER", "L": "LOC", "S": "PER"}


def sample_fill(
    rng: random.Random,
    frame: str,
    prefer: dict[str, lx.Entry] | None = None,
    reuse: float = 0.0,
    var: Variety | None = None,
) -> Fill:
    """Slot values for a frame: distinct entries across slots; entities of `prefer` reused with prob `reuse`;
    composed names, dates and wide numbers as `var` says."""
    fill: Fill = {}
    used: set[int] = set()
    for name, pool, _ in slots(TEMPLATES[frame][0]):
        if name in fill:
            continue
        if pool == "Q":
            fill[name] = rng.randint(2, var.number_max) if var and var.number_max else rng.choice(lx.NUMBERS)
            continue
        if pool == "T" and var and var.date_share and rng.random() < var.date_share:
            fill[name] = _date(rng)
            continue
        cands = [e for e in POOLS[pool] if id(e) not in used]
        choice = None
        if prefer and reuse > 0 and rng.random() < reuse:
            fav = [e for e in prefer.values() if any(e is c for c in cands)]
            if fav:
                choice = fav[0]
        if (
            choice is None
            and var
            and var.composed_share
            and pool in _COMPOSED_POOL
            and rng.random() < var.composed_share
        ):
            composed = var.composed[_COMPOSED_POOL[pool]]
            while choice is None or id(choice) in used:
                choice = rng.choice(composed)
        if choice is None:
            choice = rng.choice(cands)
        fill[name] = choice
        used.add(id(choice))
    return fill
