"""Annotation settings per language: one backend for POS, one for NER, and the bad-input policy."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from lem.annotate.lexicon import NER_FORMATS, POS_FORMATS
from lem.entities import check_tagset

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
class TaskSettings:
    """One task's backend. `path`: lexicon/gazetteer file (lexicon), model file (crf), model dir or hub id
    (hf_ner), stanza model dir (stanza), spaCy package name (spacy). `tagset` (POS, lexicon and crf only):
    the tag set the file's tags belong to when it cannot be known from the file itself (a `tsv` or `tnt`
    lexicon: default the language's native set; a CRF model without it in its sidecar)."""

    backend: str = "none"
    path: str = ""
    format: str = ""
    tagset: str = ""
    device: str = "auto"
    batch_size: int = 32
    max_length: int = 256

    @classmethod
    def from_dict(cls, d: dict, task: str) -> TaskSettings:
        if not isinstance(d, dict):
            raise ValueError(f"annotate settings: {task} must be an object, got {d!r}")
        backend = d.get("backend", "none")
        if backend not in BACKENDS:
            raise ValueError(
                f"annotate settings: {task}.backend must be one of {sorted(BACKENDS)}, got {backend!r}"
            )
        tasks, allowed, required = BACKENDS[backend]
        if task not in tasks:
            raise ValueError(f"annotate settings: backend {backend!r} does not do {task} (it does {tasks})")
        extra = sorted(set(d) - allowed - {"backend"})
        if extra:
            raise ValueError(
                f"annotate settings: {task} backend {backend!r} does not take keys {extra}; it takes {sorted(allowed)}"
            )
        missing = sorted(k for k in required if not d.get(k))
        if missing:
            raise ValueError(f"annotate settings: {task} backend {backend!r} needs {missing}")
        s = cls(**d)
        formats = POS_FORMATS if task == "pos" else NER_FORMATS
        if backend == "lexicon" and s.format not in formats:
            raise ValueError(f"annotate settings: {task}.format must be one of {formats}, got {s.format!r}")
        if s.tagset:
            if task != "pos":
                raise ValueError(f"annotate settings: {task}.tagset is for POS only")
            check_tagset(s.tagset, f"annotate settings: {task}.tagset")
            if backend == "lexicon" and s.format == "conllu" and s.tagset != "upos":
                raise ValueError(
                    f"annotate settings: a conllu lexicon holds UPOS tags (column 4), not {s.tagset!r}"
                )
        if s.device not in ("auto", "cpu", "cuda") and not s.device.startswith("cuda:"):
            raise ValueError(
                f"annotate settings: {task}.device must be auto, cpu or cuda[:N], got {s.device!r}"
            )
        if s.batch_size < 1 or s.max_length < 8:
            raise ValueError(f"annotate settings: {task}.batch_size >= 1 and max_length >= 8 required")
        return s


@dataclass
class AnnotateSettings:
    """`{"pos": {...}, "ner": {...}, "on_error": "raise"|"skip", "chunk_lines": N}`; an omitted task uses
    backend `none` (every word `""` / `O`). `chunk_lines`: input lines read, tagged and written (one Parquet
    row group) at a time, which bounds the memory of annotating a large corpus."""

    pos: TaskSettings = field(default_factory=TaskSettings)
    ner: TaskSettings = field(default_factory=TaskSettings)
    on_error: str = "raise"
    chunk_lines: int = 8192

    @classmethod
    def from_dict(cls, d: dict | None) -> AnnotateSettings:
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"annotate settings: unknown keys {unknown}; known: {sorted(known)}")
        on_error = d.get("on_error", "raise")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"annotate settings: on_error must be raise or skip, got {on_error!r}")
        chunk_lines = d.get("chunk_lines", cls.chunk_lines)
        if not isinstance(chunk_lines, int) or isinstance(chunk_lines, bool) or chunk_lines < 1:
            raise ValueError(f"annotate settings: chunk_lines must be an integer >= 1, got {chunk_lines!r}")
        return cls(
            pos=TaskSettings.from_dict(d.get("pos", {}), "pos"),
            ner=TaskSettings.from_dict(d.get("ner", {}), "ner"),
            on_error=on_error,
            chunk_lines=chunk_lines,
        )
