"""stanza POS / NER on pre-segmented words, from a local model directory only (it never downloads)."""

from __future__ import annotations

from pathlib import Path

from lem.annotate import BackendError
from lem.core.entities import repair_iob2, to_iob2
from lem.core.settings import SettingsError

# Imported inside functions: stanza (only this backend needs it; lem.annotate.run imports every backend)

STANZA_COVERAGE = {"pos": ("en", "ta"), "ner": ("en",)}


class StanzaTagger:
    """`task` is pos (XPOS for English = Penn, UPOS for Tamil) or ner (OntoNotes mapped to PER/LOC/ORG/MISC)."""

    def __init__(self, lang: str, task: str, model_dir: str, device: str = "auto") -> None:
        if lang not in STANZA_COVERAGE[task]:
            raise SettingsError(
                f"stanza has no {task} model for {lang!r} (it covers {STANZA_COVERAGE[task]})"
            )
        d = Path(model_dir) if model_dir else None
        if d is None or not (d / "resources.json").is_file() or not (d / lang).is_dir():
            raise BackendError(
                f"stanza models for {lang!r} not found in {model_dir!r}: on a machine with internet run "
                f"`python -c \"import stanza; stanza.download('{lang}', model_dir='DIR')\"` and copy DIR here, "
                "then set the backend's `path` to DIR (stanza is never allowed to download at run time)"
            )
        import stanza

        processors = "tokenize,pos" if task == "pos" else "tokenize,ner"
        self.task, self.lang = task, lang
        self.tagset = "penn" if lang == "en" else "upos"  # what `tag` emits for POS: XPOS (en), UPOS (ta)
        self.nlp = stanza.Pipeline(
            lang,
            dir=str(d),
            processors=processors,
            tokenize_pretokenized=True,
            download_method=None,
            use_gpu=device != "cpu",
            logging_level="WARN",
        )

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        nonempty = [s for s in sentences if s]
        doc = self.nlp(nonempty) if nonempty else None
        it = iter(doc.sentences if doc else [])
        out = []
        for s in sentences:
            if not s:
                out.append([])
                continue
            sent = next(it)
            if self.task == "pos":
                out.append([(w.xpos if self.lang == "en" else w.upos) or "" for w in sent.words])
            else:
                out.append(repair_iob2([to_iob2(t.ner) for t in sent.tokens]))
        return out
