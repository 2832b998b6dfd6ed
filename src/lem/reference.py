"""Reference sentence encoders beside the LEM variants: LASER (`laser_encoders`: LASER2 for English, LASER3
for Sinhala and Tamil) and a sentence-transformers model (LaBSE, by hub id at a pinned commit or a local
folder).

They write what `lem.embed` writes, so mining and curation take them as one more variant:
`E.npy` (float32, one L2-normalised row per sentence, in file order), `E.ids.txt` and a meta JSON that
records the backend, the model, its revision, the sha256 of every model file, the dimension and the count.

Nothing here downloads behind the user's back: a hub model is taken from the Hugging Face cache (or fetched
there when `local_files_only` is false and the hub answers) at a pinned commit, with no pickled top-level
weights.

The laser backend's settings are built and checked here (the config check); its encoding runs in
`envs/laser.yaml` (Python 3.8: laser-encoders imports fairseq 0.12.2, which does not import on Python 3.11+,
fairseq #5012) as the workflow's own script `workflow/scripts/laser_encode.py`, which imports no module of
this package and writes the same layout. `lem reference encode` runs the sentence_transformers backend.

`lem reference encode` writes a reference row's embeddings in the layout of `lem embed encode`
(workflow/rules/reference.smk: rows `ref_<name>` of config `reference_encoders`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from lem.core.embeddings import read_sentences, write_embeddings
from lem.core.inputs import InputError
from lem.core.settings import Settings, SettingsError
from lem.core.stage import Stage, Verb, arg
from lem.embed import encode_jobs

# Imported inside functions: torch, huggingface_hub and sentence_transformers (planning reads
# RefEncoderSettings from this module and needs none of them)

log = logging.getLogger(__name__)

BACKENDS = ("laser", "sentence_transformers")
LASER_ENCODERS_VERSION = "0.0.2"  # the version envs/laser.yaml pins
LASER_SCRIPT = "workflow/scripts/laser_encode.py"  # the laser backend's encoder, run in envs/laser.yaml
SENTENCE_TRANSFORMERS_VERSION = "6.2.0"  # the version pyproject.toml pins
DEFAULT_LANGUAGES = {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"}
DEFAULT_LASER3 = ("sin_Sinh", "tam_Taml")
# What is taken of a hub snapshot: configs, tokenizer files and safetensors weights. Top-level pickled
# weights (pytorch_model.bin) are left out; a module's own small weights (LaBSE's 2_Dense) may be .bin,
# which sentence-transformers reads with torch.load(weights_only=True).
HUB_ALLOW_PATTERNS = ["*.json", "*.txt", "*.model", "*.safetensors", "*/pytorch_model.bin"]
_COMMIT = re.compile(r"[0-9a-f]{40}")  # as lem.data.download.is_commit
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FLORES = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")


class RefEncoderError(RuntimeError):
    """A reference encoder cannot run here: the message names what is missing and what to do."""


@dataclass(frozen=True)
class RefEncoderSettings(Settings):
    """One reference encoder.

    backend: `laser` or `sentence_transformers` (required).
    sentence_transformers only: model (hub id such as `sentence-transformers/LaBSE`, or a local folder),
    revision (the 40-hex hub commit; required for a hub id unless allow_unpinned; for a local folder it
    is checked against the folder's provenance.json when given), cache_dir (Hugging Face cache; None: the
    default), local_files_only (never ask the hub), trust_remote_code, max_length (None: the model's own).
    laser only: model_dir (folder holding the LASER files), languages (pipeline language -> FLORES-200
    code), laser3 (codes encoded by their LASER3 model; every other code by LASER2), require_sha256 (every
    LASER file used must have its digest in sha256; they are pickles).
    sha256: file name (relative to model_dir or to the model folder) -> expected sha256; listed files are
    always checked. batch_size, device (auto, cpu, cuda[:N]; laser: auto, cpu or cuda) and normalize (L2;
    mining takes dot products as cosines, so keep it true) apply to both.
    """

    SECTION = "reference encoder settings"

    backend: str = ""
    model: str = ""
    revision: str | None = None
    allow_unpinned: bool = False
    cache_dir: str | None = None
    local_files_only: bool = False
    trust_remote_code: bool = False
    max_length: int | None = None
    model_dir: str = "resources/laser"
    languages: dict = field(default_factory=lambda: dict(DEFAULT_LANGUAGES))
    laser3: tuple = DEFAULT_LASER3
    sha256: dict = field(default_factory=dict)
    require_sha256: bool = True
    batch_size: int = 64
    device: str = "auto"
    normalize: bool = True

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Digests compared lower-case; `laser3` one code or null for a list of one or none."""
        if isinstance(data.get("sha256"), dict):
            data["sha256"] = {k: v.lower() if isinstance(v, str) else v for k, v in data["sha256"].items()}
        if "laser3" in data:
            v = data["laser3"]
            data["laser3"] = (v,) if isinstance(v, str) else tuple(v or ())
        return data

    def validate(self) -> None:
        def bad(key: str, expected: str) -> SettingsError:
            return SettingsError(f"reference encoder setting {key}={getattr(self, key)!r}: {expected}")

        if self.backend not in BACKENDS:
            raise bad("backend", f"expected one of {BACKENDS}")
        if self.backend == "sentence_transformers":
            if not self.model:
                raise bad("model", "expected a hub id (sentence-transformers/LaBSE) or a local folder")
            if self.revision is not None and not _COMMIT.fullmatch(str(self.revision)):
                if not self.allow_unpinned:
                    raise bad(
                        "revision",
                        "not a 40-hex commit (a branch or tag moves): pin the commit "
                        f"(`git ls-remote https://huggingface.co/{self.model}` lists them), "
                        "or set allow_unpinned: true",
                    )
            if self.max_length is not None and self.max_length < 2:
                raise bad("max_length", "expected None or an integer >= 2")
        else:
            for key, default in (("model", ""), ("revision", None), ("max_length", None)):
                if getattr(self, key) != default:
                    raise bad(key, "applies to backend sentence_transformers only; laser reads model_dir")
            if not self.model_dir:
                raise bad("model_dir", "expected the folder that holds the LASER files")
            if not self.languages or not all(
                isinstance(k, str) and k and isinstance(v, str) and _FLORES.fullmatch(v)
                for k, v in self.languages.items()
            ):
                raise bad("languages", "expected a mapping of language -> FLORES-200 code such as sin_Sinh")
            if not all(isinstance(c, str) and _FLORES.fullmatch(c) for c in self.laser3):
                raise bad("laser3", "expected a list of FLORES-200 codes such as sin_Sinh")
            if self.device.startswith("cuda:"):
                raise bad("device", "laser takes auto, cpu or cuda (laser_encoders uses the current GPU)")
        for name, digest in self.sha256.items():
            if not isinstance(name, str) or not name or name.startswith("/") or ".." in Path(name).parts:
                raise SettingsError(
                    f"reference encoder setting sha256: {name!r} is not a file name inside the model folder"
                )
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise SettingsError(
                    f"reference encoder setting sha256[{name!r}]={digest!r}: expected 64 hex digits"
                )
        if self.batch_size < 1:
            raise bad("batch_size", "expected an integer >= 1")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise bad("device", "expected auto, cpu or cuda[:N]")


# --- shared helpers -----------------------------------------------------------------------------------------


def sha256_file(path: str | Path) -> str:
    """The plain sha256 of a file's bytes (what `sha256sum` prints)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def _check_sha256(settings: RefEncoderSettings, folder: Path, digests: dict[str, str], what: str) -> None:
    """Every file named in settings.sha256 must be in `digests` (name -> actual) with the same digest."""
    absent = sorted(name for name in settings.sha256 if name not in digests)
    if absent:
        raise RefEncoderError(
            f"{what}: sha256 names file(s) {absent} that are not in {folder}: correct the names "
            "(relative to the folder) in the reference encoder's sha256 setting"
        )
    for name, expected in sorted(settings.sha256.items()):
        got = digests[name]
        if got != expected:
            raise RefEncoderError(
                f"{what}: sha256 mismatch for {folder / name}: expected {expected}, got {got}. The file "
                "is not the one the config pins: place the right file again, or correct sha256 if the "
                "pin is wrong"
            )


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return str(torch.__version__)


def _normalise(emb: np.ndarray, normalize: bool) -> np.ndarray:
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    if emb.ndim != 2:
        raise RefEncoderError(f"the encoder returned an array of shape {emb.shape}, not one row per sentence")
    if normalize:
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        emb = (emb / np.maximum(norms, 1e-12)).astype(np.float32)
    return emb


# --- sentence-transformers ------------------------------------------------------------------------------------


def hub_model(model: str) -> bool:
    """Whether `model` names a hub repository (owner/name) rather than an existing local folder."""
    return bool(_HUB_ID.fullmatch(model)) and not Path(model).exists()


def _folder_commit(folder: Path) -> str | None:
    """The commit recorded by `lem data fetch-hf` in the folder's provenance.json, if any."""
    prov = folder / "provenance.json"
    if not prov.is_file():
        return None
    commit = json.loads(prov.read_text(encoding="utf-8")).get("resolved_commit")
    return str(commit) if commit else None


def _folder_digests(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file of a model folder (download bookkeeping left out)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and rel.parts[0] != ".cache":
            out[rel.as_posix()] = sha256_file(path)
    return out


def resolve_st_model(settings: RefEncoderSettings) -> tuple[Path, str | None]:
    """The local folder of the sentence-transformers model and its commit (None when unknown)."""
    model, rev = settings.model, settings.revision
    if Path(model).expanduser().is_dir():
        folder = Path(model).expanduser()
        commit = _folder_commit(folder)
        if rev is not None and commit != rev:
            raise RefEncoderError(
                f"sentence-transformers model folder {folder}: revision {rev} is configured but the "
                f"folder's provenance.json names {commit or 'no commit'}: remove revision for a local "
                "folder, or fetch that commit into it"
            )
        return folder, commit
    if not hub_model(model):
        raise RefEncoderError(
            f"sentence-transformers model folder {model} does not exist: place the model there, or set model "
            "to a hub id (e.g. sentence-transformers/LaBSE) with a pinned revision"
        )
    if rev is None and not settings.allow_unpinned:
        raise RefEncoderError(
            f"sentence-transformers model {model}: revision is not set; pin the 40-hex commit "
            f"(`git ls-remote https://huggingface.co/{model}` lists them), or set allow_unpinned: true"
        )
    from huggingface_hub import snapshot_download

    fetch = (
        f"`hf download {model}" + (f" --revision {rev}" if rev else "") + " --include '*.json' "
        "--include '*.txt' --include '*.safetensors' --include '*/pytorch_model.bin'"
        + (f" --cache-dir {settings.cache_dir}" if settings.cache_dir else "")
        + "`"
    )
    try:
        path = snapshot_download(
            repo_id=model,
            revision=rev,
            cache_dir=settings.cache_dir,
            local_files_only=settings.local_files_only,
            allow_patterns=HUB_ALLOW_PATTERNS,
        )
    except Exception as err:
        raise RefEncoderError(
            f"sentence-transformers model {model}@{rev or 'main'} is not in the Hugging Face cache "
            f"({settings.cache_dir or 'the default cache'}) and could not be fetched "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}): where the hub is "
            f"reachable run {fetch}, or set model to a local folder holding it"
        ) from err
    folder = Path(path)  # <cache>/models--owner--name/snapshots/<commit>
    return folder, folder.name if _COMMIT.fullmatch(folder.name) else rev


class _SentenceTransformer:
    def __init__(self, settings: RefEncoderSettings):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise RefEncoderError(
                f"the sentence_transformers backend needs the package sentence-transformers ({err}): "
                f"pip install sentence-transformers=={SENTENCE_TRANSFORMERS_VERSION} (pinned in pyproject.toml)"
            ) from err
        folder, self.commit = resolve_st_model(settings)
        self.digests = _folder_digests(folder)
        _check_sha256(settings, folder, self.digests, f"sentence-transformers model {settings.model}")
        device = None if settings.device == "auto" else settings.device
        try:
            self.st = SentenceTransformer(
                str(folder),
                device=device,
                trust_remote_code=settings.trust_remote_code,
                local_files_only=True,
            )
        except Exception as err:
            raise RefEncoderError(
                f"could not load the sentence-transformers model in {folder} ({type(err).__name__}: {err}): "
                "it needs modules.json (or an HF model), its tokenizer and safetensors weights"
            ) from err
        self.st.eval()
        if settings.max_length is not None:
            self.st.max_seq_length = settings.max_length
        self.batch_size = settings.batch_size
        self.device = str(self.st.device)
        self.model = settings.model
        self.package = {"sentence_transformers": _package_version("sentence-transformers")}

    def __call__(self, sentences: list[str]) -> np.ndarray:
        if not sentences:
            dim = getattr(self.st, "get_embedding_dimension", self.st.get_sentence_embedding_dimension)()
            return np.zeros((0, dim or 0), np.float32)
        return self.st.encode(
            list(sentences),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )


# --- the public API -------------------------------------------------------------------------------------------


class RefEncoder:
    """A reference encoder loaded once for one language (a sentence-transformers model serves every
    language; a LASER model is per language): call it on any number of sentence lists."""

    def __init__(self, settings: RefEncoderSettings, lang: str):
        settings.validate()
        self.settings, self.lang = settings, lang
        t0 = time.perf_counter()
        if settings.backend == "laser":
            raise RefEncoderError(
                f"the laser backend is encoded by the workflow's script {LASER_SCRIPT} in envs/laser.yaml "
                "(Python 3.8; rule embed_reference_laser): run Snakemake with "
                "`--software-deployment-method conda`, or run that script by hand with that environment's python"
            )
        self._impl: Any = _SentenceTransformer(settings)
        log.info(
            "refenc: %s %s loaded in %.1fs", settings.backend, self._impl.model, time.perf_counter() - t0
        )

    @property
    def files(self) -> dict[str, str]:
        """file name -> sha256 of the model files used."""
        return dict(self._impl.digests)

    def __call__(self, sentences: list[str]) -> np.ndarray:
        """float32 embeddings, one row per sentence in input order, L2-normalised when settings.normalize."""
        emb = _normalise(self._impl(list(sentences)), self.settings.normalize)
        if emb.shape[0] != len(sentences):
            raise RefEncoderError(f"the encoder returned {emb.shape[0]} rows for {len(sentences)} sentences")
        return emb

    def meta(self, emb: np.ndarray) -> dict[str, Any]:
        """What produced `emb`: backend, model, revision, files and their sha256, settings, device, size."""
        s, impl = self.settings, self._impl
        out: dict[str, Any] = {
            "backend": s.backend,
            "model": impl.model,
            "revision": getattr(impl, "commit", None),
            "lang": self.lang,
        }
        out.update(
            {
                "files": dict(impl.digests),
                "settings": s.to_dict(),
                "device": impl.device,
                "sentences": int(emb.shape[0]),
                "dim": int(emb.shape[1]) if emb.ndim == 2 else 0,
                "torch": _torch_version(),
                "packages": dict(impl.package),
                "python": "{}.{}.{}".format(*sys.version_info[:3]),
            }
        )
        return out


def encode(settings: RefEncoderSettings, lang: str, sentences: list[str]) -> np.ndarray:
    """float32 sentence embeddings of `sentences` in language `lang`, one L2-normalised row each, in input
    order. Loads the model: for several lists, use one `RefEncoder`."""
    return RefEncoder(settings, lang)(sentences)


def embed_files(
    settings: RefEncoderSettings,
    lang: str,
    sentences_tsv: str | Path,
    out_npy: str | Path,
    out_meta: str | Path,
    out_ids: str | Path | None = None,
    encoder: RefEncoder | None = None,
) -> dict[str, Any]:
    """Embed a prepared sentence file (`lem.core.embeddings.read_sentences`: id<TAB>doc<TAB>text) as `lem embed` does:
    `out_npy` (float32 rows in file order), `out_ids` (default: `out_npy` with `.ids.txt` for `.npy`) and
    `out_meta`, each written atomically. `encoder`: one already loaded with the same settings. Returns the
    meta."""
    out_npy = str(out_npy)
    if not out_npy.endswith(".npy"):
        raise ValueError(f"reference encoder output must end in .npy, got {out_npy}")
    ids_path = Path(out_ids) if out_ids is not None else Path(out_npy[: -len(".npy")] + ".ids.txt")
    if encoder is not None and encoder.settings != settings:
        raise ValueError(
            f"embed_files: the encoder given was loaded for other settings or language than {lang}"
        )
    t0 = time.perf_counter()
    sents = read_sentences(sentences_tsv)  # bad input fails before a model is loaded
    enc = encoder or RefEncoder(settings, lang)
    emb = enc(sents.texts)
    meta = enc.meta(emb)
    meta["lang"] = lang
    write_embeddings(out_npy, emb, sents.ids, meta, ids_path, out_meta)
    log.info(
        "refenc: %s: %d sentences, dim %d, %s %s; %.1fs",
        out_npy, emb.shape[0], emb.shape[1], settings.backend, meta["model"], time.perf_counter() - t0,
    )  # fmt: skip
    return meta


def encode_files(settings: RefEncoderSettings, files: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """Embed every (sentence file, language, out .npy) with one model load (a sentence-transformers model
    serves every language), in the given order; every input is read first, so a bad file fails before the
    model is loaded. Returns the metas."""
    for path, _, _ in files:
        try:
            read_sentences(path)
        except ValueError as err:
            raise InputError(str(err)) from err
    encoder: RefEncoder | None = None
    metas = []
    for path, lang, out in files:
        encoder = encoder or RefEncoder(settings, lang)
        out_meta = out[: -len(".npy")] + ".meta.json"
        metas.append(embed_files(settings, lang, path, out, out_meta, encoder=encoder))
    return metas


def cmd_encode(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    jobs = encode_jobs(a.sentences, a.out, a.langs)
    encode_files(a.settings, [(path, lang, out) for path, out, lang in jobs])
    log.info("reference encode: %d file(s); %.1fs in all", len(jobs), time.perf_counter() - t0)


STAGE = Stage(
    "reference",
    "reference sentence encoders (LASER, sentence-transformers/LaBSE) in the embedding layout",
    (
        Verb("encode", "embeddings of sentence files by a reference encoder (laser or sentence_transformers)",
             cmd_encode, (
            arg("--sentences", action="append", required=True,
                help="TSV with header id<TAB>doc<TAB>text (repeatable)"),
            arg("--lang", dest="langs", action="append", required=True, help="language of each --sentences"),
            arg("--out", action="append", required=True,
                help="E.npy of the matching --sentences; ids go to E.ids.txt, how they were made to E.meta.json"),
        ), settings=RefEncoderSettings, settings_required=True, errors=(RefEncoderError,),
           epilog="The laser backend runs as workflow/scripts/laser_encode.py in envs/laser.yaml (Python 3.8), "
                  "with the same arguments."),
    ),
)  # fmt: skip
