"""The lexicon files the generator writes beside its text: every (word, tag) it can emit, and the gazetteer."""

from __future__ import annotations

from collections.abc import Sequence

from lem.corpus import lexicon as lx
from lem.corpus import world
from lem.corpus.templates import SLOT_RE, TEMPLATES


def emittable_tags(lang: str, entries: Sequence[lx.Entry] | None = None) -> set[tuple[str, str]]:
    """Every (word, tag) the generator can write in `lang`: forms of `entries` (default the lexicon's),
    template words, the lexicon's numbers (wider numbers and dates are counted from the text written)."""
    out: set[tuple[str, str]] = set()
    for e in lx.ENTRIES if entries is None else entries:
        for form, text in e.forms[lang].items():
            out.update(lx.parse_form(text, e.cat, lang, form))
        if e.cat == "NOUN" and lang == "ta":
            out.add((e.forms["ta"]["pl"][:-1] + "ை", "NOUN"))
    for tpl in TEMPLATES.values():
        for item in tpl[lx.LANGS.index(lang)].split():
            if not SLOT_RE.match(item):
                word, _, tag = item.rpartition("/")
                out.update((w, tag) for w in word.split("|"))
    for n in lx.NUMBERS:
        out.add((str(n), lx.NUMBER_TAG[lang]))
        if lang == "si":
            out.add((f"{n}ක්", "NUM"))
    if lang == "en":
        out.add(("an", "DT"))
        firsts: set[tuple[str, str]] = set()
        for tpl in TEMPLATES.values():
            first = tpl[0].split()[0]
            m = SLOT_RE.match(first)
            if m:
                for e in world.POOLS[m.group(1)] if m.group(1) != "Q" else []:
                    firsts.add(lx.parse_form(e.forms["en"].get("base", ""), e.cat, "en", "base")[0])
            else:
                w, _, t = first.rpartition("/")
                firsts.add((w, t))
        out.update((w[:1].upper() + w[1:], t) for w, t in firsts)
    return out


def gazetteer(lang: str, entries: Sequence[lx.Entry] | None = None) -> list[tuple[str, str]]:
    """Every surface form of every entity of `entries` (default the lexicon's; all case forms), with its type."""
    out: dict[str, str] = {}
    for e in lx.ENTRIES if entries is None else entries:
        if e.ner:
            for form, text in e.forms[lang].items():
                out.setdefault(" ".join(w for w, _ in lx.parse_form(text, e.cat, lang, form)), e.ner)
    return list(out.items())
