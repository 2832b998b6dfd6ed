"""The generated sets: monolingual and parallel corpora, the news benchmark's comparable documents, the noisy
pairs of the curation task and its NMT validation and test sets. Each draws from a random stream of its own
(seeded by the world's seed, the set and the pair), so one set's size never changes another's text."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lem.corpus import lexicon as lx
from lem.corpus.sentences import draw, frame_text, realize, sample_frame
from lem.corpus.settings import PAIRS, GenerateSettings
from lem.corpus.templates import Tok
from lem.corpus.world import Fill, variety
from lem.data.leakage import normalise

NOISE_LABELS = ("misaligned", "untranslated", "wrong_language")


def mono_corpus(s: GenerateSettings, lang: str, banned: set[str]) -> list[list[Tok]]:
    rng = random.Random(f"{s.seed}/mono/{lang}")
    samples = draw(
        rng, s.mono_sentences, lambda f, x: frame_text(f, x, lang) not in banned, f"mono {lang}", variety(s)
    )
    return [realize(f, x, lang) for f, x in samples]


def para_corpus(
    s: GenerateSettings, pair: str, banned: dict[str, set[str]]
) -> dict[str, list[tuple[str, str]]]:
    src, tgt = pair.split("-")
    rng = random.Random(f"{s.seed}/para/{pair}")
    train_src: set[str] = set()

    def ok_train(f: str, x: Fill) -> bool:
        return frame_text(f, x, src) not in banned[src] and frame_text(f, x, tgt) not in banned[tgt]

    train = [
        (frame_text(f, x, src), frame_text(f, x, tgt))
        for f, x in draw(rng, s.para_train, ok_train, f"para {pair}", variety(s))
    ]
    train_src = {a for a, _ in train}
    valid = [
        (frame_text(f, x, src), frame_text(f, x, tgt))
        for f, x in draw(
            rng,
            s.para_valid,
            lambda f, x: ok_train(f, x) and frame_text(f, x, src) not in train_src,
            f"para {pair} valid",
            variety(s),
        )
    ]
    return {"train": train, "valid": valid}


def news_benchmark(s: GenerateSettings, pair: str) -> dict[str, Any]:
    """Comparable document pairs: translated sentences mixed with unaligned extras, shuffled per side."""
    src, tgt = pair.split("-")
    rng = random.Random(f"{s.seed}/news/{pair}")
    doc_ids = sorted(rng.sample(range(10000, 400000), s.news_documents))
    gold_docs = set(rng.sample(doc_ids, round(s.news_gold_share * len(doc_ids))))
    docs: dict[int, tuple[list[str], list[str]]] = {}
    gold: list[tuple[str, str]] = []
    for doc in doc_ids:
        prefer = {c: rng.choice(lx.entries(c)) for c in ("PER", "LOC", "ORG")}
        seen: dict[str, set[str]] = {src: set(), tgt: set()}

        def fresh(langs: tuple[str, ...], prefer=prefer, seen=seen) -> tuple[str, Fill]:
            for _ in range(1000):
                f, x = sample_frame(rng, prefer, s.news_entity_reuse, variety(s))
                if all(frame_text(f, x, lg) not in seen[lg] for lg in langs):
                    for lg in langs:
                        seen[lg].add(frame_text(f, x, lg))
                    return f, x
            raise RuntimeError("could not draw a fresh news sentence")

        aligned = [fresh((src, tgt)) for _ in range(rng.randint(s.news_aligned_min, s.news_aligned_max))]
        extra_src = [fresh((src,)) for _ in range(rng.randint(s.news_extra_min, s.news_extra_max))]
        extra_tgt = [fresh((tgt,)) for _ in range(rng.randint(s.news_extra_min, s.news_extra_max))]
        side_src = [(frame_text(f, x, src), j) for j, (f, x) in enumerate(aligned)] + [
            (frame_text(f, x, src), None) for f, x in extra_src
        ]
        side_tgt = [(frame_text(f, x, tgt), j) for j, (f, x) in enumerate(aligned)] + [
            (frame_text(f, x, tgt), None) for f, x in extra_tgt
        ]
        rng.shuffle(side_src)
        rng.shuffle(side_tgt)
        docs[doc] = ([t for t, _ in side_src], [t for t, _ in side_tgt])
        if doc in gold_docs:
            where_tgt = {j: k for k, (_, j) in enumerate(side_tgt) if j is not None}
            gold += [
                (f"{src}_{doc}_{k}", f"{tgt}_{doc}_{where_tgt[j]}")
                for k, (_, j) in enumerate(side_src)
                if j is not None
            ]
    return {"docs": docs, "gold": gold, "gold_docs": sorted(gold_docs)}


def noisy_pairs(s: GenerateSettings, pair: str, n: int | None = None, stream: str = "noisy",
                fresh: Callable[[str, str], bool] | None = None) -> list[tuple[str, str, str]]:  # fmt: skip
    """Clean translations plus misaligned, untranslated and wrong-language pairs, shuffled: `n` of them
    (default `noisy_pairs`) from the random stream `stream`; `fresh(lang, text)`, when given, refuses a
    sentence of language `lang` (a new draw replaces the pair)."""
    src, tgt = pair.split("-")
    third = next(lg for lg in lx.LANGS if lg not in (src, tgt))
    rng = random.Random(f"{s.seed}/{stream}/{pair}")
    n = s.noisy_pairs if n is None else n
    n_clean = round(s.noisy_clean_fraction * n)
    labels = ["clean"] * n_clean + [NOISE_LABELS[i % 3] for i in range(n - n_clean)]
    rng.shuffle(labels)
    ok = fresh or (lambda lang, text: True)
    rows = []
    for label in labels:
        while True:
            f, x = sample_frame(rng, var=variety(s))
            a = frame_text(f, x, src)
            if label == "clean":
                b = frame_text(f, x, tgt)
            elif label == "misaligned":
                b = frame_text(f, x, tgt)
                while b == frame_text(f, x, tgt) or not ok(tgt, b):
                    f2, x2 = sample_frame(rng, var=variety(s))
                    b = frame_text(f2, x2, tgt)
            elif label == "untranslated":
                b = a
            else:
                b = frame_text(f, x, third)
            # the side b of a misaligned pair was checked as it was drawn; an untranslated b is a
            other = {"clean": [(tgt, b)], "wrong_language": [(third, b)]}.get(label, [])
            if all(ok(lang, text) for lang, text in [(src, a), *other]):
                break
        rows.append((a, b, label))
    return rows


def noisy_extra(s: GenerateSettings, pair: str, taken: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """The `noisy_extra_pairs[pair]` pairs appended to the pair's noisy corpus (stream `noisy_extra`): no
    sentence equal, after the leakage guard's normalisation, to one in `taken` (language -> sentences: every
    other text of the world) or to another extra pair's."""
    keys = {lang: {normalise(t) for t in texts} for lang, texts in taken.items()}

    def fresh(lang: str, text: str) -> bool:
        key = normalise(text)
        if key in keys[lang]:
            return False
        keys[lang].add(key)
        return True

    return noisy_pairs(s, pair, s.noisy_extra_pairs.get(s.pair_code(pair), 0), "noisy_extra", fresh)


NMT_HELD_OUT = {"valid": 100, "test": 200}  # pairs per pair of the NMT validation and test sets


def nmt_held_out(s: GenerateSettings, banned: dict[str, set[str]]) -> dict[str, dict[str, dict[str, str]]]:
    """The curation task's NMT validation and test sets (pair -> split -> {src: tgt}): clean translations
    that are in no other evaluation set and no noisy pair; their sentences join `banned`, so no training text
    of the generator holds them (the leakage guard checks the same files)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for pair in PAIRS:
        src, tgt = pair.split("-")
        rng = random.Random(f"{s.seed}/nmt/{pair}")
        out[pair] = {}
        for split, n in NMT_HELD_OUT.items():
            rows: dict[str, str] = {}

            def fresh(f: str, x: Fill, rows=rows, src=src, tgt=tgt) -> bool:
                a, b = frame_text(f, x, src), frame_text(f, x, tgt)
                if a in banned[src] or a in rows or b in banned[tgt]:
                    return False
                rows[a] = b
                return True

            draw(rng, n, fresh, f"nmt {split} {pair}")
            banned[src].update(rows)
            banned[tgt].update(rows.values())
            out[pair][split] = rows
    return out
