"""Mining settings (`mining.settings` of the config; `lem mine run --settings`): every choice of the method."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lem.core.settings import Settings, SettingsError

MARGINS = ("ratio", "distance", "absolute")
NEIGHBOURHOODS = ("mean", "pooled")
CANDIDATES = ("all", "knn")
RETRIEVALS = ("forward", "backward", "intersection", "max")
INDEXES = ("exact", "ivf", "hnsw", "ivfpq")
DEVICES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class MineSettings(Settings):
    """Every mining choice; the defaults reproduce the news benchmark authors' protocol."""

    SECTION = "mining settings"

    margin: str = "ratio"
    neighbourhood: str = "pooled"
    k: int = 4
    candidates: str = "all"
    candidate_k: int | None = None  # None: same as k
    retrieval: tuple[str, ...] = ("forward", "backward", "intersection")
    threshold: float | None = None  # keep pairs with score > threshold (strict, as LASER)
    per_document: bool | None = None  # None: true when the sentence files have document ids
    index: str = "exact"
    block_size: int = 1024
    nlist: int | None = None  # IVF lists; None: 4 * sqrt(n), at least 1
    nprobe: int = 16
    hnsw_m: int = 32
    ef_search: int = 128
    pq_m: int = 64  # OPQ/PQ sub-quantizers for index=ivfpq (must divide the dimension)
    device: str = "cpu"  # the exact search: cpu (numpy), cuda (torch on the GPU), auto (the GPU if any)

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        if isinstance(data.get("retrieval"), str):  # one direction for a list of one
            data["retrieval"] = (data["retrieval"],)
        return data

    def validate(self) -> None:
        for name, value, allowed in [
            ("margin", self.margin, MARGINS),
            ("neighbourhood", self.neighbourhood, NEIGHBOURHOODS),
            ("candidates", self.candidates, CANDIDATES),
            ("index", self.index, INDEXES),
            ("device", self.device, DEVICES),
        ]:
            if value not in allowed:
                raise SettingsError(f"mining setting {name}={value!r}: expected one of {allowed}")
        bad = [r for r in self.retrieval if r not in RETRIEVALS]
        if bad or not self.retrieval:
            raise SettingsError(
                f"mining setting retrieval={list(self.retrieval)}: expected a non-empty list of {RETRIEVALS}"
            )
        if self.k < 1 or (self.candidate_k is not None and self.candidate_k < 1) or self.block_size < 1:
            raise SettingsError("mining settings k, candidate_k and block_size must be >= 1")
        if self.index != "exact" and self.candidates == "all":
            raise SettingsError(
                f"mining setting index={self.index!r} needs candidates='knn' (an index only gives neighbours)"
            )

    @property
    def n_candidates(self) -> int:
        return self.k if self.candidate_k is None else self.candidate_k

    @property
    def neighbours(self) -> int:
        """Neighbours searched per side: the margin's k, and with `candidates: knn` the candidates too."""
        return self.k if self.candidates == "all" else max(self.k, self.n_candidates)
