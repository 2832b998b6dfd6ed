"""Word segmentation shared by the generator, annotation and feature building.

A word is a maximal run of non-space characters with leading/trailing punctuation split off as words of
their own, so "road." is the word "road" followed by ".". Sinhala and Tamil vowel signs, viramas and the
zero-width joiner are kept inside words (Python's `\\w` would split them off).
"""

from __future__ import annotations

import unicodedata


def is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith(("P", "S")) and ch not in "\u200d\u200c"


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the words of `text`."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace():
            j += 1
        a, b = i, j
        lead: list[tuple[int, int]] = []
        while a < b and is_punct(text[a]):
            lead.append((a, a + 1))
            a += 1
        trail: list[tuple[int, int]] = []
        while b > a and is_punct(text[b - 1]):
            trail.append((b - 1, b))
            b -= 1
        spans.extend(lead)
        if a < b:
            spans.append((a, b))
        spans.extend(reversed(trail))
        i = j
    return spans


def words(text: str) -> list[str]:
    return [text[a:b] for a, b in word_spans(text)]
