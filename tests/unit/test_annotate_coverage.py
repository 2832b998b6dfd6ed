"""Tag sets declared by the POS backends, the annotation coverage check, streamed annotation and the report's
coverage table."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lem.annotate import run as annotate_run
from lem.annotate.coverage import (
    CoverageError,
    CoverageSettings,
    annotation_coverage,
    enabled_entity_types,
    sample_sentences,
)
from lem.annotate.crf import train_crf
from lem.annotate.readers import ReaderError
from lem.annotate.run import Annotator, annotate_file
from lem.annotate.schema import pos_tagset_of, read_annotations
from lem.annotate.scoring import score_against_conll
from lem.annotate.settings import AnnotateSettings
from lem.cli import command
from lem.report.build import build_report

main = command("annotate")

# UD English EWT layout: 10 columns, UPOS in column 4, Penn XPOS in column 5, a multi-word token line.
EWT = """\
# sent_id = 1
# text = John visited Colombo yesterday.
1\tJohn\tJohn\tPROPN\tNNP\t_\t2\tnsubj\t_\t_
2\tvisited\tvisit\tVERB\tVBD\t_\t0\troot\t_\t_
3\tColombo\tColombo\tPROPN\tNNP\t_\t2\tobj\t_\t_
4\tyesterday\tyesterday\tNOUN\tNN\t_\t2\tobl:tmod\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

# sent_id = 2
# text = The minister doesn't open the road.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tminister\tminister\tNOUN\tNN\t_\t5\tnsubj\t_\t_
3-4\tdoesn't\t_\t_\t_\t_\t_\t_\t_\t_
3\tdoes\tdo\tAUX\tVBZ\t_\t5\taux\t_\t_
4\tn't\tnot\tPART\tRB\t_\t5\tadvmod\t_\t_
5\topen\topen\tVERB\tVB\t_\t0\troot\t_\t_
6\tthe\tthe\tDET\tDT\t_\t7\tdet\t_\t_
7\troad\troad\tNOUN\tNN\t_\t5\tobj\t_\tSpaceAfter=No
8\t.\t.\tPUNCT\t.\t_\t5\tpunct\t_\t_

"""
TEXT = [
    "The minister visited Colombo.",
    "John opened the road yesterday.",
    "The road visited the minister.",
    "",
    "Colombo opened.",
]
ALL_TYPES = {"lem": {"strategy": "lem", "entity_types": ["ne", "noun", "verb"]}}


@pytest.fixture
def english(tmp_path: Path) -> dict:
    (tmp_path / "en_ewt.conllu").write_text(EWT, encoding="utf-8")
    (tmp_path / "gaz.tsv").write_text("Colombo\tLOC\nJohn\tPER\n", encoding="utf-8")
    (tmp_path / "en.txt").write_text("\n".join(TEXT) + "\n", encoding="utf-8")
    settings = {
        "pos": {"backend": "lexicon", "format": "conllu", "path": str(tmp_path / "en_ewt.conllu")},
        "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(tmp_path / "gaz.tsv")},
    }
    return {"text": tmp_path / "en.txt", "settings": settings}


def test_english_conllu_lexicon_maps_universal_tags(english):
    ann = Annotator("en", AnnotateSettings.from_dict(english["settings"]))
    assert ann.pos_tagset == "upos"
    row = ann.annotate(["John visited the road."])[0]
    assert row.pos == ["PROPN", "VERB", "DET", "NOUN", "PUNCT"]
    assert row.coarse == ["NOUN", "VERB", "OTHER", "NOUN", "OTHER"]
    # A tsv lexicon holds the language's native tags unless told otherwise.
    tsv = english["text"].parent / "pos.tsv"
    tsv.write_text("road\tNN\nroads\tNOUN\n", encoding="utf-8")
    native = Annotator(
        "en", AnnotateSettings.from_dict({"pos": {"backend": "lexicon", "format": "tsv", "path": str(tsv)}})
    )
    assert native.pos_tagset == "penn" and native.annotate(["road roads"])[0].coarse == ["NOUN", "OTHER"]
    upos = {"pos": {"backend": "lexicon", "format": "tsv", "path": str(tsv), "tagset": "upos"}}
    assert Annotator("en", AnnotateSettings.from_dict(upos)).annotate(["road roads"])[0].coarse == [
        "OTHER",
        "NOUN",
    ]
    with pytest.raises(ValueError, match="conllu lexicon holds UPOS"):
        AnnotateSettings.from_dict({"pos": {**english["settings"]["pos"], "tagset": "penn"}})
    with pytest.raises(ValueError, match="tag set must be one of"):
        AnnotateSettings.from_dict(
            {"pos": {"backend": "lexicon", "format": "tsv", "path": "x", "tagset": "ptb"}}
        )


def test_crf_declares_its_tag_set(tmp_path):
    sents = [[("road", "NOUN"), ("opens", "VERB"), (".", "PUNCT")]] * 4
    meta = train_crf(sents, tmp_path / "en.crf", "pos", "en", max_iterations=20, tagset="upos")
    assert meta["tagset"] == "upos"
    s = AnnotateSettings.from_dict({"pos": {"backend": "crf", "path": str(tmp_path / "en.crf")}})
    ann = Annotator("en", s)
    assert ann.pos_tagset == "upos" and ann.annotate(["road opens ."])[0].coarse == ["NOUN", "VERB", "OTHER"]
    with pytest.raises(ValueError, match="needs the tag set"):
        train_crf(sents, tmp_path / "x.crf", "pos", "en", max_iterations=5)
    with pytest.raises(ValueError, match="NOUN or VERB tag of tag set 'penn'"):
        train_crf(sents, tmp_path / "x.crf", "pos", "en", max_iterations=5, tagset="penn")
    with pytest.raises(ValueError, match="emits upos tags"):
        Annotator(
            "en",
            AnnotateSettings.from_dict(
                {"pos": {"backend": "crf", "path": str(tmp_path / "en.crf"), "tagset": "penn"}}
            ),
        )
    # A model whose sidecar predates the tag set: refused unless the settings say which set it emits.
    side = tmp_path / "en.crf.json"
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "tagset"}))
    with pytest.raises(ValueError, match="does not say which tag set"):
        Annotator("en", s)
    old = {"pos": {"backend": "crf", "path": str(tmp_path / "en.crf"), "tagset": "upos"}}
    assert Annotator("en", AnnotateSettings.from_dict(old)).pos_tagset == "upos"


def test_train_crf_cli_records_upos_for_conllu(english, tmp_path):
    out = tmp_path / "en.pos.crf"
    argv = ["train-crf", "--task", "pos", "--lang", "en", "--train", str(english["text"].parent / "en_ewt.conllu"),
            "--format", "conllu", "--max-iterations", "10", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((tmp_path / "en.pos.crf.json").read_text())["tagset"] == "upos"
    assert main([*argv[:-2], "--tagset", "penn", "--out", str(tmp_path / "bad.crf")]) == 1


def test_parquet_records_the_tag_set_and_scoring_uses_it(english, tmp_path):
    out = tmp_path / "en.parquet"
    annotate_file("en", english["text"], out, AnnotateSettings.from_dict(english["settings"]))
    table = read_annotations(out)
    assert pos_tagset_of(table) == "upos"
    # Gold in Penn (the embedded world's native English tags): tag accuracy is undefined across two tag
    # sets, the coarse accuracy compares NOUN/VERB/OTHER of each side in its own set.
    first = table.slice(0, 1)
    gold = [[("The", "DT", "O"), ("minister", "NN", "O"), ("visited", "VBD", "O"), ("Colombo", "NNP", "B-LOC"), (".", ".", "O")]]  # fmt: skip
    scores = score_against_conll(first, gold, "en")
    assert scores["pos_tagsets"] == {"gold": "penn", "pred": "upos"}
    assert scores["pos"]["accuracy"] is None and scores["pos"]["coarse_accuracy"] == 1.0


def test_coverage_english_conllu_rows_show_nouns_and_verbs(english, tmp_path):
    out = tmp_path / "results" / "annotate" / "coverage.json"
    argv = ["coverage", "--langs", "en", "--texts", str(english["text"]),
            "--settings", json.dumps({"en": english["settings"]}), "--variants", json.dumps(ALL_TYPES),
            "--check", json.dumps({"sample": 3, "seed": 1}), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    cov = json.loads(out.read_text())
    en = cov["languages"]["en"]
    assert en["sentences"] == 3 and en["lines"] == 4  # the empty line is never sampled
    assert en["pos_tagset"] == "upos"
    assert en["shares"]["noun"] > 0 and en["shares"]["verb"] > 0 and en["shares"]["ne"] > 0
    assert cov["enabled"] == {"ne": ["lem"], "noun": ["lem"], "verb": ["lem"]}


def test_a_zero_share_of_an_enabled_type_fails_naming_language_and_type(english, tmp_path, capsys):
    no_ner = {"en": {"pos": english["settings"]["pos"]}}
    s = CoverageSettings(sample=10)
    with pytest.raises(CoverageError, match=r"en: NE share is 0\.0000 .*because ne is masked by lem_ne"):
        annotation_coverage(
            {"en": english["text"]}, no_ner, {"lem_ne": {"strategy": "lem", "entity_types": ["ne"]}}, s
        )
    # The same through the CLI: exit 1, the message on stderr, no output file.
    out = tmp_path / "coverage.json"
    argv = ["coverage", "--langs", "en", "--texts", str(english["text"]), "--settings", json.dumps(no_ner),
            "--variants", json.dumps(ALL_TYPES), "--out", str(out)]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "en: NE share is 0.0000" in err and not out.exists()
    # No variant masks NEs: a zero NE share is reported, not fatal.
    cov = annotation_coverage(
        {"en": english["text"]}, no_ner, {"lem_noun_verb": {"strategy": "lem", "entity_types": ["noun", "verb"]},
                                          "mlm_tlm": {"strategy": "standard"}}, s, out)  # fmt: skip
    assert cov["languages"]["en"]["shares"]["ne"] == 0 and json.loads(out.read_text())["enabled"] == {
        "noun": ["lem_noun_verb"], "verb": ["lem_noun_verb"]
    }  # fmt: skip
    # A share below min_share fails too.
    with pytest.raises(CoverageError, match="en: VERB share"):
        annotation_coverage(
            {"en": english["text"]}, no_ner, ALL_TYPES, CoverageSettings(sample=10, min_share=0.5)
        )


def test_the_workflow_passes_the_types_alone(english, tmp_path, capsys):
    """`--types` (the workflow's: the types the trained variants mask, so that a variant removed changes no
    parameter of the coverage job) requires the same shares as the variants that mask them."""
    no_ner = {"en": {"pos": english["settings"]["pos"]}}
    s = CoverageSettings(sample=10)
    with pytest.raises(
        CoverageError, match=r"en: NE share is 0\.0000 .*because a trained LEM variant masks ne"
    ):
        annotation_coverage({"en": english["text"]}, no_ner, {}, s, types=["ne", "noun"])
    cov = annotation_coverage({"en": english["text"]}, no_ner, {}, s, types=["verb", "noun"])
    assert cov["enabled"] == {"noun": [], "verb": []}  # canonical order
    out = tmp_path / "coverage.json"
    argv = ["coverage", "--langs", "en", "--texts", str(english["text"]), "--settings", json.dumps(no_ner),
            "--types", "ne", "--out", str(out)]  # fmt: skip
    assert main(argv) == 1 and "en: NE share is 0.0000" in capsys.readouterr().err and not out.exists()
    assert main([*argv[:-4], "--types", "--out", str(out)]) == 0  # no LEM variant: nothing required
    assert json.loads(out.read_text())["enabled"] == {}


def test_penn_read_as_upos_is_caught(english, tmp_path):
    """The original defect, reproduced with a lexicon declared in the wrong tag set: English nouns and verbs
    vanish, and the check names them."""
    tsv = tmp_path / "pos.tsv"
    tsv.write_text("road\tNOUN\nminister\tNOUN\nvisited\tVERB\nopened\tVERB\n", encoding="utf-8")
    wrong = {"en": {"pos": {"backend": "lexicon", "format": "tsv", "path": str(tsv), "tagset": "penn"}}}
    with pytest.raises(CoverageError) as e:
        annotation_coverage({"en": english["text"]}, wrong, {"lem_noun_verb": {"strategy": "lem", "entity_types": ["noun", "verb"]}}, CoverageSettings())  # fmt: skip
    assert "en: NOUN share is 0.0000" in str(e.value) and "en: VERB share is 0.0000" in str(e.value)
    assert "tag set penn" in str(e.value)


def test_enabled_types_and_sampling(tmp_path):
    assert enabled_entity_types({"lem": {"strategy": "lem"}, "mlm_tlm": {"strategy": "standard"}}) == {
        "ne": ["lem"], "noun": ["lem"], "verb": ["lem"]
    }  # fmt: skip
    assert enabled_entity_types({"mlm_tlm": {"strategy": "standard", "mlm_probability": 0.15}}) == {}
    p = tmp_path / "t.txt"
    p.write_text("".join(f"line {i}\n" if i % 7 else "\n" for i in range(1000)), encoding="utf-8")
    a, n = sample_sentences(p, 50, 13)
    assert n == 1000 - 143 and len(a) == 50 and len(set(a)) == 50
    assert a == sample_sentences(p, 50, 13)[0] != sample_sentences(p, 50, 14)[0]
    assert a == sorted(a, key=lambda t: int(t.split()[1]))  # file order
    assert sample_sentences(p, 5000, 13)[0] == [f"line {i}" for i in range(1000) if i % 7]


def test_streamed_annotation_equals_one_chunk_and_holds_one_chunk(english, tmp_path, monkeypatch):
    text = tmp_path / "big.txt"
    lines = [TEXT[i % len(TEXT)] + (f" {i}" if i % 3 else "") for i in range(103)]
    text.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    whole = dict(english["settings"], chunk_lines=1000)
    small = dict(english["settings"], chunk_lines=10)
    sizes: list[int] = []
    real = annotate_run.Annotator.annotate

    def spy(self, texts, first_id=0):
        sizes.append(len(texts))
        return real(self, texts, first_id)

    monkeypatch.setattr(annotate_run.Annotator, "annotate", spy)
    s1 = annotate_file("en", text, tmp_path / "one.parquet", AnnotateSettings.from_dict(whole))
    assert sizes == [103]
    sizes.clear()
    s2 = annotate_file("en", text, tmp_path / "many.parquet", AnnotateSettings.from_dict(small))
    assert max(sizes) == 10 and sum(sizes) == 103 and len(sizes) == 11  # at most one chunk of rows held
    one, many = pq.read_table(tmp_path / "one.parquet"), pq.read_table(tmp_path / "many.parquet")
    assert one.to_pylist() == many.to_pylist() and many.num_rows == 103
    assert one.schema.equals(many.schema, check_metadata=True)
    meta = pq.ParquetFile(tmp_path / "many.parquet").metadata
    assert meta.num_row_groups == 11 and max(meta.row_group(i).num_rows for i in range(11)) == 10
    assert [r["sent_id"] for r in many.to_pylist()] == list(range(103))
    assert many.column("text").to_pylist()[0] == lines[0]  # BOM and CR stripped
    for key in ("sentences", "words", "ne_words", "noun_words", "verb_words", "empty"):
        assert s1[key] == s2[key], key
    assert s2["chunks"] == 11 and s2["max_chunk_rows"] == 10


def test_streamed_annotation_fails_with_file_and_line_and_leaves_nothing(english, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\nc\n", encoding="utf-8")
    out = tmp_path / "o.parquet"
    with pytest.raises(ReaderError, match=r"bad\.tsv:2: expected at least 2 tab-separated columns"):
        annotate_file("en", bad, out, AnnotateSettings.from_dict({"chunk_lines": 1}), column=1)
    assert not out.exists() and not list(tmp_path.glob(".o.parquet*"))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"ok\nok\ncaf\xe9\n")
    with pytest.raises(ReaderError, match=r"latin\.txt:3: expected UTF-8"):
        annotate_file("en", latin, out, AnnotateSettings.from_dict({}))
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    annotate_file("en", empty, out, AnnotateSettings.from_dict({}))
    assert pq.read_table(out).num_rows == 0
    with pytest.raises(ValueError, match="chunk_lines"):
        AnnotateSettings.from_dict({"chunk_lines": 0})


def test_report_shows_the_coverage_table(english, tmp_path):
    cov_path = tmp_path / "coverage.json"
    annotation_coverage(
        {"en": english["text"]}, {"en": english["settings"]}, ALL_TYPES, CoverageSettings(), cov_path
    )
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    mining = tmp_path / "results/mining/base/news/si-en.metrics.json"
    mining.parent.mkdir(parents=True)
    keys = {"task": "mining", "variant": "base", "dataset": "news", "pair": "si-en", "seed": "1"}
    units = {"units": ["d0"], **{d: [[1, 2, 2]] for d in ("forward", "backward", "intersection")}}
    per_direction = {d: prf for d in ("forward", "backward", "intersection")}
    mining.write_text(json.dumps({"keys": keys, **per_direction, "units": units}))
    summary = build_report(
        mining=[str(mining)], variants=["base"], out_dir=tmp_path / "report", coverage=str(cov_path)
    )
    cov = summary[summary.task == "coverage"]
    assert set(cov.pair) == {"en"} and set(cov.metric) == {"ne_share", "noun_share", "verb_share"}
    md = (tmp_path / "report" / "summary.md").read_text()
    assert "## Annotation coverage" in md and "| en | 4 |" in md and "lexicon (upos)" in md
