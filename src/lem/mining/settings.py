"""Mining settings (`mining.settings` of the config; `lem mine run --settings`): every choice of the method."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from lem.settings import known_keys

MARGINS = ("ratio", "distance", "absolute")
NEIGHBOURHOODS = ("mean", "pooled")
CANDIDATES = ("all", "knn")
RETRIEVALS = ("forward", "backward", "intersection", "max")
INDEXES = ("exact", "ivf", "hnsw", "ivfpq")
DEVICES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class MineSettings:
    """Every mining choice; the defaults reproduce the news benchmark authors' protocol."""

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
    def from_dict(cls, d: dict[str, Any] | None) -> MineSettings:
        d = known_keys(cls, d, "mining settings")
        if "retrieval" in d:
            r = d["retrieval"]
            d["retrieval"] = (r,) if isinstance(r, str) else tuple(r)
        s = cls(**d)
        s.validate()
        return s

    def validate(self) -> None:
        for name, value, allowed in [
            ("margin", self.margin, MARGINS),
            ("neighbourhood", self.neighbourhood, NEIGHBOURHOODS),
            ("candidates", self.candidates, CANDIDATES),
            ("index", self.index, INDEXES),
            ("device", self.device, DEVICES),
        ]:
            if value not in allowed:
                raise ValueError(f"mining setting {name}={value!r}: expected one of {allowed}")
        bad = [r for r in self.retrieval if r not in RETRIEVALS]
        if bad or not self.retrieval:
            raise ValueError(
                f"mining setting retrieval={list(self.retrieval)}: expected a non-empty list of {RETRIEVALS}"
            )
        if self.k < 1 or (self.candidate_k is not None and self.candidate_k < 1) or self.block_size < 1:
            raise ValueError("mining settings k, candidate_k and block_size must be >= 1")
        if self.index != "exact" and self.candidates == "all":
            raise ValueError(
                f"mining setting index={self.index!r} needs candidates='knn' (an index only gives neighbours)"
            )

    @property
    def n_candidates(self) -> int:
        return self.k if self.candidate_k is None else self.candidate_k

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["retrieval"] = list(self.retrieval)
        return d
