"""The rows, seeds and scopes of a run, and the models that stand for each row (what lem.run.Run is, besides
its evaluation sets and job grid, which read these)."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from lem.masking.collate import variant_aliases
from lem.run import paths
from lem.run.helpers import src_tgt

CONTROL_KINDS = ("lexical", "random")


class Rows:
    """Rows (variants, controls, reference encoders), seeds, scopes and model folders of a run's config."""

    def __init__(self, config: dict[str, Any]):
        self.config = config

    # --- rows, seeds, scopes ---------------------------------------------------------------------------------

    @cached_property
    def langs(self) -> list[str]:
        return list(self.config["languages"])

    @cached_property
    def pairs(self) -> list[str]:
        return list(self.config["pairs"])

    @cached_property
    def variants(self) -> list[str]:
        return list(self.config["variants"])

    @cached_property
    def trained(self) -> list[str]:
        return [v for v in self.variants if v != "base"]

    @cached_property
    def seeds(self) -> list[int]:
        """The pre-training seeds (`pretrain.seeds`, else the run's `seed`): one model per seed and trained
        variant (and base model trained from scratch)."""
        return list((self.config.get("pretrain") or {}).get("seeds") or [self.config["seed"]])

    @cached_property
    def controls(self) -> list[str]:
        """Rows of the mining table besides the variants: the evaluation chain's controls (`embed_control`)."""
        controls = self.config.get("controls") or {}
        return [f"control_{kind}" for kind in CONTROL_KINDS if controls.get(kind)]

    @cached_property
    def references(self) -> dict[str, dict]:
        """`ref_<name>` -> spec of every enabled reference encoder (seedless rows, as the controls)."""
        return {
            f"ref_{name}": spec
            for name, spec in (self.config.get("reference_encoders") or {}).items()
            if (spec or {}).get("enabled", True)
        }

    @cached_property
    def rows(self) -> list[str]:
        """Rows of the mining table: the variants, the controls, the reference encoders."""
        return self.variants + self.controls + list(self.references)

    @cached_property
    def curation_rows(self) -> list[str]:
        """Rows of the curation and NMT tables: the variants and the reference encoders (they embed the
        curation corpora too); curation's controls are its own rankings (`nmt_controls`)."""
        return self.variants + list(self.references)

    @cached_property
    def model_of(self) -> dict[str, str]:
        """Each trained variant -> the first-listed variant with the same masking (lem.masking.collate.MaskingSettings
        .canonical), whose model it shares: evaluated and reported under its own name with that model."""
        return variant_aliases(self.config["pretrain"]["variants"], self.trained)

    @cached_property
    def trained_models(self) -> list[str]:
        return [v for v in self.trained if self.model_of[v] == v]

    @property
    def scratch(self) -> bool:
        return (self.config.get("base_model") or {}).get("source", "scratch") == "scratch"

    @cached_property
    def scopes(self) -> list[str]:
        return ["tri"] if self.config["pretrain"]["scope"] == "tri" else self.pairs

    def scope_of(self, pair: str) -> str:
        return "tri" if self.config["pretrain"]["scope"] == "tri" else pair

    def scope_langs(self, scope: str) -> list[str]:
        return self.langs if scope == "tri" else src_tgt(scope)

    def scope_pairs(self, scope: str) -> list[str]:
        return self.pairs if scope == "tri" else [scope]

    def row_seeds(self, row: str) -> list[int]:
        """The pre-training seeds a row of the tables has: every seed for the trained variants and a base
        model trained from scratch; the first alone for rows with no pre-training (a pretrained base model,
        controls, reference encoders), whose folders carry it so that every row has the same layout. The
        random control has one draw per seed: `controls.random_seeds` of them (default: one per pre-training
        seed; more continue after the largest), tested against chance together (lem.evidence.controls)."""
        if row in self.trained or (row == "base" and self.scratch):
            return self.seeds
        if row == "control_random":
            n = (self.config.get("controls") or {}).get("random_seeds") or len(self.seeds)
            extra = [max(self.seeds) + k for k in range(1, n - len(self.seeds) + 1)]
            return (self.seeds + extra)[:n]
        return self.seeds[:1]

    # --- models ------------------------------------------------------------------------------------------------

    def base_model_dir(self, seed: int | str | None = None) -> str | None:
        """The base model's folder; one per pre-training seed when it is trained from scratch (default: the
        first seed's, e.g. for the NER model). None for a hub model without repo or revision (refused by
        lem.config_check)."""
        bm = self.config.get("base_model") or {}
        source = bm.get("source", "scratch")
        if source == "scratch":
            return paths.fill(paths.BASE_MODEL, seed=self.seeds[0] if seed is None else seed)
        if source == "stand_in":
            size = (bm.get("stand_in") or {}).get("size", "base")
            return paths.fill(paths.STAND_IN_MODEL, size=size)
        if "path" in bm:
            return str(bm["path"])
        hub = bm.get("hub") or {}
        if "repo" not in hub or "revision" not in hub:
            return None
        return paths.fill(paths.HUB_MODEL, repo=hub["repo"], revision=hub["revision"])

    @property
    def fetches_base_model(self) -> bool:
        """A hub base model fetched by this run (download.smk: fetch_base_model, check_base_model)."""
        bm = self.config["base_model"]
        return bm["source"] == "pretrained" and "path" not in bm

    def base_model_checked(self) -> list[str]:
        """The check of the settings against a hub base model fetched by this run, an input of the first
        training jobs that read the model; none for other models, whose facts are known at planning."""
        return [paths.BASE_MODEL_CHECK] if self.fetches_base_model else []

    def tokenizer_dir(self) -> str | None:
        if self.config["tokenizer"]["source"] == "train":
            return paths.TOKENIZER
        return self.base_model_dir()

    def ner_base_model(self) -> str | None:
        base = self.config["ner_model"].get("base", "base_model")
        return self.base_model_dir() if base == "base_model" else base

    def model_dir(self, variant: str, scope: str, seed: int | str, stage: str) -> str:
        """The folder of a trained model's stage (`mono`, `para`)."""
        return paths.fill(paths.MODEL, variant=variant, scope=scope, seed=seed, stage=stage)

    def model_for(self, variant: str, pair: str, seed: int | str) -> str | None:
        """The model folder that represents `variant` for language pair `pair` and pre-training seed `seed`
        (an alias's: the model of the first-listed variant with the same masking)."""
        if variant == "base":
            return self.base_model_dir(seed)
        return self.model_dir(self.model_of[variant], self.scope_of(pair), seed, "para")

    def reference_controls(self) -> dict[str, Any]:
        """Reference rows that are positive controls (`positive_lift` set) -> their lift, for the report."""
        return {
            row: spec["positive_lift"]
            for row, spec in self.references.items()
            if spec.get("positive_lift") is not None
        }

    def control_dictionary(self, pair: str) -> str | None:
        """The positive control's dictionary for a pair: `generated` or the configured file (None: no control)."""
        lexical = self.config["controls"]["lexical"]
        return lexical if isinstance(lexical, str) else (lexical or {}).get(pair)

    def generated_languages_args(self) -> list[str]:
        """`--generated-languages JSON` when the config writes the generated world's languages under codes of
        its own (`corpus.generate.languages`: code -> built-in language); none otherwise."""
        named = ((self.config.get("corpus") or {}).get("generate") or {}).get("languages") or {}
        return ["--generated-languages", json.dumps(named, sort_keys=True)] if named else []

    def has_lexical(self, evalset: str, pair: str) -> bool:
        """Whether set `evalset` has the lexical control on `pair`: a dictionary for the pair, and not turned
        off by `mining.evalsets.<set>.controls.lexical` (false, or {pair: false})."""
        if self.control_dictionary(pair) is None:
            return False
        spec = self.config["mining"]["evalsets"].get(evalset) or {}
        own = (spec.get("controls") or {}).get("lexical", True)
        return bool(own.get(pair, True) if isinstance(own, dict) else own)
