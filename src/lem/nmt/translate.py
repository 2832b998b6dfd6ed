"""NMT translation of a test set, BLEU / chrF with sacrebleu, and the paired bootstrap."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lem.core.files import read_json
from lem.core.inputs import InputError
from lem.core.stage import UsageError
from lem.core.training import pick_device, precision_flags, set_threads
from lem.nmt.settings import NMT_JSON, NMTSettings

# Imported inside functions: torch, transformers and sacrebleu (`lem nmt --help` imports this module and needs
# none of them)

log = logging.getLogger("lem.nmt")


# --- translation ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _autocast(device: str, precision: str) -> Iterator[None]:
    """The training precision's autocast for inference (lem.core.training.precision_flags); none on the CPU."""
    import torch

    flags = precision_flags(precision, device)
    dtype = torch.bfloat16 if flags.get("bf16") else torch.float16 if flags.get("fp16") else None
    if dtype is None or not device.startswith("cuda"):
        yield
        return
    with torch.autocast("cuda", dtype=dtype):
        yield


def translate(model_dir: str | os.PathLike, sentences: Sequence[str], settings: NMTSettings) -> list[str]:
    """Translations of `sentences` by the model in `model_dir` (written by `train_scratch` or
    `finetune_pretrained`): beam search of `settings.beam_size` (1: greedy), at most `settings.max_length`
    new tokens, batches of `settings.eval_batch_size` sentences of similar length; deterministic."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    s = settings
    set_threads(s.threads)
    model_dir = Path(model_dir)
    meta = read_json(model_dir / NMT_JSON)
    device = pick_device(s.device)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSeq2SeqLM.from_pretrained(str(model_dir)).to(device).eval()
    if meta.get("src_code"):
        tokenizer.src_lang = meta["src_code"]
    kwargs: dict[str, Any] = {"num_beams": s.beam_size, "do_sample": False, "max_new_tokens": s.max_length}
    if meta.get("forced_bos") is not None:
        kwargs["forced_bos_token_id"] = int(meta["forced_bos"])
    if s.beam_size > 1:
        kwargs["early_stopping"] = True
    order = sorted(range(len(sentences)), key=lambda i: (len(sentences[i]), i))
    out: list[str | None] = [None] * len(sentences)
    t0 = time.perf_counter()
    with torch.inference_mode(), _autocast(device, s.precision):
        for lo in range(0, len(order), s.eval_batch_size):
            idx = order[lo : lo + s.eval_batch_size]
            enc = tokenizer(
                [sentences[i] for i in idx], truncation=True, max_length=s.max_length, padding=True,
                return_tensors="pt",
            ).to(device)  # fmt: skip
            enc.pop("token_type_ids", None)
            generated = model.generate(**enc, **kwargs)
            for i, text in zip(idx, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True):
                out[i] = text.strip()
    log.info("nmt: translated %d sentences in %.1fs", len(sentences), time.perf_counter() - t0)
    return [t or "" for t in out]


# --- scores ------------------------------------------------------------------------------------------------


def _metrics(lang: str | None, bleu_tokenize: str, chrf_word_order: int):
    from sacrebleu.metrics import BLEU, CHRF

    return {
        "BLEU": BLEU(tokenize=bleu_tokenize, trg_lang=lang or ""),
        "chrF": CHRF(word_order=chrf_word_order),
    }


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str], what: str = "hypotheses") -> None:
    if len(hypotheses) != len(references):
        raise InputError(f"nmt: {len(hypotheses)} {what} for {len(references)} references")
    if not references:
        raise InputError("nmt: no references to score against")


def score(hypotheses: Sequence[str], references: Sequence[str], lang: str | None = None, *,
          bleu_tokenize: str = "13a", chrf_word_order: int = 0) -> dict[str, Any]:  # fmt: skip
    """Corpus-level BLEU and chrF (sacrebleu, one reference per sentence) with their signatures."""
    _check_lengths(hypotheses, references)
    metrics = _metrics(lang, bleu_tokenize, chrf_word_order)
    bleu = metrics["BLEU"].corpus_score(list(hypotheses), [list(references)])
    chrf = metrics["chrF"].corpus_score(list(hypotheses), [list(references)])
    return {
        "bleu": float(bleu.score),
        "chrf": float(chrf.score),
        "bleu_detail": {
            "precisions": [float(p) for p in bleu.precisions],
            "bp": float(bleu.bp),
            "sys_len": int(bleu.sys_len),
            "ref_len": int(bleu.ref_len),
        },
        "chrf_name": chrf.name,  # chrF2, or chrF2++ with word_order 2
        "signatures": {
            "bleu": str(metrics["BLEU"].get_signature()),
            "chrf": str(metrics["chrF"].get_signature()),
        },
    }


@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """sacrebleu's paired test reads its seed from the environment (SACREBLEU_SEED) when it is built."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(int(seed))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_bootstrap(baseline_hyps: Sequence[str], system_hyps_by_name: Mapping[str, Sequence[str]],
                     references: Sequence[str], n: int = 1000, seed: int = 12345, *,
                     baseline_name: str = "baseline", lang: str | None = None, bleu_tokenize: str = "13a",
                     chrf_word_order: int = 0) -> dict[str, Any]:  # fmt: skip
    """sacrebleu's paired bootstrap resampling test (`sacrebleu.significance.PairedTest`, test_type `bs`,
    the `--paired-bs` of its command line; Koehn 2004) of each system against the baseline, BLEU and chrF.

    Returns `{"baseline", "n_samples", "seed", "signatures": {metric: ...}, "systems": {name: {metric:
    {"score", "mean", "ci", "p_value"}}}}`: `mean` and `ci` are the bootstrap mean and the half-width of its
    95 % interval, `p_value` the probability of the observed difference from the baseline under the null
    hypothesis (None for the baseline itself). Deterministic for a given `seed` (>= 1: sacrebleu reads 0 as
    "unseeded")."""
    from sacrebleu.significance import PairedTest

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 1:
        raise ValueError(f"nmt: paired bootstrap seed={seed!r}: expected an integer >= 1")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"nmt: paired bootstrap n={n!r}: expected an integer >= 1")
    _check_lengths(baseline_hyps, references, "baseline hypotheses")
    for name, hyps in system_hyps_by_name.items():
        _check_lengths(hyps, references, f"hypotheses of {name!r}")
    if not system_hyps_by_name or baseline_name in system_hyps_by_name:
        raise UsageError(f"nmt: paired bootstrap needs systems other than the baseline {baseline_name!r}")
    named = [(baseline_name, list(baseline_hyps))] + [(k, list(v)) for k, v in system_hyps_by_name.items()]
    with _sacrebleu_seed(seed):
        test = PairedTest(
            named,
            _metrics(lang, bleu_tokenize, chrf_word_order),
            [list(references)],
            test_type="bs",
            n_samples=n,
        )
        signatures, table = test()
    systems: dict[str, dict[str, Any]] = {name: {} for name in table["System"]}
    for metric, results in table.items():
        if metric == "System":
            continue
        for name, r in zip(table["System"], results, strict=True):
            systems[name][metric] = {
                "score": float(r.score),
                "mean": None if r.mean is None else float(r.mean),
                "ci": None if r.ci is None else float(r.ci),
                "p_value": None if r.p_value is None else float(r.p_value),
            }
    return {
        "baseline": baseline_name,
        "test": "paired bootstrap resampling (sacrebleu)",
        "n_samples": n,
        "seed": seed,
        "signatures": {metric: str(sig) for metric, sig in signatures.items()},
        "systems": systems,
    }
