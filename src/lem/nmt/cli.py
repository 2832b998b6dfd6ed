"""Stage `lem nmt` (workflow/rules/nmt.smk): one run per (variant, kept share), the comparison
of runs, and the command line."""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, read_json, with_keys, write_json
from lem.core.inputs import InputError
from lem.core.stage import Stage, UsageError, Verb, arg
from lem.curate import select_top
from lem.data.webmined import prepare_test_set
from lem.nmt.bleu import COLUMNS, bleu_from_sums, sentence_stats
from lem.nmt.data import flip, read_pairs, read_test_set
from lem.nmt.settings import NMTSettings
from lem.nmt.train import train
from lem.nmt.translate import paired_bootstrap, score, translate

log = logging.getLogger("lem.nmt")


# --- one run per (variant, kept share) ------------------------------------------------------------------------


def stale_temporaries(out: str | os.PathLike) -> list[Path]:
    """The hidden folders `lem.core.files.atomic_path` made beside `out` (`.<name>.<8 characters of mkdtemp>`)
    that a killed run left behind: at paper scale one holds a partly trained NLLB model. Only the job that
    writes `out` calls this (Snakemake runs one at a time), so none of them is in use."""
    out = Path(out)
    pattern = re.compile(rf"\.{re.escape(out.name)}\.[a-z0-9_]{{8}}")
    if not out.parent.is_dir():
        return []
    return sorted(p for p in out.parent.iterdir() if p.is_dir() and pattern.fullmatch(p.name))


def bleu_items(hypotheses: Sequence[str], references: Sequence[str], bleu: float, lang: str | None,
               bleu_tokenize: str) -> dict[str, Any]:  # fmt: skip
    """Per test sentence (`ids`: its 0-based line in the test set), BLEU's sufficient statistics
    (`lem.nmt.bleu.COLUMNS`), so that a comparison resamples the test sentences within each run; their sums
    give back the run's corpus BLEU (checked)."""
    stats = sentence_stats(hypotheses, references, tokenize=bleu_tokenize, lang=lang)
    again = float(bleu_from_sums(stats.sum(axis=0)))
    if abs(again - bleu) > 1e-9 * max(1.0, abs(bleu)):
        raise RuntimeError(f"nmt: BLEU from the per-sentence statistics is {again}, sacrebleu's {bleu}")
    return {"ids": list(range(len(references))), "columns": list(COLUMNS), "stats": stats.tolist()}


def run_nmt(train_tsv: str | os.PathLike, valid_tsv: str | os.PathLike,
            test_tsv: str | os.PathLike | Sequence[str | os.PathLike], settings: NMTSettings,
            out_dir: str | os.PathLike, keys: dict[str, str] | None = None, *,
            pair: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Train on `train_tsv` (the selected pairs), choose the checkpoint on `valid_tsv`, translate the test
    set (`test_tsv`: a TSV, or two line-aligned files such as FLoRes-200's), and write `out_dir` atomically:
    `model/`, `hypotheses.txt`, `references.txt`, `metrics.json` (with `items`: per test sentence, BLEU's
    sufficient statistics, `bleu_items`). `pair` (`si-en`: the TSVs' src and tgt
    languages; `keys["pair"]` when not given) sets the language codes and the direction (`reverse`)."""
    s = settings
    s.validate()
    pair = pair or (keys or {}).get("pair")
    if pair is None:
        raise UsageError("nmt: run_nmt needs the pair (pair=, or keys['pair'])")
    src_lang, tgt_lang = s.direction(pair)
    train_pairs = read_pairs(train_tsv)
    valid_pairs = read_pairs(valid_tsv)
    test_pairs = read_test_set(test_tsv)
    if s.reverse:
        train_pairs, valid_pairs, test_pairs = flip(train_pairs), flip(valid_pairs), flip(test_pairs)
    for stale in stale_temporaries(out_dir):
        log.info("nmt: removing %s, the temporary folder of an interrupted run", stale)
        shutil.rmtree(stale, ignore_errors=True)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        summary = train(train_pairs, valid_pairs, s, tmp / "model", src_lang=src_lang, tgt_lang=tgt_lang)
        sources = [a for a, _ in test_pairs]
        references = [b for _, b in test_pairs]
        hypotheses = translate(tmp / "model", sources, s)
        (tmp / "hypotheses.txt").write_text(
            "".join(h.replace("\n", " ") + "\n" for h in hypotheses), encoding="utf-8"
        )
        (tmp / "references.txt").write_text("".join(r + "\n" for r in references), encoding="utf-8")
        scores = score(hypotheses, references, tgt_lang, bleu_tokenize=s.bleu_tokenize,
                       chrf_word_order=s.chrf_word_order)  # fmt: skip
        items = bleu_items(hypotheses, references, scores["bleu"], tgt_lang, s.bleu_tokenize)
        metrics = {
            "bleu": scores["bleu"],
            "chrf": scores["chrf"],
            "signatures": scores["signatures"],
            "bleu_detail": scores["bleu_detail"],
            "chrf_name": scores["chrf_name"],
            "src_lang": src_lang,
            "tgt_lang": tgt_lang,
            "n_train": len(train_pairs),
            "n_valid": len(valid_pairs),
            "n_test": len(test_pairs),
            "train": str(train_tsv),
            "valid": str(valid_tsv),
            "test": [str(p) for p in test_tsv]
            if not isinstance(test_tsv, (str, os.PathLike))
            else str(test_tsv),
            "training": summary,
            "settings": s.to_dict(),
            "items": items,
        }
        write_json(tmp / "metrics.json", with_keys(metrics, keys))
    log.info("nmt %s -> %s: BLEU %.2f chrF %.2f on %d test pairs (%d training pairs) -> %s",
             src_lang, tgt_lang, metrics["bleu"], metrics["chrf"], len(test_pairs), len(train_pairs), out_dir)  # fmt: skip
    return with_keys(metrics, keys)


def compare_runs(run_dirs: Mapping[str, str | os.PathLike], baseline: str, out: str | os.PathLike,
                 settings: NMTSettings, keys: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """The paired bootstrap of `run_nmt` folders (same test set) against the `baseline` run, written to
    `out` (JSON, atomically): one call per (pair, kept share) over the variants."""
    if baseline not in run_dirs:
        raise UsageError(f"nmt: baseline {baseline!r} is not among the runs {sorted(run_dirs)}")

    def lines(path: Path) -> list[str]:
        return path.read_text(encoding="utf-8").split("\n")[:-1]

    refs = {name: lines(Path(d) / "references.txt") for name, d in run_dirs.items()}
    if any(r != refs[baseline] for r in refs.values()):
        raise InputError(f"nmt: the runs {sorted(run_dirs)} were not scored on the same references")
    hyps = {name: lines(Path(d) / "hypotheses.txt") for name, d in run_dirs.items()}
    tgt = read_json(Path(run_dirs[baseline]) / "metrics.json").get("tgt_lang")
    result = paired_bootstrap(
        hyps[baseline], {k: v for k, v in hyps.items() if k != baseline}, refs[baseline],
        n=settings.bootstrap_samples, seed=settings.bootstrap_seed, baseline_name=baseline, lang=tgt,
        bleu_tokenize=settings.bleu_tokenize, chrf_word_order=settings.chrf_word_order,
    )  # fmt: skip
    result["runs"] = {name: str(d) for name, d in run_dirs.items()}
    write_json(out, with_keys(result, keys))
    return with_keys(result, keys)


# --- the command line (the rules of workflow/rules/nmt.smk) ----------------------------------------------------


def cmd_select(a) -> None:
    stats = select_top(a.ranking, a.pairs, a.out, share=a.share, exclude=a.exclude)
    log.info("nmt select: %s", stats)


def cmd_run(a) -> None:
    test = a.test[0] if len(a.test) == 1 else a.test
    run_nmt(a.train, a.valid, test, a.settings, a.out_dir, a.keys, pair=a.pair)


def cmd_heldout(a) -> None:
    n = prepare_test_set(a.out, corpus=a.corpus, src_file=a.src, tgt_file=a.tgt)
    log.info("nmt heldout: %d pairs -> %s", n, a.out)


def _named(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"nmt compare: --runs {item!r}: expected NAME=RUN_DIR")
        out[name] = path
    return out


def cmd_compare(a) -> None:
    compare_runs(_named(a.runs), a.baseline, a.out, a.settings, a.keys)


STAGE = Stage(
    "nmt",
    "train NMT on the top share of a ranked corpus, score BLEU/chrF, compare runs (paired bootstrap)",
    (
        Verb("heldout", "an NMT validation or test set as src<TAB>tgt (from a TSV or two line-aligned files)",
             cmd_heldout, (
            arg("--corpus", default=None, help="TSV with header src, tgt"),
            arg("--src", default=None, help="line-aligned source side (FLoRes-200 devtest/<code>.devtest)"),
            arg("--tgt", default=None),
            arg("--out", required=True),
        )),
        Verb("select", "the top share of a corpus in the order of a ranking", cmd_select, (
            arg("--ranking", required=True, help="scores.tsv of lem curate rank / control"),
            arg("--pairs", required=True, help="pairs.tsv of lem curate prepare"),
            arg("--share", type=float, required=True, help="share of the ranked corpus kept, in (0, 1]"),
            arg("--exclude", nargs="*", default=[], help="held-out sets (src<TAB>tgt): a pair with a side "
                "among their sentences is dropped before the share is taken"),
            arg("--out", required=True),
        )),
        Verb("run", "train on the selected pairs, translate the test set, score BLEU and chrF", cmd_run, (
            arg("--train", required=True),
            arg("--valid", required=True),
            arg("--test", nargs="+", required=True, help="a src<TAB>tgt TSV, or two line-aligned files"),
            arg("--pair", required=True, help="the pair of the TSVs' columns, e.g. si-en"),
            arg("--out-dir", required=True, help="model/, hypotheses.txt, references.txt, metrics.json"),
        ), settings=NMTSettings, keys=True),
        Verb("compare", "sacrebleu's paired bootstrap of runs against a baseline run", cmd_compare, (
            arg("--runs", nargs="+", required=True, help="NAME=RUN_DIR for every run, the baseline's too"),
            arg("--baseline", required=True),
            arg("--out", required=True),
        ), settings=NMTSettings, keys=True),
    ),
)  # fmt: skip
