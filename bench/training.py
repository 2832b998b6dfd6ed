"""Training throughput: our training step vs a bare PyTorch loop over the same model and batches.

Ours = `lem.core.training`'s Trainer set-up as the pipeline's training stage uses it (batches drawn by
`BatchIndexSampler`, the per-batch-seeded LEM collator in the loop or in `--workers` DataLoader workers,
the loss of `--loss-positions`, AdamW, linear schedule, gradient clipping). Bare = a hand-written loop that
calls the same collator, forward (the same loss path), backward, AdamW and scheduler, nothing else. Both
start from the same weights and see the same examples in the same order; tokens are the non-padding input
tokens. One thread by default; median of several passes. The last line reads `train_vs_bare_ratio=<float>`.

`--numerics` is `resources.cpu_numerics` (`lem.core.numerics`): `portable` (what `lem` jobs run by default: CPU
kernels pinned at AVX2), `native` (the CPU's own kernels, or the environment's), or `compare`: both, each in
its own process (the kernels are chosen when torch loads), ending with `portable_vs_native_ratio=<float>`
(ours, tokens/s).

    python bench/training.py [--steps 60] [--passes 3] [--threads 1] [--hidden 128 --layers 2] [--workers 0]
                             [--numerics portable|native|compare]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build_inputs(work: Path, sentences: int, vocab: int, max_length: int):
    from lem.annotate.run import annotate_file
    from lem.annotate.settings import AnnotateSettings
    from lem.corpus.generate import GenerateSettings, generate
    from lem.features import build_mono_features
    from lem.tokenizer import train_tokenizer

    generate(
        GenerateSettings.from_dict(
            {"mono_sentences": sentences, "para_train": 20, "para_valid": 5, "news_documents": 2,
             "sentiment_examples": 20, "noisy_pairs": 8}
        ),
        work / "corpus", work / "eval",
    )  # fmt: skip
    lex = work / "corpus" / "lexicon"
    mono = work / "corpus" / "mono"
    train_tokenizer([mono / f"{lang}.txt" for lang in ("en", "si", "ta")], vocab, work / "tok", seed=1)
    feats = []
    for lang in ("en", "si", "ta"):
        settings = AnnotateSettings.from_dict(
            {"pos": {"backend": "lexicon", "format": "tsv", "path": str(lex / f"{lang}.pos.tsv")},
             "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(lex / f"{lang}.ner.tsv")}}
        )  # fmt: skip
        annotate_file(lang, mono / f"{lang}.txt", work / f"{lang}.parquet", settings)
        build_mono_features(
            work / "tok", work / f"{lang}.parquet", lang, max_length, 0.05, 1, work / f"feat-{lang}"
        )
        feats.append(work / f"feat-{lang}")
    return work / "tok", feats


WARM = 5  # steps excluded from timing (allocator and kernel warm-up)


def bare_rate(
    tokenizer, arch, masking, batches: list[list[dict]], tokens: list[int], loss_positions: str
) -> float:
    """Tokens/s of the bare loop: the same collator, forward (the same loss path), backward, AdamW and
    scheduler, nothing else."""
    import torch
    import torch.nn.functional as F
    from transformers import get_linear_schedule_with_warmup

    from lem.masking.collate import BatchSeededCollator, make_collator
    from lem.pretrain import new_model

    model = new_model(tokenizer, arch, 0)
    model.train()
    collate = BatchSeededCollator(make_collator(tokenizer, masking, 0), 0)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.0)
    sched = get_linear_schedule_with_warmup(opt, 0, len(batches))
    for i, b in enumerate(batches):
        if i == WARM:
            t0 = time.perf_counter()
        batch = collate.mask(b, i)
        if loss_positions == "labelled":
            hidden = model.roberta(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])[0]
            sel = batch["labels"] != -100
            loss = F.cross_entropy(model.lm_head(hidden[sel]).float(), batch["labels"][sel])
        else:
            loss = model(**batch).loss
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    return sum(tokens[WARM:]) / (time.perf_counter() - t0)


def ours_rate(tokenizer, arch, masking, rows: list[dict], tokens: list[int], args: argparse.Namespace,
              work: Path) -> float:  # fmt: skip
    """Tokens/s of the pipeline's Trainer set-up on the same rows in the same order (steps timed by a callback)."""
    from datasets import Dataset
    from transformers import TrainerCallback

    from lem.core import training
    from lem.masking.collate import BatchSeededCollator, make_collator
    from lem.pretrain import new_model

    model = new_model(tokenizer, arch, 0)
    marks: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if state.global_step == WARM:
                marks["t0"] = time.perf_counter()
            marks["t1"] = time.perf_counter()

    class InOrder(training.BatchIndexSampler):  # the same order as bare
        def order(self, epoch):
            return list(range(self.n_rows))

    targs = training.training_arguments(
        work / "trainer", policy=training.CheckpointPolicy.final(), seed=0, max_steps=len(tokens),
        batch_size=args.batch_size, learning_rate=5e-5, logging_steps=10**6, remove_unused_columns=False,
        dataloader_num_workers=args.workers,
    )  # fmt: skip
    trainer = training.make_trainer(
        model=model, args=targs, train_dataset=Dataset.from_list(rows), tokenizer=tokenizer,
        data_collator=BatchSeededCollator(make_collator(tokenizer, masking, 0), 0), callbacks=[Clock()],
        train_batches=InOrder(len(rows), args.batch_size, 0), loss_positions=args.loss_positions,
    )  # fmt: skip
    trainer.train()
    return sum(tokens[WARM:]) / (marks["t1"] - marks["t0"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--sentences", type=int, default=1500)
    p.add_argument("--workers", type=int, default=0, help="ours: dataloader_num_workers")
    p.add_argument("--loss-positions", default="labelled", choices=["labelled", "all"])
    p.add_argument("--numerics", default="portable", choices=["portable", "native", "compare"])
    args = p.parse_args()
    if args.numerics == "compare":
        compare_numerics()
        return
    os.environ["LEM_CPU_NUMERICS"] = args.numerics
    from lem.core.numerics import pin_numerics

    pin_numerics()  # before torch loads, as the `lem` command does

    import torch
    from transformers import AutoTokenizer

    from lem.masking.collate import MaskingSettings
    from lem.pretrain import ModelSettings, load_features, new_model

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="lem-bench-train-"))
    tok_dir, feats = build_inputs(work, args.sentences, args.vocab, args.max_length)
    tokenizer = AutoTokenizer.from_pretrained(str(tok_dir))
    train, _ = load_features(feats)
    masking = MaskingSettings.from_dict({"strategy": "lem"})
    arch = ModelSettings(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=2,
                         intermediate_size=2 * args.hidden, max_length=args.max_length)  # fmt: skip
    n_params = sum(p.numel() for p in new_model(tokenizer, arch, 0).parameters())
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(0)).tolist()
    rows = [train[i] for i in order[: args.steps * args.batch_size]]
    batches = [rows[i : i + args.batch_size] for i in range(0, len(rows), args.batch_size)]
    tokens = [sum(len(r["input_ids"]) for r in b) for b in batches]

    results = {"bare": [], "ours": []}
    for _ in range(args.passes):
        results["bare"].append(bare_rate(tokenizer, arch, masking, batches, tokens, args.loss_positions))
        results["ours"].append(ours_rate(tokenizer, arch, masking, rows, tokens, args, work))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"model: XLM-R architecture, hidden {args.hidden}, {args.layers} layers, vocab {len(tokenizer)}, "
          f"{n_params / 1e6:.2f}M parameters; batch {args.batch_size}, max length {args.max_length}, "
          f"{args.threads} thread(s), {len(batches)} steps ({WARM} untimed), median of {args.passes}; "
          f"loss on {args.loss_positions} positions, ours with {args.workers} DataLoader worker(s); "
          f"cpu_numerics {args.numerics}, kernel level {torch.backends.cpu.get_cpu_capability()}")  # fmt: skip
    for k in ("bare", "ours"):
        print(f"{k:>5}: {med[k]:9.0f} tokens/s   passes: {', '.join(f'{x:.0f}' for x in results[k])}")
    print(f"train_vs_bare_ratio={med['ours'] / med['bare']:.3f}")


def compare_numerics() -> None:
    """This benchmark under `portable`, then under `native`, one process each (the same arguments
    otherwise), and the ratio of ours' median throughputs."""
    argv = [a for a in sys.argv[1:] if a not in {"--numerics", "compare", "--numerics=compare"}]
    ours = {}
    for mode in ("portable", "native"):
        out = subprocess.run([sys.executable, __file__, *argv, "--numerics", mode], check=True,
                             capture_output=True, text=True).stdout  # fmt: skip
        kept = [line for line in out.splitlines() if not line.startswith("{")]  # not the Trainer's summaries
        print("\n".join([f"== {mode}", *kept]), flush=True)
        ours[mode] = float(re.search(r"ours:\s+([\d.]+) tokens/s", out).group(1))
    print(f"portable_vs_native_ratio={ours['portable'] / ours['native']:.3f}")


if __name__ == "__main__":
    main()
