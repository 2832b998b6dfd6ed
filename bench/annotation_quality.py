"""Measure annotation quality and speed per language and backend; writes docs/annotation-quality.md.

Held-out splits of the real data in ../shared/data: UD Tamil-TTB test (POS, trained on TTB train), UD
Sinhala-STB test (POS, coarse classes: its gold is UPOS, the Sinhala backends emit UCSC tags), and a seeded
90/10 split of multiNER (NER; sentence i is the same sentence in every language, so the split is shared).
The hf_ner row fine-tunes a tiny random-initialised XLM-R (hidden 128, 2 layers, Unigram tokenizer trained
on the training split) here: it measures the route, not what xlm-roberta-base would reach.

    .venv/bin/python bench/annotation_quality.py [--data ../shared/data] [--out docs/annotation-quality.md]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from lem.annotate.crf import CRFTagger, train_crf  # noqa: E402
from lem.annotate.hf_ner import HFNER, TrainNERSettings, ner_scores, train_ner  # noqa: E402
from lem.annotate.lexicon import GazetteerNER, LexiconPOS, normalize  # noqa: E402
from lem.annotate.readers import (  # noqa: E402
    gazetteer_from_conll,
    lexicon_from_sentences,
    read_conll_ner,
    read_conllu,
    read_tnt_lex,
)
from lem.annotate.scoring import pos_scores  # noqa: E402

MULTINER = {"en": "Final_English.txt", "si": "Final_Sinhala.txt", "ta": "Final_Tamil.txt"}


def multiner_split(data: Path, lang: str, seed: int = 0, test_fraction: float = 0.1):
    """Seeded split of multiNER shared by the three languages; sentence 0 (a title block) is dropped."""
    sents = read_conll_ner(data / "multiner" / MULTINER[lang], on_error="skip")
    idx = list(range(1, len(sents)))
    random.Random(seed).shuffle(idx)
    n_test = round(len(idx) * test_fraction)
    test, train = sorted(idx[:n_test]), sorted(idx[n_test:])
    return [sents[i] for i in train], [sents[i] for i in test]


def timed(tagger, sentences):
    t0 = time.perf_counter()
    pred = tagger.tag(sentences)
    return pred, len(sentences) / max(time.perf_counter() - t0, 1e-9)


def build_tiny_xlmr(
    out: Path, texts: list[str], vocab_size: int = 8000, hidden: int = 128, layers: int = 2
) -> None:
    """A random-initialised tiny XLM-R and a Unigram fast tokenizer with XLM-R's special tokens."""
    from lem.stand_in import save_tiny_xlmr

    save_tiny_xlmr(out, texts, vocab_size=vocab_size, hidden=hidden, layers=layers, heads=4,
                   intermediate=hidden * 4, positions=514)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--out", default=str(REPO / "docs" / "annotation-quality.md"))
    p.add_argument("--hf-epochs", type=float, default=8.0)
    p.add_argument("--skip-hf", action="store_true")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(2)
    data = Path(a.data)
    rows: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="annq."))

    # POS, Tamil: UD Tamil-TTB train -> test, surface tokens.
    ta_train = read_conllu(data / "ud-tamil-ttb" / "ta_ttb-ud-train.conllu", surface=True)
    ta_test = read_conllu(data / "ud-tamil-ttb" / "ta_ttb-ud-test.conllu", surface=True)
    words = [[w for w, _ in s] for s in ta_test]
    gold = [[t for _, t in s] for s in ta_test]
    lex = LexiconPOS(lexicon_from_sentences(ta_train), "upos")
    pred, sps = timed(lex, words)
    rows.append(
        {
            "lang": "ta",
            "task": "POS",
            "backend": "lexicon (TTB train)",
            "eval": "UD Tamil-TTB test",
            **pos_scores(gold, pred, "upos", "upos"),
            "sent_per_s": sps,
        }
    )
    train_crf(ta_train, work / "ta.pos.crf", "pos", "ta", tagset="upos")
    pred, sps = timed(CRFTagger(work / "ta.pos.crf"), words)
    rows.append(
        {
            "lang": "ta",
            "task": "POS",
            "backend": "crf (TTB train)",
            "eval": "UD Tamil-TTB test",
            **pos_scores(gold, pred, "upos", "upos"),
            "sent_per_s": sps,
        }
    )

    # POS, Sinhala: UD Sinhala-STB (UPOS gold) -> coarse-class accuracy of UCSC-tag backends.
    si_test = read_conllu(data / "ud-sinhala-stb" / "si_stb-ud-test.conllu", surface=True)
    words = [[w for w, _ in s] for s in si_test]
    gold = [[t for _, t in s] for s in si_test]
    lex = LexiconPOS(
        read_tnt_lex(data / "sinhala-pos-lexicon" / "sinhala_final.lex", on_error="skip"), "ucsc"
    )
    pred, sps = timed(lex, words)
    rows.append(
        {
            "lang": "si",
            "task": "POS",
            "backend": "lexicon (TnT .lex)",
            "eval": "UD Sinhala-STB test",
            **pos_scores(gold, pred, "upos", "ucsc"),
            "sent_per_s": sps,
        }
    )
    from lem.annotate.sinling_backend import SinlingPOS

    pred, sps = timed(SinlingPOS(), words)
    rows.append(
        {
            "lang": "si",
            "task": "POS",
            "backend": "sinling 0.3.7",
            "eval": "UD Sinhala-STB test",
            **pos_scores(gold, pred, "upos", "ucsc"),
            "sent_per_s": sps,
        }
    )

    # NER: multiNER seeded split, per language.
    for lang in ("en", "si", "ta"):
        train, test = multiner_split(data, lang)
        words = [[w for w, _ in s] for s in test]
        gold = [[t for _, t in s] for s in test]
        ev = f"multiNER test (seed 0, {len(test)} sent.)"
        gaz = GazetteerNER(gazetteer_from_conll(train, normalize))
        pred, sps = timed(gaz, words)
        rows.append(
            {
                "lang": lang,
                "task": "NER",
                "backend": "lexicon (gazetteer of train)",
                "eval": ev,
                **ner_scores(gold, pred),
                "sent_per_s": sps,
            }
        )
        train_crf(train, work / f"{lang}.ner.crf", "ner", lang)
        pred, sps = timed(CRFTagger(work / f"{lang}.ner.crf"), words)
        rows.append(
            {
                "lang": lang,
                "task": "NER",
                "backend": "crf (multiNER train)",
                "eval": ev,
                **ner_scores(gold, pred),
                "sent_per_s": sps,
            }
        )
        if not a.skip_hf:
            base = work / f"{lang}.tiny"
            build_tiny_xlmr(base, [" ".join(w for w, _ in s) for s in train])
            s = TrainNERSettings(
                epochs=a.hf_epochs, learning_rate=5e-4, batch_size=16, max_length=128, device="cpu"
            )
            t0 = time.perf_counter()
            train_ner(str(base), train, work / f"{lang}.ner.hf", s)
            train_s = time.perf_counter() - t0
            pred, sps = timed(HFNER(str(work / f"{lang}.ner.hf"), device="cpu"), words)
            rows.append(
                {
                    "lang": lang,
                    "task": "NER",
                    "backend": f"hf_ner (tiny XLM-R, {a.hf_epochs:g} ep., {train_s:.0f}s CPU)",
                    "eval": ev,
                    **ner_scores(gold, pred),
                    "sent_per_s": sps,
                }
            )
        print(json.dumps(rows[-1]), flush=True)

    write_table(rows, Path(a.out))
    print(json.dumps(rows, indent=1))
    return 0


def fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def write_table(rows: list[dict], out: Path) -> None:
    lines = [
        "| lang | task | backend | evaluated on | POS acc. | coarse acc. | NER P | NER R | NER F1 | sent/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['lang']} | {r['task']} | {r['backend']} | {r['eval']} | {fmt(r.get('accuracy')) if r['task'] == 'POS' else ''} "
            f"| {fmt(r.get('coarse_accuracy')) if r['task'] == 'POS' else ''} | {fmt(r.get('precision')) if r['task'] == 'NER' else ''} "
            f"| {fmt(r.get('recall')) if r['task'] == 'NER' else ''} | {fmt(r.get('f1')) if r['task'] == 'NER' else ''} | {r['sent_per_s']:,.0f} |"
        )
    table = "\n".join(lines)
    doc = out.read_text(encoding="utf-8") if out.exists() else ""
    start, end = "<!-- table:start -->", "<!-- table:end -->"
    if start in doc and end in doc:
        doc = doc[: doc.index(start) + len(start)] + "\n" + table + "\n" + doc[doc.index(end) :]
    else:
        doc = f"# Annotation quality\n\n{start}\n{table}\n{end}\n"
    from lem.core.files import write_text

    write_text(out, doc)


if __name__ == "__main__":
    sys.exit(main())
