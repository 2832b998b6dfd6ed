"""Any language by config (issue 25 item 6): Sinhala declared as `xx` everywhere in the config gives what `si`
gives. The generator writes its built-in languages under the configured codes (`corpus.generate.languages`),
the news layout loads any pair of codes, the `generated` lexical control and gold scoring follow the codes.
A part of the shared shrunken DAG run again, renamed: tests/dag/test_language_rename_dag.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.renaming import SI, declared_as_xx, files, to_xx

from lem.core.settings import SettingsError
from lem.corpus.generate import GenerateSettings, generate
from lem.data.news import language_folder, load_news
from lem.embed import generated_dictionary
from lem.evidence.controls import lexical_embeddings

SMALL = {"mono_sentences": 60, "para_train": 40, "para_valid": 10, "news_documents": 6, "sentiment_examples": 30,
         "noisy_pairs": 20, "noisy_extra_pairs": {"si-en": 8}}  # fmt: skip


@pytest.fixture(scope="module")
def worlds(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("worlds")
    xx = {**SMALL, "noisy_extra_pairs": {"xx-en": 8}, "languages": {"xx": "si"}}
    for name, settings in (("si", SMALL), ("xx", xx)):
        generate(GenerateSettings.from_dict(settings), root / name / "corpus", root / name / "eval")
    return root / "si", root / "xx"


def test_the_generator_writes_a_renamed_language_with_the_same_text(worlds):
    si, xx = (files(w) for w in worlds)
    assert {to_xx(p) for p in si} == set(xx)
    assert "corpus/mono/xx.txt" in xx and "eval/news/xx-English/GEN/GEN.xx-en" in xx
    assert "eval/news/Sinhala-Tamil/GEN/Sinhala/" not in "".join(xx)
    for path, data in si.items():
        text = data.decode("utf-8")
        # the news files name the language in their ids (si_<doc>_<k>); every other file holds the same bytes
        expected = re.sub(r"(?m)(^|\t)si_", r"\1xx_", text) if path.startswith("eval/news/") else text
        assert xx[to_xx(path)].decode("utf-8") == expected, path
    assert any(
        line.startswith("xx_") for line in xx["eval/news/xx-English/GEN/GEN.xx-en"].decode().splitlines()
    )


def test_the_news_layout_loads_a_renamed_pair_as_the_built_in_one(worlds):
    si, xx = worlds
    assert language_folder("si") == "Sinhala" and language_folder("xx") == "xx"
    for pair in ("si-en", "si-ta"):
        a, b = load_news(si / "eval/news", "GEN", pair), load_news(xx / "eval/news", "GEN", to_xx(pair))
        assert [(to_xx(i), d, t) for i, d, t in a.src] == b.src and a.tgt == [
            (to_xx(i), d, t) for i, d, t in b.tgt
        ]
        assert [(to_xx(s), to_xx(t)) for s, t in a.gold] == b.gold and b.gold
        named = {"pair", "gold_file"}  # the pair and its gold file's path name the codes
        assert {k: v for k, v in a.stats.items() if k not in named} == {
            k: v for k, v in b.stats.items() if k not in named
        }


def test_the_generated_lexical_control_follows_the_codes(worlds):
    si, _ = worlds
    texts = (si / "corpus/mono/si.txt").read_text(encoding="utf-8").splitlines()[:20]
    built_in, renamed_dict = (
        generated_dictionary(),
        generated_dictionary(codes={"xx": "si"}),
    )
    assert renamed_dict.size("xx") == built_in.size("si") > 100 and renamed_dict.size("si") == 0
    a = lexical_embeddings(texts, "si", built_in, dim=32, seed=1)
    assert np.array_equal(a, lexical_embeddings(texts, "xx", renamed_dict, dim=32, seed=1))
    assert np.abs(a).sum() > 0


@pytest.mark.parametrize(
    ("languages", "words"),
    [
        ({"xx": "de"}, "expected a code of 2-3 lower-case letters naming one of the built-in languages"),
        ({"Xx": "si"}, "languages.Xx: expected a code of 2-3 lower-case letters"),
        ({"xx": "si", "yy": "si"}, "two codes name the same built-in language"),
        ({"en": "si"}, "two built-in languages would be written under the same code"),
    ],
)
def test_a_bad_renaming_is_refused_naming_it(languages, words):
    with pytest.raises(SettingsError, match=re.escape(words)):
        GenerateSettings.from_dict({"languages": languages})


def test_swapped_codes_and_renamed_pairs_of_noisy_extra_pairs():
    swapped = GenerateSettings.from_dict({"languages": {"si": "ta", "ta": "si"}})
    assert swapped.codes == {"en": "en", "si": "ta", "ta": "si"} and swapped.pair_code("si-ta") == "ta-si"
    with pytest.raises(SettingsError, match=r"noisy_extra_pairs: si-en=3: expected a pair of \('xx-en'"):
        GenerateSettings.from_dict({"languages": {"xx": "si"}, "noisy_extra_pairs": {"si-en": 3}})


def test_config_check_takes_the_renamed_config():
    from lem.config_check import ConfigError, check_config

    cfg = declared_as_xx(yaml.safe_load((Path(__file__).parents[2] / "config/config.yaml").read_text()))
    check_config(cfg)  # no si left: names, pairs, annotation, evaluation sets and curation all say xx
    assert not SI.search(json.dumps({k: v for k, v in cfg.items() if k != "corpus"}))
    del cfg["corpus"]["generate"]["languages"]
    with pytest.raises(ConfigError, match=r"languages: 'xx' is not a language of the generated world"):
        check_config(cfg)
