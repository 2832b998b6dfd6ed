"""LASER sentence embeddings (laser-encoders 0.0.2: LASER2 for English, LASER3 for Sinhala and Tamil) in the
pipeline's embedding layout, for the rule `embed_reference_laser` (workflow/rules/reference.smk).

A small CLI of its own, run by `python` in envs/laser.yaml (Python 3.8: laser-encoders imports fairseq 0.12.2,
which does not import on Python 3.11+, fairseq #5012). It imports no module of the `lem` package (which needs
Python >= 3.11): only the standard library, numpy and laser_encoders. It writes what `lem embed encode`
writes (docs/contracts.md): `E.npy` (float32, one L2-normalised row per sentence, in file order),
`E.ids.txt` (one id per row) and `E.meta.json` (backend, model, language code, the sha256 of every model
file, settings, device, count, dimension), each atomically.

    python laser_encode.py --settings JSON --sentences S.tsv --lang si --out E.npy [--sentences ... ]

`--settings` is the reference encoder's settings as `lem.reference.RefEncoderSettings` builds them (the
config check validated them at load time). Nothing is downloaded: the files are read from `model_dir`, each
checked by sha256 before laser_encoders loads it with torch.load (they are pickles). A problem ends the run
with one line on stderr naming the file or the setting and what to do (exit 1).
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

LASER_ENCODERS_VERSION = "0.0.2"  # the version envs/laser.yaml pins
LASER_ENV = "envs/laser.yaml"
LASER_PYTHON = ((3, 8), (3, 10))  # fairseq 0.12.2: a cp38 wheel; builds from source on 3.9-3.10; not 3.11+
PYTHON = tuple(sys.version_info[:2])  # this interpreter's version (tests set another)
DEFAULTS = {
    "model_dir": "resources/laser",
    "languages": {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"},
    "laser3": ["sin_Sinh", "tam_Taml"],
    "sha256": {},
    "require_sha256": True,
    "batch_size": 64,
    "device": "auto",
    "normalize": True,
}


class LaserError(RuntimeError):
    """The encoder cannot run: the message names what is missing and what to do."""


def settings_of(data):
    """The laser settings with their defaults; unknown keys of another backend are refused."""
    if data.get("backend") != "laser":
        raise LaserError(
            "--settings: backend={!r}; this script encodes backend laser only".format(data.get("backend"))
        )
    known = set(DEFAULTS) | {"backend", "model", "revision", "allow_unpinned", "cache_dir", "local_files_only",
                             "trust_remote_code", "max_length"}  # fmt: skip
    unknown = sorted(set(data) - known)
    if unknown:
        raise LaserError(f"--settings: unknown key(s) {unknown}; known: {sorted(known)}")
    out = dict(DEFAULTS)
    out.update({k: v for k, v in data.items() if k in DEFAULTS and v is not None})
    laser3 = out["laser3"]
    out["laser3"] = [laser3] if isinstance(laser3, str) else list(laser3 or ())
    out["sha256"] = {k: str(v).lower() for k, v in (out["sha256"] or {}).items()}
    return out


def install_hint():
    lo, hi = LASER_PYTHON
    return (
        f"run Snakemake with `--software-deployment-method conda` so the rule uses {LASER_ENV} (Python {lo[0]}.{lo[1]}), or "
        f"`pip install laser-encoders=={LASER_ENCODERS_VERSION}` in a Python {lo[0]}.{lo[1]}-{hi[0]}.{hi[1]} environment with the pins of {LASER_ENV}"
    )


def check_python(version=None):
    """Refuse a Python that laser-encoders (through fairseq 0.12.2) cannot run on."""
    v = tuple(version or PYTHON)
    lo, hi = LASER_PYTHON
    if not lo <= v <= hi:
        raise LaserError(
            f"the laser backend needs Python {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}; this is Python {v[0]}.{v[1]} (laser-encoders {LASER_ENCODERS_VERSION} imports "
            f"fairseq 0.12.2, which fails to import on Python 3.11+, fairseq issue #5012): {install_hint()}"
        )


def import_laser():
    """The laser_encoders package, after checking the Python version; one clear error otherwise."""
    check_python()
    try:
        import laser_encoders
        import laser_encoders.language_list
        import laser_encoders.laser_tokenizer
        import laser_encoders.models
    except ImportError as err:
        raise LaserError(
            f"the laser backend needs the package laser-encoders, which is not importable here ({err}): {install_hint()}"
        ) from err
    except Exception as err:  # fairseq breaks at import time on mismatched torch/numpy/Python
        raise LaserError(
            f"laser_encoders failed to import ({type(err).__name__}: {err}): this environment does not match {LASER_ENV}; recreate it from "
            "that file"
        ) from err
    return laser_encoders


def laser_code(settings, lang):
    """(FLORES-200 code, `laser2` or `laser3`) that encodes pipeline language `lang`."""
    if lang not in settings["languages"]:
        raise LaserError(
            "reference encoder (laser): no LASER code for language {!r}; add it to languages (now {})".format(
                lang, settings["languages"]
            )
        )
    code = settings["languages"][lang]
    return code, ("laser3" if code in settings["laser3"] else "laser2")


def laser_files(settings, lang, spm_languages=()):
    """The files of model_dir that encode `lang`: role (model, spm, cvocab) -> file name, as laser_encoders
    names them (a LASER3 model without its own SentencePiece model uses LASER2's)."""
    code, which = laser_code(settings, lang)
    if which == "laser2":
        return {"model": "laser2.pt", "spm": "laser2.spm", "cvocab": "laser2.cvocab"}
    own = code in spm_languages
    stem = f"laser3-{code}.v1"
    return {
        "model": stem + ".pt",
        "spm": stem + ".spm" if own else "laser2.spm",
        "cvocab": stem + ".cvocab" if own else "laser2.cvocab",
    }


def download_command(settings, lang):
    """The laser_encoders command that places `lang`'s files in model_dir (where the internet is reachable)."""
    code, which = laser_code(settings, lang)
    cmd = "python -m laser_encoders.download_models --laser " + which
    if which == "laser3":
        cmd += " --lang " + code
    return "{} --model-dir {}".format(cmd, settings["model_dir"])


def sha256_file(path):
    h = hashlib.sha256()
    with open(str(path), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_files(settings, lang, spm_languages=()):
    """The LASER files of `lang` in model_dir, checked against the pinned digests: file name -> sha256."""
    folder = Path(settings["model_dir"])
    names = laser_files(settings, lang, spm_languages)
    code, which = laser_code(settings, lang)
    what = f"LASER ({which}, {code}) for {lang}"
    missing = [n for n in dict.fromkeys(names.values()) if not (folder / n).is_file()]
    if missing:
        raise LaserError(
            "{}: model file(s) {} missing in {} (model_dir); nothing is downloaded at run time. Place them "
            "there, e.g. where the internet is reachable: `{}` (pip install laser-encoders=={}), then pin their "
            "sha256 in the reference encoder's sha256 setting".format(
                what, ", ".join(missing), folder, download_command(settings, lang), LASER_ENCODERS_VERSION
            )
        )
    digests = {n: sha256_file(folder / n) for n in sorted(set(names.values()))}
    for name, expected in sorted(settings["sha256"].items()):
        if name in digests and digests[name] != expected:
            raise LaserError(
                f"{what}: sha256 mismatch for {folder / name}: expected {expected}, got {digests[name]}. The file is not the one the config pins: "
                "place the right file again, or correct sha256 if the pin is wrong"
            )
    unpinned = [n for n in digests if n not in settings["sha256"]]
    if unpinned and settings["require_sha256"]:
        raise LaserError(
            "{}: no sha256 pinned for {} in {} (LASER checkpoints are pickles that laser_encoders loads with "
            "torch.load, so each file must be pinned). After checking they come from "
            "https://dl.fbaipublicfiles.com/nllb/laser/, add to the reference encoder's settings sha256: {{{}}}; "
            "or set require_sha256: false".format(
                what, ", ".join(unpinned), folder, ", ".join(f"{n}: {digests[n]}" for n in unpinned)
            )
        )
    return digests


def read_sentences(path):
    """(ids, texts) of a prepared sentence file: TSV with header id<TAB>doc<TAB>text (or id<TAB>text)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].rstrip("\r").split("\t") if lines else []
    if header not in (["id", "doc", "text"], ["id", "text"]):
        raise LaserError(f"{path}:1: expected header 'id<TAB>doc<TAB>text' (or 'id<TAB>text'), got {header}")
    ids, texts = [], []
    for n, line in enumerate(lines[1:], start=2):
        parts = line.rstrip("\r").split("\t")
        if len(parts) != len(header) or not parts[0]:
            raise LaserError(
                f"{path}:{n}: expected {len(header)} tab-separated columns {header} with an id, got {line!r}"
            )
        ids.append(parts[0])
        texts.append(parts[-1])
    return ids, texts


def write_atomic(path, write):
    """Call write(tmp) on a temporary sibling of `path`, then rename it onto `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=str(path.parent))
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, str(path))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Laser:
    """The LASER model of one language, its files checked first."""

    def __init__(self, settings, lang):
        le = import_laser()
        spm_languages = getattr(le.language_list, "SPM_LANGUAGE", ())
        self.digests = check_files(settings, lang, spm_languages)
        names = laser_files(settings, lang, spm_languages)
        folder = Path(settings["model_dir"])
        self.code, self.which = laser_code(settings, lang)
        self.tokenizer = le.laser_tokenizer.LaserTokenizer(spm_model=folder / names["spm"])
        self.encoder = le.models.SentenceEncoder(
            model_path=str(folder / names["model"]),
            max_sentences=settings["batch_size"],
            spm_vocab=str(folder / names["cvocab"]),
            cpu=settings["device"] == "cpu",
            sort_kind="mergesort",  # stable: the same batches on every run
        )
        self.device = "cuda" if getattr(self.encoder, "use_cuda", False) else "cpu"
        self.model = "{} ({}, {})".format(names["model"][: -len(".pt")], self.which, self.code)

    def __call__(self, texts):
        import numpy as np

        emb = np.asarray(self.encoder.encode_sentences([self.tokenizer.tokenize(t) for t in (texts or [""])]))
        return emb[: len(texts)]


def normalise(emb, normalize):
    import numpy as np

    emb = np.ascontiguousarray(emb, dtype=np.float32)
    if emb.ndim != 2:
        raise LaserError(f"the encoder returned an array of shape {emb.shape}, not one row per sentence")
    if normalize:
        emb = (emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    return emb


def package_versions():
    out = {}
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return out
    for name in ("laser-encoders", "fairseq", "torch", "numpy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def encode_files(settings, jobs):
    """Embed every (sentence file, language, out .npy), loading one model per language; every input is read
    first, so a bad file fails before any model is loaded. Returns the metas."""
    import numpy as np

    read = [(read_sentences(path), lang, out) for path, lang, out in jobs]
    encoders, metas = {}, []
    for (ids, texts), lang, out in read:
        t0 = time.perf_counter()
        if lang not in encoders:
            encoders[lang] = Laser(settings, lang)
        enc = encoders[lang]
        emb = normalise(enc(texts), settings["normalize"])
        if emb.shape[0] != len(texts):
            raise LaserError(f"the encoder returned {emb.shape[0]} rows for {len(texts)} sentences")
        meta = {
            "backend": "laser",
            "model": enc.model,
            "revision": None,
            "lang": lang,
            "laser": enc.which,
            "language_code": enc.code,
            "model_dir": settings["model_dir"],
            "files": dict(enc.digests),
            "settings": settings,
            "device": enc.device,
            "sentences": int(emb.shape[0]),
            "dim": int(emb.shape[1]),
            "packages": package_versions(),
            "python": "{}.{}.{}".format(*sys.version_info[:3]),
        }
        stem = out[: -len(".npy")]

        def save(tmp, emb=emb):
            with open(tmp, "wb") as f:
                np.save(f, emb)

        write_atomic(out, save)
        write_atomic(
            stem + ".ids.txt",
            lambda tmp, ids=ids: Path(tmp).write_text("".join(i + "\n" for i in ids), "utf-8"),
        )
        write_atomic(stem + ".meta.json", lambda tmp, meta=meta: Path(tmp).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", "utf-8"))  # fmt: skip
        print(
            f"laser_encode: {out}: {emb.shape[0]} sentences, dim {emb.shape[1]}, {enc.model}; {time.perf_counter() - t0:.1f}s",
            file=sys.stderr,
        )
        metas.append(meta)
    return metas


def main(argv=None):
    p = argparse.ArgumentParser(prog="laser_encode", description=__doc__.splitlines()[0])
    p.add_argument("--settings", required=True, help="the reference encoder's settings (JSON)")
    p.add_argument("--sentences", action="append", required=True, help="TSV id<TAB>doc<TAB>text (repeatable)")
    p.add_argument(
        "--lang", dest="langs", action="append", required=True, help="language of each --sentences"
    )
    p.add_argument("--out", action="append", required=True, help="E.npy of the matching --sentences")
    a = p.parse_args(argv)
    try:
        if not len(a.sentences) == len(a.langs) == len(a.out):
            raise LaserError(
                f"give one --lang and one --out per --sentences, got {len(a.sentences)} --sentences, {len(a.langs)} --lang and {len(a.out)} --out"
            )
        if not all(out.endswith(".npy") for out in a.out) or len(set(a.out)) != len(a.out):
            raise LaserError(f"every --out must end in .npy and be given once, got {a.out}")
        try:
            data = json.loads(a.settings)
        except ValueError as err:
            raise LaserError(f"--settings: not JSON ({err})") from err
        settings = settings_of(data if isinstance(data, dict) else {})
        encode_files(settings, list(zip(a.sentences, a.langs, a.out)))
    except (LaserError, OSError) as err:
        print(f"laser_encode: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
