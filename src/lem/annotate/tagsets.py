"""Kept for old imports: the tag sets, coarse maps and NER type mappings are defined in `lem.core.entities`."""

from __future__ import annotations

from lem.core.entities import (
    COARSE,
    NATIVE_TAGSET,
    NOUN,
    ONTONOTES,
    OTHER,
    PENN,
    TAGSETS,
    UCSC,
    UPOS,
    VERB,
    check_tagset,
    coarse_class,
    coarse_for_lang,
    coarse_map,
    ner_type,
    repair_iob2,
    to_iob2,
)

__all__ = [
    "COARSE",
    "NATIVE_TAGSET",
    "NOUN",
    "ONTONOTES",
    "OTHER",
    "PENN",
    "TAGSETS",
    "UCSC",
    "UPOS",
    "VERB",
    "check_tagset",
    "coarse_class",
    "coarse_for_lang",
    "coarse_map",
    "ner_type",
    "repair_iob2",
    "to_iob2",
]
