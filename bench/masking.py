"""Throughput of the LEM collator vs transformers' DataCollatorForLanguageModeling (a script, not a test).

Same 2,048 feature rows (batch 32, up to 100 tokens) for both, one thread. Passes alternate (LEM, stock,
stock, LEM, ...: each pass of one is next to a pass of the other, and neither always goes first), so that a
slow spell of a shared machine hits both; the figures are medians over the passes.
Rows come from `--features DIR` (a `lem features` DatasetDict) with `--tokenizer DIR`, or by default from
synthetic sentences tokenized with a tokenizer trained here (vocab 8,000 like the embedded default).
The last line printed is `lem_vs_stock_ratio=<float>` (median examples/s of LEM divided by stock's); the
line before, `pass_ratio_min/median/max=`, the spread of the ratios of neighbouring passes.

    .venv/bin/python bench/masking.py [--features D --tokenizer T] [--passes 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def synthetic_rows(n: int, seed: int = 0) -> tuple[list[dict], object]:
    """Tokenize generated en/si/ta-like sentences with a freshly trained tokenizer; random word flags."""
    from transformers import AutoTokenizer

    from lem.features import word_start_table
    from lem.tokenizer import train_tokenizer

    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnoprstuvy") + [chr(c) for c in range(0x0D9A, 0x0DC6)]
    lexicon = ["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(4000)]
    lines = [" ".join(rng.choice(lexicon, rng.integers(5, 60))) + "." for _ in range(n)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-masking-"))
    (tmp / "text.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = AutoTokenizer.from_pretrained(
        str(train_tokenizer([tmp / "text.txt"], 8000, tmp / "tok", seed=seed))
    )
    starts = word_start_table(tok)
    enc = tok(lines, truncation=True, max_length=100)["input_ids"]
    rows = []
    for ids in enc:
        ids = np.asarray(ids)
        content = np.isin(ids, tok.all_special_ids, invert=True)
        word = np.where(content, np.cumsum(starts[ids] & content) - 1, -1)
        n_words = int(word.max()) + 1
        rows.append(
            {
                "input_ids": ids.tolist(),
                "word_ids": word.tolist(),
                "word_flags": rng.choice([0, 0, 0, 1, 2, 2, 4, 3], n_words).astype(np.uint8).tolist(),
                "lang": "en",
            }
        )
    return rows, tok


def feature_rows(features: str, tokenizer: str, n: int) -> tuple[list[dict], object]:
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    ds = load_from_disk(features)["train"]
    return ds.select(range(min(n, len(ds)))).to_list(), AutoTokenizer.from_pretrained(tokenizer)


def one_pass(collate, rows: list[dict], batch: int) -> float:
    """Examples per second of one pass over the rows."""
    t0 = time.perf_counter()
    for start in range(0, len(rows), batch):
        collate(rows[start : start + batch])
    return len(rows) / (time.perf_counter() - t0)


def interleaved(contenders: dict, batch: int, passes: int) -> dict[str, list[float]]:
    """Examples/s of every pass of each (collate, rows) contender, the passes alternating between them."""
    names = list(contenders)
    eps: dict[str, list[float]] = {name: [] for name in names}
    for p in range(passes):
        for name in names if p % 2 == 0 else names[::-1]:
            collate, rows = contenders[name]
            eps[name].append(one_pass(collate, rows, batch))
    return eps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features")
    parser.add_argument("--tokenizer")
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--passes", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from transformers import DataCollatorForLanguageModeling

    from lem.masking.collate import MaskingSettings, make_collator

    if args.features:
        rows, tok = feature_rows(args.features, args.tokenizer, args.n)
    else:
        rows, tok = synthetic_rows(args.n)
    lem = make_collator(tok, MaskingSettings(), seed=0)
    stock = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=0.15, seed=0, return_tensors="pt")
    stock_rows = [{"input_ids": r["input_ids"]} for r in rows]  # stock gets only what it understands
    lem(rows[:32]), stock(stock_rows[:32])  # warm-up
    eps = interleaved({"lem": (lem, rows), "stock": (stock, stock_rows)}, args.batch_size, args.passes)
    lem_eps, stock_eps = statistics.median(eps["lem"]), statistics.median(eps["stock"])
    pass_ratios = sorted(a / b for a, b in zip(eps["lem"], eps["stock"], strict=True))
    mean_len = np.mean([len(r["input_ids"]) for r in rows])
    print(
        f"examples={len(rows)} batch={args.batch_size} mean_tokens={mean_len:.1f} vocab={len(tok)} threads=1"
    )
    print(f"passes={args.passes}, interleaved; medians below")
    print(f"lem_examples_per_s={lem_eps:.0f}")
    print(f"stock_examples_per_s={stock_eps:.0f}")
    print(
        f"pass_ratio_min={pass_ratios[0]:.3f} pass_ratio_median={statistics.median(pass_ratios):.3f} "
        f"pass_ratio_max={pass_ratios[-1]:.3f}"
    )
    print(f"lem_vs_stock_ratio={lem_eps / stock_eps:.3f}")


if __name__ == "__main__":
    main()
