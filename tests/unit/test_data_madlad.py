"""MADLAD-400 filters on local text, and the streaming reader on a local file in the MADLAD JSONL layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lem.cli import command
from lem.data.madlad import MadladSettings, extract, script_lid, split_sentences

main = command("data")

SI1 = "මම අද උදේ ගෙදර සිට පාසලට ගියේ ඉතා සතුටින්."
SI2 = "ඔහු පසුව ගමේ පුස්තකාලයට ගොස් පොත් කිහිපයක් කියෙව්වේ ය."
SI3 = "අපි හවස ගඟ අසල ඇවිද ගියෙමු සහ මිතුරන් හමු වුණෙමු."


def doc(*paras: str) -> str:
    return "\\n".join(paras)  # MADLAD paragraph breaks are a literal backslash-n


def test_all_sentences_of_a_paragraph_kept_authors_bug_fixed() -> None:
    s = MadladSettings(size=10)
    got, counts = extract("si", [doc("Title | Blog", "Title", f"{SI1} {SI2} {SI3}")], s)
    assert got == [SI1, SI2, SI3] and counts["title_paragraphs_dropped"] == 2


def test_filters_each_counted() -> None:
    paras = [
        "t",
        "t",
        "1. " + SI1,  # numeric prefix stripped
        SI1,  # duplicate after stripping
        "කෙටි වාක්‍යයකි.",  # too short
        "මෙය ඉතා දිගු වාක්‍යයක් වන නමුත් අවසානය නරකයි...",  # bad ending
        "සාලමොන්ගේ ගීතිකා පොතේ මෙම පදය ලියා ඇති බව ඔහු පැවසීය.",  # multi-word Bible book
        "This sentence is entirely written in the English language.",  # wrong language
        f"{SI2} https://example.com/a?b=1 more",  # URL removed, rest kept as its own split
        SI3,  # excluded as an evaluation sentence
    ]
    s = MadladSettings(size=10)
    from lem.data import madlad

    ex = madlad.Extractor("si", s, script_lid("si", 0.7), exclude={SI3})
    got = [x for x in ex.sentences(doc(*paras))]
    assert got == [SI1, SI2]  # "more" after the URL is its own (too short) sentence
    c = ex.counts
    assert (c["duplicate"], c["too_short"], c["bad_ending"], c["bible_book"], c["wrong_language"]) == (
        1,
        2,
        1,
        1,
        1,
    )
    assert c["urls_removed"] == 1 and c["excluded_eval_sentence"] == 1 and c["prefix_or_quotes_stripped"] == 1


def test_english_exclusions_and_multiword_books() -> None:
    s = MadladSettings(size=10)
    docs = [doc("t", "t", "He read the Song of Solomon aloud to the whole quiet class today.",
                "We met on 2021-05-04 at the old station near the big river.",
                "Our team walked to the museum and then had lunch together there.")]  # fmt: skip
    got, counts = extract("en", docs, s)
    assert got == ["Our team walked to the museum and then had lunch together there."]
    assert counts["bible_book"] == 1 and counts["excluded_pattern"] == 1


def test_splitters_fit_language() -> None:
    assert split_sentences("Dr. Smith came. He left! ok", "en") == ["Dr. Smith came.", "He left! ok"]
    assert split_sentences("පෙ.ව. 10 ට ආවා. ඔහු ගියා?", "si") == ["පෙ.ව. 10 ට ආවා.", "ඔහු ගියා?"]
    assert split_sentences("அவர் வந்தார். நான் போனேன்!", "ta") == ["அவர் வந்தார்.", "நான் போனேன்!"]


def test_script_lid() -> None:
    assert script_lid("ta", 0.7)("அவர் நேற்று கொழும்பு வந்தார் (Colombo)")
    assert not script_lid("ta", 0.7)(SI1)
    assert script_lid("en", 0.7)("Plain English text")


def test_fasttext_route_import_guarded() -> None:
    s = MadladSettings(lid="fasttext", lid_model="/nonexistent.bin")
    try:
        import fasttext  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="fasttext"):
            extract("si", [], s)
    with pytest.raises(ValueError, match="unknown key"):
        MadladSettings.from_dict({"sizes": 3})


def test_cli_local_jsonl(tmp_path: Path) -> None:
    rows = [{"text": doc("T", "T", f"{SI1} {SI2}")}, {"text": doc("T", "T", SI3)}]
    (tmp_path / "si.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (tmp_path / "valid.txt").write_text(SI2 + "\n", encoding="utf-8")
    out = tmp_path / "si.txt"
    settings = json.dumps({"size": 5, "exclude_files": [str(tmp_path / "valid.txt")]})
    assert main(["madlad", "--lang", "si", "--settings", settings, "--local-jsonl", str(tmp_path / "si.jsonl"),
                 "--out", str(out), "--stats", str(tmp_path / "s.json")]) == 0  # fmt: skip
    assert out.read_text(encoding="utf-8").splitlines() == [SI1, SI3]
    assert json.loads((tmp_path / "s.json").read_text())["excluded_eval_sentence"] == 1
