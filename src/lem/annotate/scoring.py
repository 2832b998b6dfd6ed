"""POS accuracy and entity-level NER F1 of predicted annotations against gold tags."""

from __future__ import annotations

from lem.annotate.hf_ner import ner_scores
from lem.annotate.schema import pos_tagset_of
from lem.core.entities import NATIVE_TAGSET, check_tagset, coarse_class, native_tagset
from lem.core.inputs import InputError


def pos_scores(gold: list[list[str]], pred: list[list[str]], gold_tagset: str, pred_tagset: str) -> dict:
    """Accuracy of the native tag (when both sides use one tag set) and of the coarse class NOUN/VERB/OTHER."""
    n = same = same_coarse = 0
    for g, p in zip(gold, pred, strict=True):
        for a, b in zip(g, p, strict=True):
            n += 1
            same += a == b
            same_coarse += coarse_class(a, gold_tagset) == coarse_class(b, pred_tagset)
    out = {"words": n, "coarse_accuracy": round(same_coarse / max(n, 1), 4)}
    out["accuracy"] = round(same / max(n, 1), 4) if gold_tagset == pred_tagset else None
    return out


def score_against_conll(
    table, gold: list[list[tuple[str, ...]]], lang: str, gold_tagset: str | None = None
) -> dict:
    """Score an annotation table against gold CoNLL `word POS NER` sentences in the same order; sentences
    whose words differ are counted and left out. The predicted tags are read in the tag set the table
    records (`lem.pos_tagset`, written by annotation), the gold tags in `gold_tagset` (default: the
    language's native set; a language without one, e.g. a code of the config's own: the set its annotation
    names, `annotation.<lang>.pos.tagset`, as the table records it); the tag accuracy is reported only where
    both are the same set."""
    recorded = pos_tagset_of(table)
    if gold_tagset is None and recorded and lang not in NATIVE_TAGSET:
        gold_tagset = recorded
    gold_ts = check_tagset(gold_tagset or native_tagset(lang), "gold tag set")
    pred_ts = check_tagset(recorded or native_tagset(lang), "predicted tag set")
    words, pos, ner = (
        table.column("words").to_pylist(),
        table.column("pos").to_pylist(),
        table.column("ner").to_pylist(),
    )
    if len(words) != len(gold):
        raise InputError(f"{len(words)} predicted sentences, {len(gold)} gold sentences")
    gp, pp, gn, pn, mismatched = [], [], [], [], 0
    for w, p, n, g in zip(words, pos, ner, gold, strict=True):
        if [x[0] for x in g] != w:
            mismatched += 1
            continue
        gp.append([x[1] for x in g])
        pp.append(p)
        gn.append([x[2] for x in g])
        pn.append(n)
    return {
        "sentences": len(gp),
        "mismatched_sentences": mismatched,
        "pos_tagsets": {"gold": gold_ts, "pred": pred_ts},
        "pos": pos_scores(gp, pp, gold_ts, pred_ts),
        "ner": ner_scores(gn, pn),
    }
