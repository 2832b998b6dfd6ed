"""Every config section is checked key by key before the DAG is built: a misspelt key, a value of the wrong
type or a value the section's settings dataclass refuses fails `snakemake -n`, naming the key path, and no
job runs (lem.config_check, called from workflow/rules/common.smk right after the schema)."""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.dag import snakemake

from lem.config_check import SECTION, SECTIONS, ConfigError, check_workflow_config
from lem.config_check.provenance import _uses
from lem.plan.settings import CODE_WILDCARDS
from lem.run import Run, settings
from lem.run.paths import fill
from lem.run.settings import SETTINGS, settings_for

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CONFIGS = {
    name: yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))
    for name in ("config.yaml", "paper.yaml", "gpu-smoke.yaml")
}
BOGUS = "bogus_key"


def loaded(config: dict[str, Any]) -> str | None:
    """What common.smk does with a config before building the DAG: the schema (defaults filled), then
    check_config. The error message, or None when the config is accepted."""
    config = copy.deepcopy(config)
    try:
        check_workflow_config(config, SCHEMA)
    except ConfigError as err:
        return str(err)
    return None


def node(config: dict, path: str) -> dict:
    """The mapping at dotted `path` (segments with dots inside, e.g. a file name, are given as `a|b`)."""
    for seg in path.split("."):
        config = config.setdefault(seg.replace("|", "."), {})
    return config


@dataclass
class Typo:
    path: str  # where the bogus key goes (dotted; `|` for a dot inside a key)
    file: str = "config.yaml"
    section: str | None = None  # the lem.config_check.SECTIONS path it exercises (None: schema only)

    @property
    def id(self) -> str:
        return f"{self.path or '<top>'}@{self.file}"


TYPOS = [
    # sections read by a settings dataclass: lem.config_check names `path.bogus_key`
    Typo("corpus.generate", section="corpus.generate"),
    Typo("annotation.en", section="annotation.<lang>"),
    Typo("annotation.si.pos", section="annotation.<lang>"),
    Typo("annotation.ta.ner", "paper.yaml", section="annotation.<lang>"),
    Typo("annotation_eval.annotators.hf_ner", section="annotation_eval.annotators.<name>"),
    Typo("annotation_eval.annotators.hf_ner.ner", section="annotation_eval.annotators.<name>"),
    Typo("annotation_coverage", section="annotation_coverage"),
    Typo("leakage", section="leakage"),
    Typo("ner_model.settings", section="ner_model.settings"),
    Typo("ner_model.settings", "paper.yaml", section="ner_model.settings"),
    Typo("sources.madlad.settings", "paper.yaml", section="sources.madlad.settings"),
    Typo("sources.multiner.settings", "paper.yaml", section="sources.multiner.settings"),
    Typo("base_model.model", section="base_model.model"),
    Typo("base_model.training", section="base_model.training"),
    Typo("pretrain.stages.mono.training", section="pretrain.stages.<stage>.training"),
    Typo("pretrain.stages.para.training", "paper.yaml", section="pretrain.stages.<stage>.training"),
    Typo("pretrain.variants.lem", section="pretrain.variants.<name>"),
    Typo("pretrain.variants.mlm_tlm", "paper.yaml", section="pretrain.variants.<name>"),
    Typo("embedding", section="embedding"),
    Typo("mining.settings", section="mining.settings"),
    Typo("mining.settings", "paper.yaml", section="mining.settings"),
    Typo("mining.evalsets.news_gen.leakage", section="mining.evalsets.<name>.leakage"),
    Typo("sentiment.datasets.cmcs_gen.prepare", section="sentiment.datasets.<name>.prepare"),
    Typo("sentiment.datasets.cmcs.prepare", "paper.yaml", section="sentiment.datasets.<name>.prepare"),
    Typo("sentiment.training", section="sentiment.training"),
    Typo("curation.settings", section="curation.settings"),
    Typo("curation.filters", section="curation.filters"),
    Typo("curation.filters", "paper.yaml", section="curation.filters"),
    Typo("reference_encoders.labse.settings", "paper.yaml", section="reference_encoders.<name>.settings"),
    Typo("curation.nmt.settings", section="curation.nmt.settings"),
    Typo("curation.nmt.settings", "paper.yaml", section="curation.nmt.settings"),
    Typo("evidence", section="evidence"),
    Typo("evidence.margin", section="evidence"),
    Typo("controls", section="controls"),
    # sections the schema types completely: its message names the key and the instance path
    Typo(""),
    Typo("corpus"),
    Typo("corpus.files", "paper.yaml"),
    Typo("corpus.files.para.si-en", "paper.yaml"),
    Typo("annotation_eval"),
    Typo("tokenizer"),
    Typo("base_model"),
    Typo("base_model.hub", "paper.yaml"),
    Typo("base_model.stand_in", "gpu-smoke.yaml"),
    Typo("pretrain"),
    Typo("pretrain.stages"),
    Typo("pretrain.stages.mono"),
    Typo("mining"),
    Typo("mining.evalsets.news_gen"),
    Typo("sentiment"),
    Typo("sentiment.datasets.cmcs_gen"),
    Typo("curation"),
    Typo("sources", "paper.yaml"),
    Typo("sources.files.cmcs|csv", "paper.yaml"),
    Typo("sources.madlad", "paper.yaml"),
    Typo("sources.line_aligned.nlpc-en-ta", "paper.yaml"),
    Typo("sources.multiner", "paper.yaml"),
    Typo("crf_models.ta_pos", "paper.yaml"),
    Typo("crf_models.ta_pos.settings", "paper.yaml"),
    Typo("ner_model"),
    Typo("plan", "paper.yaml"),
    Typo("plan.estimates", "paper.yaml"),
    Typo("resources"),
    Typo("reference_encoders.laser", "paper.yaml"),
]


@pytest.mark.parametrize("name", CONFIGS)
def test_the_shipped_configs_pass(name, capsys):
    assert loaded(CONFIGS[name]) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("typo", TYPOS, ids=lambda t: t.id)
def test_a_misspelt_key_of_every_section_fails_naming_it(typo):
    cfg = copy.deepcopy(CONFIGS[typo.file])
    (node(cfg, typo.path) if typo.path else cfg)[BOGUS] = 1
    message = loaded(cfg)
    assert message is not None, f"{typo.path}.{BOGUS} was accepted"
    # the schema (a section it types completely) or lem.config_check, in one line:
    # `path.bogus_key: unknown key; known: ...`
    where = f"{typo.path}.{BOGUS}".replace("|", ".").lstrip(".")
    assert message.startswith(f"{where}: unknown key"), message
    assert "\n" not in message and len(message) < 1000, message


def test_every_checked_section_has_a_typo_case():
    covered = {t.section for t in TYPOS}
    assert {s.path for s in SECTIONS} <= covered


Mutation = Callable[[dict], Any]


def setting(path: str, value: Any) -> Mutation:
    def mutate(cfg: dict) -> None:
        *parents, key = path.split(".")
        node(cfg, ".".join(parents))[key] = value

    return mutate


# fmt: off
BAD_VALUES = [
    # (file, mutation, the key path named, a piece of the message)
    ("config.yaml", setting("mining.settings.k", 0), "mining.settings.k", "must be >= 1"),
    ("config.yaml", setting("mining.settings.k", "4"), "mining.settings.k", "expected an integer, got '4'"),
    ("config.yaml", setting("mining.settings.threshold", "0.5"), "mining.settings.threshold", "a number or null"),
    ("config.yaml", setting("mining.settings.margin", "ratoi"), "mining.settings.margin", "expected one of"),
    ("config.yaml", setting("mining.settings.index", "ivf"), "mining.settings.index", "candidates='knn'"),
    ("config.yaml", setting("mining.settings.retrieval", ["forward", "both"]), "mining.settings.retrieval", "retrieval"),
    ("paper.yaml", setting("mining.settings.per_document", "yes"), "mining.settings.per_document", "true or false"),
    ("config.yaml", setting("curation.settings.k", "4"), "curation.settings.k", "expected an integer"),
    ("config.yaml", setting("curation.settings.keep_fractions", 0.5), "curation.settings.keep_fractions", "a list"),
    ("config.yaml", setting("sentiment.training.epochs", "3"), "sentiment.training.epochs", "expected a number"),
    ("config.yaml", setting("sentiment.datasets.cmcs_gen.prepare.train", 0.9), "sentiment.datasets.cmcs_gen.prepare.train", "sum to 1"),
    ("paper.yaml", setting("sentiment.datasets.cmcs.prepare.drop_labels", "Conflict"), "sentiment.datasets.cmcs.prepare.drop_labels", "a list of strings"),
    ("config.yaml", setting("corpus.generate.news_aligned_min", 0), "corpus.generate.news_aligned_min", "news_aligned_min"),
    ("config.yaml", setting("corpus.generate.mono_sentences", 1.5), "corpus.generate.mono_sentences", "an integer"),
    ("config.yaml", setting("annotation.en.pos.format", "tab"), "annotation.en.pos", "pos.format must be one of"),
    ("config.yaml", setting("annotation.en.ner.backend", "sinling"), "annotation.en.ner", "does not do ner"),
    ("config.yaml", setting("annotation_eval.annotators.hf_ner.ner", {"backend": "hf_ner"}), "annotation_eval.annotators.hf_ner.ner", "needs ['path']"),
    ("config.yaml", setting("ner_model.settings.on_error", "ignore"), "ner_model.settings.on_error", "raise or skip"),
    ("config.yaml", setting("ner_model.settings.epochs", "3"), "ner_model.settings.epochs", "expected a number"),
    ("config.yaml", setting("pretrain.variants.lem.mask_prob", 0.95), "pretrain.variants.lem.mask_prob", "exceeds 1"),
    ("config.yaml", setting("pretrain.stages.mono.epochs.si_en", 3), "pretrain.stages.mono.epochs.si_en", "unknown scope"),
    ("paper.yaml", setting("sources.madlad.settings.lid", "cld3"), "sources.madlad.settings.lid", "lid must be"),
    ("paper.yaml", setting("sources.madlad.settings.min_words", "6"), "sources.madlad.settings.min_words", "an integer"),
    ("paper.yaml", setting("sources.multiner.settings.valid", 0.95), "sources.multiner.settings.valid", "valid + test"),
    ("paper.yaml", setting("reference_encoders.labse.settings.revision", "main"), "reference_encoders.labse.settings", "revision='main': not a 40-hex commit"),
    ("paper.yaml", setting("reference_encoders.laser.settings.laser3", ["sinhala"]), "reference_encoders.laser.settings", "laser3=('sinhala',): expected a list of FLORES-200"),
    # keys the rule sets itself: refused, not silently replaced
    ("config.yaml", setting("pretrain.stages.mono.training.epochs", 3), "pretrain.stages.mono.training.epochs", "pretrain.stages.mono.epochs"),
    ("paper.yaml", setting("sources.madlad.settings.size", 10), "sources.madlad.settings.size", "sources.madlad.sizes"),
    ("config.yaml", setting("curation.settings.mining", {"k": 2}), "curation.settings.mining", "mining.settings"),
    # across sections
    ("paper.yaml", setting("crf_models.ta_pos.lang", "si"), "annotation.ta.pos.path", "crf_models.ta_pos tags pos/si"),
    ("paper.yaml", setting("crf_models.ta_pos.tagset", "ucsc"), "crf_models.ta_pos.tagset", "UPOS"),
    ("config.yaml", lambda cfg: cfg["annotation"].pop("ta"), "annotation.ta", "missing"),
]
# fmt: on


@pytest.mark.parametrize(
    "file, mutate, where, words", BAD_VALUES, ids=[f"{w}@{f}" for f, _, w, _ in BAD_VALUES]
)
def test_a_bad_value_fails_naming_its_key(file, mutate, where, words):
    cfg = copy.deepcopy(CONFIGS[file])
    mutate(cfg)
    message = loaded(cfg)
    assert message is not None
    assert message.startswith(f"{where}: ") or message.startswith(f"{where}."), message
    assert words in message and "\n" not in message, message


def test_a_base_model_max_length_other_than_pretrains_is_reported(capsys):
    """base_model.model.max_length is not read (the base model is built for pretrain.max_length); the
    embedded default carries it with the same value, so a different one is a warning, not an error."""
    cfg = copy.deepcopy(CONFIGS["config.yaml"])
    cfg["pretrain"]["max_length"] = 48
    cfg["embedding"]["max_length"] = 48  # at most the model's positions (lem.config_check)
    cfg["sentiment"]["training"]["max_length"] = 48  # likewise
    cfg["ner_model"]["settings"]["max_length"] = 48  # likewise
    assert loaded(cfg) is None
    err = capsys.readouterr().err
    assert "warning: base_model.model.max_length: 64 is ignored" in err and "pretrain.max_length (48)" in err


def test_every_section_a_rule_passes_to_a_verb_is_checked():
    """The config sections serialised into a rule's `--settings` (as_json) are the checked sections (or
    what the rule merges into them): a new one must be added to lem.config_check.SECTIONS. The rules' own
    `as_json(config[...])` calls are read from the rule files, the rest from the accounts of the rules' settings
    functions (lem.run.settings.SETTINGS)."""
    # besides the sections: values the schema types and lem.config_check checks (the report's evaluation sets:
    # lem.config_check.names; its reference rows: _check_references)
    allowed = {s.path for s in SECTIONS} | {
        "seed",
        "sources.madlad.sizes.<name>",
        "<config>",
        "mining.evalsets",
        "reference_encoders",
        "pretrain.max_length",
        "pretrain.stages.<stage>.epochs.default",
        "base_model",  # check_base_model's copy: checked by lem.config_check.check_base_model
    }
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((REPO / "workflow" / "rules").glob("*.smk"))
    )
    seen = set()
    for m in re.finditer(r"as_json\(", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        call = text[m.end() : i - 1]
        if call.strip() in ("config", "obj"):
            seen.add("<config>")
        for ref in re.finditer(r"config((?:\[[^\]]+\]|\.get\([^,)]+)+)", call):
            segs = re.findall(r'\["([^"]+)"\]|\[([^\]"]+)\]|\.get\("([^"]+)"', ref.group(1))
            seen.add(".".join(a or c or "<name>" for a, b, c in segs))
    for rule in SETTINGS.values():
        for part in rule.parts:
            keys = [part.path] + [add.source for add in part.before + part.after]
            for key in filter(None, keys):
                seen.add(
                    re.sub(r"\{\w+\}", "<name>", re.sub(r"stages\.(mono|para)\.", "stages.<stage>.", key))
                )
            if part.section is not None:  # the check builds it as the section it names
                assert part.section in {s.path for s in SECTIONS}, part
    seen = {re.sub(r"\.(?:en|si|ta)\b", ".<lang>", s) for s in seen}

    def checked(path: str) -> bool:  # a checked section, or one key of one (e.g. mining.settings.device)
        return any(p in allowed for p in (path, path.replace("<name>", "<lang>"), path.rpartition(".")[0]))

    unknown = sorted(s for s in seen if not checked(s))
    assert "mining.settings" in seen and "embedding" in seen
    assert not unknown, f"sections passed to a `lem` verb but not checked by lem.config_check: {unknown}"


def _at(settings: Any, dotted: str) -> Any:
    for key in filter(None, dotted.split(".")):
        settings = settings[key]
    return settings


@pytest.mark.parametrize("file", [*CONFIGS, "test"])
def test_each_rules_function_passes_the_sections_its_account_says(file):
    """Each rule's settings are built by its function (lem.run.settings) and described by its account, which the
    config check reads (lem.config_check.provenance): for every checked section of a shipped config, the section
    built from the account with its merges is what the function passes, where the job's own values are the
    config's (the run's seed as the pre-training seed, a stage's default epochs)."""
    if file == "test":
        config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text(encoding="utf-8"))
    else:
        config = copy.deepcopy(CONFIGS[file])
    check_workflow_config(config, SCHEMA)
    run = Run(config)
    uses = list(_uses(config))
    # a job's wildcards that a section's build leaves open: any entry (they pick another section, not a value)
    trained = [v for v in config["pretrain"]["variants"] if v in run.trained]
    any_job = {"seed": config["seed"], "tvariant": trained[0] if trained else None, "lang": run.langs[0]}
    matched = set()
    for rule, (build, parts) in SETTINGS.items():
        wanted = inspect.signature(build).parameters
        for part in parts:
            for w in settings._instances(config, part) if part.section else ():
                path = ".".join(fill(s, **w) for s in part.path.split("."))
                if not any((u.section, u.path) == (part.section, path) for u in uses):
                    continue  # its parent is not a mapping: left to the schema, as the check leaves it
                job = {**{k: v for k, v in any_job.items() if k in wanted}, **w}
                passed = _at(settings_for(run, rule, **job), part.into)
                for i, use in enumerate(uses):
                    if (use.section, use.path) != (part.section, path):
                        continue
                    data = {} if use.data is None and part.optional else use.data
                    merged = {**use.before, **data, **use.after} if part.before or part.after else data
                    if part.finish is not None:
                        merged = part.finish(run, job["seed"], merged)
                    if merged == passed:
                        matched.add(i)
    assert matched == set(range(len(uses))), [uses[i] for i in set(range(len(uses))) - matched]


def test_the_accounts_name_the_keys_the_check_refuses():
    """The keys the check refuses in a section (the rule sets them: SECTIONS' `overridden`) and those it says
    the rule adds (`injected`) come from the rules' accounts (lem.run.settings.SETTINGS)."""
    config = copy.deepcopy(CONFIGS["config.yaml"])
    check_workflow_config(config, SCHEMA)
    by_path = {u.path: u for u in _uses(config)}
    assert by_path["curation.settings"].sources == {"mining": "mining.settings"}
    assert by_path["corpus.generate"].sources == {"seed": "seed"}
    assert SECTION["corpus.generate"].injected == {"seed": "seed"}
    assert SECTION["mining.settings"].injected == {} == SECTION["mining.settings"].overridden
    assert SECTION["curation.settings"].overridden == {"mining": "mining.settings"}
    assert SECTION["pretrain.stages.<stage>.training"].overridden == {
        "epochs": "pretrain.stages.<stage>.epochs.default"
    }
    assert SECTION["sources.madlad.settings"].overridden == {"size": "sources.madlad.sizes.<lang>"}
    table = {p.section for rule in SETTINGS.values() for p in rule.parts if p.section}
    assert table == {s.path for s in SECTIONS}


# --- the real thing, twice: snakemake -n on a config with a typo ------------------------------------------


@pytest.mark.parametrize(
    "file, path, key",
    [("config.yaml", "mining.settings", "kk"), ("paper.yaml", "sources.madlad.settings", "min_word")],
)
def test_snakemake_dry_run_stops_before_any_job(tmp_path, file, path, key):
    cfg = copy.deepcopy(CONFIGS[file])
    node(cfg, path)[key] = 3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    proc = snakemake(tmp_path, "-n", config=bad)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{path}.{key}: unknown key; known: " in out, out
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()
    assert "Building DAG of jobs" not in out and "Job stats" not in out


# --- the report's settings: the evidence and controls sections, defaults in their dataclasses ---------------


def _schema_defaults(node: dict, schema: dict) -> Any:
    """What the schema fills in for `node` when the config leaves it out: its `default`, with the defaults of
    its properties filled inside a mapping (as Snakemake's validate(set_default=True) does)."""
    while "$ref" in node:
        node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
    value = copy.deepcopy(node.get("default"))
    if isinstance(value, dict):
        for key, prop in node.get("properties", {}).items():
            while "$ref" in prop:
                prop = schema["definitions"][prop["$ref"].rsplit("/", 1)[1]]
            if key not in value and "default" in prop:
                value[key] = _schema_defaults(prop, schema)
    return value


@pytest.mark.parametrize(
    "section, cls",
    [
        ("evidence", "lem.evidence.compare:EvidenceSettings"),
        ("controls", "lem.evidence.controls:ControlSettings"),
    ],
)
def test_the_schema_defaults_of_the_report_sections_are_their_dataclass_defaults(section, cls):
    """`evidence` and `controls` have their defaults in one place, their settings dataclass: the schema fills
    in the same values, key by key down to `evidence.margin.<task>` and the default families."""
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    assert SECTION[section].settings == cls
    filled = _schema_defaults(schema["properties"][section], schema)
    assert filled == SECTION[section].cls().to_dict()
    assert SECTION[section].cls.from_dict(filled) == SECTION[section].cls()


def test_the_report_reads_the_config_through_its_settings_function():
    """The report rule passes `rule_settings.report(RUN)` (`--settings`), built into one ReportSettings: the
    config's evidence (a margin given merges per task), controls, evaluation sets and reference controls."""
    from lem.report.settings import ReportSettings

    config = copy.deepcopy(CONFIGS["config.yaml"])
    config["evidence"] = {"alpha": 0.1, "margin": {"nmt": 2.0}}
    check_workflow_config(config, SCHEMA)
    passed = settings.report(Run(config))
    assert set(passed) == {"evidence", "controls", "evalsets", "references"}
    s = ReportSettings.from_dict(passed)
    assert (
        s.evidence.alpha == 0.1
        and s.evidence.margin_of("nmt") == 2.0
        and s.evidence.margin_of("mining") == 0.02
    )
    assert s.controls.lexical == config["controls"]["lexical"]
    assert s.evalsets == config["mining"]["evalsets"] and s.references == {}
    assert {u.section for u in _uses(config)} >= {"evidence", "controls"}


def test_lem_plan_settings_prints_a_rules_config_keys_and_values(capsys):
    """`lem plan settings RULE`: the account of a rule's settings as data, each config key with its value in a
    config."""
    from lem.cli import command

    assert command("plan")(["settings", "curate", "--configfile", str(REPO / "config" / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "`mining` <- config `mining.settings` through code `curation_mining`" in out
    assert '= `curation.settings`: {"keep_fractions": [0.25]}' in out
    assert 'passed: {"keep_fractions": [0.25], "mining": {"k": 4' in out
    assert command("plan")(["settings", "report"]) == 0
    out = capsys.readouterr().out
    assert "`evidence`: config `evidence` (checked as section `evidence`" in out
    assert "code `reference_controls`" in out
    assert command("plan")(["settings", "nope"]) != 0
    assert "no settings for rule 'nope'" in capsys.readouterr().err


def test_the_rules_call_their_settings_functions_by_name():
    """Every rule with settings calls its own function (`rule_settings.<rule>(RUN, ...)`, lem.run.settings),
    no rule file names one by string, and each function an account names is one lem plan settings can say."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "workflow" / "rules").glob("*.smk"))
    called = set(re.findall(r"rule_settings\.(\w+)\(\s*RUN", text))
    assert called == set(SETTINGS) and "settings_for" not in text
    for rule, (build, parts) in SETTINGS.items():
        assert build.__name__ == rule and build is getattr(settings, rule)
        for part in parts:
            for merge in (*part.before, *part.after):
                assert {merge.code, merge.job} - {None} <= set(CODE_WILDCARDS), (rule, merge)
            assert part.finish in (None, *CODE_WILDCARDS), (rule, part)
