"""The authors' method: context-free word -> tag dictionaries, and gazetteers matched longest-first."""

from __future__ import annotations

import os
import unicodedata

from lem.annotate.readers import (
    Gazetteer,
    TagLexicon,
    gazetteer_from_conll,
    lexicon_from_sentences,
    read_conll_ner,
    read_conllu,
    read_gazetteer_tsv,
    read_tnt_lex,
    read_tsv_lexicon,
)
from lem.core.entities import TAGSETS, check_tagset
from lem.core.settings import SettingsError

POS_FORMATS = ("tsv", "tnt", "conllu")
NER_FORMATS = ("gazetteer_tsv", "conll")


def normalize(word: str) -> str:
    """Lookup key: NFC and case-folded (a no-op for Sinhala and Tamil script, sentence-initial capitals in
    English)."""
    return unicodedata.normalize("NFC", word).casefold()


class LexiconPOS:
    """POS by dictionary: the exact word first, then its normalised form; unknown words get `""`. `tagset`:
    the tag set of the dictionary's tags (what the coarse mapping reads them as)."""

    def __init__(self, lexicon: TagLexicon, tagset: str = "") -> None:
        self.tagset = tagset
        self.exact = lexicon.tags
        self.folded: dict[str, str] = {}
        # Most frequent spelling wins is unknowable here; prefer the lower-case entry for the folded key.
        for word, tag in sorted(lexicon.tags.items(), key=lambda kv: kv[0] != kv[0].lower()):
            self.folded.setdefault(normalize(word), tag)

    def tag_words(self, words: list[str]) -> list[str]:
        return [self.exact.get(w) or self.folded.get(normalize(w), "") for w in words]

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        return [self.tag_words(s) for s in sentences]


class GazetteerNER:
    """NER by gazetteer: at each word the longest listed phrase that starts there is labelled B-X I-X ..."""

    def __init__(self, gazetteer: Gazetteer) -> None:
        self.phrases = gazetteer.phrases
        self.max_len = gazetteer.max_len

    def tag_words(self, words: list[str]) -> list[str]:
        keys = [normalize(w) for w in words]
        labels = ["O"] * len(words)
        i = 0
        while i < len(words):
            for n in range(min(self.max_len, len(words) - i), 0, -1):
                typ = self.phrases.get(tuple(keys[i : i + n]))
                if typ:
                    labels[i : i + n] = [f"B-{typ}"] + [f"I-{typ}"] * (n - 1)
                    i += n
                    break
            else:
                i += 1
        return labels

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        return [self.tag_words(s) for s in sentences]


def load_pos_lexicon(
    path: str | os.PathLike, fmt: str, on_error: str = "raise", tagset: str = ""
) -> LexiconPOS:
    """A POS dictionary from a plain TSV (`word tag [count]`), a TnT `.lex` or a CoNLL-U treebank
    (surface tokens, most frequent UPOS). `tagset`: the tag set of a `tsv` or `tnt` file's tags (required
    for them: a file of tags does not say which set they belong to); a CoNLL-U lexicon is always UPOS."""
    if fmt == "conllu":
        if tagset not in ("", "upos"):
            raise SettingsError(f"{path}: a CoNLL-U lexicon holds UPOS tags (column 4), not {tagset!r}")
        sents = read_conllu(path, on_error, surface=True)
        return LexiconPOS(lexicon_from_sentences(sents, str(path)), "upos")
    if fmt not in POS_FORMATS:
        raise SettingsError(f"POS lexicon format must be one of {POS_FORMATS}, got {fmt!r}")
    if not tagset:
        raise SettingsError(
            f"{path}: the tag set of a {fmt} POS lexicon must be given (one of {list(TAGSETS)})"
        )
    check_tagset(tagset, str(path))
    if fmt == "tsv":
        return LexiconPOS(read_tsv_lexicon(path, on_error), tagset)
    return LexiconPOS(read_tnt_lex(path, on_error), tagset)


def load_gazetteer(path: str | os.PathLike, fmt: str, on_error: str = "raise") -> GazetteerNER:
    """A gazetteer from `phrase<TAB>TYPE` lines or from the entities of a CoNLL NER file."""
    if fmt == "gazetteer_tsv":
        return GazetteerNER(read_gazetteer_tsv(path, on_error, normalize=normalize))
    if fmt == "conll":
        return GazetteerNER(gazetteer_from_conll(read_conll_ner(path, on_error), normalize, str(path)))
    raise SettingsError(f"gazetteer format must be one of {NER_FORMATS}, got {fmt!r}")
