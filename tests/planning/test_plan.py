"""`lem plan cost`: one row per training job with the schedule training follows, counts from the run's files
where they exist, estimates from the config otherwise, and a loud failure where neither is there. The `plan`
rule run alone: tests/dag/test_plan_rule.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lem.core.training import training_schedule
from lem.features import mono_split
from lem.masking.collate import variant_aliases
from lem.plan import PlanError, load_config, make_plan, safetensors_parameters, table, validated
from lem.stand_in import SIZES, xlmr_mlm_parameters

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "paper.yaml"


def lem_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lem.cli", "plan", "cost", *args], capture_output=True, text=True
    )


def test_paper_plan_has_a_row_per_model_scope_and_stage_and_totals(tmp_path):
    config = load_config([PAPER])
    paper = yaml.safe_load(PAPER.read_text())
    trained = [v for v in paper["variants"] if v != "base"]
    models = sorted({m for m in variant_aliases(paper["pretrain"]["variants"], trained).values()})
    plan = make_plan(config, tmp_path)  # a fresh run: no corpus counted yet (the repo may hold results/)
    assert len(models) == 8  # lem_ne_noun_verb masks as lem does: one model for both
    assert len(plan["jobs"]) == len(models) * 3 * 2
    assert {j["name"] for j in plan["jobs"]} == {
        f"{m}/{p}/seed13/{s}" for m in models for p in paper["pairs"] for s in ("mono", "para")
    }
    totals = plan["totals"]
    assert totals["jobs"] == len(plan["jobs"])
    assert totals["steps"] == sum(j["steps"] for j in plan["jobs"])
    assert totals["gpu_hours"] == pytest.approx(sum(j["gpu_hours"] for j in plan["jobs"]))
    assert plan["model"]["parameters"] == 278_295_186  # xlm-roberta-base
    # mono si-en: 1M + 1M MADLAD sentences minus the 1 % held out, 60 epochs of batch 32
    mono = next(j for j in plan["jobs"] if j["name"] == "lem/si-en/seed13/mono")
    assert mono["examples"] == 2 * 990_000 and mono["counts"] == "madlad*"
    assert (
        mono["steps"] == training_schedule(1_980_000, epochs=60, batch_size=32, checkpoint_every=5000).steps
    )
    para = next(j for j in plan["jobs"] if j["name"] == "lem/ta-en/seed13/para")
    assert para["examples"] == paper["plan"]["estimates"]["para_pairs"]["ta-en"]
    assert plan["tokens_per_second"] == 47249


def test_the_command_prints_the_table_and_writes_tsv_and_json(tmp_path):
    out = [str(tmp_path / "plan.txt"), str(tmp_path / "plan.tsv"), str(tmp_path / "plan.json")]
    proc = lem_plan("--configfile", str(PAPER), "--directory", str(tmp_path), "--out", *out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (tmp_path / "plan.txt").read_text()
    assert "total (48 jobs)" in proc.stdout and "lem/si-en/seed13/mono" in proc.stdout
    # every GPU job kind has its rows: NMT, NER, sentiment, embedding, annotation
    for row in ("nmt/si-en", "nmt/si-ta", "nmt/ta-en", "ner/model", "sentiment/cmcs", "embed/news_itn",
                "embed/curation/si-en", "annotate/en", "annotate/si", "annotate/ta"):  # fmt: skip
        assert f"\n{row} " in proc.stdout, row
    assert "of the other 179 GPU jobs" in proc.stdout  # sentiment: one job per row and seed
    rows = (tmp_path / "plan.tsv").read_text().splitlines()
    assert len(rows) == 1 + 48 and rows[0].startswith("name\tvariant\tscope\tstage\texamples")
    assert len(json.loads((tmp_path / "plan.json").read_text())["jobs"]) == 48
    assert len(json.loads((tmp_path / "plan.json").read_text())["tasks"]) == 15


def write_lines(path: Path, n: int, cols: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(f"w{i} x{c}" for c in range(cols)) + "\n" for i in range(n)))


def files_config(root: Path) -> dict:
    """The embedded default on files of known sizes: 1,000 en and 500 si sentences, 300 + 20 pairs."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["languages"], cfg["pairs"], cfg["variants"] = ["en", "si"], ["si-en"], ["base", "lem", "lem_ne"]
    write_lines(root / "in/en.txt", 1000)
    write_lines(root / "in/si.txt", 500)
    write_lines(root / "in/si-en.train.tsv", 300, cols=2)
    write_lines(root / "in/si-en.valid.tsv", 20, cols=2)
    cfg["corpus"] = {
        "source": "files",
        "files": {
            "mono": {"en": "in/en.txt", "si": "in/si.txt"},
            "para": {"si-en": {"train": "in/si-en.train.tsv", "valid": "in/si-en.valid.tsv"}},
        },
    }
    cfg["annotation"] = {lang: cfg["annotation"][lang] for lang in ("en", "si")}
    cfg["pretrain"]["valid_fraction"] = 0.1
    cfg["pretrain"]["seeds"] = [13]
    cfg["tokenizer"]["vocab_size"] = 4000
    cfg["pretrain"]["stages"]["mono"] = {
        "epochs": {"default": 3},
        "training": {"batch_size": 16, "grad_accum": 2, "checkpoint_every": 10, "min_evaluations": 4},
    }
    cfg["pretrain"]["stages"]["para"] = {"epochs": {"default": 2.5}, "training": {"batch_size": 8}}
    cfg["base_model"]["training"] = {"epochs": 2, "batch_size": 32, "checkpoint_every": "epoch"}
    cfg["plan"] = {"tokens_per_second": 1000, "estimates": {"subwords_per_sentence": 20}}
    return cfg


def test_steps_and_evaluations_are_training_schedules(tmp_path):
    plan = make_plan(validated(files_config(tmp_path)), tmp_path)
    jobs = {j["name"]: j for j in plan["jobs"]}
    assert list(jobs) == [
        "base/seed13",
        "lem/tri/seed13/mono",
        "lem/tri/seed13/para",
        "lem_ne/tri/seed13/mono",
        "lem_ne/tri/seed13/para",
    ]
    mono_train = len(mono_split(1000, 0.1, 13)[0]) + len(mono_split(500, 0.1, 13)[0])
    assert mono_train == 900 + 450
    expected = {
        "base/seed13": training_schedule(mono_train, epochs=2, batch_size=32, checkpoint_every="epoch"),
        "lem/tri/seed13/mono": training_schedule(
            mono_train, epochs=3, batch_size=16, grad_accum=2, checkpoint_every=10, min_evaluations=4
        ),
        "lem/tri/seed13/para": training_schedule(300, epochs=2.5, batch_size=8, checkpoint_every="epoch"),
    }
    for name, sched in expected.items():
        job = jobs[name]
        assert (job["steps"], job["eval_every"], job["evaluations"]) == (
            sched.steps, sched.eval_every, sched.evaluations
        ), name  # fmt: skip
        assert (job["kept_checkpoints"], job["peak_checkpoints"]) == (
            sched.kept_checkpoints,
            sched.peak_checkpoints,
        )
        assert job["counts"] == "lines*"
    mono = jobs["lem/tri/seed13/mono"]
    assert mono["tokens_per_example"] == 22  # 20 subwords + <s> </s>
    assert mono["tokens"] == pytest.approx(1350 * 3 * 22)
    para = jobs["lem/tri/seed13/para"]
    assert (para["examples"], para["valid_examples"], para["tokens_per_example"]) == (300, 20, 44)
    assert para["tokens"] == pytest.approx(300 * 2.5 * 44)
    # evaluation: every evaluation plus the final one over the validation set, a third of a step's work
    hours = (para["tokens"] + (para["evaluations"] + 1) * 20 * 44 / 3) / 1000 / 3600
    assert para["gpu_hours"] == pytest.approx(hours)
    # disk: weights + AdamW moments + tokenizer + state per checkpoint
    params = plan["model"]["parameters"]
    assert params == xlmr_mlm_parameters(
        4000, 128, 2, 256, 64 + 2
    )  # vocabulary not trained yet: the config's
    assert mono["checkpoint_bytes"] == 12 * params + 4000 * 90 + 1_000_000
    assert (
        mono["peak_disk_bytes"]
        == mono["peak_checkpoints"] * mono["checkpoint_bytes"] + mono["final_model_bytes"]
    )
    assert "total (5 jobs)" in table(plan)


def test_existing_features_are_counted_exactly(tmp_path):
    from datasets import Dataset, DatasetDict

    cfg = files_config(tmp_path)
    rows = {"input_ids": [[0, 5, 6, 2], [0, 5, 6, 7, 8, 2], [0, 9, 2]]}
    for lang in ("en", "si"):
        DatasetDict({"train": Dataset.from_dict(rows), "valid": Dataset.from_dict({"input_ids": [[0, 4, 2]]})}).save_to_disk(
            str(tmp_path / f"results/features/mono/{lang}")
        )  # fmt: skip
    plan = make_plan(validated(cfg), tmp_path)
    mono = next(j for j in plan["jobs"] if j["name"] == "lem/tri/seed13/mono")
    assert (mono["examples"], mono["valid_examples"], mono["counts"]) == (6, 2, "features")
    assert mono["tokens_per_example"] == pytest.approx(13 / 3)
    assert mono["tokens"] == pytest.approx(2 * 13 * 3)
    para = next(j for j in plan["jobs"] if j["name"] == "lem/tri/seed13/para")
    assert para["counts"] == "lines*"  # its features do not exist yet


def test_missing_counts_fail_loudly_naming_the_key(tmp_path):
    cfg = files_config(tmp_path)
    (tmp_path / "in/si-en.train.tsv").unlink()
    with pytest.raises(PlanError, match=r"plan\.estimates\.para_pairs\.si-en"):
        make_plan(validated(cfg), tmp_path)
    cfg["plan"]["estimates"]["para_pairs"] = {"si-en": 1234}
    with pytest.raises(PlanError, match=r"plan\.estimates\.para_valid_pairs\.si-en"):
        make_plan(validated(cfg), tmp_path)
    cfg["plan"]["estimates"]["para_valid_pairs"] = {"si-en": 50}
    para = next(j for j in make_plan(validated(cfg), tmp_path)["jobs"] if j["name"] == "lem/tri/seed13/para")
    assert (para["examples"], para["valid_examples"], para["counts"]) == (1234, 50, "estimate*")
    proc = lem_plan("--configfile", str(REPO / "config" / "paper.yaml"), "--out", str(tmp_path / "x.csv"))
    assert proc.returncode == 1 and "give a .txt, .tsv or .json file" in proc.stderr


def test_parameter_count_is_transformers(tmp_path):
    import torch
    from safetensors.torch import save_file
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    for arch in (
        {**SIZES["base"]},
        {**SIZES["tiny"], "vocab_size": 777},
        {"vocab_size": 4000, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 256, "max_position_embeddings": 66},
    ):  # fmt: skip
        with torch.device("meta"):
            model = XLMRobertaForMaskedLM(XLMRobertaConfig(type_vocab_size=1, **arch))
        assert xlmr_mlm_parameters(**arch) == sum(p.numel() for p in model.parameters()), arch
    small = XLMRobertaForMaskedLM(XLMRobertaConfig(type_vocab_size=1, **{**SIZES["tiny"], "vocab_size": 99}))
    small.save_pretrained(str(tmp_path), safe_serialization=True)
    assert safetensors_parameters(tmp_path / "model.safetensors") == sum(
        p.numel() for p in small.parameters()
    )
    save_file({"a": torch.zeros(2, 3)}, str(tmp_path / "x.safetensors"))
    assert safetensors_parameters(tmp_path / "x.safetensors") == 6


def test_every_pretraining_seed_is_its_own_job(tmp_path):
    cfg = files_config(tmp_path)
    cfg["pretrain"]["seeds"] = [1, 2, 3]
    jobs = [j["name"] for j in make_plan(validated(cfg), tmp_path)["jobs"]]
    assert jobs[:3] == ["base/seed1", "base/seed2", "base/seed3"]
    assert [j for j in jobs if j.startswith("lem/")] == [
        f"lem/tri/seed{s}/{stage}" for stage in ("mono", "para") for s in (1, 2, 3)
    ]


def test_paper_plan_counts_every_gpu_job_kind(tmp_path):
    """NER, sentiment, NMT, embedding and annotation rows beside pre-training, with the grid of the workflow."""
    config = load_config([PAPER])
    paper = yaml.safe_load(PAPER.read_text())
    plan = make_plan(config, tmp_path)
    tasks = {t["name"]: t for t in plan["tasks"]}
    assert {t["kind"] for t in plan["tasks"]} == {"ner", "sentiment", "nmt", "embedding", "annotation"}
    rows = len(paper["variants"]) + len(paper["reference_encoders"])  # curation rows: variants + references
    shares = len(paper["curation"]["settings"]["keep_fractions"])
    for pair in paper["curation"]["nmt"]["pairs"]:
        nmt = tasks[f"nmt/{pair}"]
        assert nmt["jobs"] == (rows + 1) * shares + 1  # + random at each share, + no_filter
        s = paper["curation"]["nmt"]["settings"]
        assert nmt["items"] == s["max_steps"] * s["batch_size"]
        assert nmt["basis"] == "estimate" and nmt["disk_bytes"] == nmt["jobs"] * 4 * 615_073_792
        emb = tasks[f"embed/curation/{pair}"]
        assert (emb["jobs"], emb["items"], emb["counts"]) == (
            rows,
            2 * paper["curation"]["max_pairs"],
            "max_pairs*",
        )
    # one pre-training seed: one job per row, each running every fine-tuning seed
    assert tasks["sentiment/cmcs"]["jobs"] == len(paper["variants"])
    assert tasks["sentiment/cmcs"]["items"] == paper["plan"]["estimates"]["sentiment_examples"]
    assert tasks["ner/model"]["items"] == paper["plan"]["estimates"]["ner_sentences"]
    ann = tasks["annotate/si"]
    assert ann["items"] == 1_000_000 + 3029 + 384 + 3608 + 384  # MADLAD si + both si pairs' train and valid
    assert ann["counts"] == "madlad*"
    for news in paper["mining"]["evalsets"]:
        assert tasks[f"embed/{news}"]["jobs"] == rows
    totals = plan["totals"]
    assert totals["other_jobs"] == sum(t["jobs"] for t in plan["tasks"])
    assert totals["all_gpu_hours"] == pytest.approx(
        totals["gpu_hours"] + sum(t["gpu_hours"] for t in plan["tasks"])
    )
    text = table(plan)
    for name in (
        "ner/model",
        "sentiment/cmcs",
        "nmt/si-en",
        "embed/curation/ta-en",
        "annotate/ta",
        "embed/news_itn",
    ):
        assert f"\n{name} " in text, name


def test_other_jobs_count_the_runs_files_and_take_measured_throughput(tmp_path):
    cfg = files_config(tmp_path)
    cfg["plan"]["throughput"] = {"embedding": 5000}
    write_lines(tmp_path / "results/eval/prepared/curation/si-en/pairs.tsv", 120, cols=3)
    cfg["curation"]["corpora"] = {"si-en": cfg["curation"]["corpora"]["si-en"]}
    plan = make_plan(validated(cfg), tmp_path)
    tasks = {t["name"]: t for t in plan["tasks"]}
    emb = tasks["embed/curation/si-en"]
    assert (emb["items"], emb["counts"], emb["basis"]) == (240, "lines*", "plan.throughput.embedding")
    per = 20 + 2  # subwords_per_sentence + specials, under embedding.max_length
    assert emb["tokens"] == pytest.approx(emb["jobs"] * 240 * per / 3)
    assert emb["gpu_hours"] == pytest.approx(emb["tokens"] / 5000 / 3600)
    assert not any(t["kind"] == "annotation" for t in plan["tasks"])  # lexicon backends: CPU jobs


def test_jobs_sharing_a_gpu_run_longer_and_the_plan_says_what_the_rate_must_be(tmp_path):
    config = load_config([PAPER])
    alone = make_plan(config, tmp_path)
    config["resources"]["gpu_share"] = 4
    shared = make_plan(config, tmp_path)
    assert shared["totals"]["gpu_hours"] == alone["totals"]["gpu_hours"]  # the GPU's time at the given rate
    assert any("resources.gpu_share = 4" in n and "--concurrent 4" in n for n in shared["notes"])
    longest = max(j["gpu_hours"] for j in alone["jobs"])
    assert f"{4 * longest:.1f} h" in " ".join(shared["notes"])  # each job takes 4 x as long
