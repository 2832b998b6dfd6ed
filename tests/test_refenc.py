"""Reference encoders (lem.reference): settings, the laser backend against a fake `laser_encoders` (the real one
needs Python 3.8 and downloads its models), and the sentence_transformers backend for real on a tiny random
model built here. No network: hub look-ups are local-only."""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from lem import reference as refenc
from lem.reference import RefEncoder, RefEncoderError, RefEncoderSettings, embed_files, encode

REPO = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SENTENCES = ["The cat sat.", "a dog ran", "the dog and the cat", "cat"]


def laser(**kw) -> RefEncoderSettings:
    return RefEncoderSettings.from_dict({"backend": "laser", **kw})


def write_tsv(path: Path, texts: list[str]) -> Path:
    path.write_text("id\tdoc\ttext\n" + "".join(f"s{i}\td0\t{t}\n" for i, t in enumerate(texts)), "utf-8")
    return path


# --- settings -------------------------------------------------------------------------------------------------


def test_settings_defaults_and_round_trip():
    s = laser()
    assert s.languages == {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"}
    assert s.laser3 == ("sin_Sinh", "tam_Taml") and s.require_sha256 and s.normalize
    assert (s.model_dir, s.batch_size, s.device) == ("resources/laser", 64, "auto")
    assert RefEncoderSettings.from_dict(s.to_dict()) == s
    st = RefEncoderSettings.from_dict(
        {"backend": "sentence_transformers", "model": "sentence-transformers/LaBSE", "revision": COMMIT}
    )
    assert st.revision == COMMIT and not st.trust_remote_code and not st.local_files_only
    json.dumps(st.to_dict())  # the meta holds it


@pytest.mark.parametrize(
    ("d", "named"),
    [
        ({"backend": "laser", "modle_dir": "x"}, "unknown key(s) ['modle_dir']"),
        ({}, "backend=''"),
        ({"backend": "labse"}, "backend='labse'"),
        ({"backend": "sentence_transformers"}, "model=''"),
        ({"backend": "sentence_transformers", "model": "m/x", "revision": "main"}, "revision='main'"),
        ({"backend": "laser", "model": "sentence-transformers/LaBSE"}, "model='sentence-transformers/LaBSE'"),
        ({"backend": "laser", "revision": COMMIT}, "revision="),
        ({"backend": "laser", "languages": {"si": "sinhala"}}, "languages="),
        ({"backend": "laser", "languages": ["si"]}, "languages=['si']: expected a mapping"),
        ({"backend": "laser", "laser3": ["sin"]}, "laser3="),
        ({"backend": "laser", "sha256": {"laser2.pt": "abc"}}, "sha256['laser2.pt']='abc'"),
        ({"backend": "laser", "sha256": {"../laser2.pt": "0" * 64}}, "'../laser2.pt' is not a file name"),
        ({"backend": "laser", "batch_size": 0}, "batch_size=0"),
        ({"backend": "laser", "device": "cuda:1"}, "device='cuda:1'"),
        ({"backend": "sentence_transformers", "model": "m", "device": "tpu"}, "device='tpu'"),
        ({"backend": "sentence_transformers", "model": "m", "max_length": 1}, "max_length=1"),
    ],
)
def test_bad_settings_name_the_key(d, named):
    with pytest.raises(ValueError) as err:
        RefEncoderSettings.from_dict(d)
    assert named in str(err.value)


def test_unpinned_revision_only_when_allowed():
    d = {"backend": "sentence_transformers", "model": "m/x", "revision": "main", "allow_unpinned": True}
    assert RefEncoderSettings.from_dict(d).revision == "main"
    s = RefEncoderSettings.from_dict({"backend": "laser", "sha256": {"laser2.pt": "AB" * 32}})
    assert s.sha256 == {"laser2.pt": "ab" * 32}  # digests compared lower-case


# --- laser: environment checks ------------------------------------------------------------------------------


def test_laser_on_the_wrong_python_says_what_to_do(monkeypatch):
    monkeypatch.setattr(refenc, "_python_version", lambda: (3, 11))
    with pytest.raises(RefEncoderError) as err:
        encode(laser(), "si", ["x"])
    msg = str(err.value)
    assert "needs Python 3.8 to 3.10; this is Python 3.11" in msg and "fairseq" in msg
    assert "--software-deployment-method conda" in msg and "envs/laser.yaml" in msg
    assert "pip install laser-encoders==0.0.2" in msg and "\n" not in msg
    with pytest.raises(RefEncoderError, match="this is Python 3.7"):
        refenc.check_laser_python((3, 7))
    refenc.check_laser_python((3, 8))
    refenc.check_laser_python((3, 10))


def test_laser_package_missing_says_what_to_do(monkeypatch):
    monkeypatch.setattr(refenc, "_python_version", lambda: (3, 8))
    monkeypatch.setitem(sys.modules, "laser_encoders", None)  # import raises ImportError
    with pytest.raises(RefEncoderError) as err:
        encode(laser(), "en", ["x"])
    msg = str(err.value)
    assert "needs the package laser-encoders, which is not importable here" in msg
    assert "--software-deployment-method conda" in msg and "pip install laser-encoders==0.0.2" in msg


class _BrokenFairseq(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "laser_encoders":
            raise ValueError(
                "mutable default <class 'fairseq.dataclass.configs.CommonConfig'> for field common"
            )
        return None


def test_laser_broken_environment_says_recreate_it(monkeypatch):
    monkeypatch.setattr(refenc, "_python_version", lambda: (3, 8))
    for name in [n for n in sys.modules if n.split(".")[0] == "laser_encoders"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_BrokenFairseq(), *sys.meta_path])
    with pytest.raises(RefEncoderError, match=r"failed to import \(ValueError: mutable default.*recreate it"):
        encode(laser(), "en", ["x"])


# --- laser: a fake laser_encoders ------------------------------------------------------------------------------


def fake_vector(text: str) -> np.ndarray:
    return np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], np.uint8).astype(np.float32) + 1


@pytest.fixture
def fake_laser(monkeypatch):
    """laser_encoders 0.0.2's names (language_list.SPM_LANGUAGE, laser_tokenizer.LaserTokenizer,
    models.SentenceEncoder), recording how they are called."""
    calls: list[tuple[str, dict]] = []
    pkg = types.ModuleType("laser_encoders")
    language_list = types.ModuleType("laser_encoders.language_list")
    language_list.SPM_LANGUAGE = ["amh_Ethi"]
    tokenizer_mod = types.ModuleType("laser_encoders.laser_tokenizer")
    models = types.ModuleType("laser_encoders.models")

    class LaserTokenizer:
        def __init__(self, spm_model: Path, lang: str = "en"):
            assert isinstance(spm_model, Path) and spm_model.is_file()
            calls.append(("tokenizer", {"spm_model": spm_model.name}))

        def tokenize(self, text: str) -> str:
            return text.lower()

    class SentenceEncoder:
        def __init__(self, model_path, max_sentences=None, max_tokens=None, spm_vocab=None, spm_model=None,
                     cpu=False, fp16=False, verbose=False, sort_kind="quicksort"):  # fmt: skip
            calls.append(("encoder", {
                "model": Path(model_path).name, "vocab": Path(spm_vocab).name, "max_sentences": max_sentences,
                "cpu": cpu, "sort_kind": sort_kind, "spm_model": spm_model,
            }))  # fmt: skip
            self.use_cuda = False

        def encode_sentences(self, sentences, normalize_embeddings=False):
            calls.append(("encode", {"sentences": list(sentences)}))
            return np.vstack([fake_vector(s) for s in sentences])

    tokenizer_mod.LaserTokenizer = LaserTokenizer
    models.SentenceEncoder = SentenceEncoder
    pkg.language_list, pkg.laser_tokenizer, pkg.models = language_list, tokenizer_mod, models
    for mod in (pkg, language_list, tokenizer_mod, models):
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(refenc, "_python_version", lambda: (3, 8))
    return calls


def place_laser_files(folder: Path, names: list[str]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        (folder / name).write_bytes(f"weights of {name}".encode())
        out[name] = hashlib.sha256(f"weights of {name}".encode()).hexdigest()
    return out


def test_laser_missing_files_name_them_and_the_download_command(fake_laser, tmp_path):
    folder = tmp_path / "laser"
    place_laser_files(folder, ["laser2.spm"])
    with pytest.raises(RefEncoderError) as err:
        encode(laser(model_dir=str(folder)), "si", ["x"])
    msg = str(err.value)
    assert "laser3-sin_Sinh.v1.pt, laser2.cvocab missing in" in msg and "laser2.spm," not in msg
    assert (
        f"`python -m laser_encoders.download_models --laser laser3 --lang sin_Sinh --model-dir {folder}`"
        in msg
    )
    with pytest.raises(RefEncoderError, match=r"--laser laser2 --model-dir"):
        encode(laser(model_dir=str(folder)), "en", ["x"])
    with pytest.raises(ValueError, match="no LASER code for language 'fr'"):
        encode(laser(model_dir=str(folder)), "fr", ["x"])
    assert not [c for c in fake_laser if c[0] == "encoder"]  # nothing loaded


def test_laser_sha256_unpinned_and_mismatch(fake_laser, tmp_path):
    folder = tmp_path / "laser"
    digests = place_laser_files(folder, ["laser3-tam_Taml.v1.pt", "laser2.spm", "laser2.cvocab"])
    with pytest.raises(RefEncoderError) as err:
        encode(laser(model_dir=str(folder)), "ta", ["x"])
    msg = str(err.value)
    assert "no sha256 pinned for laser2.cvocab, laser2.spm, laser3-tam_Taml.v1.pt" in msg
    assert (
        f"laser3-tam_Taml.v1.pt: {digests['laser3-tam_Taml.v1.pt']}" in msg and "require_sha256: false" in msg
    )
    wrong = {**digests, "laser2.spm": "f" * 64}
    with pytest.raises(RefEncoderError) as err:
        encode(laser(model_dir=str(folder), sha256=wrong), "ta", ["x"])
    msg = str(err.value)
    assert (
        f"sha256 mismatch for {folder / 'laser2.spm'}: expected {'f' * 64}, got {digests['laser2.spm']}"
        in msg
    )
    assert not [c for c in fake_laser if c[0] == "encoder"]  # a wrong file is never loaded
    # unpinned files are accepted only when asked, and a pin of another language's file is not needed here
    emb = encode(
        laser(model_dir=str(folder), require_sha256=False, sha256={"laser2.pt": "0" * 64}), "ta", ["x"]
    )
    assert emb.shape == (1, 16)


def test_laser_encodes_with_the_right_files_and_writes_what_embed_writes(fake_laser, tmp_path):
    folder = tmp_path / "laser"
    digests = place_laser_files(
        folder, ["laser2.pt", "laser2.spm", "laser2.cvocab", "laser3-sin_Sinh.v1.pt", "laser3-tam_Taml.v1.pt"]
    )
    s = laser(model_dir=str(folder), sha256=digests, batch_size=8, device="cpu")
    emb = encode(s, "si", SENTENCES)
    assert emb.dtype == np.float32 and emb.shape == (4, 16)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-6)
    want = np.vstack([fake_vector(t.lower()) for t in SENTENCES])
    np.testing.assert_allclose(emb, want / np.linalg.norm(want, axis=1, keepdims=True), rtol=1e-6)
    assert ("tokenizer", {"spm_model": "laser2.spm"}) in fake_laser
    enc = [c[1] for c in fake_laser if c[0] == "encoder"]
    assert enc == [{"model": "laser3-sin_Sinh.v1.pt", "vocab": "laser2.cvocab", "max_sentences": 8,
                    "cpu": True, "sort_kind": "mergesort", "spm_model": None}]  # fmt: skip
    fake_laser.clear()
    tsv = write_tsv(tmp_path / "en.tsv", SENTENCES)
    out = tmp_path / "emb" / "en.npy"
    meta = embed_files(s, "en", tsv, out, tmp_path / "emb" / "en.meta.json")
    assert [c[1]["model"] for c in fake_laser if c[0] == "encoder"] == ["laser2.pt"]
    got = np.load(out)
    assert got.dtype == np.float32 and got.shape == (4, 16)
    assert (tmp_path / "emb" / "en.ids.txt").read_text() == "s0\ns1\ns2\ns3\n"
    assert json.loads((tmp_path / "emb" / "en.meta.json").read_text()) == meta
    assert meta["backend"] == "laser" and meta["laser"] == "laser2" and meta["language_code"] == "eng_Latn"
    assert meta["files"] == {n: digests[n] for n in ("laser2.cvocab", "laser2.pt", "laser2.spm")}
    assert (meta["sentences"], meta["dim"], meta["lang"], meta["device"]) == (4, 16, "en", "cpu")
    assert meta["settings"]["model_dir"] == str(folder)
    assert sorted(p.name for p in (tmp_path / "emb").iterdir()) == ["en.ids.txt", "en.meta.json", "en.npy"]
    # an empty file: zero rows of the right width
    meta = embed_files(s, "en", write_tsv(tmp_path / "e.tsv", []), tmp_path / "e.npy", tmp_path / "e.json")
    assert np.load(tmp_path / "e.npy").shape == (0, 16) and meta["sentences"] == 0


def test_embed_files_checks_its_input_before_loading(fake_laser, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\ttext\nonly-one-column\n")
    with pytest.raises(ValueError, match="bad.tsv:2"):
        embed_files(laser(model_dir=str(tmp_path)), "en", bad, tmp_path / "x.npy", tmp_path / "x.json")
    with pytest.raises(ValueError, match="must end in .npy"):
        embed_files(laser(), "en", bad, tmp_path / "x.npz", tmp_path / "x.json")
    assert fake_laser == [] and not (tmp_path / "x.json").exists()


# --- sentence-transformers: a tiny random model built here ----------------------------------------------------


@pytest.fixture(scope="module")
def st_folder(tiny_sentence_transformer) -> Path:
    return tiny_sentence_transformer


def st(folder: Path, **kw) -> RefEncoderSettings:
    return RefEncoderSettings.from_dict(
        {"backend": "sentence_transformers", "model": str(folder), "device": "cpu", **kw}
    )


def test_sentence_transformers_from_a_local_folder(st_folder, tmp_path):
    from sentence_transformers import SentenceTransformer

    s = st(st_folder, batch_size=2)
    enc = RefEncoder(s, "en")
    emb = enc(SENTENCES)
    assert emb.dtype == np.float32 and emb.shape == (4, 16)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-5)
    direct = SentenceTransformer(str(st_folder), device="cpu").encode(SENTENCES, normalize_embeddings=True)
    np.testing.assert_allclose(emb, direct, atol=1e-5)
    np.testing.assert_array_equal(enc(SENTENCES), emb)  # deterministic
    np.testing.assert_allclose(enc(SENTENCES[::-1]), emb[::-1], atol=1e-5)  # order in = order out
    assert enc([]).shape == (0, 16)
    tsv = write_tsv(tmp_path / "si.tsv", SENTENCES)
    meta = embed_files(s, "si", tsv, tmp_path / "si.npy", tmp_path / "si.meta.json", encoder=enc)
    np.testing.assert_array_equal(np.load(tmp_path / "si.npy"), emb)
    assert (tmp_path / "si.ids.txt").read_text() == "s0\ns1\ns2\ns3\n"
    assert meta["backend"] == "sentence_transformers" and meta["model"] == str(st_folder)
    assert meta["revision"] is None and (meta["sentences"], meta["dim"], meta["lang"]) == (4, 16, "si")
    files = {p.relative_to(st_folder).as_posix() for p in st_folder.rglob("*") if p.is_file()}
    assert set(meta["files"]) == files and "modules.json" in files and "model.safetensors" in files
    assert (
        meta["files"]["modules.json"] == hashlib.sha256((st_folder / "modules.json").read_bytes()).hexdigest()
    )
    assert meta["packages"]["sentence_transformers"] == refenc.SENTENCE_TRANSFORMERS_VERSION
    with pytest.raises(ValueError, match="other settings"):
        embed_files(st(st_folder), "si", tsv, tmp_path / "x.npy", tmp_path / "x.json", encoder=enc)


def test_sentence_transformers_sha256_and_revision_of_a_folder(st_folder, tmp_path):
    good = hashlib.sha256((st_folder / "model.safetensors").read_bytes()).hexdigest()
    assert (
        RefEncoder(st(st_folder, sha256={"model.safetensors": good}), "en").files["model.safetensors"] == good
    )
    with pytest.raises(
        RefEncoderError, match=r"sha256 mismatch for .*model.safetensors: expected 0{64}, got"
    ):
        RefEncoder(st(st_folder, sha256={"model.safetensors": "0" * 64}), "en")
    with pytest.raises(RefEncoderError, match=r"names file\(s\) \['nope.bin'\] that are not in"):
        RefEncoder(st(st_folder, sha256={"nope.bin": "0" * 64}), "en")
    with pytest.raises(RefEncoderError, match="provenance.json names no commit: remove revision"):
        RefEncoder(st(st_folder, revision=COMMIT), "en")


def test_sentence_transformers_missing_offline_says_what_to_do(tmp_path):
    cache = tmp_path / "hf-cache"
    s = RefEncoderSettings.from_dict({
        "backend": "sentence_transformers", "model": "sentence-transformers/LaBSE", "revision": COMMIT,
        "local_files_only": True, "cache_dir": str(cache),
    })  # fmt: skip
    with pytest.raises(RefEncoderError) as err:
        encode(s, "si", ["x"])
    msg = str(err.value)
    assert f"sentence-transformers/LaBSE@{COMMIT} is not in the Hugging Face cache ({cache})" in msg
    assert f"`hf download sentence-transformers/LaBSE --revision {COMMIT}" in msg and "local folder" in msg
    unpinned = RefEncoderSettings.from_dict({"backend": "sentence_transformers", "model": "owner/model"})
    with pytest.raises(RefEncoderError, match="owner/model: revision is not set; pin the 40-hex commit"):
        encode(unpinned, "si", ["x"])
    with pytest.raises(RefEncoderError, match="folder ./no/such/folder does not exist"):
        encode(RefEncoderSettings.from_dict({"backend": "sentence_transformers", "model": "./no/such/folder"}),
               "si", ["x"])  # fmt: skip


def test_sentence_transformers_from_the_hub_cache(st_folder, tmp_path, monkeypatch):
    """A hub id resolves through huggingface_hub.snapshot_download (mocked: no network) at the pinned
    commit, with pickled top-level weights left out."""
    import huggingface_hub

    seen = {}

    def snapshot_download(**kw):
        seen.update(kw)
        return str(st_folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    s = RefEncoderSettings.from_dict(
        {"backend": "sentence_transformers", "model": "owner/tiny", "revision": COMMIT, "device": "cpu"}
    )
    enc = RefEncoder(s, "ta")
    assert seen["repo_id"] == "owner/tiny" and seen["revision"] == COMMIT
    assert "pytorch_model.bin" not in seen["allow_patterns"] and "*.safetensors" in seen["allow_patterns"]
    meta = enc.meta(enc(["cat"]))
    assert meta["revision"] == COMMIT and meta["model"] == "owner/tiny"


# --- `lem reference encode`: the verb a rule runs ----------------------------------------------------------------


def reference_encode(settings: dict, *files: tuple[Path, str, Path]) -> list[str]:
    argv = ["reference", "encode", "--settings", json.dumps(settings)]
    for sentences, lang, out in files:
        argv += ["--sentences", str(sentences), "--lang", lang, "--out", str(out)]
    return argv


def test_the_verb_writes_every_file_with_one_laser_model_per_language(fake_laser, tmp_path):
    from lem import cli

    folder = tmp_path / "laser"
    digests = place_laser_files(folder, ["laser2.pt", "laser2.spm", "laser2.cvocab", "laser3-sin_Sinh.v1.pt"])
    settings = {"backend": "laser", "model_dir": str(folder), "sha256": digests, "device": "cpu"}
    si, en = write_tsv(tmp_path / "si.tsv", SENTENCES), write_tsv(tmp_path / "en.tsv", SENTENCES[:2])
    out = tmp_path / "emb" / "news" / "si-en"
    files = [(si, "si", out / "si.npy"), (en, "en", out / "en.npy"), (si, "si", out / "si2.npy")]
    assert cli.main(reference_encode(settings, *files)) == 0
    loads = [c[1]["model"] for c in fake_laser if c[0] == "encoder"]
    assert loads == ["laser3-sin_Sinh.v1.pt", "laser2.pt"]  # one load per language, reused
    for name, n in (("si", 4), ("en", 2), ("si2", 4)):
        assert np.load(out / f"{name}.npy").shape == (n, 16)
        assert len((out / f"{name}.ids.txt").read_text().splitlines()) == n
        assert json.loads((out / f"{name}.meta.json").read_text())["sentences"] == n
    np.testing.assert_array_equal(np.load(out / "si.npy"), np.load(out / "si2.npy"))


def test_the_verb_fails_in_one_line_saying_what_to_do(fake_laser, tmp_path, capsys, monkeypatch):
    from lem import cli

    tsv = write_tsv(tmp_path / "si.tsv", SENTENCES)
    out = tmp_path / "si.npy"
    empty = {"backend": "laser", "model_dir": str(tmp_path / "no-models")}
    assert cli.main(reference_encode(empty, (tsv, "si", out))) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("lem reference encode: LASER (laser3, sin_Sinh) for si: model file(s) ")
        and "\n" not in err
    )
    assert "--laser laser3 --lang sin_Sinh --model-dir" in err
    monkeypatch.setattr(refenc, "_python_version", lambda: (3, 11))
    assert cli.main(reference_encode(empty, (tsv, "si", out))) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "lem reference encode: the laser backend needs Python 3.8 to 3.10; this is Python 3.11"
    )
    assert "--software-deployment-method conda" in err and "\n" not in err
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\ttext\nonly-one-column\n")
    assert cli.main(reference_encode(empty, (bad, "si", out))) == 1  # bad input, before any model
    assert capsys.readouterr().err.strip().startswith(f"lem reference encode: {bad}:2: expected")
    assert cli.main([*reference_encode(empty, (tsv, "si", out)), "--lang", "en"]) == 1
    assert "give one --lang and one --out per --sentences" in capsys.readouterr().err
    assert cli.main(reference_encode({"backend": "laser", "modle_dir": "x"}, (tsv, "si", out))) == 2
    assert "--settings: reference encoder settings: unknown key(s) ['modle_dir']" in capsys.readouterr().err
    assert not out.exists() and not [c for c in fake_laser if c[0] == "encoder"]


def test_the_verb_with_a_sentence_transformers_folder(st_folder, tmp_path):
    from lem import cli

    files = [
        (write_tsv(tmp_path / f"{lang}.tsv", SENTENCES), lang, tmp_path / f"{lang}.npy") for lang in "ab"
    ]
    settings = {"backend": "sentence_transformers", "model": str(st_folder), "device": "cpu"}
    assert cli.main(reference_encode(settings, *files)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert json.loads((tmp_path / "b.meta.json").read_text())["lang"] == "b"


# --- the laser environment runs Python 3.8 -------------------------------------------------------------------


def _lem_imports(path: Path) -> set[str]:
    """The lem modules a module imports when it is imported (module-level imports only)."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "lem"
        ):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "lem")
    return out


def _module_path(mod: str) -> Path:
    base = REPO / "src" / mod.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def test_refenc_and_what_it_imports_parse_as_python_38():
    """envs/laser.yaml is Python 3.8 (fairseq 0.12.2): lem.reference, `python -m lem` (lem.__main__, lem.cli, and
    lem.core.inputs, which lem.core.stage imports when a verb runs) and every lem module they import, directly or not,
    must stay within that grammar (a grammar check only: runtime-only features such as
    zip(strict=) inside functions are not seen, and are harmless unless run at import time)."""
    todo, seen = ["lem.reference", "lem.__main__", "lem.cli", "lem.core.inputs"], set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        path = _module_path(mod)
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))
        todo.extend(_lem_imports(path))
        parent = mod.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a.b runs a/__init__.py first
    assert {
        "lem",
        "lem.reference",
        "lem.embed",
        "lem.core.files",
        "lem.core.settings",
        "lem.core.stage",
        "lem.cli",
    } <= seen


# --- in the DAG: rows ref_<name>, planned with their environment, stopping with the message when run ------------

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]


def _rule_envs(configfile: Path, workdir: Path) -> dict[str, str]:
    """rule name -> the conda environment it declares, as Snakemake loads the workflow with `configfile`."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[configfile]),
            storage_settings=StorageSettings(),
            snakefile=REPO / "Snakefile",
            workdir=workdir,
        )
        return {r.name: r.conda_env for r in wf._workflow.rules}


def _planned(proc: subprocess.CompletedProcess) -> dict[str, set[str]]:
    """rule -> the `variant` wildcards of its planned jobs, from a dry run's output."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs: dict[str, set[str]] = {}
    for block in (proc.stdout + proc.stderr).split("\nrule ")[1:]:
        m = re.search(r"wildcards: .*?variant=([\w.-]+)", block)
        jobs.setdefault(block.split(":", 1)[0], set()).add(m.group(1) if m else "")
    return jobs


def test_the_paper_config_plans_the_reference_rows_in_their_environments(tmp_path):
    paper = REPO / "config" / "paper.yaml"
    proc = subprocess.run([*SNAKEMAKE, "-n", "--directory", str(tmp_path), "--configfile", str(paper)],
                          capture_output=True, text=True)  # fmt: skip
    jobs = _planned(proc)
    assert jobs["embed_reference_laser"] == {"ref_laser"} and jobs["embed_reference"] == {"ref_labse"}
    assert {"ref_laser", "ref_labse"} <= jobs["mine"]
    plan = proc.stdout
    assert "results/mining/ref_laser/seed13/news_itn/si-ta.metrics.json" in plan
    assert "results/embeddings/ref_labse/seed13/news_itn/si-en/si.npy" in plan
    envs = _rule_envs(paper, tmp_path)
    assert envs["embed_reference_laser"] == "../../envs/laser.yaml"  # relative to workflow/rules/
    assert envs["embed_reference"] == envs["embed"] == "../../envs/train.yaml"
    laser_env = yaml.safe_load((REPO / "envs" / "laser.yaml").read_text())
    assert "python=3.8" in laser_env["dependencies"]
    assert f"laser-encoders=={refenc.LASER_ENCODERS_VERSION}" in laser_env["dependencies"][-1]["pip"]


@pytest.mark.slow
def test_enabled_without_models_the_run_stops_at_the_first_reference_job_with_its_message(tmp_path):
    """The issue's done-when: the backends enabled and no model present, the dry run plans them and a real
    run stops at the first of them with one line saying what to do (here, without conda: the laser job runs
    on this Python and says to use envs/laser.yaml; the LaBSE job is not in the empty cache)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["corpus"]["generate"].update(
        mono_sentences=60,
        para_train=40,
        para_valid=10,
        news_documents=4,
        sentiment_examples=30,
        noisy_pairs=8,
    )
    cache = tmp_path / "hf-cache"
    cfg["reference_encoders"] = {
        "laser": {"settings": {"backend": "laser", "model_dir": str(tmp_path / "no-models")}},
        "labse": {"settings": {"backend": "sentence_transformers", "model": "sentence-transformers/LaBSE",
                               "revision": COMMIT, "local_files_only": True, "cache_dir": str(cache)}},
    }  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    run = [*SNAKEMAKE, "--directory", str(tmp_path), "--configfile", str(config)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    jobs = _planned(subprocess.run([*run, "-n"], capture_output=True, text=True, env=env))
    assert jobs["embed_reference_laser"] == {"ref_laser"} and jobs["embed_reference"] == {"ref_labse"}
    assert {"ref_laser", "ref_labse", "control_random"} <= jobs["mine"]
    assert {"ref_laser", "ref_labse"} & jobs["embed"] == set()

    first = cfg["pretrain"]["seeds"][0]  # rows with no pre-training have the first seed's folder
    targets = [
        f"results/embeddings/{row}/seed{first}/news_gen/si-en/si.npy" for row in ("ref_laser", "ref_labse")
    ]
    logs = {
        row: tmp_path / "logs" / "embed" / row / f"seed{first}" / "reference.log"
        for row in ("ref_laser", "ref_labse")
    }
    messages = {
        "ref_laser": "lem reference encode: the laser backend needs Python 3.8 to 3.10; this is Python "
        f"{sys.version_info[0]}.{sys.version_info[1]} (laser-encoders 0.0.2 imports fairseq 0.12.2",
        "ref_labse": "lem reference encode: sentence-transformers model sentence-transformers/LaBSE@"
        f"{COMMIT} is not in the Hugging Face cache ({cache}) and could not be fetched",
    }
    proc = subprocess.run([*run, "--cores", "1", *targets], capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    failed = [row for row, log in logs.items() if log.exists()]
    assert len(failed) == 1, proc.stdout + proc.stderr  # it stops at the first
    assert f"Error in rule embed_reference{'_laser' if failed == ['ref_laser'] else ''}" in proc.stderr

    def says_what_to_do(row: str) -> None:
        lines = logs[row].read_text().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(messages[row]), lines
        assert ("--software-deployment-method conda" if row == "ref_laser" else "hf download") in lines[0]
        assert not list((tmp_path / "results" / "embeddings" / row).rglob("*.npy"))

    says_what_to_do(failed[0])
    proc = subprocess.run([*run, "--cores", "1", "--keep-going", *targets], capture_output=True, text=True,
                          env=env)  # fmt: skip
    assert proc.returncode != 0
    for row in logs:  # the other one too: each says what to do, in one line
        says_what_to_do(row)
