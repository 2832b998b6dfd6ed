from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from lem.annotate.crf import CRFTagger, train_crf
from lem.annotate.lexicon import GazetteerNER, normalize
from lem.annotate.readers import Gazetteer, ReaderError
from lem.annotate.run import Annotator, read_sentences
from lem.annotate.schema import SCHEMA
from lem.annotate.settings import AnnotateSettings
from lem.cli import command
from lem.core.entities import coarse_for_lang, entity_flags, is_number, repair_iob2, to_iob2
from lem.core.text import words

main = command("annotate")


def test_coarse_classes_and_ner_mapping():
    assert [coarse_for_lang(t, "en") for t in ("NNPS", "VBZ", "MD", "")] == ["NOUN", "VERB", "OTHER", "OTHER"]
    assert [coarse_for_lang(t, "si") for t in ("NNC", "NNJ", "VNF", "NCV")] == [
        "NOUN",
        "NOUN",
        "VERB",
        "OTHER",
    ]
    assert [coarse_for_lang(t, "ta") for t in ("PROPN", "VERB", "AUX")] == ["NOUN", "VERB", "OTHER"]
    assert [to_iob2(x) for x in ("B-PERSON", "I-GPE", "S-NORP", "B-DATE", "O", "ORG")] == [
        "B-PER", "I-LOC", "B-MISC", "O", "O", "I-ORG",
    ]  # fmt: skip
    assert repair_iob2(["I-ORG", "I-ORG", "O", "I-PER"]) == ["B-ORG", "I-ORG", "O", "B-PER"]


def test_annotation_contract_is_defined_once():
    """Flag bits, NER types and tag sets live in lem.core.entities; every other module imports them."""
    import re
    from pathlib import Path

    import lem
    import lem.annotate.readers
    import lem.annotate.tagsets
    import lem.core.entities as ent
    import lem.corpus.lexicon
    import lem.masking.collate

    # the on-disk contract (docs/contracts.md): annotation `flags` and feature `word_flags` bits
    assert (ent.FLAG_NE, ent.FLAG_NOUN, ent.FLAG_VERB, ent.FLAG_ANY) == (1, 2, 4, 7)
    assert ent.ENTITY_BITS == {"ne": 1, "noun": 2, "verb": 4}
    assert ent.NER_TYPES == ("PER", "LOC", "ORG", "MISC")
    assert (
        lem.masking.collate.ENTITY_BITS is ent.ENTITY_BITS and lem.annotate.readers.NER_TYPES is ent.NER_TYPES
    )
    assert lem.corpus.lexicon.ENTITY_TYPES is ent.NER_TYPES and lem.annotate.tagsets.COARSE is ent.COARSE
    names = r"FLAG_(NE|NOUN|VERB|BITS|ANY)|ENTITY_BITS|NER_TYPES|PENN|UCSC|UPOS|NATIVE_TAGSET|ONTONOTES"
    definition = re.compile(rf"^\s*(\w+\s*,\s*)*({names})\s*(,\s*\w+\s*)*(:[^=]*)?=[^=]", re.M)
    root = Path(lem.__file__).parent
    for path in sorted(root.rglob("*.py")):
        if path.name != "entities.py":
            assert not definition.search(path.read_text(encoding="utf-8")), f"{path} defines a contract name"


def test_flags_exclude_numbers():
    assert is_number("2013") and is_number("1,200.5") and not is_number("A4")
    assert entity_flags(["2013", "Colombo", "runs"], ["OTHER", "NOUN", "VERB"], ["B-MISC", "B-LOC", "O"]) == [
        0,
        3,
        4,
    ]


def test_gazetteer_longest_match():
    gaz = GazetteerNER(
        Gazetteer(phrases={("sri",): "PER", ("sri", "lanka"): "LOC", ("bank", "of", "ceylon"): "ORG"})
    )
    ws = words("Sri Lanka and the Bank of Ceylon, Sri.")
    assert gaz.tag_words(ws) == ["B-LOC", "I-LOC", "O", "O", "B-ORG", "I-ORG", "I-ORG", "O", "B-PER", "O"]
    assert normalize("Road") == "road"


def test_settings_validation():
    s = AnnotateSettings.from_dict({"pos": {"backend": "lexicon", "path": "x", "format": "tnt"}})
    assert s.ner.backend == "none" and s.on_error == "raise"
    for bad, msg in [
        ({"poss": {}}, r"unknown key\(s\) \[.poss.\]"),
        ({"pos": {"backend": "lexicon", "path": "x"}}, "needs"),
        ({"pos": {"backend": "lexicon", "path": "x", "format": "conll"}}, "format"),
        ({"pos": {"backend": "hf_ner", "path": "x"}}, "does not do pos"),
        ({"ner": {"backend": "crf", "path": "x", "device": "cuda"}}, "does not take keys"),
        ({"on_error": "ignore"}, "on_error"),
    ]:
        with pytest.raises(ValueError, match=msg):
            AnnotateSettings.from_dict(bad)


def test_read_sentences_tsv_policy(tmp_path):
    p = tmp_path / "p.tsv"
    p.write_bytes("\ufeffa b\tx y\r\nonly\r\n".encode())
    with pytest.raises(ReaderError, match=r"p\.tsv:2: expected at least 2"):
        read_sentences(p, column=1)
    texts, skipped = read_sentences(p, column=1, on_error="skip")
    assert texts == ["x y", ""] and skipped["missing column"] == 1


def test_run_lexicon_end_to_end(tmp_path):
    (tmp_path / "pos.tsv").write_text("road\tNN\t3\nruns\tVBZ\t2\nthe\tDT\t9\n", encoding="utf-8")
    (tmp_path / "ner.tsv").write_text("Galle Road\tLOC\n", encoding="utf-8")
    (tmp_path / "in.txt").write_text("The road runs.\n\nGalle Road, 2013.\n", encoding="utf-8")
    settings = {
        "pos": {"backend": "lexicon", "path": str(tmp_path / "pos.tsv"), "format": "tsv"},
        "ner": {"backend": "lexicon", "path": str(tmp_path / "ner.tsv"), "format": "gazetteer_tsv"},
    }
    out = tmp_path / "a.parquet"
    rc = main(
        [
            "run",
            "--lang",
            "en",
            "--input",
            str(tmp_path / "in.txt"),
            "--settings",
            json.dumps(settings),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    t = pq.read_table(out)
    assert t.schema.equals(SCHEMA)
    rows = t.to_pylist()
    assert [r["sent_id"] for r in rows] == [0, 1, 2]
    assert rows[0]["words"] == ["The", "road", "runs", "."] and rows[0]["pos"] == ["DT", "NN", "VBZ", ""]
    assert rows[0]["starts"] == [0, 4, 9, 13] and rows[0]["ends"] == [3, 8, 13, 14]
    assert rows[0]["flags"] == [0, 2, 4, 0] and rows[1]["words"] == []
    assert rows[2]["ner"] == ["B-LOC", "I-LOC", "O", "O", "O"] and rows[2]["flags"][:2] == [1, 3]


def test_crf_train_and_tag(tmp_path):
    sents = [[("John", "B-PER"), ("lives", "O"), ("in", "O"), ("Colombo", "B-LOC")]] * 5 + [
        [("Mary", "B-PER"), ("Silva", "I-PER"), ("works", "O")]
    ] * 5
    meta = train_crf(sents, tmp_path / "m.crf", "ner", "en", max_iterations=30)
    assert meta["labels"] == ["B-LOC", "B-PER", "I-PER", "O"]
    assert (tmp_path / "m.crf").read_bytes()[:4] == b"lCRF"  # crfsuite's own format, not a pickle
    tagger = CRFTagger(tmp_path / "m.crf")
    assert tagger.tag([["John", "lives", "in", "Colombo"], []]) == [["B-PER", "O", "O", "B-LOC"], []]
    with pytest.raises(ValueError, match="tags ner/en, not ner/si"):
        Annotator(
            "si", AnnotateSettings.from_dict({"ner": {"backend": "crf", "path": str(tmp_path / "m.crf")}})
        )


def test_stanza_and_spacy_fail_fast(tmp_path):
    with pytest.raises(RuntimeError, match="stanza models for 'en' not found"):
        Annotator("en", AnnotateSettings.from_dict({"pos": {"backend": "stanza", "path": str(tmp_path)}}))
    with pytest.raises(ValueError, match="no ner model for 'ta'"):
        Annotator("ta", AnnotateSettings.from_dict({"ner": {"backend": "stanza", "path": str(tmp_path)}}))
    with pytest.raises(RuntimeError, match="spaCy"):
        Annotator("en", AnnotateSettings.from_dict({"pos": {"backend": "spacy"}}))


def test_cli_bad_settings_message(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("x\n", encoding="utf-8")
    rc = main(
        [
            "run",
            "--lang",
            "si",
            "--input",
            str(tmp_path / "in.txt"),
            "--settings",
            '{"pos": {"backend": "nope"}}',
            "--out",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert rc == 2 and "pos.backend must be one of" in capsys.readouterr().err


def test_score_against_gold_conll(tmp_path, capsys):
    (tmp_path / "pos.tsv").write_text("road\tNN\nruns\tVBZ\n", encoding="utf-8")
    (tmp_path / "ner.tsv").write_text("Galle\tLOC\n", encoding="utf-8")
    (tmp_path / "in.txt").write_text("Galle road runs.\n", encoding="utf-8")
    gold = "Galle\tNNP\tB-LOC\nroad\tNN\tO\nruns\tVBZ\tO\n.\t.\tO\n"
    (tmp_path / "g.conll").write_text(gold, encoding="utf-8")
    settings = {
        "pos": {"backend": "lexicon", "path": str(tmp_path / "pos.tsv"), "format": "tsv"},
        "ner": {"backend": "lexicon", "path": str(tmp_path / "ner.tsv"), "format": "gazetteer_tsv"},
    }
    pred = str(tmp_path / "p.parquet")
    assert (
        main(
            [
                "run",
                "--lang",
                "en",
                "--input",
                str(tmp_path / "in.txt"),
                "--settings",
                json.dumps(settings),
                "--out",
                pred,
            ]
        )
        == 0
    )
    assert main(["score", "--pred", pred, "--gold", str(tmp_path / "g.conll"), "--lang", "en"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pos"]["accuracy"] == 0.5 and out["pos"]["coarse_accuracy"] == 0.75 and out["ner"]["f1"] == 1.0
