"""English POS (Penn tag_) / NER (OntoNotes -> PER/LOC/ORG/MISC) with an installed spaCy model package."""

from __future__ import annotations

from lem.annotate import BackendError
from lem.core.entities import repair_iob2, to_iob2

# Imported inside functions: spacy (only this backend needs it; lem.annotate.run imports every backend)


class SpacyTagger:
    tagset = "penn"  # POS: the fine-grained `tag_` of spaCy's English models

    def __init__(self, task: str, model: str) -> None:
        try:
            import spacy
            from spacy.tokens import Doc
        except ImportError as e:
            raise BackendError(
                "backend 'spacy' needs spaCy and an English model package (e.g. en_core_web_sm), neither is "
                "installed here; use backend 'crf' (NER) or 'lexicon' (POS) for English offline"
            ) from e
        try:
            self.nlp = spacy.load(model or "en_core_web_sm")
        except OSError as e:
            raise BackendError(
                f"spaCy model {model!r} is not installed (pip install the model package)"
            ) from e
        self.doc_cls, self.task = Doc, task

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        out = []
        for words in sentences:
            if not words:
                out.append([])
                continue
            doc = self.nlp(self.doc_cls(self.nlp.vocab, words=words))
            if self.task == "pos":
                out.append([t.tag_ for t in doc])
            else:
                out.append(
                    repair_iob2([to_iob2(f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O") for t in doc])
                )
        return out
