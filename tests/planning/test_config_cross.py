"""Checks across config sections at load time (lem.config_check, run from common.smk before the DAG is
built): names used in paths, pairs and the languages they join, the pairs that evaluation sets, sentiment
datasets and curation corpora name, masking keys of the other strategy, model lengths, seeds, curation
shares. Every bad config fails in one line naming the key, the value and what is allowed; a few of them
also through a real `snakemake -n`, which must stop before any job, creating nothing under results/."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from snakemake.utils import validate
from support.dag import snakemake

from lem.config_check import ConfigError, check_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DELETE = object()
MODEL = "<a model folder with max_position_embeddings 514>"


def shipped(name: str) -> dict:
    """A shipped config as common.smk sees it: schema defaults filled in."""
    cfg = yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


CONFIGS = {name: shipped(name) for name in ("config.yaml", "paper.yaml", "gpu-smoke.yaml")}


class Bad(NamedTuple):
    changes: dict[str, Any]  # dotted key path (`|` for a dot inside a name) -> value (DELETE: remove it)
    key: str  # the key the message names first
    words: str  # a piece of the message: the value and what is allowed
    file: str = "config.yaml"


def apply(cfg: dict, path: str, value: Any, model: Path) -> None:
    *parents, last = [seg.replace("|", ".") for seg in path.split(".")]
    for seg in parents:
        cfg = cfg.setdefault(seg, {})
    if value is DELETE:
        del cfg[last]
    else:
        cfg[last] = str(model) if value == MODEL else value


STD = "pretrain.variants.mlm_tlm"
EVAL = {"root": "results/eval/news", "site": "GEN", "doc_pairs": "gold", "pairs": ["si-en"]}
CMCS = {"input": "results/eval/sentiment/generated.csv", "pair": "si-en", "prepare": {}}

# fmt: off
BAD = [
    # the controls: dictionaries keyed by mined pairs (a pair without one: "no dictionary"), lifts by evaluation sets
    Bad({"controls.lexical": {"en-si": "d.tsv"}}, "controls.lexical", "'en-si' is no mined pair (mining.evalsets mine si-en, si-ta, ta-en)"),
    Bad({"controls.positive_lift": {"news_x": 0.1}}, "controls.positive_lift", "['news_x'] are no evaluation set of mining.evalsets (news_gen)"),
    Bad({"controls.lexical": "lexicon.tsv"}, "controls.lexical", "'lexicon.tsv': expected `generated`, a mapping"),
    # pairs join two different configured languages
    Bad({"pairs": ["si-en", "si-si"]}, "pairs", "'si-si': expected 'src-tgt' joining two different languages"),
    Bad({"languages": ["en", "si"]}, "pairs", "'si-ta': expected 'src-tgt' joining two different languages of `languages` (en, si)"),
    Bad({"pairs": ["si-en", "si-en"]}, "pairs", "'si-en' is listed twice"),
    Bad({"pairs": ["sien"]}, "pairs", "'sien': expected 'src-tgt'"),
    # every language has its annotation settings
    Bad({"annotation.ta": DELETE}, "annotation.ta", "missing: every language of `languages` needs its annotation settings"),
    Bad({"annotation.si": DELETE}, "annotation.si", "missing", "paper.yaml"),
    # evaluation sets, sentiment datasets and curation corpora name configured pairs
    Bad({"mining.evalsets.news_gen.pairs": ["si-en", "en-ta"]}, "mining.evalsets.news_gen.pairs", "'en-ta' is not a configured pair; configured: si-en, si-ta, ta-en"),
    Bad({"pairs": ["si-en"], "languages": ["en", "si"], "curation.corpora": {"si-en": "x.tsv"}}, "mining.evalsets.news_gen.pairs", "'si-ta' is not a configured pair; configured: si-en"),
    # the generated world's languages, under the config's codes (any pair loads from the news layout)
    Bad({"corpus.generate.languages": {"xx": "si"}}, "languages", "'si' is not a language of the generated world (en, xx, ta"),
    Bad({"corpus.generate.languages": {"xx": "de"}}, "corpus.generate.languages.xx", "expected a code of 2-3 lower-case letters naming one of the built-in languages en, si, ta"),
    Bad({"pairs": ["si-en", "si-ta", "ta-en", "en-si"]}, "pairs", "'en-si' and si-en join the same two languages: expected each pair once"),
    Bad({"mining.evalsets.news_gen.pairs": ["si-en", "si-en"]}, "mining.evalsets.news_gen.pairs", "'si-en' is listed twice"),
    Bad({"sentiment.datasets.cmcs_gen.pair": "en-si"}, "sentiment.datasets.cmcs_gen.pair", "'en-si' is not a configured pair"),
    Bad({"sentiment.datasets.cmcs.pair": "ta-si"}, "sentiment.datasets.cmcs.pair", "'ta-si' is not a configured pair", "paper.yaml"),
    Bad({"curation.corpora.en-ta": "results/eval/noisy/en-ta.tsv"}, "curation.corpora", "'en-ta' is not a configured pair"),
    # corpus.source: files covers every language and pair, with one way to get validation pairs
    Bad({"corpus.files.mono.ta": DELETE}, "corpus.files.mono.ta", "missing: `corpus.source: files` needs a text file for every language", "paper.yaml"),
    Bad({"corpus.files.para.ta-en": DELETE}, "corpus.files.para.ta-en", "missing: `corpus.source: files` needs pair files", "paper.yaml"),
    Bad({"corpus.files.para.si-en.valid_size": 100}, "corpus.files.para.si-en", "either `valid` (validation files) or `valid_size`", "paper.yaml"),
    Bad({"corpus.files.para.si-en.valid": DELETE}, "corpus.files.para.si-en", "got neither", "paper.yaml"),
    # variants
    Bad({"variants": ["base", "lem_x"]}, "variants", "'lem_x' has no masking in pretrain.variants"),
    Bad({"pretrain.variants.base": {"strategy": "standard"}}, "pretrain.variants.base", "takes no masking; drop it"),
    # masking: probabilities, and a key of the other strategy is refused, not ignored
    Bad({"pretrain.variants.lem.mask_prob": 0.9, "pretrain.variants.lem.random_prob": 0.2}, "pretrain.variants.lem", "mask_prob + random_prob = 1.1"),
    Bad({"pretrain.variants.lem_ne.random_prob": 1.5}, "pretrain.variants.lem_ne.random_prob", "random_prob 1.5 not in [0, 1]"),
    Bad({"pretrain.variants.lem.mlm_probability": 0.15}, "pretrain.variants.lem.mlm_probability", "mlm_probability=0.15: not used by strategy 'lem'"),
    Bad({f"{STD}.entity_types": ["ne"]}, STD, "entity_types=['ne']: not used by strategy 'standard' (it takes mask_prob, random_prob, mlm_probability)"),
    Bad({f"{STD}.budget": 0.2}, STD, "budget=0.2: not used by strategy 'standard'", "paper.yaml"),
    Bad({f"{STD}.count_rule": "all_tokens"}, STD, "count_rule='all_tokens': not used by strategy 'standard'"),
    Bad({f"{STD}.rounding": "half_even"}, STD, "rounding='half_even': not used by strategy 'standard'"),
    Bad({f"{STD}.whole_word": False}, STD, "whole_word=False: not used by strategy 'standard'", "gpu-smoke.yaml"),
    # lengths fit the base model's positions
    Bad({"embedding.max_length": 128}, "embedding.max_length", "128 exceeds the base model's 64 tokens (the scratch base model is built for pretrain.max_length = 64); at most 64"),
    Bad({"base_model.path": MODEL, "pretrain.max_length": 600}, "pretrain.max_length", "600 exceeds the base model's 512 tokens", "paper.yaml"),
    Bad({"base_model.path": MODEL, "embedding.max_length": 1024}, "embedding.max_length", "max_position_embeddings 514 - 2); at most 512", "paper.yaml"),
    # neighbours and shares
    Bad({"mining.settings.k": 0}, "mining.settings.k", "must be >= 1"),
    Bad({"curation.settings.k": 0}, "curation.settings.k", "k=0: expected an integer >= 1"),
    Bad({"curation.settings.keep_fractions": [1.5]}, "curation.settings.keep_fractions", "keep_fractions=[1.5]: expected shares in (0, 1]"),
    Bad({"curation.settings.keep_fractions": [0.25, 0]}, "curation.settings.keep_fractions", "keep_fractions=[0.25, 0]: expected shares in (0, 1]"),
    Bad({"curation.settings.keep_fractions": [0.5, 0.5]}, "curation.settings.keep_fractions", "expected distinct shares"),
    Bad({"curation.settings.margin": "ratios"}, "curation.settings.margin", "margin='ratios': expected one of ('ratio', 'distance', 'absolute')"),
    Bad({"curation.settings.neighbourhood": "knn"}, "curation.settings.neighbourhood", "expected one of ('mean', 'pooled')"),
    # names used in paths
    Bad({"mining.evalsets": {"news gen": EVAL}}, "mining.evalsets", "name 'news gen' is used in file paths: expected letters, digits"),
    Bad({"mining.evalsets": {"sentiment": EVAL}}, "mining.evalsets", "name 'sentiment' is reserved"),
    Bad({"sentiment.datasets": {"cmcs/gen": CMCS}}, "sentiment.datasets", "name 'cmcs/gen' is used in file paths"),
    Bad({"sentiment.datasets": {"..": CMCS}}, "sentiment.datasets", "name '..' is used in file paths"),
    Bad({"crf_models": {"ta pos": {"task": "pos", "lang": "ta", "train": "x.conllu", "format": "conllu"}}}, "crf_models", "name 'ta pos'", "paper.yaml"),
    Bad({"sources.files.my file|csv": {"url": "https://example.org/a.csv"}}, "sources.files", "name 'my file.csv'", "paper.yaml"),
    Bad({"sources.line_aligned.nlpc:en-ta": {"src": "a", "tgt": "b"}}, "sources.line_aligned", "name 'nlpc:en-ta'", "paper.yaml"),
    Bad({"annotation_eval.annotators": {"hf ner": {}}}, "annotation_eval.annotators", "name 'hf ner'"),
    Bad({"variants": ["base", "lem ne"]}, "variants", "name 'lem ne'"),
    Bad({"languages": ["en", "si", "ta/x"]}, "languages", "name 'ta/x'"),
    # reference encoders: a row name of its own, a LASER code per language, a pinned hub model
    Bad({"variants": ["base", "ref_labse"], "pretrain.variants.ref_labse": {"strategy": "standard"}}, "variants", "'ref_labse' is the row of reference_encoders.labse", "paper.yaml"),
    Bad({"reference_encoders.laser.settings.languages": {"si": "sin_Sinh", "ta": "tam_Taml"}}, "reference_encoders.laser.settings.languages", "no FLORES-200 code for en", "paper.yaml"),
    Bad({"reference_encoders.labse.settings.revision": DELETE}, "reference_encoders.labse.settings.revision", "missing for the hub model sentence-transformers/LaBSE", "paper.yaml"),
    Bad({"reference_encoders": {"my labse": {"settings": {"backend": "sentence_transformers", "model": "m"}}}}, "reference_encoders", "name 'my labse'"),
    # sentiment seeds
    Bad({"sentiment.seeds": [1, 1]}, "sentiment.seeds", "[1, 1]: 1 is listed twice: expected distinct seeds"),
    Bad({"sentiment.seeds": []}, "sentiment.seeds", "[]: expected a non-empty list"),
    Bad({"sentiment.seeds": [-1]}, "sentiment.seeds", "[-1]: expected a non-empty list of distinct integers >= 0"),
    Bad({"sentiment.datasets.cmcs_gen.prepare.delimiter": ";;"}, "sentiment.datasets.cmcs_gen.prepare", "delimiter must be one character"),
    # issue 24: silently wrong before (an empty share list planned no_filter alone; a long sentiment length was capped)
    Bad({"curation.settings.keep_fractions": []}, "curation.settings.keep_fractions", "[]: expected at least one share in (0, 1]"),
    Bad({"sentiment.training.max_length": 4096}, "sentiment.training.max_length", "4096 exceeds the base model's 64 tokens"),
    Bad({"base_model.path": MODEL, "sentiment.training.max_length": 4096}, "sentiment.training.max_length", "4096 exceeds the base model's 512 tokens", "paper.yaml"),
    # issue 24: what the model's architecture fixes, checked at load (a traceback after the training before)
    Bad({"embedding.layer": 99}, "embedding.layer", "99: the base model has 2 layers (base_model.model), so hidden states 0..2"),
    Bad({"embedding.layer": -4}, "embedding.layer", "-4: the base model has 2 layers"),
    Bad({"base_model.path": MODEL, "embedding.layer": 13}, "embedding.layer", "13: the base model has 12 layers", "paper.yaml"),
    Bad({"base_model.model.num_attention_heads": 3}, "base_model.model.num_attention_heads", "3 does not divide hidden_size 128"),
    Bad({"mining.settings": {"index": "ivfpq", "candidates": "knn", "pq_m": 7}}, "mining.settings.pq_m", "7 does not divide the embedding dimension 128"),
    Bad({"base_model.path": MODEL, "mining.settings.index": "ivfpq", "mining.settings.candidates": "knn", "mining.settings.pq_m": 7}, "mining.settings.pq_m", "7 does not divide the embedding dimension 768", "paper.yaml"),
    Bad({"mining.settings": {"index": "ivfpq", "candidates": "knn", "pq_m": 32}, "base_model.model.hidden_size": 128, "controls.dim": 200}, "mining.settings.pq_m", "32 does not divide the embedding dimension 200 (controls.dim, the control rows)"),
    Bad({"base_model.path": MODEL, "mining.settings.index": "ivfpq", "mining.settings.candidates": "knn", "mining.settings.pq_m": 96, "controls.dim": 384}, "mining.settings.pq_m", "96 does not divide the embedding dimension 1024 (LASER3's, reference_encoders.laser)", "paper.yaml"),
    Bad({"seed": -5}, "seed", "-5: expected an integer seed in 0..4294967295"),
    Bad({"seed": 2**70}, "seed", f"{2**70}: expected an integer seed in 0..4294967295"),
    Bad({"pretrain.seeds": [1, 2**40]}, "pretrain.seeds", f"{2**40}: expected an integer seed"),
    Bad({"sentiment.datasets.cmcs_gen.prepare.seed": -1}, "sentiment.datasets.cmcs_gen.prepare.seed", "-1: expected an integer seed"),
    Bad({"curation.nmt.settings.bootstrap_seed": 2**32}, "curation.nmt.settings.bootstrap_seed", f"{2**32}: expected an integer seed"),
    # issue 24: a raw KeyError in common.smk or an input function before
    Bad({"base_model": {"source": "pretrained"}}, "base_model", "`source: pretrained` needs `path` (a local model folder) or `hub`"),
    Bad({"sentiment.datasets.cmcs.input": "raw:nothere.csv"}, "sentiment.datasets.cmcs.input", "'raw:nothere.csv': no source 'nothere.csv' in sources.files", "paper.yaml"),
    Bad({"sentiment.datasets.cmcs.input": "raw:../../etc/passwd"}, "sentiment.datasets.cmcs.input", "expected raw:<name> with <name> a source of sources.files", "paper.yaml"),
    Bad({"sources.multiner.dir": "unpacked:nothere.zip"}, "sources.multiner.dir", "no source 'nothere.zip' in sources.files", "paper.yaml"),
    Bad({"sources.multiner.dir": "unpacked:multiner.zip/../../x"}, "sources.multiner.dir", "no '..', '.' or empty segment", "paper.yaml"),
    Bad({"ner_model": DELETE}, "annotation_eval.annotators.hf_ner.ner.path", "is the NER model trained in the pipeline, but `ner_model` is not configured"),
    # issue 24: accepted before, acting as -1 (no cap)
    Bad({"base_model.training.max_steps": 0}, "base_model.training.max_steps", "max_steps must be -1 (train for `epochs`) or an integer >= 1, got 0"),
    Bad({"curation.nmt.settings.max_steps": 0}, "curation.nmt.settings.max_steps", "max_steps=0: expected an integer (> 0"),
]
# fmt: on


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A pretrained model folder as far as the checks go: xlm-roberta-base's 514 positions, 12 layers of 768."""
    folder = tmp_path_factory.mktemp("model")
    shape = {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12}
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 514, **shape}))
    return folder


def failure(bad: Bad, model: Path) -> str | None:
    cfg = copy.deepcopy(CONFIGS[bad.file])
    for path, value in bad.changes.items():
        apply(cfg, path, value, model)
    try:
        check_config(cfg)
    except ConfigError as err:
        return str(err)
    return None


def test_the_table_is_large():
    assert len(BAD) >= 30 and len({(b.key, b.words) for b in BAD}) == len(BAD)


@pytest.mark.parametrize("bad", BAD, ids=[f"{b.key}:{b.words[:24]}" for b in BAD])
def test_a_bad_config_fails_in_one_line_naming_key_value_and_what_is_allowed(bad, model):
    message = failure(bad, model)
    assert message is not None, f"{bad.changes} was accepted"
    assert message.startswith(bad.key), message
    assert bad.words in message and "\n" not in message, message


@pytest.mark.parametrize("name", CONFIGS)
def test_the_shipped_configs_pass(name):
    check_config(copy.deepcopy(CONFIGS[name]))


def test_lengths_of_a_model_not_there_yet_are_not_checked(tmp_path, monkeypatch):
    """A pretrained model is checked once its folder exists (fetched); before, nothing is said (the job that
    loads it does)."""
    monkeypatch.chdir(tmp_path)
    cfg = copy.deepcopy(CONFIGS["paper.yaml"])
    cfg["embedding"]["max_length"] = 4096
    cfg["embedding"]["layer"] = 13
    check_config(copy.deepcopy(cfg))  # resources/hf/FacebookAI/xlm-roberta-base/<commit> does not exist here
    hub = cfg["base_model"]["hub"]
    folder = tmp_path / "resources/hf" / hub["repo"] / hub["revision"]
    folder.mkdir(parents=True)
    shape = {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12}
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 514, **shape}))
    with pytest.raises(ConfigError, match=r"^embedding\.max_length: 4096 exceeds the base model's 512"):
        check_config(copy.deepcopy(cfg))
    cfg["embedding"]["max_length"] = 256
    with pytest.raises(
        ConfigError, match=r"^embedding\.layer: 13: the base model has 12 layers \(resources/hf/"
    ):
        check_config(cfg)


def test_a_stand_in_model_is_checked_before_it_is_built(tmp_path, monkeypatch):
    """Its architecture is lem.stand_in.SIZES[size]: known at planning."""
    monkeypatch.chdir(tmp_path)
    cfg = copy.deepcopy(CONFIGS["gpu-smoke.yaml"])
    cfg["embedding"]["max_length"] = 4096
    with pytest.raises(
        ConfigError, match=r"^embedding\.max_length: 4096 exceeds the base model's 512 tokens \(base_model"
    ):
        check_config(copy.deepcopy(cfg))
    cfg["embedding"]["max_length"] = 256
    cfg["embedding"]["layer"] = 13
    with pytest.raises(
        ConfigError, match=r"^embedding\.layer: 13: the base model has 12 layers \(base_model\.stand_in"
    ):
        check_config(copy.deepcopy(cfg))
    cfg["embedding"]["layer"] = -13
    check_config(cfg)


def test_masking_of_the_shipped_variants_still_aliases():
    """The refusal of other-strategy keys leaves every shipped variant valid (and lem_ne_noun_verb still
    an alias of lem)."""
    from lem.masking.collate import variant_aliases

    for cfg in CONFIGS.values():
        variants = cfg["pretrain"]["variants"]
        aliases = variant_aliases(variants, list(variants))
        if "lem_ne_noun_verb" in variants:
            assert aliases["lem_ne_noun_verb"] == "lem"


# Through a real `snakemake -n`: the message reaches the user and no job is planned or run.
REAL = [  # (key, start of the words): a pair, a language's annotation (a KeyError in an input function
    # before), a curation corpus of another pair (a MissingInputException before), a length, a share
    ("pairs", "'si-si'"),
    ("annotation.ta", "missing"),
    ("curation.corpora", "'en-ta'"),
    ("embedding.max_length", "128"),
    ("curation.settings.keep_fractions", "keep_fractions=[1.5]"),
    ("curation.settings.keep_fractions", "[]"),  # issue 24: the rows below were accepted or a KeyError
    ("seed", "-5"),
    ("base_model", "`source: pretrained`"),
    ("sentiment.datasets.cmcs.input", "expected raw:<name>"),
]


@pytest.mark.parametrize("which", REAL, ids=[k for k, _ in REAL])
def test_snakemake_stops_before_any_job(which, tmp_path, model):
    [bad] = [b for b in BAD if b.key == which[0] and b.words.startswith(which[1])]
    cfg = yaml.safe_load((REPO / "config" / bad.file).read_text(encoding="utf-8"))
    for path, value in bad.changes.items():
        apply(cfg, path, value, model)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", config=tmp_path / "bad.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{bad.key}" in out and bad.words in out, out
    assert "Job stats" not in out and "rule " not in out, out
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()


def test_free_text_with_single_quotes_reaches_the_commands_unchanged(tmp_path):
    """Before: any apostrophe in the config stopped planning for every target (as_json refused it); now it
    is written as the JSON escape \\u0027 inside the single-quoted argument, so the command reads it back."""
    import shlex

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    note = "Tom's file; it's $(not run) `either`"
    cfg["sources"] = {
        "files": {"x.csv": {"url": "https://example.org/x.csv", "allow_unpinned": True, "note": note}}
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "-p", "results/plan.txt", config=tmp_path / "c.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    [line] = [x.removeprefix("Shell command: ") for x in out.splitlines() if "lem plan cost" in x]
    args = shlex.split(line)
    received = json.loads(args[args.index("--config-json") + 1])
    assert received["sources"]["files"]["x.csv"]["note"] == note


def test_a_hub_model_is_checked_by_a_job_before_any_training(tmp_path, model, capsys):
    """On the run that fetches a hub model, its facts are not known at planning: `lem plan check-model`
    (rule check_base_model) checks them, and the first training jobs wait for it."""
    from lem.cli import command

    plan_main = command("plan")
    cfg = copy.deepcopy(CONFIGS["paper.yaml"])
    cfg["base_model"] = {"source": "pretrained", "path": str(model)}
    out = tmp_path / "check.json"
    args = ["check-model", "--config-json", json.dumps(cfg), "--out", str(out)]
    assert plan_main(args) == 0
    assert json.loads(out.read_text()) == {
        "model": str(model), "layers": 12, "hidden": 768, "heads": 12, "where": str(model / "config.json"),
        "tokens": 512,
    }  # fmt: skip
    cfg["embedding"]["layer"] = 13
    assert (
        plan_main(["check-model", "--config-json", json.dumps(cfg), "--out", str(tmp_path / "bad.json")]) == 1
    )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("lem plan check-model: embedding.layer: 13: the base model has 12 layers")
    cfg["base_model"]["path"] = str(tmp_path / "not-there")
    assert (
        plan_main(["check-model", "--config-json", json.dumps(cfg), "--out", str(tmp_path / "bad.json")]) == 1
    )
    assert "not-there/config.json: expected a model config" in capsys.readouterr().err
    assert not (tmp_path / "bad.json").exists()

    proc = snakemake(tmp_path, "-n", config=REPO / "config" / "paper.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    blocks = out.split("\nrule ")
    assert any(b.startswith("check_base_model:") for b in blocks)
    mono = [b for b in blocks if b.startswith("pretrain_mono:")]
    ner = [b for b in blocks if b.startswith("train_ner:")]
    assert mono and ner and all("results/checks/base_model.json" in b for b in mono + ner)


@pytest.mark.parametrize("section", ["curation", "sentiment", "base_model"])
def test_an_optional_section_left_out_plans(section, tmp_path):
    """Before: a raw KeyError in common.smk. Now the schema's defaults: no curation or sentiment job, a model
    trained from scratch."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    del cfg[section]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", config=tmp_path / "c.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "KeyError" not in out, out
    gone = {"curation": "rule curate:", "sentiment": "rule sentiment:", "base_model": None}[section]
    assert gone is None or gone not in out
