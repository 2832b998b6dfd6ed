from __future__ import annotations

import pytest

from lem.annotate.readers import (
    ReaderError,
    gazetteer_from_conll,
    is_junk_tag,
    read_conll_ner,
    read_conllu,
    read_gazetteer_tsv,
    read_tnt_lex,
    read_tsv_lexicon,
)


def write(tmp_path, name, text, bom=False, crlf=False):
    p = tmp_path / name
    if crlf:
        text = text.replace("\n", "\r\n")
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return p


def test_conll_ner_bom_crlf_and_iob1_repair(tmp_path):
    p = write(tmp_path, "a.conll", "Sri I-LOC\nLanka I-LOC\nis O\n\n\nJohn B-PER\n", bom=True, crlf=True)
    sents = read_conll_ner(p)
    assert sents == [[("Sri", "B-LOC"), ("Lanka", "I-LOC"), ("is", "O")], [("John", "B-PER")]]
    assert sents.skipped == 0


def test_conll_ner_malformed_raise_names_file_and_line(tmp_path):
    p = write(tmp_path, "bad.conll", "Sri B-LOC\nLanka\nis O\n")
    with pytest.raises(ReaderError, match=r"bad\.conll:2: expected 2 columns"):
        read_conll_ner(p)
    sents = read_conll_ner(p, on_error="skip")
    assert sents == [[("Sri", "B-LOC"), ("is", "O")]] and sents.skipped == 1


def test_conll_ner_bad_tag(tmp_path):
    p = write(tmp_path, "t.conll", "x B-FOO\n")
    with pytest.raises(ReaderError, match=r"t\.conll:1: expected an IOB2 tag"):
        read_conll_ner(p)


def test_conllu_skips_mwt_and_empty_nodes(tmp_path):
    rows = [
        "# text = ab c",
        "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\ta\ta\tPROPN\t_\t_\t0\troot\t_\t_",
        "2\tb\tb\tADP\t_\t_\t1\tcase\t_\t_",
        "2.1\tx\tx\tNOUN\t_\t_\t_\t_\t_\t_",
        "3\tc\tc\tVERB\t_\t_\t1\tdep\t_\t_",
        "",
    ]
    p = write(tmp_path, "u.conllu", "\n".join(rows) + "\n", crlf=True)
    assert read_conllu(p) == [[("a", "PROPN"), ("b", "ADP"), ("c", "VERB")]]
    assert read_conllu(p, surface=True) == [[("ab", "PROPN"), ("c", "VERB")]]
    bad = write(tmp_path, "b.conllu", "1\ta\n")
    with pytest.raises(ReaderError, match=r"b\.conllu:1: expected 10"):
        read_conllu(bad)
    mixed = write(tmp_path, "m.conllu", "1\ta\n\n" + rows[2] + "\n")
    assert read_conllu(mixed, on_error="skip").skipped == 1
    with pytest.raises(ReaderError, match=r"b\.conllu: expected CoNLL-U sentences .*got none"):
        read_conllu(bad, on_error="skip")  # nothing usable left: fails whatever the policy


def test_tnt_lex_most_frequent_tag_and_junk(tmp_path):
    text = (
        "%% comment\n@CARD\t\t5\tNUM\t5\n"
        "ගෙදර\t\t10\t???\t50\tNNC\t7\tNNP\t3\n"
        "යනවා\t\t4\tVFM\t4\n"
        "x\t\t4\tNNC\u200d\t4\n"
        "broken\t\t3\tNNC\n"
    )
    p = write(tmp_path, "s.lex", text)
    with pytest.raises(ReaderError, match=r"s\.lex:6"):
        read_tnt_lex(p)
    lex = read_tnt_lex(p, on_error="skip")
    assert lex.tags == {"ගෙදර": "NNC", "යනවා": "VFM"}
    assert lex.skipped == 1 and lex.dropped_tags == 2


def test_tsv_lexicon_and_gazetteer(tmp_path):
    lex = read_tsv_lexicon(write(tmp_path, "l.tsv", "run\tVB\t3\nrun\tNN\t5\ndog\tNN\n"))
    assert lex.tags == {"run": "NN", "dog": "NN"}
    gaz = read_gazetteer_tsv(write(tmp_path, "g.tsv", "Sri Lanka\tLOC\nJohn\tPER\n"))
    assert gaz.phrases == {("Sri", "Lanka"): "LOC", ("John",): "PER"} and gaz.max_len == 2
    with pytest.raises(ReaderError, match=r"g2\.tsv:1"):
        read_gazetteer_tsv(write(tmp_path, "g2.tsv", "John\tPERSON\n"))
    g = gazetteer_from_conll(
        [[("Sri", "B-LOC"), ("Lanka", "I-LOC"), ("x", "O"), ("A", "B-PER"), ("B", "B-PER")]]
    )
    assert g.phrases == {("Sri", "Lanka"): "LOC", ("A",): "PER", ("B",): "PER"}


def test_junk_tags():
    assert is_junk_tag("???") and is_junk_tag("NNC\u200d") and is_junk_tag("140") and is_junk_tag("NNc")
    assert not is_junk_tag("NNC") and not is_junk_tag("PROPN")
