"""The annotate stage offline on real text from ../shared/data (skips when it is absent)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from lem.annotate.cli import main


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
    assert any(f & 2 for r in rows for f in r["flags"])
    rows2 = run("si", si_text, {"pos": {"backend": "sinling"}}, tmp_path / "sl.parquet")
    assert all(p for r in rows2 for p in r["pos"]) and any(f & 4 for r in rows2 for f in r["flags"])


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
