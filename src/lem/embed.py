"""Sentence embeddings from an XLM-R-architecture model: mean or CLS pooling over a chosen layer.

Sentences are encoded in batches sorted by length (less padding, and the result does not depend on
which sentences share a batch beyond padding, which the attention mask removes), then put back in file
order and L2-normalised, so that a dot product is a cosine.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lem.core.embeddings import read_sentences, write_embeddings
from lem.core.settings import Settings, SettingsError
from lem.core.stage import Stage, UsageError, Verb, arg, json_object
from lem.corpus import lexicon as lx
from lem.corpus.generate import GenerateSettings
from lem.evidence import controls

# Imported inside functions: torch and transformers (planning and `lem reference --help` import this module
# and need neither)

if TYPE_CHECKING:
    from lem.evidence.controls import Dictionary

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedSettings(Settings):
    """pooling: mean over non-padding tokens, or the first (<s>) token; layer indexes the hidden states
    (0 = embedding layer, -1 = last); device: auto (cuda if available), cpu or cuda; precision: the
    model's compute type, float32 by default on every device (evaluation numbers do not depend on the
    hardware), fp16 or bf16 opt-in for speed on a GPU. The choice is recorded next to the embeddings."""

    SECTION = "embed settings"

    pooling: str = "mean"
    layer: int = -1
    batch_size: int = 64
    max_length: int = 128
    device: str = "auto"
    precision: str = "float32"

    def validate(self) -> None:
        if self.pooling not in ("mean", "cls"):
            raise SettingsError(f"embed setting pooling={self.pooling!r}: expected 'mean' or 'cls'")
        if self.batch_size < 1 or self.max_length < 2:
            raise SettingsError("embed settings batch_size must be >= 1 and max_length >= 2")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise SettingsError(f"embed setting device={self.device!r}: expected auto, cpu or cuda[:N]")
        if self.precision not in PRECISIONS:
            raise SettingsError(
                f"embed setting precision={self.precision!r}: expected one of {sorted(PRECISIONS)}"
            )


# precision setting -> torch dtype name
PRECISIONS = {"float32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


class Encoder:
    """A model and its tokenizer, loaded once, that embeds any number of sentence lists."""

    def __init__(self, model_dir: str | Path, settings: EmbedSettings | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.settings = settings = settings or EmbedSettings()
        self.device = _device(settings.device)
        self.tok = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModel.from_pretrained(str(model_dir), add_pooling_layer=False)
        self.model = model.eval().to(device=self.device, dtype=getattr(torch, PRECISIONS[settings.precision]))
        n_hidden = model.config.num_hidden_layers + 1
        if not -n_hidden <= settings.layer < n_hidden:
            raise SettingsError(
                f"embed setting layer={settings.layer}: the model has hidden states 0..{n_hidden - 1}"
            )
        # XLM-R numbers positions from padding_idx + 1: a model with P position embeddings takes P - 2 tokens.
        self.max_length = min(settings.max_length, model.config.max_position_embeddings - 2)

    def __call__(self, sentences: list[str]) -> np.ndarray:
        """L2-normalised float32 sentence embeddings, one row per sentence, in input order (computed in
        `settings.precision`, pooled and normalised in float32)."""
        import torch

        settings, tok, model, device = self.settings, self.tok, self.model, self.device
        enc = tok(sentences, truncation=True, max_length=self.max_length, add_special_tokens=True)
        lengths = [len(ids) for ids in enc["input_ids"]]
        order = sorted(range(len(sentences)), key=lambda i: (lengths[i], i))
        out = np.zeros((len(sentences), model.config.hidden_size), np.float32)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 1
        with torch.inference_mode():
            for a in range(0, len(order), settings.batch_size):
                idx = order[a : a + settings.batch_size]
                width = max(lengths[i] for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                mask = torch.zeros((len(idx), width), dtype=torch.long)
                for r, i in enumerate(idx):
                    ids[r, : lengths[i]] = torch.tensor(enc["input_ids"][i])
                    mask[r, : lengths[i]] = 1
                ids, mask = ids.to(device), mask.to(device)
                hs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
                h = hs[settings.layer].float()
                if settings.pooling == "cls":
                    v = h[:, 0]
                else:
                    m = mask.unsqueeze(-1).float()
                    v = (h * m).sum(1) / m.sum(1).clamp(min=1)
                out[idx] = v.cpu().numpy()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def encode(model_dir: str | Path, sentences: list[str], settings: EmbedSettings | None = None) -> np.ndarray:
    """L2-normalised float32 sentence embeddings, one row per sentence, in input order (computed in
    `settings.precision`, pooled and normalised in float32). Loads the model: for several lists, use one
    `Encoder`."""
    return Encoder(model_dir, settings)(sentences)


def embedding_meta(model_dir: str | Path, settings: EmbedSettings, emb: np.ndarray) -> dict[str, Any]:
    """What produced a set of embeddings: model, settings (precision included) and the device used."""
    import torch

    return {
        "model": str(model_dir),
        "settings": asdict(settings),
        "device": str(_device(settings.device)),
        "sentences": int(emb.shape[0]),
        "dim": int(emb.shape[1]) if emb.ndim == 2 else 0,
        "torch": torch.__version__,
    }


def encode_jobs(
    sentences: list[str], outs: list[str], langs: list[str] | None = None
) -> list[tuple[str, str, str | None]]:
    """(sentence file, out .npy, language or None) of an encoding verb's repeated `--sentences S [--lang L]
    --out E`: one of each per file, every --out a distinct .npy (`lem embed encode`, `lem reference encode`)."""
    if len(sentences) != len(outs) or (langs is not None and len(langs) != len(outs)):
        per = "one --lang and one --out" if langs is not None else "one --out"
        got = f"{len(sentences)} --sentences, " + (f"{len(langs)} --lang and " if langs is not None else "")
        raise UsageError(f"give {per} per --sentences, got {got}{len(outs)} --out")
    for out in outs:
        if not out.endswith(".npy"):
            raise UsageError(f"--out must end in .npy, got {out}")
    if len(set(outs)) != len(outs):
        raise UsageError("the same --out is given twice")
    return list(zip(sentences, outs, langs if langs is not None else [None] * len(outs), strict=True))


def cmd_encode(a: argparse.Namespace) -> None:
    jobs = encode_jobs(a.sentences, a.out)
    t0 = time.perf_counter()
    settings: EmbedSettings = a.settings
    files = [(read_sentences(path), out) for path, out, _ in jobs]  # fail early
    encoder = Encoder(a.model, settings)
    log.info("embed: model %s loaded in %.1fs", a.model, time.perf_counter() - t0)
    for sents, out in files:
        t1 = time.perf_counter()
        emb = encoder(sents.texts)
        write_embeddings(out, emb, sents.ids, embedding_meta(a.model, settings, emb))
        log.info(
            "embed: %s: %d sentences, dim %d, pooling %s, layer %d; %.1fs",
            out, len(emb), emb.shape[1], settings.pooling, settings.layer, time.perf_counter() - t1,
        )  # fmt: skip
    log.info("embed: %d file(s); %.1fs in all", len(files), time.perf_counter() - t0)


def generated_dictionary(
    data_dir: str | os.PathLike | None = None, codes: Mapping[str, str] | None = None
) -> Dictionary:
    """The lexical control's dictionary of the generated world (`lem.evidence.controls.Dictionary`): its lexicon
    (`lem.corpus.lexicon`, default the packaged TSVs), one concept per row, made of every form of the row in
    every language (en.base, en.pl, si.loc, ta.acc, ...), inline POS tags dropped and multi-word forms ("Kamal
    Perera") split into words that each map to the row. Words fixed in the generator's templates are not in the
    lexicon and count as unknown words. `codes` (code -> built-in language, config `corpus.generate.languages`)
    names languages as the config does."""
    code = GenerateSettings.from_dict({"languages": dict(codes or {})}).codes

    lex = lx.load(data_dir)
    entries = []
    for e in lex.entries:
        entries.append(
            {
                code[lang]: [
                    " ".join(w for w, _ in lx.parse_form(text, e.cat, lang, form))
                    for form, text in e.forms[lang].items()
                ]
                for lang in lx.LANGS
            }
        )
    return controls.Dictionary.from_entries([code[lang] for lang in lx.LANGS], entries)


def cmd_control(a: argparse.Namespace) -> None:
    """The evaluation chain's controls, in the embed layout: `lexical` (a positive control: bag of dictionary
    concepts, `lem.evidence.controls.lexical_embeddings`) and `random` (a negative control: seeded random vectors,
    a different seed per file so that no two files share rows)."""
    if (a.kind == "lexical") != bool(a.dictionary):
        raise UsageError("--dictionary is required by --kind lexical, and only by it")
    if a.kind == "lexical" and a.dictionary != "generated" and len(a.dict_langs or ()) != 2:
        raise UsageError("a dictionary file needs --dict-langs SRC TGT (the languages of its two columns)")
    if len(a.sentences) != len(a.out) or len(a.langs) != len(a.out):
        raise UsageError("give one --lang and one --out per --sentences")
    dictionary = None
    if a.kind == "lexical":
        dictionary = (
            generated_dictionary(codes=a.generated_languages)
            if a.dictionary == "generated"
            else controls.Dictionary.from_tsv(a.dictionary, *a.dict_langs)
        )
    for n, (path, lang, out) in enumerate(zip(a.sentences, a.langs, a.out, strict=True)):
        if not out.endswith(".npy"):
            raise UsageError(f"--out must end in .npy, got {out}")
        sents = read_sentences(path)
        if a.kind == "lexical":
            emb = controls.lexical_embeddings(sents.texts, lang, dictionary, dim=a.dim, seed=a.seed)
        else:
            emb = controls.random_embeddings(len(sents.texts), a.dim, a.seed + 1 + n)
        meta = {"control": a.kind, "dictionary": a.dictionary, "dim": a.dim, "seed": a.seed, "lang": lang,
                "sentences": int(emb.shape[0])}  # fmt: skip
        write_embeddings(out, emb, sents.ids, meta)
        log.info("embed control %s: %s (%s): %d sentences", a.kind, out, lang, len(emb))


STAGE = Stage(
    "embed",
    __doc__.splitlines()[0],
    (
        Verb("encode", "sentence embeddings of one or more sentence files with one model load", cmd_encode, (
            arg("--model", required=True, help="directory with an HF model and its tokenizer"),
            arg("--sentences", action="append", required=True,
                help="TSV with header id<TAB>doc<TAB>text (repeatable)"),
            arg("--out", action="append", required=True,
                help="E.npy of the matching --sentences; ids go to E.ids.txt, settings to E.meta.json"),
        ), settings=EmbedSettings,
           epilog="Several files: repeat --sentences S --out E; the model is loaded once for all of them."),
        Verb("control", "embeddings of a control row: lexical (dictionary concepts) or random", cmd_control, (
            arg("--kind", required=True, choices=["lexical", "random"]),
            arg("--dictionary", default=None,
                help="lexical: `generated` (the generated world's lexicon) or a src<TAB>tgt dictionary file"),
            arg("--dict-langs", nargs=2, default=None, help="languages of the dictionary file's two columns"),
            arg("--generated-languages", type=json_object, default={},
                help="`generated`: JSON {code: built-in language} for codes the config renames (corpus.generate.languages)"),
            arg("--sentences", action="append", required=True, help="TSV with header id<TAB>doc<TAB>text"),
            arg("--lang", dest="langs", action="append", required=True, help="language of each --sentences"),
            arg("--out", action="append", required=True, help="E.npy of the matching --sentences"),
            arg("--dim", type=int, default=256),
            arg("--seed", type=int, default=13),
        )),
    ),
)  # fmt: skip
