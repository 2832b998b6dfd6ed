"""The generated trilingual corpus: determinism, file formats of the contract, gold tags, eval sets."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from lem.cli import command
from lem.core.text import words
from lem.corpus import lexicon as lx
from lem.corpus import tags as gen_tags
from lem.corpus import world as gen_world
from lem.corpus.generate import PAIRS, GenerateSettings, generate
from lem.corpus.templates import SLOT_RE, TEMPLATES, slots

main = command("corpus")

SMALL = {
    "mono_sentences": 300,
    "para_train": 150,
    "para_valid": 30,
    "news_documents": 10,
    "sentiment_examples": 400,
    "noisy_pairs": 90,
}
LANG_NAMES = {"en": "English", "si": "Sinhala", "ta": "Tamil"}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("gen")
    counts = generate(GenerateSettings.from_dict(SMALL), root / "corpus", root / "eval")
    return root / "corpus", root / "eval", counts


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _script(text: str) -> set[str]:
    out = set()
    for ch in text:
        if "\u0d80" <= ch <= "\u0dff":
            out.add("si")
        elif "\u0b80" <= ch <= "\u0bff":
            out.add("ta")
        elif ch.isascii() and ch.isalpha():
            out.add("en")
    return out


def _conll(path: Path) -> list[list[list[str]]]:
    sents, cur = [], []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line:
            cur.append(line.split("\t"))
        elif cur:
            sents.append(cur)
            cur = []
    assert not cur, f"{path}: last sentence not closed by a blank line"
    return sents


def test_same_settings_give_byte_identical_files(world, tmp_path):
    corpus, evald, _ = world
    assert (
        main(
            [
                "generate",
                "--settings",
                json.dumps(SMALL),
                "--out-dir",
                str(tmp_path / "c"),
                "--eval-dir",
                str(tmp_path / "e"),
            ]
        )
        == 0
    )
    assert _files(tmp_path / "c") == _files(corpus)
    assert _files(tmp_path / "e") == _files(evald)


def test_other_seed_gives_other_text(world, tmp_path):
    corpus, _, _ = world
    generate(GenerateSettings.from_dict({**SMALL, "seed": 14}), tmp_path / "c", tmp_path / "e")
    assert (tmp_path / "c/mono/en.txt").read_bytes() != (corpus / "mono/en.txt").read_bytes()


def test_settings_reject_unknown_and_bad_values():
    with pytest.raises(ValueError, match="unknown key"):
        GenerateSettings.from_dict({"mono_sentence": 3})
    with pytest.raises(ValueError, match="news_gold_share"):
        GenerateSettings.from_dict({"news_gold_share": 1.5})
    with pytest.raises(ValueError, match="seed=.13.: expected an integer"):
        GenerateSettings.from_dict({"seed": "13"})
    assert GenerateSettings.from_dict({}) == GenerateSettings()


def test_cli_reports_bad_settings(tmp_path, capsys):
    assert (
        main(
            ["generate", "--settings", '{"nope": 1}', "--out-dir", str(tmp_path), "--eval-dir", str(tmp_path)]
        )
        == 2
    )
    assert "unknown key" in capsys.readouterr().err


def test_templates_have_same_slots_in_every_language():
    assert len(TEMPLATES) >= 25
    for name, tpl in TEMPLATES.items():
        slot_sets = [{s for s, _, _ in slots(t)} for t in tpl]
        assert slot_sets[0] == slot_sets[1] == slot_sets[2], name
        for t in tpl:
            assert t.split()[-1].startswith("./"), f"{name}: a sentence ends with a full stop"
            for item in t.split():
                assert SLOT_RE.match(item) or "/" in item, f"{name}: fixed word without tag {item!r}"


def test_lexicon_sizes_and_scripts():
    cats = Counter(e.cat for e in lx.ENTRIES)
    assert cats["PER"] >= 20 and cats["LOC"] >= 20 and cats["ORG"] >= 15
    assert cats["NOUN"] >= 55 and cats["VERB"] >= 35 and cats["ADJ"] >= 30
    assert {e.polarity for e in lx.entries("ADJ")} == {"positive", "negative", "neutral"}
    for e in lx.ENTRIES:
        for lang in ("si", "ta"):
            for text in e.forms[lang].values():
                plain = " ".join(w for w, _ in lx.parse_form(text, e.cat, lang, "base"))
                assert _script(plain) == {lang}, (e.key, lang, text)


# sha256 over every file the SMALL world writes (path and bytes). It changes whenever the generator or its
# lexicon data (src/lem/corpus/data/lexicon/*.tsv) changes what it writes: after an intended change, put the
# new value here (the lexicon moving from Python tuples to data files kept it byte for byte).
SMALL_WORLD_SHA256 = "263f6358a24f164cbd9624abb4747fe0bbbad97252108136f6443229ec2aca8d"


def _digest(*roots: Path) -> str:
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(root.parent)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def test_lexicon_data_files_load_and_generated_world_is_stable(world):
    corpus, evald, _ = world
    lexicon = lx.load(lx.DATA_DIR)
    assert list(lexicon.entries) == lx.ENTRIES and len(lx.ENTRIES) == 197
    assert list(lexicon.sentiment_verbs) == lx.SENTIMENT_VERBS and len(lx.SENTIMENT_NEUTRAL) == 7
    assert sorted(p.name for p in lx.DATA_DIR.glob("*.tsv")) == sorted(
        [f"{t.name}.tsv" for t in lx.TABLES] + [f"{name}.tsv" for name in lx.SENTIMENT_TABLES]
    )
    # derived forms: a person's Tamil accusative, a place's Sinhala genitive, English function words in names
    kamal, jaffna = lx.entries("PER")[0], next(e for e in lx.entries("LOC") if e.key == "Jaffna")
    assert kamal.forms["ta"]["acc"] == "கமல் பெரேராவை" and jaffna.forms["si"]["gen"] == "යාපනයේ"
    assert lx.entries("ORG")[1].forms["en"]["base"] == "Ministry of/IN Health"
    assert _digest(corpus, evald) == SMALL_WORLD_SHA256


def test_linguists_added_entry_is_picked_up(tmp_path, monkeypatch):
    data = tmp_path / "lexicon"
    shutil.copytree(lx.DATA_DIR, data)
    place = "Dambulla\tදඹුල්ල\tදඹුල්ලට\tදඹුල්ලේදී\tதம்புள்ளை\tதம்புள்ளைக்கு\tதம்புள்ளையில்\n"
    with open(data / "places.tsv", "a", encoding="utf-8") as f:
        f.write(place)
    lexicon = lx.load(data)
    added = lexicon.entries[len(lx.entries("PER")) + len(lx.entries("LOC"))]
    assert added.cat == "LOC" and added.key == "Dambulla" and added.ner == "LOC"
    assert added.forms["si"]["gen"] == "දඹුල්ලේ" and len(lexicon.entries) == len(lx.ENTRIES) + 1
    monkeypatch.setattr(lx, "ENTRIES", list(lexicon.entries))
    monkeypatch.setattr(gen_world, "POOLS", gen_world.pools())
    generate(GenerateSettings.from_dict(SMALL), tmp_path / "corpus", tmp_path / "eval")
    for lang, name in (("en", "Dambulla"), ("si", "දඹුල්ලට"), ("ta", "தம்புள்ளையில்")):
        assert f"{name}\tLOC\n" in (tmp_path / f"corpus/lexicon/{lang}.ner.tsv").read_text(encoding="utf-8")
    assert "Dambulla" in (tmp_path / "corpus/mono/en.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "file, line, error",
    [
        ("nouns.tsv", "X\tcar\tcars\ta\tb\tc\tக\tக\tக\tக\t\n", r"nouns.tsv:59: class 'X' not in"),
        ("people.tsv", "Ann Lee\tඇන් ලී\n", r"people.tsv:22: 2 tab-separated cells, expected 3"),
        ("adjectives.tsv", "odd\tඅමුතු\tவிந்தை\tவிந்தையாக\tamuthu\tstrange\n", r"polarity 'strange'"),
        ("times.tsv", "now\t\tஇப்போது/ADV\n", r"times.tsv:12: empty \['si.base'\]"),
        ("times.tsv", "now/RB\tදැන්/NNC\tஇப்போது\n", r"times.tsv:12: ta.base 'இப்போது \(no default tag"),
        ("places.tsv", "Colombo\tකොළඹ\tකොළඹට\tකොළඹදී\tகொழும்பு\tகொழும்புக்கு\tகொழும்பில்\n", "already listed"),
        ("sentiment_neutral.tsv", "the {x}\t{r} eka\n", r"only \{n\}, \{r\}, \{l\}"),
    ],
)
def test_lexicon_errors_name_file_and_line(tmp_path, file, line, error):
    data = tmp_path / "lexicon"
    shutil.copytree(lx.DATA_DIR, data)
    with open(data / file, "a", encoding="utf-8") as f:
        f.write(line)
    with pytest.raises(lx.LexiconError, match=error):
        lx.load(data)
    (data / file).write_text("en\tsi\n", encoding="utf-8")
    with pytest.raises(lx.LexiconError, match=r":1: header \['en', 'si'\]: expected the columns"):
        lx.load(data)


def test_mono_and_gold_agree(world):
    corpus, _, counts = world
    for lang in lx.LANGS:
        lines = (corpus / f"mono/{lang}.txt").read_text(encoding="utf-8").splitlines()
        gold = _conll(corpus / f"gold/{lang}.conll")
        assert len(lines) == len(gold) == SMALL["mono_sentences"] == counts["mono"][lang]
        lexicon = {
            tuple(r.split("\t")[:2])
            for r in (corpus / f"lexicon/{lang}.pos.tsv").read_text(encoding="utf-8").splitlines()
        }
        gaz = dict(
            r.split("\t")
            for r in (corpus / f"lexicon/{lang}.ner.tsv").read_text(encoding="utf-8").splitlines()
        )
        for line, sent in zip(lines, gold, strict=True):
            assert [r[0] for r in sent] == words(line)
            assert line[-1] == "." and not line.endswith(" .")
            for word, pos, ner in sent:
                assert (word, pos) in lexicon, (lang, word, pos)
                assert ner == "O" or ner[:2] in ("B-", "I-") and ner[2:] in lx.ENTITY_TYPES
            # every entity span is a gazetteer phrase of its type
            i = 0
            while i < len(sent):
                if sent[i][2].startswith("B-"):
                    j = i + 1
                    while j < len(sent) and sent[j][2] == "I-" + sent[i][2][2:]:
                        j += 1
                    phrase = " ".join(r[0] for r in sent[i:j])
                    assert gaz.get(phrase) == sent[i][2][2:], (lang, phrase)
                    i = j
                else:
                    assert sent[i][2] == "O", (lang, line)
                    i += 1
        entity_pos = {pos for s in gold for _, pos, ner in s if ner != "O"}
        assert entity_pos <= {"en": {"NNP", "IN"}, "si": {"NNP"}, "ta": {"PROPN"}}[lang]


def test_pos_lexicon_counts_come_from_mono(world):
    corpus, _, _ = world
    for lang in lx.LANGS:
        gold = _conll(corpus / f"gold/{lang}.conll")
        counts = Counter((w, p) for s in gold for w, p, _ in s)
        rows = [
            r.split("\t")
            for r in (corpus / f"lexicon/{lang}.pos.tsv").read_text(encoding="utf-8").splitlines()
        ]
        assert all(len(r) == 3 for r in rows)
        table = {(w, t): int(c) for w, t, c in rows}
        assert len(table) == len(rows)
        assert all(table[k] == counts[k] for k in table)
        assert sum(1 for v in table.values() if v == 0) > 0  # forms the generator can emit but did not


def test_para_sides_are_in_their_scripts(world):
    corpus, _, counts = world
    for pair in PAIRS:
        src, tgt = pair.split("-")
        for split, n in (("train", SMALL["para_train"]), ("valid", SMALL["para_valid"])):
            rows = [
                r.split("\t")
                for r in (corpus / f"para/{pair}.{split}.tsv").read_text(encoding="utf-8").splitlines()
            ]
            assert len(rows) == n == counts["para"][pair][split]
            for a, b in rows:
                assert _script(a) == {src} and _script(b) == {tgt}, (pair, a, b)


def test_eval_sentences_are_not_in_training_text(world):
    corpus, evald, _ = world
    train = set()
    for lang in lx.LANGS:
        train.update((corpus / f"mono/{lang}.txt").read_text(encoding="utf-8").splitlines())
    for p in (corpus / "para").glob("*.train.tsv"):
        for r in p.read_text(encoding="utf-8").splitlines():
            train.update(r.split("\t"))
    for doc in (evald / "news").rglob("*"):
        if doc.is_file() and "." not in doc.name:
            for line in doc.read_text(encoding="utf-8").splitlines():
                assert line.split("\t")[1] not in train


def test_noisy_extra_pairs_append_to_one_pair_and_change_no_other_file(world, tmp_path):
    # issue 23: the NMT pair's larger training pool must not move pre-training or any evaluation set
    corpus, evald, _ = world
    counts = generate(GenerateSettings.from_dict({**SMALL, "noisy_extra_pairs": {"si-en": 120}}),
                      tmp_path / "c", tmp_path / "e")  # fmt: skip
    assert _files(tmp_path / "c") == _files(corpus)
    old, new = _files(evald), _files(tmp_path / "e")
    changed = "noisy/si-en.tsv"
    assert {k: v for k, v in new.items() if k != changed} == {k: v for k, v in old.items() if k != changed}
    old_rows = old[changed].decode().splitlines()
    new_rows = new[changed].decode().splitlines()
    assert new_rows[: len(old_rows)] == old_rows and len(new_rows) == len(old_rows) + 120
    labels = {"clean": 105, "misaligned": 35, "untranslated": 35, "wrong_language": 35}
    assert counts["noisy"]["si-en"] == labels
    # no extra sentence in any other text of the world, after the leakage guard's normalisation
    from lem.data.leakage import normalise

    other = set()
    for root in (corpus, evald):
        for path in root.rglob("*"):
            if path.is_file() and path.suffix != ".conll" and str(path.relative_to(root)) != changed:
                for line in path.read_text(encoding="utf-8").splitlines():
                    other.update(normalise(cell) for cell in line.split("\t"))
    for row in new_rows[len(old_rows) :]:
        a, b, label = row.split("\t")
        assert normalise(a) not in other and (label == "untranslated" or normalise(b) not in other)
    extra_src = [r.split("\t")[0] for r in new_rows[len(old_rows) :]]
    assert len(set(extra_src)) == len(extra_src)
    with pytest.raises(ValueError, match="noisy_extra_pairs: en-si=5"):
        GenerateSettings.from_dict({"noisy_extra_pairs": {"en-si": 5}})


def test_news_layout_is_loadable(world):
    _, evald, counts = world
    for pair in PAIRS:
        src, tgt = pair.split("-")
        site = evald / "news" / f"{LANG_NAMES[src]}-{LANG_NAMES[tgt]}" / "GEN"
        src_docs = {p.name for p in (site / LANG_NAMES[src]).iterdir()}
        tgt_docs = {p.name for p in (site / LANG_NAMES[tgt]).iterdir()}
        assert src_docs == tgt_docs and len(src_docs) == SMALL["news_documents"]
        ids: dict[str, str] = {}
        for lang in (src, tgt):
            for doc in src_docs:
                lines = (site / LANG_NAMES[lang] / doc).read_text(encoding="utf-8").splitlines()
                for k, line in enumerate(lines):
                    sid, text = line.split("\t")
                    assert sid == f"{lang}_{doc}_{k}" and _script(text) == {lang}
                    ids[sid] = doc
        gold = [r.split("\t") for r in (site / f"GEN.{pair}").read_text(encoding="utf-8").splitlines()]
        assert len(gold) == counts["news"][pair]["gold_links"] > 0
        covered = set()
        for a, b in gold:
            assert a.startswith(src + "_") and b.startswith(tgt + "_")
            assert a in ids and b in ids and ids[a] == ids[b]
            covered.add(ids[a])
        assert 0 < len(covered) < len(src_docs)  # gold covers a subset of the document pairs
        assert sum(a.split("_")[2] != b.split("_")[2] for a, b in gold) > len(gold) // 2  # not positional


def test_noisy_labels(world):
    _, evald, _ = world
    for pair in PAIRS:
        src, tgt = pair.split("-")
        third = next(lg for lg in lx.LANGS if lg not in (src, tgt))
        lines = (evald / f"noisy/{pair}.tsv").read_text(encoding="utf-8").splitlines()
        assert lines[0] == "src\ttgt\tlabel"
        rows = [r.split("\t") for r in lines[1:]]
        labels = Counter(r[2] for r in rows)
        assert labels["clean"] == round(0.5 * SMALL["noisy_pairs"])
        assert set(labels) == {"clean", "misaligned", "untranslated", "wrong_language"}
        for a, b, label in rows:
            assert _script(a) == {src}
            if label == "untranslated":
                assert a == b
            elif label == "wrong_language":
                assert _script(b) == {third}
            else:
                assert _script(b) == {tgt}


def test_sentiment_csv(world):
    _, evald, counts = world
    with open(evald / "sentiment/generated.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["", "Sentence", "Sentiment"]
    assert [int(r[0]) for r in rows[1:]] == list(range(SMALL["sentiment_examples"]))
    labels = Counter(r[2] for r in rows[1:])
    assert labels == Counter(counts["sentiment"])
    assert set(labels) == {"Positive", "Negative", "Neutral"}
    assert labels["Neutral"] > labels["Negative"] > labels["Positive"]
    texts = [r[1] for r in rows[1:]]
    assert len(set(texts)) == len(texts)
    assert all(_script(t) <= {"en"} for t in texts)  # romanised Sinhala and English, Latin script
    assert any(" na" in t for t in texts)  # negation occurs


def test_composed_names_are_one_transliteration_in_three_scripts():
    v = gen_world.variety(GenerateSettings())
    assert len(v.composed["PER"]) == 3000 and len(v.composed["LOC"]) == 1500
    assert len({e.key for cat in ("PER", "LOC") for e in v.composed[cat]}) == 4500
    assert not {e.key for e in lx.ENTRIES} & {e.key for e in v.composed["PER"] + v.composed["LOC"]}
    en_of = {c[1] + vw[1]: c[0] + vw[0] for c in lx.CONSONANTS for vw in lx.VOWELS}
    for e in v.composed["PER"][:50] + v.composed["LOC"][:50]:
        assert {lg: _script(e.forms[lg]["base"]) for lg in lx.LANGS} == {lg: {lg} for lg in lx.LANGS}
        # the Sinhala spelling read back syllable by syllable gives the English one
        back = []
        for word in e.forms["si"]["base"].split():
            syl, i = "", 0
            while i < len(word):
                n = 2 if i + 1 < len(word) and word[i : i + 2] in en_of else 1
                syl += en_of[word[i : i + n]]
                i += n
            back.append(syl)
        assert " ".join(back) == e.forms["en"]["base"].lower(), e.key
    loc = v.composed["LOC"][0]
    assert loc.forms["ta"]["loc"] == loc.forms["ta"]["base"] + "யில்" and loc.forms["si"]["dat"].endswith("ට")
    # the same settings compose the same names; no composed names without a share
    assert gen_world.variety(GenerateSettings()).composed == v.composed
    assert gen_world.variety(GenerateSettings(composed_share=0.0)).composed == {"PER": (), "LOC": ()}


def test_translations_share_names_dates_and_numbers_in_digits(world):
    corpus, _, _ = world
    rows = [r.split("\t") for r in (corpus / "para/si-en.train.tsv").read_text(encoding="utf-8").splitlines()]
    gaz = {
        lg: dict(gen_tags.gazetteer(lg, gen_world.world_entries(GenerateSettings.from_dict(SMALL))))
        for lg in lx.LANGS
    }
    dated = 0
    for si, en in rows:
        digits = [w.removesuffix("ක්") for w in words(si) if w.removesuffix("ක්").isdigit()]
        assert sorted(digits) == sorted(w for w in words(en) if w.isdigit())
        dated += any(m[0] in en for m in lx.MONTHS)
    assert 0.2 < dated / len(rows) < 0.8
    text = (corpus / "mono/ta.txt").read_text(encoding="utf-8")
    names = [p for p, t in gaz["ta"].items() if t == "PER" and p in text]
    assert len(names) > 50  # composed people of the gazetteer occur in the text
    tags = set((corpus / "lexicon/en.pos.tsv").read_text(encoding="utf-8").splitlines())
    assert any(r.startswith("May\tNNP\t") or r.startswith("June\tNNP\t") for r in tags)
