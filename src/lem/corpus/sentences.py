"""Realising a filled frame as the words of one language with their gold tags, and drawing sentences."""

from __future__ import annotations

import random

from lem.core.text import is_punct, words
from lem.corpus import lexicon as lx
from lem.corpus.templates import FRAMES, SLOT_RE, TEMPLATES, Tok
from lem.corpus.world import Fill, Variety, sample_fill


def _subject_is_person(fill: Fill) -> bool:
    for name in ("S", "P", "O"):
        if name in fill:
            return fill[name].cat == "PER"
    return True


def realize(frame: str, fill: Fill, lang: str) -> list[Tok]:
    """The words of a filled frame in one language, with gold POS and IOB2 NER tags."""
    template = TEMPLATES[frame][lx.LANGS.index(lang)]
    person = _subject_is_person(fill)
    toks: list[Tok] = []
    for item in template.split():
        m = SLOT_RE.match(item)
        if not m:
            word, _, tag = item.rpartition("/")
            if "|" in word:
                word = word.split("|")[0 if person else 1]
            toks.append((word, tag, "O"))
            continue
        name, form = m.group(1) + m.group(2), m.group(3) or "base"
        value = fill[name]
        if isinstance(value, int):
            text = f"{value}ක්" if (lang == "si" and form == "cnt") else str(value)
            toks.append((text, lx.NUMBER_TAG[lang], "O"))
            continue
        toks.extend(_entry_tokens(value, lang, form, person))
    return _finish(toks, lang)


def _entry_tokens(e: lx.Entry, lang: str, form: str, person_subject: bool) -> list[Tok]:
    forms = e.forms[lang]
    if e.cat == "VERB" and lang == "ta" and form == "past" and not person_subject:
        form = "past_n"
    if form == "placc" and lang == "ta":  # Tamil accusative plural: -கள் -> -களை
        text = forms["pl"]
        assert text.endswith("கள்"), text
        text = text[:-1] + "ை"
    elif form == "placc":
        text = forms["pl"]
    else:
        text = forms.get(form) or forms.get("base") or forms[next(iter(forms))]
    pairs = lx.parse_form(text, e.cat, lang, form)
    if e.ner:
        return [(w, t, ("B-" if i == 0 else "I-") + e.ner) for i, (w, t) in enumerate(pairs)]
    return [(w, t, "O") for w, t in pairs]


def _finish(toks: list[Tok], lang: str) -> list[Tok]:
    if lang != "en":
        return toks
    out = list(toks)
    for i in range(len(out) - 1):  # a -> an before a vowel
        if out[i][0].lower() == "a" and out[i][1] == "DT" and out[i + 1][0][:1].lower() in "aeiou":
            out[i] = (out[i][0] + "n", out[i][1], out[i][2])
    w, t, n = out[0]
    out[0] = (w[:1].upper() + w[1:], t, n)
    return out


def sentence_text(toks: list[Tok]) -> str:
    """Join words with spaces, gluing punctuation to the word before it ("road.")."""
    parts: list[str] = []
    for w, _, _ in toks:
        if parts and all(is_punct(c) for c in w):
            parts[-1] += w
        else:
            parts.append(w)
    text = " ".join(parts)
    if words(text) != [w for w, _, _ in toks]:
        raise RuntimeError(f"generated sentence does not segment into its own words: {text!r}")
    return text


def sample_frame(
    rng: random.Random,
    prefer: dict[str, lx.Entry] | None = None,
    reuse: float = 0.0,
    var: Variety | None = None,
) -> tuple[str, Fill]:
    frame = rng.choice(FRAMES)
    return frame, sample_fill(rng, frame, prefer, reuse, var)


def frame_text(frame: str, fill: Fill, lang: str) -> str:
    return sentence_text(realize(frame, fill, lang))


def draw(rng: random.Random, n: int, ok, what: str, var: Variety | None = None):
    """Draw n samples accepted by `ok(frame, fill)`; fail loudly when the world is too small."""
    out, tries = [], 0
    while len(out) < n:
        tries += 1
        if tries > 100 * n + 1000:
            raise RuntimeError(
                f"could not draw {n} distinct {what} sentences (got {len(out)}): raise variety or lower sizes"
            )
        frame, fill = sample_frame(rng, var=var)
        if ok(frame, fill):
            out.append((frame, fill))
    return out
