"""Sinhala POS with sinling 0.3.x's CRF tagger (offline; its tags are the UCSC set LEM's Sinhala uses)."""

from __future__ import annotations

from lem.annotate import BackendError

# Imported inside functions: sinling (only this backend needs it; lem.annotate.run imports every backend)


class SinlingPOS:
    tagset = "ucsc"

    def __init__(self) -> None:
        try:
            from sinling import POSTagger
        except ImportError as e:  # pragma: no cover - sinling is a project dependency
            raise BackendError(
                "backend 'sinling' needs the sinling package (pip install 'sinling>=0.3,<0.4')"
            ) from e
        self.tagger = POSTagger()

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        nonempty = [s for s in sentences if s]
        tagged = iter(self.tagger.predict(nonempty) if nonempty else [])
        return [[t for _, t in next(tagged)] if s else [] for s in sentences]
