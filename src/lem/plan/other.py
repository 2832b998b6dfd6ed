"""The other GPU jobs of a config (`lem plan cost`'s second table): NER and sentiment fine-tuning, NMT runs, embedding
and annotation, one row (`Task`) per kind and pair or dataset."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.annotate.hf_ner import TrainNERSettings
from lem.nmt.settings import NMTSettings
from lem.plan.config import BYTES_PER_ANNOTATED_TOKEN, EVAL_COST, KNOWN_NMT_PARAMETERS, THROUGHPUT
from lem.plan.counts import Counter, conll_sentences, count_lines
from lem.plan.model import ModelSize, base_folder, safetensors_parameters
from lem.pretrain import ModelSettings
from lem.run import Run, paths
from lem.run.paths import fill
from lem.sentiment import SentimentSettings
from lem.stand_in import SIZES


@dataclass
class Task:
    """One row of the other GPU jobs: `jobs` jobs of one kind, with their items and tokens in all."""

    kind: str  # ner | sentiment | nmt | embedding | annotation
    name: str
    jobs: int
    items: int  # examples (training kinds) or sentences / sides of pairs (forward kinds), per job
    unit: str
    tokens: float  # work of all the jobs, in tokens at the kind's training rate (forward: a third)
    tokens_per_second: float
    basis: str  # measured | estimate | plan.throughput.<kind>
    gpu_hours: float
    disk_bytes: int
    counts: str


class TaskCounts:
    """What the rows of the other GPU jobs are counted with: the rates per kind, the items of the run's files
    (else the generated world's sizes, else plan.estimates), the rows' seeds, the models' sizes."""

    def __init__(self, config: dict[str, Any], root: Path, counter: Counter, size: ModelSize):
        self.config, self.root, self.counter, self.size = config, root, counter, size
        self.est = config["plan"]["estimates"]
        self.sps = float(self.est["subwords_per_sentence"])
        self.gen = counter.generate()
        self.throughput = config["plan"].get("throughput") or {}
        self.run = Run(config)

    def rate(self, kind: str) -> tuple[float, str]:
        if kind in self.throughput:
            return float(self.throughput[kind]), f"plan.throughput.{kind}"
        tps, basis = THROUGHPUT[kind]
        return float(tps), basis.split(":")[0]

    def task(self, kind, name, jobs, items, unit, tokens, disk, counts, exact=False) -> Task:
        tps, basis = self.rate(kind)
        return Task(kind, name, jobs, int(items), unit, tokens, tps, basis, tokens / tps / 3600, int(disk),
                    counts + ("" if exact else "*"))  # fmt: skip

    def sentences(self, rel: str, generated: float | None, key: str) -> tuple[float, str]:
        """Lines of the run's file `rel`, else the generated world's size, else plan.estimates.<key>."""
        if self.root.joinpath(rel).is_file():
            return count_lines(self.root / rel), "lines"
        if generated is not None:
            return generated, "generate"
        return self.est[key], "estimate"

    def row_seeds(self, row: str) -> int:
        return len(self.run.row_seeds(row))

    def nmt_parameters(self, t) -> int | None:
        if t.backend == "scratch":  # a Marian Transformer: shared embeddings, encoder and decoder layers
            h, f, n = t.hidden, t.ffn, t.layers
            return t.vocab_size * h + n * (4 * h * h + 2 * h * f) + n * (8 * h * h + 2 * h * f)
        model = t.model or ""
        local = self.root / model / "model.safetensors"
        if local.is_file():
            return safetensors_parameters(local)
        return KNOWN_NMT_PARAMETERS.get(model)

    def curation_pairs(self, pair: str) -> tuple[float, str]:
        rel = fill(paths.PREPARED_CURATION, pair=pair, name="pairs.tsv")
        if self.root.joinpath(rel).is_file():
            return count_lines(self.root / rel), "lines"
        cap = (self.config.get("curation") or {}).get("max_pairs")
        if cap:
            return float(cap), "max_pairs"
        if self.gen is not None:
            return float(self.gen["noisy_pairs"]), "generate"
        return float(self.est["curation_pairs"]), "estimate"

    def hidden_size(self) -> int:
        """Floats per embedding: the base model's hidden size (every row is stored as float32)."""
        bm = self.config["base_model"]
        cfg = base_folder(self.config, self.root) / "config.json"
        if cfg.is_file():
            return int(json.loads(cfg.read_text(encoding="utf-8"))["hidden_size"])
        if bm["source"] == "scratch":
            return ModelSettings.from_dict(bm.get("model")).hidden_size
        if bm["source"] == "stand_in":
            return SIZES[bm["stand_in"]["size"]]["hidden_size"]
        return SIZES["base"]["hidden_size"]  # a known hub architecture (model_size has checked it)


class OtherJobs(TaskCounts):
    """The rows of the other GPU jobs of a validated config, counted under `root`: one method per kind."""

    # one method per kind, each a list of Task
    def ner(self) -> list[Task]:
        spec = self.config.get("ner_model")
        if not spec:
            return []

        t = TrainNERSettings.from_dict(spec.get("settings"))
        train = self.root / spec["train"]
        if train.is_file():
            n, counts = conll_sentences(train), "lines"
        else:
            n, counts = self.est["ner_sentences"], "estimate"
        per = min(self.sps + 2, t.max_length)
        tokens = n * float(t.epochs) * per
        disk = 4 * self.size.parameters + self.size.tokenizer_bytes  # the encoder (+ a small head)
        return [self.task("ner", "ner/model", 1, n, "sentences", tokens, disk, counts)]

    def sentiment(self) -> list[Task]:
        sent = self.config.get("sentiment") or {}
        t = SentimentSettings.from_dict(sent.get("training"))
        per = min(self.sps + 2, t.max_length or 128)
        # one job per row and pre-training seed runs every fine-tuning seed (`sentiment.seeds`) in turn
        jobs = sum(self.row_seeds(v) for v in self.config["variants"])
        runs = jobs * len(sent.get("seeds") or [1, 2, 3])
        out = []
        for name in sent.get("datasets") or {}:
            gen = None if self.gen is None else 0.8 * self.gen["sentiment_examples"]
            n, counts = self.sentences(
                fill(paths.PREPARED_SENTIMENT, dataset=name, name="train.tsv"), gen, "sentiment_examples"
            )
            tokens = runs * n * float(t.epochs) * per
            out.append(self.task("sentiment", f"sentiment/{name}", jobs, n, "examples", tokens, 0, counts))
        return out

    def nmt(self) -> list[Task]:
        nmt = (self.config.get("curation") or {}).get("nmt") or {}
        if not nmt.get("pairs"):
            return []
        t = NMTSettings.from_dict(nmt.get("settings"))
        per = 2 * min(self.sps + 2, t.max_length)  # source + target
        params = self.nmt_parameters(t)
        runs = self.run.grid.nmt_runs()
        out = []
        for pair in nmt["pairs"]:
            n_runs = sum(1 for _, p, _, _ in runs if p == pair)
            held, counts = self.sentences(
                fill(paths.PREPARED_NMT, pair=pair, split="valid"), None, "nmt_heldout_sentences"
            )
            test, _ = self.sentences(
                fill(paths.PREPARED_NMT, pair=pair, split="test"), None, "nmt_heldout_sentences"
            )
            if t.max_steps > 0:
                train_tokens = t.max_steps * t.batch_size * per
            else:  # epochs over the kept share: a cap of the corpus (max_pairs) or its estimate
                kept, _ = self.curation_pairs(pair)
                train_tokens = float(t.epochs) * kept * per
            # validation loss at every evaluation (forward), the test set translated at beam_size (forward)
            eval_tokens = t.evaluations * held * per + test * per * t.beam_size
            tokens = n_runs * (train_tokens + EVAL_COST * eval_tokens)
            disk = n_runs * (4 * params if params else 0)
            out.append(self.task("nmt", f"nmt/{pair}", n_runs, t.max_steps * t.batch_size, "pairs seen", tokens, disk,
                                 "steps" if t.max_steps > 0 else counts, exact=False))  # fmt: skip
        return out

    def embedding(self) -> list[Task]:
        emb = self.config["embedding"]
        per = min(self.sps + 2, int(emb.get("max_length") or 128))
        rows = self.run.curation_rows  # the rows that embed (the controls embed no model)
        out = []
        hidden_bytes = 4 * self.hidden_size()
        for e, spec in (self.config["mining"].get("evalsets") or {}).items():  # every row's seeds
            jobs = sum(self.row_seeds(r) for r in rows)
            gen = None
            if self.gen is not None:
                g = self.gen
                gen = g["news_documents"] * (
                    (g["news_aligned_min"] + g["news_aligned_max"]) / 2
                    + (g["news_extra_min"] + g["news_extra_max"]) / 2
                )
            n, counts = 0.0, "lines"
            for pair in spec["pairs"]:
                for lang in pair.split("-"):
                    c, how = self.sentences(
                        fill(paths.PREPARED, evalset=e, pair=pair, lang=lang), gen, "eval_sentences"
                    )
                    n, counts = n + c, how
            out.append(self.task("embedding", f"embed/{e}", jobs, n, "sentences", EVAL_COST * jobs * n * per,
                                 jobs * n * hidden_bytes, counts))  # fmt: skip
        for pair in (self.config.get("curation") or {}).get("corpora") or {}:
            n, counts = self.curation_pairs(pair)
            n *= 2  # both sides
            jobs = sum(self.row_seeds(r) for r in rows)  # every row's seeds, as for the evaluation sets
            out.append(self.task("embedding", f"embed/curation/{pair}", jobs, n, "sentences",
                                 EVAL_COST * jobs * n * per, jobs * n * hidden_bytes, counts))  # fmt: skip
        return out

    def annotation(self) -> list[Task]:
        out = []
        gpus = int(self.config["resources"].get("gpu_annotation", 0))
        for lang in self.config["languages"]:
            s = self.config["annotation"].get(lang, {})
            neural = any(
                isinstance(task, dict)
                and task.get("backend") in ("hf_ner", "stanza")
                and task.get("device", "auto") != "cpu"
                for task in (s.get("pos"), s.get("ner"))
            )
            if not neural or gpus == 0:
                continue
            mono = self.counter.mono(lang)
            n = float(mono.train + mono.valid)
            counts = mono.source
            for pair in self.config["pairs"]:
                if lang in pair.split("-"):
                    para = self.counter.para(pair)
                    n += para.train + para.valid
            per = min(self.sps + 2, 512)
            tokens = EVAL_COST * n * per
            out.append(self.task("annotation", f"annotate/{lang}", 1, n, "sentences", tokens,
                                 n * per * BYTES_PER_ANNOTATED_TOKEN, counts))  # fmt: skip
        return out

    def all(self) -> list[Task]:
        return self.ner() + self.sentiment() + self.nmt() + self.embedding() + self.annotation()
