"""A run's corpus, annotation and evaluation sets: which files each reads and what guards them (`run.sets` of a
lem.run.Run)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lem.annotate.coverage import enabled_entity_types
from lem.data.leakage import guarded_evals
from lem.run import paths
from lem.run.helpers import src_tgt

if TYPE_CHECKING:
    from lem.run.rows import Rows


class EvalSets:
    """The corpus, annotation and evaluation sets of a run's config (`run.sets`), over the run's languages
    and variants."""

    def __init__(self, run: Rows):
        self.run = run
        self.config = run.config

    # --- corpus, annotation, evaluation sets --------------------------------------------------------------

    def para_files(self, pair: str, split: str) -> list[str]:
        """The pair files of `corpus.files.para.<pair>.<split>` (a path or a list of paths)."""
        spec = self.config["corpus"]["files"]["para"][pair].get(split, [])
        return [spec] if isinstance(spec, str) else list(spec)

    def para_text(self, pair: str, split: str) -> str:
        """Parallel text as training reads it: the leakage-guarded train split, the valid split as it is."""
        if split == "train":
            return paths.fill(paths.GUARDED_PARA, pair=pair)
        return paths.fill(paths.PARA_VALID, pair=pair)

    def annotation_inputs(self, lang: str, settings: dict | None = None) -> list[str]:
        """Every file a language's annotation settings point at (lexicons, tagger models)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("path", "model") and isinstance(value, str) and not value.startswith("hub:"):
                        found.append(value)
                    else:
                        walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        walk(self.config["annotation"].get(lang, {}) if settings is None else settings)
        return found

    def annotation_gpu(self, lang: str, settings: dict | None = None) -> int:
        """GPUs of an annotation job: `resources.gpu_annotation` when a backend of the language runs a neural
        model that can use one (hf_ner, stanza, unless its device is cpu), else 0."""
        s = self.config["annotation"].get(lang, {}) if settings is None else settings
        uses_gpu = any(
            isinstance(task, dict)
            and task.get("backend") in ("hf_ner", "stanza")
            and task.get("device", "auto") != "cpu"
            for task in (s.get("pos"), s.get("ner"))
        )
        return self.config["resources"]["gpu_annotation"] if uses_gpu else 0

    def crf_args(self, name: str) -> list[str]:
        """`lem annotate train-crf` options of `crf_models.<name>` (the CLI's defaults for what is not set)."""
        spec = self.config["crf_models"][name]
        args = ["--task", spec["task"], "--lang", spec["lang"], "--format", spec["format"]]
        args += ["--on-error", spec.get("on_error", "raise")]
        if spec.get("tagset"):
            args += ["--tagset", spec["tagset"]]
        for key, value in spec.get("settings", {}).items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        return args

    def annotation_eval_outputs(self) -> list[str]:
        ev = self.config["annotation_eval"]
        return [
            paths.fill(paths.ANNOTATION_EVAL, annotator=a, lang=lang, ext="json")
            for a in ev["annotators"]
            for lang in self.run.langs
            if lang in ev["gold"]
        ]

    def masked_types(self) -> list[str]:
        """The entity types the trained variants mask (annotation_coverage requires a share of each)."""
        variants = self.config["pretrain"]["variants"]
        return list(enabled_entity_types({v: variants[v] for v in self.run.trained}))

    def mining_sets(self, fmt: str) -> list[str]:
        """The mining evaluation sets of one format (`news` or `parallel`: lem.data.news, lem.data.retrieval)."""
        sets = self.config["mining"].get("evalsets") or {}
        return [name for name, spec in sets.items() if spec.get("format", "news") == fmt]

    def retrieval_files(self, name: str, pair: str) -> list[str]:
        """A parallel mining set's two line-aligned files of `pair` (source, target)."""
        files = self.config["mining"]["evalsets"][name]["files"]
        return [files[lang] for lang in src_tgt(pair)]

    def evalsets(self) -> list[tuple[str, str]]:
        """Every evaluation set as (kind, name): mining sets, sentiment sets, curation corpora, NMT sets."""
        c = self.config
        return (
            [("mining", name) for name in c["mining"].get("evalsets", {})]
            + [("sentiment", name) for name in c["sentiment"].get("datasets", {})]
            + [("curation", pair) for pair in c["curation"].get("corpora", {})]
            + [("nmt", pair) for pair in c["curation"]["nmt"]["pairs"]]
        )

    def evalset_files(self, kind: str, name: str) -> list[str]:
        """The text of evaluation set `name` of `kind` that the pre-training data must not contain."""
        if kind == "mining":
            return [
                paths.fill(paths.PREPARED, evalset=name, pair=pair, lang=lang)
                for pair in self.config["mining"]["evalsets"][name]["pairs"]
                for lang in src_tgt(pair)
            ]
        if kind == "sentiment":
            return [
                paths.fill(paths.PREPARED_SENTIMENT, dataset=name, name=f"{split}.tsv")
                for split in ("valid", "test")
            ]
        if kind == "curation":
            return [paths.fill(paths.PREPARED_CURATION, pair=name, name="pairs.tsv")]
        return self.nmt_eval_files([name])

    def eval_text_files(self) -> list[str]:
        """Every evaluation text the pre-training data must not contain (of every configured set)."""
        return [f for kind, name in self.evalsets() for f in self.evalset_files(kind, name)]

    def guard_eval_files(self) -> list[str]:
        """The leakage guard's evaluation input: once the guard has run, the files it was built with (its
        report's `evals`, those still on disk or still configured), so that adding or removing an evaluation
        set reruns no pre-training (a set added later is checked by `leakage_check` before it is evaluated);
        before, every configured set. Delete the report to guard the training text against the sets of now.
        """
        configured = self.eval_text_files()
        if not Path(paths.LEAKAGE_REPORT).exists():
            return configured

        return [f for f in guarded_evals(paths.LEAKAGE_REPORT) if Path(f).exists() or f in configured]

    def evalset_langs(self, kind: str, name: str) -> list[str]:
        if kind == "mining":
            pairs = self.config["mining"]["evalsets"][name]["pairs"]
            return sorted({lang for pair in pairs for lang in src_tgt(pair)})
        if kind == "sentiment":
            return src_tgt(self.config["sentiment"]["datasets"][name]["pair"])
        return src_tgt(name)

    def evalset_train(self, kind: str, name: str) -> list[str]:
        """The guarded pre-training text of the set's languages (what `leakage_check` compares it with)."""
        return self.train_text_of(self.evalset_langs(kind, name))

    def train_text_of(self, langs: Sequence[str]) -> list[str]:
        """The guarded pre-training text holding any of `langs` (mono text, parallel pairs with one of them;
        what a mining pair's `leakage_items` compares its sentences with)."""
        mono = [paths.fill(paths.GUARDED_MONO, lang=lang) for lang in self.run.langs if lang in langs]
        para = [
            paths.fill(paths.GUARDED_PARA, pair=pair)
            for pair in self.run.pairs
            if set(src_tgt(pair)) & set(langs)
        ]
        return mono + para

    def leakage_checked(self, kind: str, name: str) -> str:
        """The leakage check of one evaluation set: an input of the jobs that evaluate it."""
        return paths.fill(paths.CHECKED, kind=kind, name=name)

    def nmt_eval_files(self, pairs: Sequence[str] | None = None) -> list[str]:
        """The NMT validation and test sets: NMT's training pairs leave them out (`lem nmt select --exclude`;
        the curation corpora are prepared without them, so adding NMT reruns no curation and no leakage guard)
        and the pre-training text must not hold them (the guard, or `leakage_check` when added after it)."""
        pairs = self.config["curation"]["nmt"]["pairs"] if pairs is None else pairs
        return [
            paths.fill(paths.PREPARED_NMT, pair=pair, split=split)
            for pair in pairs
            for split in ("valid", "test")
        ]
