"""Bad input files: every loader of a file that a config names (corpus.source: files mono/para inputs,
line-aligned sources, the news benchmark, lexicons and CoNLL files, sentiment CSVs, noisy curation corpora,
the leakage guard's evaluation files, local MADLAD JSONL) either fails with one `lem.core.inputs.InputError`
naming the file, the line and what was expected, or follows its documented skip policy and counts what it
dropped. Fuzzed with random bytes and random text full of tabs, CRLF, BOMs and NULs: no other exception
type ever leaves a loader. A workflow run on an empty input file: tests/dag/test_inputs_workflow.py."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.builders import write

from lem.annotate import readers
from lem.cli import command
from lem.core.inputs import InputError
from lem.data.leakage import LeakageSettings, guard, read_eval_sentences
from lem.data.madlad import iter_local_jsonl
from lem.data.ner import irregular_spacing_lines, split_conll
from lem.data.news import load_news
from lem.data.noisy import read_noisy
from lem.data.parallel import merge_and_split, read_mono, read_pairs_tsv, read_parallel
from lem.data.sentiment import SentimentDataSettings, prepare_sentiment
from lem.data.webmined import stream_aligned

data_main = command("data")

LONG = "x" * 100_000


def news_site(root: Path, si: bytes | str = "si_1_0\tඑක\nsi_1_1\tදෙක\n", en: bytes | str = "en_1_0\tone\n",
              gold: bytes | str = "si_1_0\ten_1_0\n") -> Path:  # fmt: skip
    site = root / "Sinhala-English" / "GEN"
    write(site, "Sinhala/1", si)
    write(site, "English/1", en)
    write(site, "Gen.si-en", gold)
    return site


# --- each defect: the file, the line and what was expected, or a counted drop ------------------------------

Loader = Callable[[Path], object]
SENTIMENT = SentimentDataSettings.from_dict({})
LOADERS: dict[str, tuple[str, Loader]] = {  # name -> (file name, loader of that file)
    "mono": ("ta.txt", read_mono),
    "pairs": ("p.tsv", lambda p: merge_and_split([p], 1, 13)),
    "noisy": ("n.tsv", read_noisy),
    "sentiment": ("s.csv", lambda p: prepare_sentiment(p, SENTIMENT, p.parent / "out")),
    "conll": ("g.conll", readers.read_conll_ner),
    "conllu": ("u.conllu", readers.read_conllu),
    "tnt": ("si.lex", readers.read_tnt_lex),
    "lexicon": ("l.tsv", readers.read_tsv_lexicon),
    "gazetteer": ("z.tsv", readers.read_gazetteer_tsv),
    "gold_columns": ("c.conll", lambda p: readers.read_conll_columns(p, 3)),
    "conll_split": ("s.conll", lambda p: split_conll(p, 0.5, 13)),
    "madlad_jsonl": ("m.jsonl", lambda p: list(iter_local_jsonl(p))),
    # a source of 50 lines against a target of 49 (zip dropped the extra line and shifted every pair)
    "aligned": ("c.si", lambda p: list(stream_aligned(p, write(p.parent, "c.en", "t\n" * 49)))),
}

# fmt: off
DEFECTS = [
    # (loader, file content, the message: `{file}` stands for the file's path)
    ("mono", "", "{file}: expected one sentence per line, got no sentence"),
    ("mono", " \n\t\r\n", "{file}: expected one sentence per line, got no sentence ({'lines': 2, 'sentences': 0"),
    ("mono", b"\x00\x01\x02binary", "{file}:1: expected text, got a NUL byte"),
    ("mono", b"one\ntwo \xe0\xa4\n", "{file}:2: expected UTF-8 text, got byte 0xe0 at byte 5 of the line"),
    ("mono", LONG + "\n", "{file}: expected one sentence per line, got no sentence ({'lines': 1, 'sentences': 0, 'too_long': 1})"),
    ("pairs", "", "{file}: expected 'source<TAB>target' lines, got no pair"),
    ("pairs", "a\tb\nc\td\te\n", "{file}:2: expected 'source<TAB>target' (two non-empty fields), got 'c\\td\\te'"),
    ("pairs", "a\tb\n\tonly target\n", "{file}:2: expected 'source<TAB>target' (two non-empty fields)"),
    ("pairs", b"a\tb\n\xff\xfe\tc\n", "{file}:2: expected UTF-8 text, got byte 0xff"),
    ("pairs", f"a\tb\n{LONG}\tc\n", "{file}:2: expected a line of at most 10,000 characters, got 100,002"),
    ("noisy", "", "{file}:1: expected the header 'src<TAB>tgt[<TAB>label]', got an empty file"),
    ("noisy", "source\ttarget\n", "{file}:1: expected the header 'src<TAB>tgt[<TAB>label]', got 'source\\ttarget'"),
    ("noisy", "src\ttgt\tlabel\n", "{file}: expected 'src<TAB>tgt[<TAB>label]' rows after the header, got none"),
    ("noisy", "src\ttgt\tlabel\na\tb\tclean\nc\td\n", "{file}:3: expected 3 tab-separated fields as in the header, got 2"),
    ("noisy", b"src\ttgt\na\tb\x00\n", "{file}:2: expected text, got a NUL byte"),
    ("noisy", f"src\ttgt\na\t{LONG}\n", "{file}:2: expected a line of at most 10,000 characters"),
    ("sentiment", "", "{file}: expected a header line and labelled rows, got an empty file"),
    ("sentiment", "Text,Label\nhi,Positive\n", "{file}:1: expected a column 'Sentence', got no one; columns are ['Text', 'Label']"),
    ("sentiment", "Sentence,Sentiment,Sentence\na,b,c\n", "{file}:1: expected a column 'Sentence', got a repeated one"),
    ("sentiment", "Sentence,Sentiment\nfine,Positive\ntoo,many,fields\n", "{file}:3: expected 2 fields separated by ',' as in the header, got 3"),
    ("sentiment", b"Sentence,Sentiment\nfine,Positive\n\xc3(,Negative\n", "{file}:3: expected UTF-8 text, got byte 0xc3"),
    ("sentiment", "Sentence,Sentiment\n,Positive\n", "{file}: expected labelled rows, got none left after mapping/dropping ({'empty_text_or_label': 1"),
    ("sentiment", f"Sentence,Sentiment\n{LONG},Positive\n", "{file}: expected labelled rows, got none left after mapping/dropping ({'too_long_texts_dropped': 1"),
    ("sentiment", "Sentence,Sentiment\n" + "a,Positive\nb,Positive\nc,Positive\n" * 3,
     "{file}: expected at least two classes, got only 'Positive'"),  # one class: macro-F1 1.0 whatever the model
    ("sentiment", "Sentence,Sentiment\na,Positive\nb,Negative\nc,Positive\n",
     "{file}: 3 rows leave the valid split empty (its share 0.1); expected more rows"),
    ("aligned", "".join(f"s{i}\n" for i in range(50)), "{file}:50: more lines than its line-aligned partner"),
    ("conll", "", "{file}: expected sentences of 'token ... TAG' lines, got none (an empty file)"),
    ("conll", "Colombo B-LOC\nis O extra\n", "{file}:2: expected 2 columns 'token ... TAG'"),
    ("conll", b"Colombo B-LOC\n\xed\xa0\x80 O\n", "{file}:2: expected UTF-8 text, got byte 0xed"),
    ("conll", f"{LONG} O\n", "{file}:1: expected a line of at most 10,000 characters, got 'xxx"),
    ("conllu", "# only a comment\n", "{file}: expected CoNLL-U sentences (10 tab-separated columns), got none"),
    ("conllu", "1\ta\ta\tNOUN\n", "{file}:1: expected 10 tab-separated CoNLL-U columns"),
    ("tnt", "%% comment only\n", "{file}: expected lexicon entries 'word<TAB><TAB>count<TAB>tag<TAB>n...' with a usable tag, got none"),
    ("tnt", "word\t\t4\tNNC\tfour\n", "{file}:1: expected integer tag counts"),
    ("lexicon", "run\tvb\n", "{file}: expected lexicon entries 'word<TAB>tag[<TAB>count]' with a usable tag, got none (1 junk tags dropped)"),
    ("lexicon", "run\tVB\t3\tx\n", "{file}:1: expected 'word<TAB>tag[<TAB>count]'"),
    ("gazetteer", "\ufeffSri Lanka\tLOC\nJohn\tPERSON\n", "{file}:2: expected 'phrase<TAB>PER|LOC|ORG|MISC', got 'John\\tPERSON'"),
    ("gazetteer", "\n\n", "{file}: expected gazetteer entries 'phrase<TAB>PER|LOC|ORG|MISC', got none (an empty file)"),
    ("gold_columns", "w\tNOUN\n", "{file}:1: expected 3 tab-separated columns"),
    ("conll_split", "a O\n", "{file}: expected sentences (blocks of lines between blank lines) to give a valid share of 0.5, got 1"),
    ("madlad_jsonl", '{"text": "a"}\n[1]\n', "{file}:2: expected a JSON object with a 'text' field"),
    ("madlad_jsonl", '{"text": 5}\n', "{file}:1: expected 'text' to be a string, got int"),
    ("madlad_jsonl", b'{"text": "\xff"}\n', "{file}:1: expected UTF-8 text"),
]
# fmt: on


@pytest.mark.parametrize(
    "loader, content, message", DEFECTS, ids=[f"{d[0]}-{i}" for i, d in enumerate(DEFECTS)]
)
def test_a_defect_fails_naming_file_line_and_expectation(loader, content, message, tmp_path):
    name, load = LOADERS[loader]
    path = write(tmp_path, name, content)
    with pytest.raises(InputError) as err:
        load(path)
    text = str(err.value)
    assert message.replace("{file}", str(path)) in text and "\n" not in text, text


def test_bom_crlf_and_long_lines_follow_the_skip_policies_and_are_counted(tmp_path, caplog):
    sents, stats = read_mono(write(tmp_path, "m.txt", f"\ufeffone\r\n{LONG}\r\ntwo\r\n{LONG}\n"))
    assert sents == ["one", "two"] and (stats["bom"], stats["crlf_files"], stats["too_long"]) == (1, 1, 2)
    assert "m.txt:2: expected a line of at most 10,000 characters, got 100,000" in caplog.text
    pairs, stats = read_parallel(
        write(tmp_path, "a.txt", f"a\n{LONG}\nc\n"), write(tmp_path, "b.txt", "x\ny\nz\n")
    )
    assert pairs == [("a", "x"), ("c", "z")] and stats["too_long"] == 1
    assert read_pairs_tsv(write(tmp_path, "p.tsv", "\ufeffa\tb\r\nc\td\r\n")) == [("a", "b"), ("c", "d")]
    assert read_noisy(write(tmp_path, "n.tsv", "\ufeffsrc\ttgt\r\na\tb\r\n")) == (["a"], ["b"], None)
    rows = "".join(f"ok {i},{('Positive', 'Negative')[i % 2]}\r\n" for i in range(12))
    out = prepare_sentiment(write(tmp_path, "s.csv", f"\ufeffSentence,Sentiment\r\n{LONG},Positive\r\n{rows}"),
                            SENTIMENT, tmp_path / "s")  # fmt: skip
    assert out["rows_kept"] == 12 and out["removed"] == {"too_long_texts_dropped": 1}
    lex = readers.read_tsv_lexicon(write(tmp_path, "l.tsv", f"run\tVB\n{LONG}\tNN\n"), on_error="skip")
    assert lex.tags == {"run": "VB"} and lex.skip_reasons == {
        "expected a line of at most 10,000 characters": 1
    }
    news_site(tmp_path / "news", en=f"en_1_0\tone\r\nen_1_1\t{LONG}\r\n")
    bench = load_news(tmp_path / "news", "GEN", "si-en")
    assert bench.stats["defects"]["doc_too_long_lines"] == 1 and bench.stats["defects"]["crlf_files"] == 1


def test_mismatched_parallel_sides_name_both_files(tmp_path):
    a, b = write(tmp_path, "a.txt", "1\n2\n3\n"), write(tmp_path, "b.txt", "1\n2\n")
    with pytest.raises(
        InputError, match=r"a\.txt has 3 lines but .*b\.txt has 2 \(after headers\): not line-aligned"
    ):
        read_parallel(a, b)
    with pytest.raises(InputError, match=r"a\.txt \| .*b\.txt: expected line-aligned sentences, got no pair"):
        read_parallel(a, write(tmp_path, "b.txt", "\n\n\n"))


# --- the cases, through the `lem data` verbs -------------------------------------------------------


def test_an_empty_language_fails_mono_preparation_naming_the_file(tmp_path, capsys):
    """Before: `lem data mono` wrote an empty ta.txt and the run trained on 0 Tamil sentences."""
    empty = write(tmp_path, "ta.txt", "\n\n")
    assert data_main(["mono", "--input", str(empty), "--out", str(tmp_path / "out.txt")]) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"lem data mono: {empty}: expected one sentence per line, got no sentence ({{'lines': 2, 'sentences': 0, 'empty': 2}})"
    )
    assert not (tmp_path / "out.txt").exists()


def test_empty_pair_files_fail_pair_preparation(tmp_path, capsys):
    train, valid = write(tmp_path, "t.tsv", "a\tb\n"), write(tmp_path, "v.tsv", "")
    args = ["pairs", "--inputs", str(train), "--valid-input", str(valid), "--out-train", str(tmp_path / "o1"),
            "--out-valid", str(tmp_path / "o2")]  # fmt: skip
    assert data_main(args) == 1
    assert f"{valid}: expected validation 'source<TAB>target' lines, got no pair" in capsys.readouterr().err
    args[2] = str(valid)
    assert data_main(args) == 1
    assert f"{valid}: expected 'source<TAB>target' lines, got no pair" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("valid", "kept", "dropped"),
    [
        ("x\ty\n", ["x\ty"], 0),  # held out: kept
        ("a\tb\nx\ty\n", ["x\ty"], 1),  # repeats a training pair: dropped from valid, counted
        ("A,  b.\nx\ty\n".replace(",  ", "\t", 1), ["x\ty"], 1),  # the same pair after normalisation
        ("a\tb\nc\td\n", None, 2),  # every one repeats training: refused
    ],
)
def test_given_valid_pairs_that_repeat_training_pairs_are_dropped(
    tmp_path, caplog, capsys, valid, kept, dropped
):
    """Before: kept in both, so TLM checkpoint selection read training data."""
    train, vfile = write(tmp_path, "t.tsv", "a\tb\nc\td\n"), write(tmp_path, "v.tsv", valid)
    out_train, out_valid = tmp_path / "o1", tmp_path / "o2"
    args = ["pairs", "--inputs", str(train), "--valid-input", str(vfile), "--out-train", str(out_train),
            "--out-valid", str(out_valid), "--stats", str(tmp_path / "stats.json")]  # fmt: skip
    if kept is None:
        assert data_main(args) == 1
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith(
            f"lem data pairs: {vfile}: every one of the 2 validation pairs repeats a training"
        )
        assert not out_valid.exists()
        return
    assert data_main(args) == 0
    assert out_valid.read_text().splitlines() == kept
    assert out_train.read_text().splitlines() == ["a\tb", "c\td"]
    assert ("1 of 2 validation pairs repeat a training pair" in caplog.text) == (dropped == 1)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert (stats["valid_repeating_train_dropped"], stats["valid"], stats["train"]) == (dropped, 1, 2)


def test_a_benchmark_whose_gold_matches_nothing_fails_naming_folder_site_and_pair(tmp_path, capsys):
    """Before: `lem data news` wrote 0 sentences and `embed` died later inside transformers."""
    site = news_site(tmp_path, gold="si_9_0\ten_9_0\nsi_1_0\ten_1_7\n")
    assert data_main(["news", "--root", str(tmp_path), "--site", "GEN", "--pair", "si-en",
                      "--out-dir", str(tmp_path / "out")]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert (
        f"{site / 'Gen.si-en'}: expected gold links" in err and f"sentences of the documents in {site}" in err
    )
    assert (
        "got 2 links, none naming a sentence of both sides (missing si ids: 1, missing en ids: 1, needing a rewrite: 0;"
        in err
    )
    assert "(site 'GEN', pair si-en)" in err and not (tmp_path / "out").exists()


def test_gold_links_to_missing_ids_are_counted_when_others_match(tmp_path):
    news_site(tmp_path, gold="si_1_0\ten_1_0\nsi_1_5\ten_1_0\n")
    bench = load_news(tmp_path, "GEN", "si-en")
    assert bench.gold == [("si_1_0", "en_1_0")] and bench.stats["defects"]["gold_missing_src_id"] == 1


@pytest.mark.parametrize("side", ["si", "en", "gold"])
def test_invalid_utf8_in_a_benchmark_file_names_file_and_line(side, tmp_path):
    bad = {"si": b"si_1_0\tok\nsi_1_1\t\xe2\x82\n", "en": b"\xff", "gold": b"si_1_0\ten_1_0\nsi_1_1\t\x80\n"}[
        side
    ]
    site = news_site(tmp_path, **{side: bad})
    file = {"si": site / "Sinhala/1", "en": site / "English/1", "gold": site / "Gen.si-en"}[side]
    line = {"si": 2, "en": 1, "gold": 2}[side]
    with pytest.raises(InputError, match=rf"^{file}:{line}: expected UTF-8 text, got byte 0x"):
        load_news(tmp_path, "GEN", "si-en")


def test_a_side_without_sentences_fails(tmp_path):
    site = news_site(tmp_path, en="\n")
    with pytest.raises(
        InputError, match=rf"^{site / 'English'}: expected '<id><TAB><sentence>' lines .* got no sentence"
    ):
        load_news(tmp_path, "GEN", "si-en")


def test_a_malformed_curation_corpus_fails_in_the_leakage_guard_before_training(tmp_path):
    """The guard reads every curation corpus before any training job: a broken one fails there."""
    train = write(tmp_path, "mono.txt", "a line\n")
    noisy = write(tmp_path, "si-en.tsv", "src\ttgt\tlabel\na\tb\tclean\nc\td\n")
    with pytest.raises(InputError, match=r"si-en\.tsv:3: expected 3 tab-separated fields"):
        guard([train], [noisy], None, LeakageSettings())
    clean = write(tmp_path, "ok.tsv", "src\ttgt\na line\tb\n")
    with pytest.raises(InputError, match=r"mono\.txt: every one of its 1 lines is in an evaluation set"):
        guard([train], [clean], None, LeakageSettings())


# --- fuzz: random bytes and random text never raise anything but InputError --------------------------------

PIECES = ["\t", "\t", "\n", "\n", "\r\n", "\r", "\ufeff", "\x00", " ", ",", '"', "#", "-DOCSTART-", "1", "2-3",
          "1.1", "_", "O", "B-PER", "I-LOC", "NOUN", "NNC", "%%", "@CARD", "si_1_0", "en_1_0", "si_1_1,2", "src",
          "tgt", "label", "clean", "Sentence", "Sentiment", "Positive", '{"text": "a"}', "ශ්‍රී", "\u200d", "x" * 200]  # fmt: skip
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=60).map("".join)
FIELD = st.one_of(st.sampled_from([p for p in PIECES if p not in "\t\n\r\n"]), st.text(max_size=8))
LINES = st.lists(st.lists(FIELD, min_size=1, max_size=4).map("\t".join), max_size=20).map("\n".join)  # rows
DATA = st.one_of(
    st.binary(max_size=600),
    TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    TEXT.map(lambda t: b"\xef\xbb\xbf" + t.encode("utf-8", "surrogatepass")),
    LINES.map(lambda t: t.encode("utf-8", "surrogatepass")),
)
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fuzz_targets() -> dict[str, Callable[[Path, bytes], object]]:
    """Loader name -> call(folder, data): writes `data` where the loader reads it and loads it."""

    def one(name: str, load: Loader) -> Callable[[Path, bytes], object]:
        return lambda d, data: load(write(d, name, data))

    targets = {name: one(*spec) for name, spec in LOADERS.items()}
    for on_error in ("raise", "skip"):
        for fn in ("read_conll_ner", "read_conllu", "read_tnt_lex", "read_tsv_lexicon", "read_gazetteer_tsv"):
            targets[f"{fn}/{on_error}"] = one(
                "f.txt", lambda p, fn=fn, oe=on_error: getattr(readers, fn)(p, oe)
            )
    half = len
    targets |= {
        "lines_plain": lambda d, x: read_parallel(
            write(d, "a", x[: half(x) // 2]), write(d, "b", x[half(x) // 2 :])
        ),
        "lines_nlpc": lambda d, x: read_parallel(write(d, "a", x), write(d, "b", x[::-1]), "nlpc"),
        "pairs_tsv": lambda d, x: read_pairs_tsv(write(d, "p.tsv", x)),
        "sentiment_tsv": lambda d, x: prepare_sentiment(write(d, "s.tsv", x), SENTIMENT, d / "o"),
        "news_document": lambda d, x: load_news(d, "GEN", "si-en") if news_site(d, en=x) else None,
        "news_gold": lambda d, x: load_news(d, "GEN", "si-en", "all") if news_site(d, gold=x) else None,
        "eval_tsv": lambda d, x: read_eval_sentences(write(d, "e.tsv", x)),
        "eval_conllu": lambda d, x: read_eval_sentences(write(d, "e.conllu", x)),
        "eval_conll": lambda d, x: read_eval_sentences(write(d, "e.conll", x)),
        "leakage_train": lambda d, x: guard(
            [write(d, "t.tsv", x)], [write(d, "e.txt", "a\n")], None, LeakageSettings()
        ),
        "multiner_spacing": lambda d, x: irregular_spacing_lines(write(d, "m.txt", x)),
        "madlad_gzip": lambda d, x: list(iter_local_jsonl(write(d, "m.jsonl.gz", x))),
        "madlad_gzip_text": lambda d, x: list(iter_local_jsonl(write(d, "t.jsonl.gz", gzip.compress(x)))),
    }
    # the same loaders past a valid start, so that the fuzz also reaches what follows a good header or entry
    valid_start = {
        "noisy": b"src\ttgt\tlabel\n",
        "sentiment": b"Sentence,Sentiment\nok,Positive\n",
        "sentiment_tsv": b"Sentence\tSentiment\nok\tPositive\n",
        "news_document": b"en_1_0\tone\n",
        "news_gold": b"si_1_0\ten_1_0\n",
        "mono": b"a sentence\n",
        "read_conll_ner/skip": b"Colombo B-LOC\n\n",
        "read_tsv_lexicon/skip": b"run\tVB\n",
        "read_gazetteer_tsv/skip": b"Sri Lanka\tLOC\n",
        "read_tnt_lex/skip": b"word\t\t4\tNNC\t4\n",
    }
    for name, start in valid_start.items():
        targets[f"{name}+valid_start"] = lambda d, x, call=targets[name], start=start: call(d, start + x)
    return targets


TARGETS = fuzz_targets()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_a_loader_raises_only_input_errors(target):
    call = TARGETS[target]

    @FUZZ
    @given(data=DATA)
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            try:
                call(Path(folder), data)
            except InputError as err:  # ReaderError is one
                text = str(err)
                assert "\n" not in text and folder in text, text  # one line, naming the file
                assert len(text) < 2000, text

    check()


def test_fuzz_covers_every_loader():
    assert set(LOADERS) <= set(TARGETS) and len(TARGETS) >= 30


def test_a_full_disk_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    """Before: a 15-28-line traceback (lem.core.stage: a full disk is no bug)."""
    import errno

    import lem.data.parallel

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out.txt"))

    monkeypatch.setattr(lem.data.parallel, "write_lines", full)
    text = write(tmp_path, "ta.txt", "one\n")
    assert data_main(["mono", "--input", str(text), "--out", str(tmp_path / "out.txt")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"lem data mono: no space left on the device of {tmp_path} ("), err
    assert " free): free space there" in err[-1] and "nothing was lost" in err[-1], err
    monkeypatch.setattr(
        lem.data.parallel, "write_lines", lambda *a: (_ for _ in ()).throw(OSError(errno.EIO, "I/O"))
    )
    with pytest.raises(OSError):  # any other OSError is not a refusal: its traceback stays
        data_main(["mono", "--input", str(text), "--out", str(tmp_path / "out.txt")])
