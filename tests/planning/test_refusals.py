"""Issue 38's probes, replayed: each bad config, command-line argument or input file is refused before any
job (or by its verb) in one line naming the key, the argument or the file, with what was expected; none
is accepted. Dry planning only: the config rows run the workflow's own check (`check_workflow_config`, as
workflow/rules/common.smk and `lem plan cost` call it), the command rows call `lem` in-process."""

from __future__ import annotations

import copy
import errno
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from support.dag import snakemake

from lem.cli import main as lem
from lem.config_check import ConfigError, check_workflow_config
from lem.report.readme import README_BEGIN, README_END

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DELETE = object()
TMP = "<tmp>"  # replaced by the test's folder in every string value


def config(name: str) -> dict[str, Any]:
    return yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))


CONFIGS = {name: config(name) for name in ("config.yaml", "local.yaml")}

# the generated world with Sinhala written as xx, and with the codes of Sinhala and Tamil swapped
XX = {
    "corpus.generate.languages": {"xx": "si"},
    "corpus.generate.noisy_extra_pairs": {"xx-en": 10},
    "languages": ["en", "xx", "ta"],
    "pairs": ["xx-en", "xx-ta", "ta-en"],
    "mining.evalsets.news_gen.pairs": ["xx-en", "xx-ta", "ta-en"],
    "curation.corpora": {"xx-en": "results/eval/noisy/xx-en.tsv"},
    "curation.nmt.pairs": ["xx-en"],
    "curation.nmt.valid": {"xx-en": "v.tsv"},
    "curation.nmt.test": {"xx-en": "t.tsv"},
    "sentiment.datasets.cmcs_gen.pair": "xx-en",
    "annotation.si": DELETE,
    "annotation.xx": {
        "pos": {"backend": "lexicon", "format": "tsv", "path": "results/corpus/lexicon/xx.pos.tsv"},
        "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": "results/corpus/lexicon/xx.ner.tsv"},
    },
    "annotation_eval.gold": {"en": "results/corpus/gold/en.conll", "xx": "results/corpus/gold/xx.conll"},
}
XX_TAGSET = {**XX, "annotation.xx.pos.tagset": "ucsc"}
SWAPPED = {
    "corpus.generate.languages": {"si": "ta", "ta": "si"},
    "pairs": ["si-en", "ta-si", "ta-en"],
    "mining.evalsets.news_gen.pairs": ["si-en", "ta-si", "ta-en"],
    "curation.corpora": {p: f"results/eval/noisy/{p}.tsv" for p in ("si-en", "ta-si", "ta-en")},
}
SWAPPED_TAGSETS = {**SWAPPED, "annotation.si.pos.tagset": "upos", "annotation.ta.pos.tagset": "ucsc"}
NOISY = f"{TMP}/noisy.tsv"
ORACLE = {"curation.corpora.si-en": NOISY}
NMT_ON = {"curation.nmt.pairs": ["si-en"]}  # config/nmt.yaml's key: the oracle ranks for NMT only
NAN, INF = float("nan"), float("inf")
TAMIL = "தமிழ் மொழி ஒரு செம்மொழி ஆகும் இது இந்தியா இலங்கை சிங்கப்பூர் நாடுகளில் பேசப்படுகிறது\n"
ENGLISH = "the quick brown fox jumps over the lazy dog near the river bank\n"
SINHALA = "මෙය සිංහල භාෂාවෙන් ලියූ වාක්‍යයකි ශ්‍රී ලංකාවේ ජනතාව කතා කරයි\n"
LINES = {"si.txt": SINHALA * 20, "en.txt": ENGLISH * 20}


def retrieval(**keys: Any) -> dict[str, Any]:
    """Changes adding a retrieval set `ret` (format: parallel, si-en) of the files of LINES, with `keys` set."""
    base = {
        "format": "parallel",
        "pairs": ["si-en"],
        "files|si": f"{TMP}/si.txt",
        "files|en": f"{TMP}/en.txt",
    }
    return {f"mining.evalsets.ret.{k}".replace("|", "."): v for k, v in {**base, **keys}.items()}


def family(name: str, *entries: tuple[str, str, list[str]]) -> dict[str, Any]:
    """Changes declaring `evidence.families.<name>` as the (a, b, tasks) entries."""
    return {f"evidence.families.{name}": [{"a": a, "b": b, "tasks": t} for a, b, t in entries]}


MINING = ["mining"]


class Bad(NamedTuple):
    id: str
    changes: dict[str, Any]  # dotted key (`|` for a dot inside a name) -> value (DELETE: remove it)
    key: str  # what the message names first
    words: str  # a piece of the message: what was expected
    file: str = "config.yaml"
    files: dict[str, str] = {}  # files written under the test's folder first (name -> text)


# fmt: off
BAD = [
    # tracebacks or late failures before: refused at planning now
    Bad("ner-max-length", {"ner_model.settings.max_length": 4096}, "ner_model.settings.max_length", "4096 exceeds the base model's 64 tokens"),
    Bad("renamed-no-tagset", XX, "annotation.xx.pos.tagset", "missing: 'xx' has no default POS tag set (en, si and ta have one); expected ucsc"),
    Bad("renamed-no-script", XX_TAGSET, "curation.filters.scripts.xx", "missing: xx is the generated si"),
    Bad("renamed-wrong-tagset", {**XX, "annotation.xx.pos.tagset": "penn"}, "annotation.xx.pos.tagset", "holds si's ucsc tags"),
    Bad("huge-noisy-extra", {"corpus.generate.noisy_extra_pairs": {"si-en": 10**12}}, "corpus.generate.noisy_extra_pairs.si-en", "expected an integer count in 0..1,000,000"),
    Bad("huge-mono", {"corpus.generate.mono_sentences": 10**12}, "corpus.generate.mono_sentences", "expected an integer count in 1..1,000,000"),
    Bad("long-variant", {"variants": ["base", "v" * 300], f"pretrain.variants.{'v' * 300}": {"strategy": "standard"}}, "variants", "has 300 characters: expected at most 64"),
    Bad("repeated-variant", {"variants": ["base", "a" * 200], f"pretrain.variants.{'a' * 200}": {"strategy": "standard"}}, "variants", "has 200 characters"),
    Bad("periodic-variant", {"variants": ["base", "lem_" + "ab" * 20], f"pretrain.variants.lem_{'ab' * 20}": {"strategy": "standard"}}, "variants", "repeated 20 times, which Snakemake reads as an endless recursion"),
    Bad("periodic-evalset", {"mining.evalsets": {"x" * 25: {"root": "results/eval/news", "site": "GEN", "pairs": ["si-en"]}}}, "mining.evalsets", "expected fewer than 20 repeats"),
    Bad("seed", {"seed": -5}, "seed", "-5: expected an integer seed in 0..4294967295"),
    Bad("unknown-variant", {"variants": ["base", "nope"]}, "variants", "'nope' has no masking in pretrain.variants"),
    # messages that misled before
    Bad("language-key-int", {"corpus.generate.languages": {1: "si"}}, "corpus.generate.languages.1", "expected a code of 2-3 lower-case letters"),
    Bad("language-null", {"corpus.generate.languages": {"xx": None}}, "corpus.generate.languages.xx", "naming one of the built-in languages en, si, ta"),
    Bad("noisy-float", {"corpus.generate.noisy_extra_pairs": {"si-en": 1.5}}, "corpus.generate.noisy_extra_pairs.si-en", "expected an integer count in 0..1,000,000, got 1.5"),
    Bad("noisy-string", {"corpus.generate.noisy_extra_pairs": {"si-en": "5"}}, "corpus.generate.noisy_extra_pairs.si-en", "got '5'"),
    Bad("noisy-bool", {"corpus.generate.noisy_extra_pairs": {"si-en": True}}, "corpus.generate.noisy_extra_pairs.si-en", "got True"),
    Bad("data-root-braces", {"data_root": "/data/{a}"}, "data_root", "expected a folder path without '{' '}'", "local.yaml"),
    Bad("top-level-typo", {"varients": ["base"]}, "varients", "unknown key; known: annotation,"),
    Bad("missing-section", {"mining": DELETE}, "mining", "missing: the config requires it"),
    Bad("language-code", {"languages": ["EN", "si", "ta"]}, "languages[0]", "'EN': expected a language code of 2-3 lower-case letters"),
    Bad("pair-code", {"pairs": ["si_en"]}, "pairs[0]", "'si_en': expected a pair 'src-tgt' of two language codes"),
    Bad("schema-type", {"pretrain.seeds": "13"}, "pretrain.seeds", "'13': expected a list"),
    Bad("other-share-standard", {"pretrain.variants.mlm_tlm.other_share": 0.1}, "pretrain.variants.mlm_tlm.other_share", "not used by strategy 'standard'"),
    Bad("no-embedding", {"embedding": DELETE}, "embedding.max_length", "not set, so its default 128, exceeds the base model's 64 tokens"),
    # accepted before, probably wrong; or refused only at job time
    Bad("swapped-tagset", SWAPPED, "annotation.si.pos.tagset", "holds ta's upos tags (si is the generated ta"),
    Bad("swapped-script", SWAPPED_TAGSETS, "corpus.generate.languages", "code 'si' holds the generated ta (TAMIL script), but curation.filters.scripts expects SINHALA"),
    Bad("oracle-unlabelled", {**ORACLE, **NMT_ON}, "curation.nmt.oracle", "true needs labels", files={"noisy.tsv": "src\ttgt\na\tb\n"}),
    Bad("oracle-line-aligned", {"curation.corpora.si-en": {"src": "a.si", "tgt": "a.en"}, **NMT_ON}, "curation.nmt.oracle", "two line-aligned files"),
    Bad("labels-good-bad", ORACLE, "curation.corpora.si-en", "no pair is labelled exactly 'clean'; labels: 'bad', 'good'", files={"noisy.tsv": "src\ttgt\tlabel\na\tb\tgood\nc\td\tbad\n"}),
    Bad("labels-case", ORACLE, "curation.corpora.si-en", "('Clean' differs from it in case or spaces)", files={"noisy.tsv": "src\ttgt\tlabel\na\tb\tClean\nc\td\tnoisy\n"}),
    Bad("mono-zero", {"corpus.generate.mono_sentences": 0}, "corpus.generate.mono_sentences", "expected an integer count in 1..1,000,000 (pre-training needs text), got 0"),
    Bad("evidence-two-families", {"evidence": {"families": {"primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}], "exploratory": [{"a": "lem", "b": "mlm_tlm", "tasks": ["mining"]}]}}}, "evidence.families", "lem vs mlm_tlm on mining is declared in primary and in exploratory"),
    Bad("evidence-margin", {"evidence": {"margin": {"nmt": 500}}}, "evidence.margin.nmt", "500"),
    Bad("files-in-another-script", {"data_root": TMP, "corpus.files.mono.si": f"{TMP}/si.txt"}, "corpus.files.mono.si", "0% of the letters of its first 200 lines are SINHALA", "local.yaml", {"si.txt": TAMIL * 20}),
    # issue 45: numbers the schema's ranges let through (NaN fails no comparison), seeds, control files, YTE
    Bad("sentiment-lr-nan", {"sentiment.training.learning_rate": NAN}, "sentiment.training.learning_rate", "nan: expected a finite number"),
    Bad("sentiment-lr-inf", {"sentiment.training.learning_rate": INF}, "sentiment.training.learning_rate", "inf: expected a finite number"),
    Bad("sentiment-seed-negative", {"sentiment.seeds": [-1]}, "sentiment.seeds", "expected a non-empty list of distinct integers >= 0"),
    Bad("sentiment-seed-2^32", {"sentiment.seeds": [1, 2**32]}, "sentiment.seeds", "4294967296: expected an integer seed in 0..4294967295"),
    Bad("set-lift-nan", {"mining.evalsets.news_gen.controls.positive_lift": NAN}, "mining.evalsets.news_gen.controls.positive_lift", "nan: expected a finite number"),
    Bad("set-pair-lift-nan", {"mining.evalsets.news_gen.controls.positive_lift": {"si-en": NAN}}, "mining.evalsets.news_gen.controls.positive_lift.si-en", "nan: expected a finite number"),
    Bad("set-lift-two", {"mining.evalsets.news_gen.controls.positive_lift": 2}, "mining.evalsets.news_gen.controls.positive_lift", "2: expected a number or a mapping >= 0 <= 1"),
    Bad("set-alpha-zero", {"mining.evalsets.news_gen.controls.positive_alpha": 0}, "mining.evalsets.news_gen.controls.positive_alpha", "0: expected a number or a mapping > 0 <= 1"),
    Bad("set-alpha-inf", {"mining.evalsets.news_gen.controls.negative_alpha": {"si-ta": INF}}, "mining.evalsets.news_gen.controls.negative_alpha.si-ta", "inf: expected a number > 0 <= 1"),
    Bad("set-lexical-string", {"mining.evalsets.news_gen.controls.lexical": "x.tsv"}, "mining.evalsets.news_gen.controls.lexical", "expected true or false or a mapping"),
    Bad("lift-nan", {"controls.positive_lift": NAN}, "controls.positive_lift", "nan: expected a finite number"),
    Bad("lexical-file-missing", {"controls.lexical": {"si-en": f"{TMP}/none.tsv"}}, "controls.lexical.si-en", "no such file; expected a src<TAB>tgt dictionary file that exists"),
    Bad("yte-template", {"__use_yte__": True}, "__use_yte__", "a YTE template (its values run Python when Snakemake loads it)"),
    # issue 51: every declared comparison runs or is refused, naming the family's entry and what is not there
    Bad("evidence-b-typo", family("primary", ("lem", "mlm_tml", MINING)), "evidence.families.primary[0].b", "'mlm_tml' is no variant of the run (variants: base, mlm_tlm, lem)"),
    Bad("evidence-b-pattern", family("primary", ("lem", "mlm*", MINING)), "evidence.families.primary[0].b", "'mlm*' is a pattern: expected one variant"),
    Bad("evidence-b-control", family("primary", ("lem", "control_lexical", MINING)), "evidence.families.primary[0].b", "'control_lexical' is the lexical control's row (controls.lexical), a row without pre-training seeds"),
    Bad("evidence-a-control", family("exploratory", ("control_random", "base", MINING)), "evidence.families.exploratory[0].a", "'control_random' is the random control's row"),
    Bad("evidence-a-is-b", family("primary", ("lem", "lem", MINING)), "evidence.families.primary[0].a", "'lem' is b itself"),
    Bad("evidence-a-no-row", family("primary", ("lemx", "mlm_tlm", MINING)), "evidence.families.primary[0].a", "'lemx' is no variant of the run"),
    Bad("evidence-a-pattern-no-row", family("primary", ("xx*", "mlm_tlm", MINING)), "evidence.families.primary[0].a", "'xx*' matches no variant besides b (mlm_tlm"),
    Bad("evidence-a-pattern-control", family("primary", ("*", "mlm_tlm", MINING)), "evidence.families.primary[0].a", "'*' also matches control_lexical"),
    Bad("evidence-task-off", {"sentiment.enabled": False, **family("secondary", ("lem", "mlm_tlm", ["sentiment"]))}, "evidence.families.secondary[0].tasks", "'sentiment' does not run in this config (no sentiment.datasets"),
    Bad("evidence-task-nmt", family("secondary", ("lem", "mlm_tlm", ["nmt"])), "evidence.families.secondary[0].tasks", "'nmt' does not run in this config (no curation.nmt.pairs"),
    Bad("evidence-reversed", family("exploratory", ("mlm_tlm", "lem", MINING)), "evidence.families", "mlm_tlm vs lem on mining (exploratory[0]) is lem vs mlm_tlm on mining (primary[0], a default family) reversed"),
    Bad("evidence-reversed-one-family", family("primary", ("lem", "mlm_tlm", MINING), ("mlm_tlm", "lem", MINING)), "evidence.families", "(primary[1]) is lem vs mlm_tlm on mining (primary[0]) reversed"),
    Bad("evidence-twice-one-family", family("primary", ("lem", "mlm_tlm", MINING), ("lem*", "mlm_tlm", MINING)), "evidence.families", "lem vs mlm_tlm on mining is declared twice in primary (primary[0], primary[1])"),
    Bad("evidence-alpha-tiny", {"evidence.alpha": 1e-300}, "evidence.alpha", "expected a level of at least 1e-06"),
    # issue 51: retrieval sets (format: parallel) and the keys of the other format
    Bad("retrieval-same-file", retrieval(**{"files|si": f"{TMP}/en.txt"}), "mining.evalsets.ret.files.en", "is also the file of si: expected each language's own file", files=LINES),
    Bad("retrieval-english-as-sinhala", retrieval(**{"files|si": f"{TMP}/en.txt", "files|en": f"{TMP}/si.txt"}), "mining.evalsets.ret.files.si", "0% of the letters of its first 200 lines are SINHALA", files=LINES),
    Bad("retrieval-folder", retrieval(**{"files|si": TMP}), "mining.evalsets.ret.files.si", "is a folder: expected a file of line-aligned sentences", files=LINES),
    Bad("retrieval-missing", retrieval(**{"files|si": f"{TMP}/none.txt"}), "mining.evalsets.ret.files.si", "no such file; expected a file of line-aligned sentences that exists", files=LINES),
    Bad("retrieval-one-language", {**retrieval(), "mining.evalsets.ret.files": {"en": "a.txt"}}, "mining.evalsets.ret.files", "expected a line-aligned file for each language of the set's pairs, at least 2 entries; got 1 (en)", files=LINES),
    Bad("retrieval-gold-repairs", retrieval(gold_repairs=["swapped"]), "mining.evalsets.ret.gold_repairs", "a news set's key (lem.data.news), which a `format: parallel` set does not read", files=LINES),
    Bad("retrieval-gold-repairs-empty", retrieval(gold_repairs=[]), "mining.evalsets.ret.gold_repairs", "a news set's key", files=LINES),
    Bad("retrieval-root", retrieval(root="results/eval/news"), "mining.evalsets.ret.root", "a news set's key", files=LINES),
    Bad("retrieval-site", retrieval(site="GEN"), "mining.evalsets.ret.site", "a news set's key", files=LINES),
    Bad("retrieval-doc-pairs", retrieval(doc_pairs="gold"), "mining.evalsets.ret.doc_pairs", "a news set's key", files=LINES),
    Bad("news-files", {"mining.evalsets.news_gen.files": {"si": "a.txt", "en": "b.txt"}}, "mining.evalsets.news_gen.files", "a parallel set's key (lem.data.retrieval), which a news set"),
    # issue 51: messages that say what is wrong
    Bad("pretrain-seeds-twice", {"pretrain.seeds": [13, 14, 13]}, "pretrain.seeds", "[13, 14, 13]: 13 is listed twice: expected distinct items"),
    Bad("sentiment-seeds-twice", {"sentiment.seeds": [1, 2, 1]}, "sentiment.seeds", "[1, 2, 1]: 1 is listed twice: expected distinct seeds"),
]
# fmt: on


def apply(cfg: dict, path: str, value: Any, tmp: Path) -> None:
    *parents, last = [seg.replace("|", ".") for seg in path.split(".")]
    for seg in parents:
        cfg = cfg.setdefault(seg, {})
    if value is DELETE:
        del cfg[last]
    else:
        cfg[last] = copy.deepcopy(value) if not isinstance(value, str) else value.replace(TMP, str(tmp))


def refusal(bad: Bad, tmp: Path) -> str | None:
    for name, text in bad.files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    cfg = copy.deepcopy(CONFIGS[bad.file])
    for path, value in bad.changes.items():
        apply(cfg, path, value, tmp)
    try:
        check_workflow_config(cfg, SCHEMA)
    except ConfigError as err:
        return str(err)
    return None


@pytest.mark.parametrize("bad", BAD, ids=[b.id for b in BAD])
def test_a_probe_is_refused_at_planning_in_one_line_naming_the_key(bad, tmp_path):
    message = refusal(bad, tmp_path)
    assert message is not None, f"{bad.id}: accepted"
    assert message.startswith(f"{bad.key}: ") or message.startswith(f"{bad.key}."), message
    assert bad.words in message, message
    assert "\n" not in message and len(message) < 600, message  # never the schema or the config dumped


@pytest.mark.parametrize(
    "changes",
    [SWAPPED_TAGSETS | {"curation.filters.scripts": {"en": "LATIN", "si": "TAMIL", "ta": "SINHALA"}},
     XX_TAGSET | {"curation.filters.scripts": {"en": "LATIN", "xx": "SINHALA", "ta": "TAMIL"}},
     ORACLE],
    ids=["swapped-said", "renamed-said", "labelled-clean"],
)  # fmt: skip
def test_the_same_configs_said_right_are_accepted(changes, tmp_path):
    (tmp_path / "noisy.tsv").write_text("src\ttgt\tlabel\na\tb\tnoisy\nc\td\tclean\n", encoding="utf-8")
    bad = Bad("ok", changes, "", "")
    assert refusal(bad, tmp_path) is None


# --- the commands ---------------------------------------------------------------------------------------


class Cli(NamedTuple):
    id: str
    argv: list[str]
    status: int
    words: str  # a piece of the one line after `lem <stage> <verb>: `
    files: dict[str, str | bytes] = {}  # written under the test's folder first; left byte-identical


def bad_config(**changes: Any) -> str:
    cfg = config("config.yaml")
    for key, value in changes.items():
        if value is DELETE:
            cfg.pop(key)
        else:
            cfg[key] = value
    return yaml.safe_dump(cfg)


FINETUNE = ["sentiment", "finetune", "--model", "m", "--train", "a", "--valid", "b", "--test", "c"]
README = ["report", "readme", "--readme", f"{TMP}/page.md", "--summary", f"{TMP}/summary.md"]
SUMMARY = {"summary.md": "# Report\n\n## Verdicts\n\nNo comparison is conclusive.\n"}

# fmt: off
CLI = [
    Cli("plan-cost-seed", ["plan", "cost", "--configfile", f"{TMP}/c.yaml", "--schema", str(SCHEMA)], 1, "config: seed: -5: expected an integer seed", {"c.yaml": bad_config(seed=-5)}),
    Cli("plan-cost-variant", ["plan", "cost", "--configfile", f"{TMP}/c.yaml", "--schema", str(SCHEMA)], 1, "config: variants: 'nope' has no masking", {"c.yaml": bad_config(variants=["base", "nope"])}),
    Cli("plan-cost-typo", ["plan", "cost", "--configfile", f"{TMP}/c.yaml", "--schema", str(SCHEMA)], 1, "config: varients: unknown key", {"c.yaml": bad_config(varients=["base"])}),
    Cli("plan-cost-yaml", ["plan", "cost", "--configfile", f"{TMP}/c.yaml", "--schema", str(SCHEMA)], 1, "c.yaml: expected a YAML config file", {"c.yaml": "seed: [1\n"}),
    Cli("plan-cost-missing", ["plan", "cost", "--configfile", f"{TMP}/none.yaml", "--schema", str(SCHEMA)], 1, "none.yaml: no such file or directory (expected an existing path)"),
    Cli("vocab-zero", ["tokenizer", "train", "--vocab-size", "0", "--input", "x", "--out", "y"], 2, "--vocab-size 0: expected an integer >= 1"),
    Cli("fraction-nan", ["features", "mono", "--valid-fraction", "nan", "--max-length", "8", "--tokenizer", "t", "--annotations", "a", "--lang", "si", "--out", "o"], 2, "--valid-fraction nan: expected a finite number"),
    Cli("alpha-two", ["report", "build", "--variants", "base", "--alpha", "2", "--out-dir", f"{TMP}/r"], 2, "--alpha 2.0: expected a level in (0, 1)"),
    Cli("share-above-one", ["nmt", "select", "--ranking", "r", "--pairs", "p", "--share", "1.5", "--out", "o"], 2, "--share 1.5: expected a share in (0, 1]"),
    Cli("seed-negative", ["data", "pairs", "--inputs", "x", "--seed", "-1", "--out-train", "a", "--out-valid", "b"], 2, "--seed -1: expected an integer seed"),
    Cli("annotate-renamed-no-tagset", ["annotate", "run", "--lang", "xx", "--input", f"{TMP}/t.txt", "--out", f"{TMP}/o.parquet", "--settings", f'{{"pos": {{"backend": "lexicon", "format": "tsv", "path": "{TMP}/lex.tsv"}}}}'], 1, "--lang xx: no default POS tag set (en, si and ta have one): expected --settings pos.tagset", {"t.txt": "a word\n", "lex.tsv": "word\tNN\n"}),
    Cli("annotate-renamed-no-backend", ["annotate", "run", "--lang", "xx", "--input", f"{TMP}/t.txt", "--out", f"{TMP}/o.parquet", "--settings", "{}"], 1, "expected a POS backend that names its tag set", {"t.txt": "a word\n"}),
    Cli("oracle-good-bad", ["curate", "control", "--pairs", f"{TMP}/n.tsv", "--kind", "oracle", "--out", f"{TMP}/r.tsv"], 1, "an oracle ranking needs pairs labelled exactly 'clean' (any other label is noisy); labels: 'bad', 'good'", {"n.tsv": "src\ttgt\tlabel\na\tb\tgood\nc\td\tbad\n"}),
    Cli("labels-in-two-cases", ["data", "sentiment", "--input", f"{TMP}/s.csv", "--out-dir", f"{TMP}/out"], 1, "s.csv:4: label 'positive' differs from 'Positive' (line 2) only in case", {"s.csv": "Sentence,Sentiment\na,Positive\nb,Negative\nc,positive\nd,Negative\n"}),
    Cli("finetune-seed-negative", [*FINETUNE, "--seed", "-1", "--out", "o"], 2, "--seed -1: expected an integer seed in 0..4294967295"),
    Cli("finetune-seed-2^32", [*FINETUNE, "--seed", "1", str(2**32), "--out", "o", "p"], 2, "--seed 4294967296: expected an integer seed in 0..4294967295"),
    Cli("finetune-seed-2^70", [*FINETUNE, "--seed", str(2**70), "--out", "o"], 2, f"--seed {2**70}: expected an integer seed"),
    Cli("finetune-lr-nan", [*FINETUNE, "--seed", "1", "--out", "o", "--settings", '{"learning_rate": NaN}'], 2, "--settings: sentiment settings: learning_rate=nan: expected a finite number"),
    Cli("finetune-lr-inf", [*FINETUNE, "--seed", "1", "--out", "o", "--settings", '{"learning_rate": Infinity}'], 2, "learning_rate=inf: expected a finite number"),
    Cli("readme-swapped-markers", [*README], 1, "page.md:2: the results block's end marker comes before its begin marker (line 4;", {"page.md": f"# A page\n{README_END}\nold\n{README_BEGIN}\n", **SUMMARY}),
    Cli("readme-no-end-marker", [*README], 1, "page.md: no results block: its end marker is missing", {"page.md": f"# A page\n{README_BEGIN}\nold\n", **SUMMARY}),
    Cli("readme-two-blocks", [*README], 1, "page.md:5: a second results marker", {"page.md": f"{README_BEGIN}\nold\n{README_END}\n\n{README_BEGIN}\nx\n{README_END}\n", **SUMMARY}),
    Cli("readme-binary", [*README], 1, "page.md:3: expected text, got a NUL byte (a binary file?)", {"page.md": b"\x89PNG\r\n\x1a\n\x00\x00", **SUMMARY}),
    Cli("readme-latin-1", [*README], 1, "page.md:3: expected UTF-8 text, got byte 0xe9", {"page.md": f"# A page\n{README_BEGIN}\ncaf\xe9\n{README_END}\n".encode("latin-1"), **SUMMARY}),
    Cli("readme-summary-latin-1", [*README], 1, "summary.md:4: expected UTF-8 text, got byte 0xe9", {"page.md": f"{README_BEGIN}\n{README_END}\n", "summary.md": "# Report\n\n## Verdicts\ncaf\xe9\n".encode("latin-1")}),
    Cli("readme-summary-binary", [*README], 1, "summary.md:1: expected text, got a NUL byte", {"page.md": f"{README_BEGIN}\n{README_END}\n", "summary.md": b"\x00\x01\x02"}),
    Cli("plan-settings-unknown-wildcard", ["plan", "settings", "pretrain_mono", "bogus=1", "--configfile", str(REPO / "config" / "config.yaml")], 1, "bogus=1: rule pretrain_mono has no wildcard {bogus} in its settings; its wildcards: {scope}, {seed}, {tvariant}"),
    Cli("plan-settings-seed-word", ["plan", "settings", "pretrain_mono", "scope=tri", "tvariant=lem", "seed=x", "--configfile", str(REPO / "config" / "config.yaml")], 1, "seed=x: expected an integer >= 0 (the rule's {seed} is digits)"),
    Cli("plan-settings-no-such-variant", ["plan", "settings", "pretrain_mono", "tvariant=nope", "--configfile", str(REPO / "config" / "config.yaml")], 1, "tvariant=nope: not an entry of config `pretrain.variants` (entries: mlm_tlm, lem"),
    Cli("plan-settings-unknown-wildcard-no-config", ["plan", "settings", "report", "seed=1"], 1, "seed=1: rule report has no wildcard {seed} in its settings; its wildcards: none"),
    Cli("plan-power-alpha-tiny", ["plan", "power", "--results", f"{TMP}/results", "--alpha", "1e-300"], 1, "--alpha 1e-300: expected a level of at least 1e-06"),
    Cli("plan-power-config-alpha-tiny", ["plan", "power", "--results", f"{TMP}/results", "--configfile", f"{TMP}/c.yaml"], 1, "config: evidence.alpha: evidence: alpha=1e-300: expected a level of at least 1e-06", {"c.yaml": bad_config(evidence={"alpha": 1e-300})}),
    Cli("drop-label-case", ["data", "sentiment", "--input", f"{TMP}/s.csv", "--out-dir", f"{TMP}/out", "--settings", '{"drop_labels": ["conflict"]}'], 1, "drop_labels has 'conflict', but the label is 'Conflict' (line 4)", {"s.csv": "Sentence,Sentiment\na,Positive\nb,Negative\nc,Conflict\n"}),
]
# fmt: on


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_a_bad_argument_or_file_is_one_line_naming_it(case, tmp_path, capsys):
    for name, text in case.files.items():
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        (tmp_path / name).write_bytes(data)
    argv = [a.replace(TMP, str(tmp_path)) for a in case.argv]
    assert lem(argv) == case.status
    for name, text in case.files.items():  # nothing written over, nothing lost
        assert (tmp_path / name).read_bytes() == (text if isinstance(text, bytes) else text.encode("utf-8"))
    err = [line for line in capsys.readouterr().err.splitlines() if " INFO " not in line]
    prog = f"lem {argv[0]} {argv[1]}: "
    assert len(err) == 1 and err[0].startswith(prog), err
    assert case.words in err[0], err[0]
    assert "[Errno" not in err[0] and "Traceback" not in err[0]


def test_a_label_map_merges_labels_in_two_cases(tmp_path):
    """The documented rule: labels are compared case-sensitively; label_map merges two spellings."""
    from lem.data.sentiment import SentimentDataSettings, read_labelled

    path = tmp_path / "s.csv"
    path.write_text(
        "Sentence,Sentiment\na,Positive\nb,Negative\nc,positive\nd,Negative 2\n", encoding="utf-8"
    )
    label_map = {
        "Positive": "Positive",
        "positive": "Positive",
        "Negative": "Negative",
        "Negative 2": "Negative",
    }
    rows, _ = read_labelled(path, SentimentDataSettings.from_dict({"label_map": label_map}))
    assert sorted({label for _, label in rows}) == ["Negative", "Positive"]


# --- outputs that cannot be written: one line naming the folder, nothing lost ----------------------------


@pytest.mark.parametrize(
    "failure, words",
    [
        (OSError(errno.EROFS, "Read-only file system"), "cannot write {out} (Read-only file system): make {folder} writable"),
        (PermissionError(errno.EACCES, "Permission denied"), "cannot write {out} (Permission denied): make {folder} writable"),
        (OSError(errno.ENOSPC, "No space left on device"), "no space left on the device of {folder} ("),
        (RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed"), "no space left on the device of {folder} ("),
    ],
    ids=["read-only", "permission", "full-disk", "wrapped-full-disk"],
)  # fmt: skip
def test_an_output_that_cannot_be_written_ends_in_one_line_and_keeps_the_old_file(
    failure, words, tmp_path, capsys, monkeypatch
):
    import os

    from lem.core import files

    folder = tmp_path / "report"
    folder.mkdir()
    out = folder / "out.txt"
    out.write_text("the previous run's output\n", encoding="utf-8")
    (tmp_path / "in.txt").write_text("one\ntwo\n", encoding="utf-8")

    def fail(src, dst):
        if isinstance(failure, OSError):
            failure.filename = str(dst)
        raise failure

    monkeypatch.setattr(files.os, "replace", fail)
    assert lem(["data", "mono", "--input", str(tmp_path / "in.txt"), "--out", str(out)]) == 1
    monkeypatch.setattr(files.os, "replace", os.replace)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("lem data mono: ") and words.format(out=out, folder=folder) in last, last
    assert out.read_text(encoding="utf-8") == "the previous run's output\n"  # nothing lost
    assert sorted(p.name for p in folder.iterdir()) == ["out.txt"]  # no temporary left behind


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "local.yaml"])
def test_the_schema_check_fills_the_defaults_as_snakemakes_validate(name):
    """lem.config_check.validate_config (lem plan cost, check_workflow_config) builds its validator once;
    workflow/rules/common.smk calls Snakemake's `validate`: both give the same config."""
    from snakemake.utils import validate

    from lem.config_check import validate_config

    ours, theirs = config(name), config(name)
    validate(theirs, str(SCHEMA), set_default=True)
    assert validate_config(ours, SCHEMA) == theirs


def test_a_read_only_output_folder_for_real():
    """The same refusal from a real read-only folder (an unprivileged user: root writes anywhere)."""
    import os
    import shutil
    import subprocess
    import tempfile

    setpriv, lem_bin = shutil.which("setpriv"), Path(__file__).resolve().parents[2] / ".venv" / "bin" / "lem"
    if os.geteuid() != 0 or setpriv is None or not lem_bin.exists():
        pytest.skip("needs root, setpriv and .venv/bin/lem to act as an unprivileged user")
    with tempfile.TemporaryDirectory() as name:  # under /tmp: pytest's folders are closed to other users
        root = Path(name)
        root.chmod(0o755)
        folder = root / "report"
        folder.mkdir()
        (folder / "out.txt").write_text("old\n", encoding="utf-8")
        (root / "in.txt").write_text("one\n", encoding="utf-8")
        folder.chmod(0o555)
        if any(p.stat().st_mode & 0o001 == 0 for p in root.parents):
            pytest.skip(f"{root} is not reachable by an unprivileged user")
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(lem_bin), "data", "mono"]
        cmd += ["--input", str(root / "in.txt"), "--out", str(folder / "out.txt")]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            f"lem data mono: cannot write {folder / 'out.txt'} (Permission denied): make {folder} writable (or "
            "run in another folder), then rerun; nothing there was changed"
        )
        assert (folder / "out.txt").read_text(encoding="utf-8") == "old\n"
        assert sorted(p.name for p in folder.iterdir()) == ["out.txt"]


def test_a_full_disk_for_real(tmp_path):
    """A real full file system (a 64 kB tmpfs, where this user may mount one): the write that fails names no
    file, so the refusal names the folder of the command's output; the previous file is kept."""
    import shutil
    import subprocess

    mount = tmp_path / "full"
    mount.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        (mount / "out.txt").write_text("old\n", encoding="utf-8")
        lines = "".join(f"sentence {i} of the text that does not fit\n" for i in range(5000))
        (tmp_path / "in.txt").write_text(lines, encoding="utf-8")
        cmd = [str(REPO / ".venv" / "bin" / "lem"), "data", "mono", "--input", str(tmp_path / "in.txt")]
        proc = subprocess.run([*cmd, "--out", str(mount / "out.txt")], capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"lem data mono: no space left on the device of {mount} ("), last
        assert "free space there" in last and "nothing was lost" in last, last
        assert (mount / "out.txt").read_text(encoding="utf-8") == "old\n"
        assert sorted(p.name for p in mount.iterdir()) == ["out.txt"]
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_yte_template_stops_the_run_unless_allowed(tmp_path, monkeypatch):
    """A config file is code (docs/troubleshooting.md): Snakemake renders `__use_yte__: true` with YTE at load;
    the workflow's check (workflow/rules/common.smk: `check_workflow_config(..., workflow.configfiles)`, which
    calls `refuse_yte`) then stops the run in one line naming the file, unless LEM_ALLOW_YTE=1."""
    from lem.config_check import ALLOW_YTE, refuse_yte
    from lem.config_check.schema import SCHEMA

    plain, template = tmp_path / "plain.yaml", tmp_path / "template.yaml"
    plain.write_text("seed: 13\n__use_yte__: false\n", encoding="utf-8")
    template.write_text("__use_yte__: true\nseed: ?6 + 7\n", encoding="utf-8")
    monkeypatch.delenv(ALLOW_YTE, raising=False)
    refuse_yte([plain])  # no template
    with pytest.raises(ConfigError) as err:
        refuse_yte([plain, template])
    message = str(err.value)
    assert message.startswith(f"{template}: __use_yte__: true: a YTE template") and "\n" not in message
    assert f"{ALLOW_YTE}=1" in message and "docs/troubleshooting.md" in message
    monkeypatch.setenv(ALLOW_YTE, "1")
    refuse_yte([plain, template])
    troubleshooting = (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    assert "## A config file is code" in troubleshooting and f"`{ALLOW_YTE}=1`" in troubleshooting
    monkeypatch.delenv(ALLOW_YTE)  # the first of the workflow's checks
    with pytest.raises(ConfigError, match="__use_yte__: true: a YTE template"):
        check_workflow_config({"seed": 13}, SCHEMA, [plain, template])
    common = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert "check_workflow_config(" in common and "workflow.configfiles," in common


# --- issue 51: the config files read as Snakemake read them, failing closed ----------------------------------

TUPLE = "seed: 13\nnote: !!python/tuple [1, 2]\n"
YTE_TUPLE = "__use_yte__: true\nseed: ?6 + 7\nnote: !!python/tuple [1, 2]\n"


@pytest.mark.parametrize(
    "name, data, words",
    [
        ("tuple.yaml", TUPLE, "not plain YAML (line 2: could not determine a constructor for the tag '!!python/tuple'): Snakemake loaded it with YAML's full loader"),
        ("yte-tuple.yaml", YTE_TUPLE, "not plain YAML (line 3: could not determine a constructor for the tag '!!python/tuple'): Snakemake rendered it as a YTE template (__use_yte__: true) when it loaded it, running the Python in its values, before this workflow could look at it"),
        ("flow.yaml", "{__use_yte__: yes, note: !!python/tuple [1]}\n", "Snakemake rendered it as a YTE template"),
        ("name.yaml", "note: !!python/name:os.system\n", "the tag '!!python/name:os.system'"),
        ("latin-1.yaml", "note: caf\xe9\n".encode("latin-1"), "expected UTF-8 text, got byte 0xe9 at offset 9"),
        ("template.json", '{"__use_yte__": true, "seed": 13}', "__use_yte__: a JSON config, which Snakemake reads as JSON and never renders as a YTE template (nothing in it ran)"),
        ("gone.yaml", None, "cannot be read (No such file or directory), though Snakemake loaded it"),
    ],
    ids=["python-tuple", "yte-and-tuple", "yte-flow-mapping", "python-name", "latin-1", "json-template", "gone"],
)  # fmt: skip
@pytest.mark.parametrize("allow", ["", "1"], ids=["default", "allow-yte"])
def test_a_config_file_the_check_cannot_read_as_snakemake_did_is_refused(
    name, data, words, allow, tmp_path, monkeypatch
):
    """The YTE guard fails closed: a file plain YAML (or JSON) cannot read as Snakemake's loader read it is
    refused in one line naming the file and saying truthfully what already happened, LEM_ALLOW_YTE or not (it
    accepts templates, never a file the check cannot see into); before, such a file was skipped."""
    from lem.config_check import ALLOW_YTE, refuse_yte

    monkeypatch.setenv(ALLOW_YTE, allow)
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    with pytest.raises(ConfigError) as err:
        refuse_yte([REPO / "config" / "config.yaml", path])
    message = str(err.value)
    assert message.startswith(f"{path}: ") and words in message, message
    assert "\n" not in message and "has run once already" not in message
    assert "no job is started" in message


def test_plain_json_and_yaml_configs_pass_the_file_check(tmp_path):
    from lem.config_check import refuse_yte

    (tmp_path / "o.json").write_text('{"seed": 13, "note": NaN}', encoding="utf-8")
    (tmp_path / "o.yaml").write_text("seed: 13\n__use_yte__: false\n", encoding="utf-8")
    refuse_yte([REPO / "config" / "config.yaml", tmp_path / "o.json", tmp_path / "o.yaml"])


def test_the_yte_and_tuple_probe_plans_no_job(tmp_path):
    """Issue 51's probe: an overlay that is a YTE template running code, with a `!!python/tuple` elsewhere, planned
    108 jobs with rc 0. Snakemake still renders it at load (the file is touched: a config file is code), but the
    workflow's check refuses it before any job, saying so."""
    ran = tmp_path / "ran"
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        f"__use_yte__: true\nseed: ?__import__('pathlib').Path({str(ran)!r}).touch() or 13\n"
        "pretrain: {seeds: !!python/tuple [13, 14, 15]}\n",
        encoding="utf-8",
    )
    proc = snakemake(tmp_path / "run", "-n", config=[REPO / "config" / "config.yaml", overlay])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert (
        f"config: {overlay}: not plain YAML (line 3:" in out
        and "Snakemake rendered it as a YTE template" in out
    )
    assert "Job stats" not in out and "jobs" not in proc.stdout
    assert ran.exists()  # what the message says: its code ran when Snakemake loaded it


# --- issue 51: a family given replaces that family's default only --------------------------------------------


def test_an_overlay_of_one_family_keeps_the_other_default_families(tmp_path, capsys):
    """config/README.md: "a family given replaces that family's default". An overlay giving `primary` alone kept
    no secondary or exploratory family (`lem plan settings report` showed {"primary": [...]})."""
    import json

    from lem.evidence.compare import EvidenceSettings, default_families

    primary = [{"a": "lem", "b": "mlm_tlm", "tasks": ["mining"]}]
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"evidence": {"families": {"primary": primary}}}), encoding="utf-8")
    want = {**default_families(), "primary": primary}
    assert EvidenceSettings.from_dict({"families": {"primary": primary}}).families == want
    cfg = config("config.yaml")
    cfg["evidence"] = {"families": {"primary": primary}}
    assert check_workflow_config(cfg, SCHEMA)["evidence"]["families"] == want
    assert EvidenceSettings.from_dict({"families": {"secondary": []}}).families["secondary"] == []
    assert (
        lem(
            ["plan", "settings", "report", "--configfile", str(REPO / "config" / "config.yaml"), str(overlay)]
        )
        == 0
    )
    passed = capsys.readouterr().out.splitlines()[-1]
    assert passed.startswith("passed: ")
    assert json.loads(passed.removeprefix("passed: "))["evidence"]["families"] == want
