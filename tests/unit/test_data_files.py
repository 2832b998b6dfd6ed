"""Bring-your-own-data verbs: mono text cleaning, pair merging/splitting, archive unpacking."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from lem.cli import command
from lem.data.download import FetchError, unpack
from lem.data.parallel import merge_and_split, read_mono, read_pairs_tsv

data_main = command("data")


def test_read_mono_cleans_bom_crlf_and_blanks(tmp_path):
    f = tmp_path / "m.txt"
    f.write_bytes("\ufeffone  two\r\n\r\n  three\r\n".encode())
    sents, stats = read_mono(f)
    assert sents == ["one two", "three"]
    assert stats["empty"] == 1 and stats["bom"] == 1


def test_pairs_file_errors_name_file_and_line(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text("a\tb\nonly-one-field\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"p\.tsv:2: expected 'source<TAB>target'"):
        read_pairs_tsv(f)


def test_merge_and_split_is_seeded_and_drops_duplicates(tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("".join(f"s{i}\tt{i}\n" for i in range(20)), encoding="utf-8")
    b.write_text("s0\tt0\ns20\tt20\n", encoding="utf-8")
    train, valid, stats = merge_and_split([a, b], valid_size=5, seed=3)
    assert stats["duplicates_dropped"] == 1 and len(train) == 16 and len(valid) == 5
    assert not set(train) & set(valid)
    assert merge_and_split([a, b], 5, 3)[1] == valid
    with pytest.raises(ValueError, match="leaves no training pairs"):
        merge_and_split([a], 20, 3)


def test_pairs_verb_writes_train_and_valid(tmp_path):
    a = tmp_path / "a.tsv"
    a.write_text("".join(f"s{i}\tt{i}\n" for i in range(10)), encoding="utf-8")
    tr, va = tmp_path / "tr.tsv", tmp_path / "va.tsv"
    assert (
        data_main(
            ["pairs", "--inputs", str(a), "--valid-size", "2", "--out-train", str(tr), "--out-valid", str(va)]
        )
        == 0
    )
    assert len(tr.read_text().splitlines()) == 8 and len(va.read_text().splitlines()) == 2


def test_unpack_zip_and_tar(tmp_path):
    z = tmp_path / "x.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("d/Final_English.txt", "Colombo B-LOC\n")
    assert (unpack(z, tmp_path / "z") / "d" / "Final_English.txt").read_text() == "Colombo B-LOC\n"
    t = tmp_path / "x.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        data = b"hello"
        info = tarfile.TarInfo("top/a.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    assert (unpack(t, tmp_path / "t") / "top" / "a.txt").read_bytes() == b"hello"


def test_unpack_refuses_escaping_members(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../escape.txt", "x")
    with pytest.raises(FetchError, match="outside"):
        unpack(z, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "member", [("../escape.txt", tarfile.REGTYPE), ("dev", tarfile.CHRTYPE), ("link", tarfile.SYMTYPE)]
)
def test_unpack_refuses_an_escaping_tar_member_in_one_line(tmp_path, capsys, member):
    """Before: a 15-28-line tarfile traceback; now one line naming the archive (issue 24)."""
    from lem.cli import command

    name, kind = member
    t = tmp_path / "evil.tar"
    with tarfile.open(t, "w") as tf:
        info = tarfile.TarInfo(name)
        info.type = kind
        if kind == tarfile.SYMTYPE:
            info.linkname = "/etc/passwd"
        tf.addfile(info, io.BytesIO(b""))
    assert command("data")(["unpack", "--archive", str(t), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"lem data unpack: {t}: "), err
    assert not (tmp_path / "out").exists()


def test_conll_split_keeps_sentence_blocks_whole(tmp_path):
    from lem.data.ner import split_conll

    f = tmp_path / "g.conll"
    f.write_text("".join(f"w{i}\tNN\tO\nx{i}\tVB\tO\n\n" for i in range(20)), encoding="utf-8")
    train, valid = split_conll(f, 0.1, seed=4)
    assert len(train) == 18 and len(valid) == 2
    assert all(b.count("\n") == 1 for b in train + valid)
    assert split_conll(f, 0.1, seed=4) == (train, valid)
    assert sorted(train + valid) == sorted(f"w{i}\tNN\tO\nx{i}\tVB\tO" for i in range(20))


def test_mono_text_from_a_list_of_files(tmp_path):
    """`corpus.files.mono.<lang>` as a list: the files read in order and concatenated (`lem data mono
    --input a b`), the stats summed with each file's; a file of the list with no sentence fails naming it."""
    from lem.core.inputs import InputError
    from lem.data.parallel import read_mono_files

    a, b, empty = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "empty.txt"
    a.write_bytes("\ufeffone\r\ntwo\r\n".encode())
    b.write_text("three\n\none\n", encoding="utf-8")
    empty.write_text("\n \n", encoding="utf-8")
    sents, stats = read_mono_files([a, b])
    assert sents == ["one", "two", "three", "one"]
    assert stats["sentences"] == 4 and stats["empty"] == 1 and stats["files"][str(b)]["sentences"] == 2
    assert read_mono_files(str(a))[0] == ["one", "two"]  # one path, as before
    with pytest.raises(InputError, match=rf"^{empty}: expected one sentence per line, got no sentence"):
        read_mono_files([a, empty])
    out = tmp_path / "mono.txt"
    assert data_main(["mono", "--input", str(b), str(a), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "three\none\none\ntwo\n"


def test_schema_takes_mono_files_as_a_path_or_a_list():
    from pathlib import Path

    import yaml
    from snakemake.utils import validate

    repo = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text(encoding="utf-8"))
    schema = str(repo / "workflow" / "schemas" / "config.schema.yaml")
    for mono in ({"en": "en.txt"}, {"en": ["a.txt", "b.txt"]}):
        validate({**cfg, "corpus": {"source": "files", "files": {"mono": mono, "para": {}}}}, schema)
    with pytest.raises(Exception, match="mono"):
        validate({**cfg, "corpus": {"source": "files", "files": {"mono": {"en": []}, "para": {}}}}, schema)
