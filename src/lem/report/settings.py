"""What `lem report build` reads of the config, as one `ReportSettings` (`--settings`, JSON: the report rule's
settings, lem.run.settings.report): the declared comparisons (`evidence`), the controls' bars (`controls`), the
evaluation sets (their pairs and their own controls) and the reference rows that are positive controls.

Light on purpose: lem.config_check builds these at load time, before any job. `ControlSettings` (the
`controls` section) lives with the controls it sets, lem.evidence.controls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lem.core.settings import Settings
from lem.evidence.compare import EvidenceSettings
from lem.evidence.controls import ControlSettings


@dataclass(frozen=True)
class ReportSettings(Settings):
    """Everything `lem report build` takes from the config (the whole config reaches it only to be written as
    config.json): `evidence` (families, alpha, confidence, power, margins), `controls`, `evalsets` (config
    `mining.evalsets`: each set's pairs and own controls) and `references` (reference rows that are positive
    controls -> their lift: config `reference_encoders.<name>.positive_lift` of every enabled encoder)."""

    SECTION = "report settings"

    evidence: EvidenceSettings = field(default_factory=EvidenceSettings)
    controls: ControlSettings = field(default_factory=ControlSettings)
    evalsets: dict[str, Any] = field(default_factory=dict)
    references: dict[str, float] = field(default_factory=dict)
