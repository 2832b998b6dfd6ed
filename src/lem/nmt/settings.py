"""NMT settings (`NMTSettings`, `lem nmt run` / `compare`), language codes and backends."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from lem.core.settings import SettingsError
from lem.core.stage import UsageError
from lem.core.training import TrainingSettings

BACKENDS = ("scratch", "pretrained")
SELECTIONS = ("best", "last")  # the checkpoint kept: lowest validation loss, or the last step
LANGS = ("en", "si", "ta")
NLLB_CODES = {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"}
MBART50_CODES = {"en": "en_XX", "si": "si_LK", "ta": "ta_IN"}
FLORES_CODES = NLLB_CODES  # FLoRes-200 names its files by the NLLB codes: devtest/sin_Sinh.devtest
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
NMT_JSON = "nmt.json"


# --- settings -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NMTSettings(TrainingSettings):
    """Every NMT choice. Scratch-model keys apply to `backend: scratch` only; `model`, `revision`,
    `allow_unpinned`, `trust_remote_code` and `lang_codes` to `backend: pretrained` only; the training
    recipe, decoding and metric keys to both. epochs, batch_size, learning_rate, weight_decay and precision
    are `lem.core.training.TrainingSettings`', with NMT's defaults."""

    SECTION = "nmt settings"
    # the key order of metrics.json's and nmt.json's `settings` (as written before the shared base)
    KEY_ORDER = (
        "backend", "vocab_size", "layers", "hidden", "heads", "ffn", "dropout", "model", "revision",
        "allow_unpinned", "trust_remote_code", "lang_codes", "reverse", "max_length", "epochs", "max_steps",
        "batch_size", "eval_batch_size", "learning_rate", "warmup", "weight_decay", "label_smoothing", "select",
        "evaluations", "seed", "beam_size", "bleu_tokenize", "chrf_word_order", "bootstrap_samples",
        "bootstrap_seed", "device", "precision", "threads",
    )  # fmt: skip

    backend: str = "scratch"
    # the scratch model (a Marian-architecture Transformer; `layers` in the encoder and in the decoder)
    vocab_size: int = 2000
    layers: int = 2
    hidden: int = 128
    heads: int = 4
    ffn: int = 512
    dropout: float = 0.1
    # the pretrained model
    model: str | None = None  # a local folder, or a hub id (then `revision` is a commit hash)
    revision: str | None = None
    allow_unpinned: bool = False
    trust_remote_code: bool = False
    lang_codes: dict[str, str] = field(default_factory=lambda: dict(NLLB_CODES))
    # the direction: the pair's src -> tgt, or tgt -> src
    reverse: bool = False
    # the training recipe (batch_size 32, weight_decay 0.0 and precision auto: TrainingSettings' defaults)
    max_length: int = 64  # subwords per side (source and target each); also the longest translation
    epochs: float = 30.0  # used when max_steps is -1
    max_steps: int = 1000  # > 0: this many optimizer steps, whatever the kept share (the same compute)
    eval_batch_size: int = 64
    learning_rate: float = 2e-3
    warmup: float = 0.1  # steps, or a share of them when below 1
    label_smoothing: float = 0.1
    select: str = "best"  # best: the lowest validation loss among the scheduled evaluations; last
    evaluations: int = 10  # validation evaluations, evenly spaced, the last step included
    seed: int = 13
    # decoding
    beam_size: int = 4
    # metrics
    bleu_tokenize: str = "13a"  # sacrebleu's BLEU tokenizer (flores200: spBLEU, downloads its model once)
    chrf_word_order: int = 0  # 0: chrF; 2: chrF++
    bootstrap_samples: int = 1000
    bootstrap_seed: int = 12345  # sacrebleu's default; 0 is refused (sacrebleu reads it as unseeded)
    # hardware (lem.core.training)
    device: str = "auto"
    threads: int | None = None

    def validate(self) -> None:
        super().validate()
        _check_sizes(self)
        _check_metrics_and_hardware(self)
        _check_model_source(self)

    def direction(self, pair: str) -> tuple[str, str]:
        """(source, target) languages of a run on `pair` (`si-en`: si -> en; reversed: en -> si)."""
        parts = pair.split("-") if isinstance(pair, str) else []
        if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
            raise UsageError(f"nmt: pair {pair!r}: expected '<src>-<tgt>', e.g. si-en")
        src, tgt = parts
        return (tgt, src) if self.reverse else (src, tgt)

    def code(self, lang: str) -> str:
        try:
            return self.lang_codes[lang]
        except KeyError:
            raise SettingsError(
                f"nmt setting lang_codes has no code for language {lang!r} (got {dict(self.lang_codes)})"
            ) from None


def _check_sizes(s: NMTSettings) -> None:
    """The scratch model's sizes and the training recipe's numbers."""
    bad = s.refused

    def at_least(key: str, low: float, high: float | None = None) -> None:
        v = getattr(s, key)
        if v < low or (high is not None and v >= high):
            raise bad(key, f"a number >= {low}" + (f" and < {high}" if high is not None else ""))

    if s.backend not in BACKENDS:
        raise bad("backend", f"one of {BACKENDS}")
    if s.vocab_size < 16:
        raise bad("vocab_size", "an integer >= 16")
    for key in ("layers", "hidden", "heads", "ffn", "max_length", "eval_batch_size", "beam_size",
                "evaluations", "bootstrap_samples", "bootstrap_seed"):  # fmt: skip
        if getattr(s, key) < 1:
            raise bad(key, "an integer >= 1")
    if s.max_steps < 1 and s.max_steps != -1:
        raise bad("max_steps", "an integer (> 0: a number of steps; -1: use epochs)")
    if s.seed < 0:
        raise bad("seed", "an integer >= 0")
    if s.hidden % s.heads:
        raise bad("hidden", f"a multiple of heads={s.heads}")
    at_least("dropout", 0.0, 1.0)
    at_least("label_smoothing", 0.0, 1.0)
    at_least("warmup", 0.0)


# sacrebleu 2.6.0's BLEU.TOKENIZERS (tests/planning/test_planning_installed.py keeps them equal): planning imports no sacrebleu
BLEU_TOKENIZERS = ("13a", "char", "flores101", "flores200", "intl", "ja-mecab", "ko-mecab", "none", "spBLEU-1K",
                   "spm", "zh")  # fmt: skip


def _check_metrics_and_hardware(s: NMTSettings) -> None:
    """The metrics' options (sacrebleu's), the checkpoint kept, the device and threads."""
    bad = s.refused
    if s.chrf_word_order not in (0, 1, 2):
        raise bad("chrf_word_order", "0 (chrF), 1 or 2 (chrF++)")
    if s.bleu_tokenize not in BLEU_TOKENIZERS:
        raise bad("bleu_tokenize", f"one of sacrebleu's tokenizers {sorted(BLEU_TOKENIZERS)}")
    if s.select not in SELECTIONS:
        raise bad("select", f"one of {SELECTIONS}")
    if not re.match(r"^(auto|cpu|cuda(:\d+)?|mps)$", s.device):
        raise bad("device", "auto, cpu, cuda or cuda:N")
    if s.threads is not None and s.threads < 1:
        raise bad("threads", "null or an integer >= 1")


def _check_model_source(s: NMTSettings) -> None:
    """The language codes, and a pretrained model named (a hub model pinned to a commit)."""
    bad = s.refused
    if not all(v for v in s.lang_codes.values()):
        raise bad("lang_codes", "a mapping of language (en, si, ta) to the model's language code")
    if s.backend == "pretrained":
        if not s.model:
            raise bad("model", "a local model folder or a hub id (backend: pretrained)")
        if is_hub_id(s.model) and not s.allow_unpinned and not COMMIT.match(s.revision or ""):
            raise bad(
                "revision",
                f"a commit hash (40 hex digits) pinning hub model {s.model!r} (or allow_unpinned: true)",
            )


def training_seed(pretrain_seed: int, base: int = 13) -> int:
    """The seed of a pipeline NMT run's model (initial weights, data order, tokenizer) for pre-training seed
    `pretrain_seed`: the first 31 bits of sha256(`nmt-training/<base>/<pretrain_seed>`), `base` being
    `curation.nmt.settings.seed`. One per pre-training seed (every row's run of that seed shares it: runs
    paired by seed), and never `pretrain_seed` itself, which seeds the random and oracle rankings
    (`lem.curate.control_ranking`): the control's ranking and the model trained on it are separate draws."""
    digest = hashlib.sha256(f"nmt-training/{int(base)}/{int(pretrain_seed)}".encode()).digest()
    seed = int.from_bytes(digest[:4], "big") % 2**31
    return seed if seed != int(pretrain_seed) else (seed + 1) % 2**31


def is_hub_id(model: str) -> bool:
    """`owner/name` that is not an existing folder: a hub model, which must be pinned."""
    return bool(HUB_ID.match(model)) and not Path(model).is_dir()
