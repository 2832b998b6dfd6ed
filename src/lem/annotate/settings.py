"""Annotation settings per language: one backend for POS, one for NER, and the bad-input policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lem.annotate.lexicon import NER_FORMATS, POS_FORMATS
from lem.core.entities import check_tagset
from lem.core.settings import Settings, SettingsError

BACKENDS = {
    # backend: (tasks it can do, keys it accepts besides `backend`, keys it requires)
    "none": (("pos", "ner"), set(), set()),
    "lexicon": (("pos", "ner"), {"path", "format", "tagset"}, {"path", "format"}),
    "sinling": (("pos",), set(), set()),
    "crf": (("pos", "ner"), {"path", "tagset"}, {"path"}),
    "hf_ner": (("ner",), {"path", "device", "batch_size", "max_length"}, {"path"}),
    "stanza": (("pos", "ner"), {"path", "device"}, set()),
    "spacy": (("pos", "ner"), {"path"}, set()),
}


@dataclass
class TaskSettings(Settings):
    """One task's backend (`PosSettings`, `NerSettings`). `path`: lexicon/gazetteer file (lexicon), model file
    (crf), model dir or hub id (hf_ner), stanza model dir (stanza), spaCy package name (spacy). `tagset` (POS,
    lexicon and crf only): the tag set the file's tags belong to when it cannot be known from the file itself
    (a `tsv` or `tnt` lexicon: default the language's native set; a CRF model without it in its sidecar)."""

    SECTION = "annotate settings"
    TASK = ""  # pos | ner: the subclass's

    backend: str = "none"
    path: str = ""
    format: str = ""
    tagset: str = ""
    device: str = "auto"
    batch_size: int = 32
    max_length: int = 256

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The backend, and the keys it takes (`BACKENDS`), checked on the keys given."""
        task, backend = cls.TASK, data.get("backend", "none")
        if backend not in BACKENDS:
            raise SettingsError(
                f"annotate settings: {task}.backend must be one of {sorted(BACKENDS)}, got {backend!r}"
            )
        tasks, allowed, required = BACKENDS[backend]
        if task not in tasks:
            raise SettingsError(
                f"annotate settings: backend {backend!r} does not do {task} (it does {tasks})"
            )
        extra = sorted(set(data) - allowed - {"backend"})
        if extra:
            raise SettingsError(
                f"annotate settings: {task} backend {backend!r} does not take keys {extra}; it takes {sorted(allowed)}"
            )
        missing = sorted(k for k in required if not data.get(k))
        if missing:
            raise SettingsError(f"annotate settings: {task} backend {backend!r} needs {missing}")
        return data

    def validate(self) -> None:
        s, task = self, self.TASK
        formats = POS_FORMATS if task == "pos" else NER_FORMATS
        if s.backend == "lexicon" and s.format not in formats:
            raise SettingsError(
                f"annotate settings: {task}.format must be one of {formats}, got {s.format!r}"
            )
        if s.tagset:
            if task != "pos":
                raise SettingsError(f"annotate settings: {task}.tagset is for POS only")
            check_tagset(s.tagset, f"annotate settings: {task}.tagset")
            if s.backend == "lexicon" and s.format == "conllu" and s.tagset != "upos":
                raise SettingsError(
                    f"annotate settings: a conllu lexicon holds UPOS tags (column 4), not {s.tagset!r}"
                )
        if s.device not in ("auto", "cpu", "cuda") and not s.device.startswith("cuda:"):
            raise SettingsError(
                f"annotate settings: {task}.device must be auto, cpu or cuda[:N], got {s.device!r}"
            )
        if s.batch_size < 1 or s.max_length < 8:
            raise SettingsError(f"annotate settings: {task}.batch_size >= 1 and max_length >= 8 required")


@dataclass
class PosSettings(TaskSettings):
    TASK = "pos"


@dataclass
class NerSettings(TaskSettings):
    TASK = "ner"


@dataclass
class AnnotateSettings(Settings):
    """`{"pos": {...}, "ner": {...}, "on_error": "raise"|"skip", "chunk_lines": N}`; an omitted task uses
    backend `none` (every word `""` / `O`). `chunk_lines`: input lines read, tagged and written (one Parquet
    row group) at a time, which bounds the memory of annotating a large corpus."""

    SECTION = "annotate settings"

    pos: PosSettings = field(default_factory=PosSettings)
    ner: NerSettings = field(default_factory=NerSettings)
    on_error: str = "raise"
    chunk_lines: int = 8192

    def validate(self) -> None:
        if self.on_error not in ("raise", "skip"):
            raise SettingsError(f"annotate settings: on_error must be raise or skip, got {self.on_error!r}")
        if self.chunk_lines < 1:
            raise SettingsError(
                f"annotate settings: chunk_lines must be an integer >= 1, got {self.chunk_lines!r}"
            )
