"""Reference encoders (lem.reference): settings, the laser backend against a fake `laser_encoders` (the real one
needs Python 3.8 and downloads its models), and the sentence_transformers backend for real on a tiny random
model built here. No network: hub look-ups are local-only. In the DAG, the rows ref_<name>: planned with their
environments (tests/planning/test_refenc_plan.py), and a run stopping at the first of them with its message
(tests/dag/test_refenc_run.py)."""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from support.reference import COMMIT, LASER_SCRIPT

from lem import reference as refenc
from lem.reference import RefEncoder, RefEncoderError, RefEncoderSettings, embed_files, encode

REPO = Path(__file__).resolve().parents[2]
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


# --- laser: workflow/scripts/laser_encode.py, a CLI of its own run in envs/laser.yaml ----------------------------


@pytest.fixture
def script():
    """The LASER script as a module (it is no module of the package: loaded from its path)."""
    spec = importlib.util.spec_from_file_location("laser_encode", LASER_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def laser_args(settings: dict, *files: tuple[Path, str, Path]) -> list[str]:
    argv = ["--settings", json.dumps(settings)]
    for sentences, lang, out in files:
        argv += ["--sentences", str(sentences), "--lang", lang, "--out", str(out)]
    return argv


def test_the_script_parses_as_python_38_and_imports_nothing_of_the_package():
    """envs/laser.yaml is Python 3.8 (fairseq 0.12.2): the script keeps that grammar and imports only the
    standard library, numpy and laser_encoders, so no module of `lem` has to parse as 3.8."""
    tree = ast.parse(LASER_SCRIPT.read_text(), filename=str(LASER_SCRIPT), feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert "lem" not in imported
    assert imported - set(sys.stdlib_module_names) == {"numpy", "laser_encoders"}


def test_the_script_takes_the_settings_the_config_check_builds(script):
    """Its defaults are lem.reference's (the config check validates the settings the rule passes)."""
    built = laser().to_dict()
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in built.items() if k in script.DEFAULTS} == (
        script.DEFAULTS
    )
    assert script.LASER_ENCODERS_VERSION == refenc.LASER_ENCODERS_VERSION
    assert script.settings_of(built)["laser3"] == ["sin_Sinh", "tam_Taml"]
    with pytest.raises(script.LaserError, match=r"unknown key\(s\) \['modle_dir'\]"):
        script.settings_of({"backend": "laser", "modle_dir": "x"})


def test_lem_reference_encode_sends_laser_to_the_script():
    with pytest.raises(RefEncoderError, match="workflow/scripts/laser_encode.py in envs/laser.yaml"):
        encode(laser(), "si", ["x"])


def test_laser_on_the_wrong_python_says_what_to_do(script, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(script, "PYTHON", (3, 11))
    tsv = write_tsv(tmp_path / "si.tsv", ["x"])
    assert script.main(laser_args({"backend": "laser"}, (tsv, "si", tmp_path / "si.npy"))) == 1
    msg = capsys.readouterr().err.strip()
    assert msg.startswith("laser_encode: the laser backend needs Python 3.8 to 3.10; this is Python 3.11")
    assert "fairseq" in msg and "--software-deployment-method conda" in msg and "envs/laser.yaml" in msg
    assert "pip install laser-encoders==0.0.2" in msg and "\n" not in msg
    with pytest.raises(script.LaserError, match="this is Python 3.7"):
        script.check_python((3, 7))
    script.check_python((3, 8))
    script.check_python((3, 10))


def test_laser_package_missing_says_what_to_do(script, monkeypatch):
    monkeypatch.setattr(script, "PYTHON", (3, 8))
    monkeypatch.setitem(sys.modules, "laser_encoders", None)  # import raises ImportError
    with pytest.raises(script.LaserError) as err:
        script.import_laser()
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


def test_laser_broken_environment_says_recreate_it(script, monkeypatch):
    monkeypatch.setattr(script, "PYTHON", (3, 8))
    for name in [n for n in sys.modules if n.split(".")[0] == "laser_encoders"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_BrokenFairseq(), *sys.meta_path])
    with pytest.raises(
        script.LaserError, match=r"failed to import \(ValueError: mutable default.*recreate it"
    ):
        script.import_laser()


# --- laser: a fake laser_encoders ------------------------------------------------------------------------------


def fake_vector(text: str) -> np.ndarray:
    return np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], np.uint8).astype(np.float32) + 1


@pytest.fixture
def fake_laser(monkeypatch, script):
    """laser_encoders 0.0.2's names (language_list.SPM_LANGUAGE, laser_tokenizer.LaserTokenizer,
    models.SentenceEncoder), recording how they are called; the script believes it runs on Python 3.8."""
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
    monkeypatch.setattr(script, "PYTHON", (3, 8))
    return calls


def place_laser_files(folder: Path, names: list[str]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        (folder / name).write_bytes(f"weights of {name}".encode())
        out[name] = hashlib.sha256(f"weights of {name}".encode()).hexdigest()
    return out


def run_laser(script, settings: dict, tmp_path: Path, lang: str, texts: list[str]) -> np.ndarray:
    out = tmp_path / "out" / f"{lang}.npy"
    tsv = write_tsv(tmp_path / f"{lang}.in.tsv", texts)
    script.encode_files(script.settings_of({"backend": "laser", **settings}), [(str(tsv), lang, str(out))])
    return np.load(out)


def test_laser_missing_files_name_them_and_the_download_command(script, fake_laser, tmp_path):
    folder = tmp_path / "laser"
    place_laser_files(folder, ["laser2.spm"])
    with pytest.raises(script.LaserError) as err:
        run_laser(script, {"model_dir": str(folder)}, tmp_path, "si", ["x"])
    msg = str(err.value)
    assert "laser3-sin_Sinh.v1.pt, laser2.cvocab missing in" in msg and "laser2.spm," not in msg
    assert (
        f"`python -m laser_encoders.download_models --laser laser3 --lang sin_Sinh --model-dir {folder}`"
        in msg
    )
    with pytest.raises(script.LaserError, match=r"--laser laser2 --model-dir"):
        run_laser(script, {"model_dir": str(folder)}, tmp_path, "en", ["x"])
    with pytest.raises(script.LaserError, match="no LASER code for language 'fr'"):
        run_laser(script, {"model_dir": str(folder)}, tmp_path, "fr", ["x"])
    assert not [c for c in fake_laser if c[0] == "encoder"]  # nothing loaded


def test_laser_sha256_unpinned_and_mismatch(script, fake_laser, tmp_path):
    folder = tmp_path / "laser"
    digests = place_laser_files(folder, ["laser3-tam_Taml.v1.pt", "laser2.spm", "laser2.cvocab"])
    with pytest.raises(script.LaserError) as err:
        run_laser(script, {"model_dir": str(folder)}, tmp_path, "ta", ["x"])
    msg = str(err.value)
    assert "no sha256 pinned for laser2.cvocab, laser2.spm, laser3-tam_Taml.v1.pt" in msg
    assert (
        f"laser3-tam_Taml.v1.pt: {digests['laser3-tam_Taml.v1.pt']}" in msg and "require_sha256: false" in msg
    )
    wrong = {**digests, "laser2.spm": "F" * 64}  # digests compared lower-case
    with pytest.raises(script.LaserError) as err:
        run_laser(script, {"model_dir": str(folder), "sha256": wrong}, tmp_path, "ta", ["x"])
    msg = str(err.value)
    assert (
        f"sha256 mismatch for {folder / 'laser2.spm'}: expected {'f' * 64}, got {digests['laser2.spm']}"
        in msg
    )
    assert not [c for c in fake_laser if c[0] == "encoder"]  # a wrong file is never loaded
    # unpinned files are accepted only when asked, and a pin of another language's file is not needed here
    settings = {"model_dir": str(folder), "require_sha256": False, "sha256": {"laser2.pt": "0" * 64}}
    assert run_laser(script, settings, tmp_path, "ta", ["x"]).shape == (1, 16)


def test_laser_encodes_with_the_right_files_and_writes_what_embed_writes(script, fake_laser, tmp_path):
    folder = tmp_path / "laser"
    digests = place_laser_files(
        folder, ["laser2.pt", "laser2.spm", "laser2.cvocab", "laser3-sin_Sinh.v1.pt", "laser3-tam_Taml.v1.pt"]
    )
    settings = {"model_dir": str(folder), "sha256": digests, "batch_size": 8, "device": "cpu"}
    emb = run_laser(script, settings, tmp_path, "si", SENTENCES)
    assert emb.dtype == np.float32 and emb.shape == (4, 16)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-6)
    want = np.vstack([fake_vector(t.lower()) for t in SENTENCES])
    np.testing.assert_allclose(emb, want / np.linalg.norm(want, axis=1, keepdims=True), rtol=1e-6)
    assert ("tokenizer", {"spm_model": "laser2.spm"}) in fake_laser
    enc = [c[1] for c in fake_laser if c[0] == "encoder"]
    assert enc == [{"model": "laser3-sin_Sinh.v1.pt", "vocab": "laser2.cvocab", "max_sentences": 8,
                    "cpu": True, "sort_kind": "mergesort", "spm_model": None}]  # fmt: skip
    fake_laser.clear()
    run_laser(script, settings, tmp_path, "en", SENTENCES)
    out = tmp_path / "out"
    assert [c[1]["model"] for c in fake_laser if c[0] == "encoder"] == ["laser2.pt"]
    assert (out / "en.ids.txt").read_text() == "s0\ns1\ns2\ns3\n"
    meta = json.loads((out / "en.meta.json").read_text())
    assert meta["backend"] == "laser" and meta["laser"] == "laser2" and meta["language_code"] == "eng_Latn"
    assert meta["files"] == {n: digests[n] for n in ("laser2.cvocab", "laser2.pt", "laser2.spm")}
    assert (meta["sentences"], meta["dim"], meta["lang"], meta["device"]) == (4, 16, "en", "cpu")
    assert meta["settings"]["model_dir"] == str(folder) and meta["revision"] is None
    assert sorted(p.name for p in out.iterdir()) == [
        "en.ids.txt", "en.meta.json", "en.npy", "si.ids.txt", "si.meta.json", "si.npy",
    ]  # fmt: skip
    # the layout lem.embed reads: rows checked against the sentence file's ids
    from lem.core.embeddings import load_embeddings, read_sentences

    sents = read_sentences(tmp_path / "en.in.tsv")
    assert load_embeddings(out / "en.npy", sents.ids, tmp_path / "en.in.tsv").shape == (4, 16)
    # an empty file: zero rows of the right width
    assert run_laser(script, settings, tmp_path, "en", []).shape == (0, 16)


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


# --- what the rules run: the LASER script and `lem reference encode` ------------------------------------------


def test_the_script_writes_every_file_with_one_laser_model_per_language(script, fake_laser, tmp_path):
    folder = tmp_path / "laser"
    digests = place_laser_files(folder, ["laser2.pt", "laser2.spm", "laser2.cvocab", "laser3-sin_Sinh.v1.pt"])
    settings = {"backend": "laser", "model_dir": str(folder), "sha256": digests, "device": "cpu"}
    si, en = write_tsv(tmp_path / "si.tsv", SENTENCES), write_tsv(tmp_path / "en.tsv", SENTENCES[:2])
    out = tmp_path / "emb" / "news" / "si-en"
    files = [(si, "si", out / "si.npy"), (en, "en", out / "en.npy"), (si, "si", out / "si2.npy")]
    assert script.main(laser_args(settings, *files)) == 0
    loads = [c[1]["model"] for c in fake_laser if c[0] == "encoder"]
    assert loads == ["laser3-sin_Sinh.v1.pt", "laser2.pt"]  # one load per language, reused
    for name, n in (("si", 4), ("en", 2), ("si2", 4)):
        assert np.load(out / f"{name}.npy").shape == (n, 16)
        assert len((out / f"{name}.ids.txt").read_text().splitlines()) == n
        assert json.loads((out / f"{name}.meta.json").read_text())["sentences"] == n
    np.testing.assert_array_equal(np.load(out / "si.npy"), np.load(out / "si2.npy"))


def test_the_script_fails_in_one_line_saying_what_to_do(script, fake_laser, tmp_path, capsys):
    tsv = write_tsv(tmp_path / "si.tsv", SENTENCES)
    out = tmp_path / "si.npy"
    empty = {"backend": "laser", "model_dir": str(tmp_path / "no-models")}
    assert script.main(laser_args(empty, (tsv, "si", out))) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("laser_encode: LASER (laser3, sin_Sinh) for si: model file(s) ") and "\n" not in err
    assert "--laser laser3 --lang sin_Sinh --model-dir" in err
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\ttext\nonly-one-column\n")
    assert script.main(laser_args(empty, (tsv, "si", out), (bad, "si", tmp_path / "b.npy"))) == 1
    assert capsys.readouterr().err.strip().startswith(f"laser_encode: {bad}:2: expected")  # before any model
    assert script.main([*laser_args(empty, (tsv, "si", out)), "--lang", "en"]) == 1
    assert "give one --lang and one --out per --sentences" in capsys.readouterr().err
    assert script.main(laser_args({"backend": "laser", "modle_dir": "x"}, (tsv, "si", out))) == 1
    assert "--settings: unknown key(s) ['modle_dir']" in capsys.readouterr().err
    assert not out.exists() and not [c for c in fake_laser if c[0] == "encoder"]


def reference_encode(settings: dict, *files: tuple[Path, str, Path]) -> list[str]:
    return ["reference", "encode", *laser_args(settings, *files)]


def test_the_verb_with_a_sentence_transformers_folder(st_folder, tmp_path):
    from lem import cli

    files = [
        (write_tsv(tmp_path / f"{lang}.tsv", SENTENCES), lang, tmp_path / f"{lang}.npy") for lang in "ab"
    ]
    settings = {"backend": "sentence_transformers", "model": str(st_folder), "device": "cpu"}
    assert cli.main(reference_encode(settings, *files)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert json.loads((tmp_path / "b.meta.json").read_text())["lang"] == "b"
