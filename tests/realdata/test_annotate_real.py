"""The annotate stage offline on real text from ../shared/data (skips when it is absent), and its readers of
lexicons and tagged corpora on the real files (on small fixtures: tests/unit/test_annotate_readers.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from lem.annotate.readers import is_junk_tag, read_conll_ner, read_conllu, read_tnt_lex
from lem.cli import command
from lem.core.entities import FLAG_NOUN, FLAG_VERB

main = command("annotate")


@pytest.fixture
def si_text(shared_data, tmp_path):
    lines = (
        (shared_data / "nlpc-si-ta-orderpapers" / "Sinhala.txt")
        .read_bytes()
        .decode("utf-8")
        .splitlines()[:40]
    )
    p = tmp_path / "si.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def run(lang, inp, settings, out):
    assert (
        main(
            [
                "run",
                "--lang",
                lang,
                "--input",
                str(inp),
                "--settings",
                json.dumps(settings),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return pq.read_table(out).to_pylist()


def test_sinhala_lexicon_and_sinling(shared_data, si_text, tmp_path):
    lex = {
        "backend": "lexicon",
        "path": str(shared_data / "sinhala-pos-lexicon" / "sinhala_final.lex"),
        "format": "tnt",
    }
    rows = run("si", si_text, {"pos": lex, "on_error": "skip"}, tmp_path / "lex.parquet")
    assert len(rows) == 40
    tagged = [p for r in rows for p in r["pos"]]
    assert sum(p != "" for p in tagged) > 0.5 * len(tagged)
    assert any(f & FLAG_NOUN for r in rows for f in r["flags"])
    rows2 = run("si", si_text, {"pos": {"backend": "sinling"}}, tmp_path / "sl.parquet")
    assert all(p for r in rows2 for p in r["pos"]) and any(f & FLAG_VERB for r in rows2 for f in r["flags"])


def test_tamil_crf_pos_and_ner(shared_data, tmp_path):
    ttb = shared_data / "ud-tamil-ttb" / "ta_ttb-ud-train.conllu"
    assert main(["train-crf", "--task", "pos", "--lang", "ta", "--train", str(ttb), "--format", "conllu",
                 "--max-iterations", "20", "--out", str(tmp_path / "ta.pos.crf")]) == 0  # fmt: skip
    # A small NER training file cut from multiNER Tamil (CRLF, as in the original).
    raw = (shared_data / "multiner" / "Final_Tamil.txt").read_bytes()
    cut = b"\r\n\r\n".join(raw.split(b"\r\n\r\n")[1:300])
    (tmp_path / "ta.conll").write_bytes(cut)
    assert main(["train-crf", "--task", "ner", "--lang", "ta", "--train", str(tmp_path / "ta.conll"), "--format", "conll",
                 "--max-iterations", "20", "--on-error", "skip", "--out", str(tmp_path / "ta.ner.crf")]) == 0  # fmt: skip
    lines = (shared_data / "ud-tamil-ttb" / "ta_ttb-ud-test.conllu").read_text(encoding="utf-8").splitlines()
    texts = [x[len("# text = ") :] for x in lines if x.startswith("# text = ")][:30]
    (tmp_path / "ta.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    settings = {
        "pos": {"backend": "crf", "path": str(tmp_path / "ta.pos.crf")},
        "ner": {"backend": "crf", "path": str(tmp_path / "ta.ner.crf")},
    }
    rows = run("ta", tmp_path / "ta.txt", settings, tmp_path / "ta.parquet")
    assert len(rows) == 30
    coarse = [c for r in rows for c in r["coarse"]]
    assert coarse.count("NOUN") > 0.2 * len(coarse) and coarse.count("VERB") > 0.05 * len(coarse)


def test_tamil_crf_trained_on_ttb_sample_tags_upos_nouns_and_verbs(shared_data, tmp_path):
    """The paper config's Tamil POS: a CRF trained through the CLI on UD Tamil-TTB (here 150 sentences of
    its train split), whose UPOS tags become NOUN/VERB, scored on TTB test text against the gold UPOS."""
    ttb = shared_data / "ud-tamil-ttb"
    blocks = (ttb / "ta_ttb-ud-train.conllu").read_text(encoding="utf-8").split("\n\n")
    (tmp_path / "train.conllu").write_text("\n\n".join(blocks[:150]) + "\n\n", encoding="utf-8")
    model = tmp_path / "ta_pos.crf"
    assert main(["train-crf", "--task", "pos", "--lang", "ta", "--train", str(tmp_path / "train.conllu"),
                 "--format", "conllu", "--max-iterations", "50", "--out", str(model)]) == 0  # fmt: skip
    meta = json.loads((tmp_path / "ta_pos.crf.json").read_text(encoding="utf-8"))
    assert meta["tagset"] == "upos" and {"NOUN", "PROPN", "VERB"} <= set(meta["labels"])

    test = ttb / "ta_ttb-ud-test.conllu"
    texts = [
        x[len("# text = ") :]
        for x in test.read_text(encoding="utf-8").splitlines()
        if x.startswith("# text = ")
    ]
    (tmp_path / "ta.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    rows = run(
        "ta", tmp_path / "ta.txt", {"pos": {"backend": "crf", "path": str(model)}}, tmp_path / "ta.parquet"
    )
    assert pq.read_schema(tmp_path / "ta.parquet").metadata[b"lem.pos_tagset"] == b"upos"
    upos = {"NOUN": "NOUN", "PROPN": "NOUN", "VERB": "VERB"}
    for r in rows:
        assert r["coarse"] == [upos.get(p, "OTHER") for p in r["pos"]]
    coarse = [c for r in rows for c in r["coarse"]]
    assert coarse.count("NOUN") > 0.2 * len(coarse) and coarse.count("VERB") > 0.05 * len(coarse)

    # Against the gold UPOS (surface tokens; the sentences whose words `lem.core.text.words` splits alike).
    from lem.annotate.readers import read_conllu

    gold = "\n\n".join("\n".join(f"{w}\t{t}\tO" for w, t in s) for s in read_conllu(test, surface=True))
    (tmp_path / "gold.conll").write_text(gold + "\n", encoding="utf-8")
    assert main(["score", "--pred", str(tmp_path / "ta.parquet"), "--gold", str(tmp_path / "gold.conll"),
                 "--lang", "ta", "--out", str(tmp_path / "score.json")]) == 0  # fmt: skip
    score = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    assert score["sentences"] >= 90 and score["pos_tagsets"] == {"gold": "upos", "pred": "upos"}
    assert score["pos"]["accuracy"] > 0.6 and score["pos"]["coarse_accuracy"] > 0.7


def test_english_crf_trained_on_ewt_dev_is_the_offline_english_pos_route(shared_data, tmp_path):
    """English POS with no network and no spaCy/stanza model: a CRF trained in the pipeline on UD English-EWT
    dev (`crf_models.en_pos`, as Tamil's on TTB), scored on EWT test against the gold UPOS. Measured with
    100 iterations: UPOS accuracy 0.918, coarse 0.958 on the 1,732 test sentences whose words `lem.core.text.words`
    splits alike (a lexicon of dev: 0.781 / 0.855); 50 iterations here."""
    ewt = shared_data / "ud-english-ewt"
    if not (ewt / "en_ewt-ud-dev.conllu").is_file():
        pytest.skip(f"{ewt} is absent: UD English-EWT is not on this machine")
    model = tmp_path / "en_pos.crf"
    assert main(["train-crf", "--task", "pos", "--lang", "en", "--train", str(ewt / "en_ewt-ud-dev.conllu"),
                 "--format", "conllu", "--max-iterations", "50", "--out", str(model)]) == 0  # fmt: skip
    assert json.loads((tmp_path / "en_pos.crf.json").read_text(encoding="utf-8"))["tagset"] == "upos"

    from lem.annotate.readers import read_conllu

    test = ewt / "en_ewt-ud-test.conllu"
    texts = [
        x[len("# text = ") :]
        for x in test.read_text(encoding="utf-8").splitlines()
        if x.startswith("# text = ")
    ]
    (tmp_path / "en.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run("en", tmp_path / "en.txt", {"pos": {"backend": "crf", "path": str(model)}}, tmp_path / "en.parquet")
    gold = "\n\n".join("\n".join(f"{w}\t{t}\tO" for w, t in s) for s in read_conllu(test, surface=True))
    (tmp_path / "gold.conll").write_text(gold + "\n", encoding="utf-8")
    assert main(["score", "--pred", str(tmp_path / "en.parquet"), "--gold", str(tmp_path / "gold.conll"),
                 "--lang", "en", "--gold-tagset", "upos", "--out", str(tmp_path / "score.json")]) == 0  # fmt: skip
    score = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    assert score["sentences"] >= 1700 and score["pos_tagsets"] == {"gold": "upos", "pred": "upos"}
    assert score["pos"]["accuracy"] > 0.88 and score["pos"]["coarse_accuracy"] > 0.93


def test_real_data_readers(shared_data):
    en = read_conll_ner(shared_data / "multiner" / "Final_English.txt", on_error="skip")
    assert len(en) == 3836
    ta = read_conllu(shared_data / "ud-tamil-ttb" / "ta_ttb-ud-test.conllu")
    assert len(ta) == 120
    lex = read_tnt_lex(shared_data / "sinhala-pos-lexicon" / "sinhala_final.lex", on_error="skip")
    assert len(lex.tags) > 50_000 and not any(is_junk_tag(t) for t in lex.tags.values())
