"""Any language by config: a language code the library has no defaults for (here Sinhala declared as `xx`,
with its tag set, script and resources in the config) gives what `si` gives in the stage functions."""

from __future__ import annotations

import pytest

from lem.annotate.run import Annotator
from lem.annotate.settings import AnnotateSettings
from lem.core.entities import native_tagset
from lem.core.stage import lang_code
from lem.data.webmined import FilterSettings, filter_reason

SENTENCES = ["කමල් පෙරේරා පොත් 4037ක් ආනයනය කළේය.", "නිමල් සිල්වා ගමට ගියේය.", "පොත් සිකුරාදා ලබා දෙන ලදී."]


@pytest.fixture
def resources(tmp_path):
    pos = tmp_path / "pos.tsv"
    pos.write_text(
        "පොත්\tNNC\t9\nකළේය\tVFM\t7\nගියේය\tVFM\t3\nගමට\tNNC\t2\nලදී\tVP\t4\n.\tFS\t9\n", encoding="utf-8"
    )
    ner = tmp_path / "ner.tsv"
    ner.write_text("කමල් පෙරේරා\tPER\nනිමල් සිල්වා\tPER\n", encoding="utf-8")
    return {
        "pos": {"backend": "lexicon", "format": "tsv", "path": str(pos)},
        "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(ner)},
    }


def test_a_renamed_language_annotates_as_si(resources):
    si = Annotator("si", AnnotateSettings.from_dict(resources)).annotate(SENTENCES)
    xx_settings = {**resources, "pos": {**resources["pos"], "tagset": "ucsc"}}  # the config names its tag set
    xx = Annotator("xx", AnnotateSettings.from_dict(xx_settings)).annotate(SENTENCES)
    assert [(r.words, r.pos, r.ner, r.flags) for r in xx] == [(r.words, r.pos, r.ner, r.flags) for r in si]
    assert any(r.flags for r in si) and any(f for r in si for f in r.flags)


def test_a_language_without_a_default_tag_set_must_name_one(resources):
    with pytest.raises(ValueError, match=r"language 'xx' has no default POS tag set.*pos\.tagset"):
        Annotator("xx", AnnotateSettings.from_dict(resources))
    assert native_tagset("si") == "ucsc"
    with pytest.raises(ValueError, match="must be a language code"):
        Annotator("Sinhala", AnnotateSettings.from_dict(resources))
    assert lang_code("xx") == "xx"


def test_a_renamed_language_is_script_filtered_as_si():
    si = FilterSettings.from_dict({})
    xx = FilterSettings.from_dict({"scripts": {"xx": "SINHALA", "en": "LATIN"}})
    pairs = [("පොත් කියවයි", "reads books"), ("reads books", "reads books too"), ("පොත", "පොත් කියවයි")]
    for a, b in pairs:
        assert filter_reason(a, b, a, b, ("xx", "en"), xx) == filter_reason(a, b, a, b, ("si", "en"), si)
    assert filter_reason(*pairs[1], *pairs[1], ("xx", "en"), xx) == "script"


def test_the_news_benchmark_takes_any_pair_of_codes_and_says_what_is_missing_in_one_line(tmp_path, capsys):
    from lem.cli import command

    argv = [
        "news",
        "--root",
        str(tmp_path),
        "--site",
        "ITN",
        "--pair",
        "xx-en",
        "--out-dir",
        str(tmp_path / "o"),
    ]
    assert command("data")(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"lem data news: no folder 'xx-English' in {tmp_path} (matched ignoring case, spaces, '-' and '_')"
    ]
