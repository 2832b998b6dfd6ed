"""`lem corpus generate`: write the embedded generated corpus and evaluation sets."""

from __future__ import annotations

import argparse
import json

from lem.core.stage import Stage, Verb, arg
from lem.corpus.generate import GenerateSettings, generate


def run_generate(args: argparse.Namespace) -> int:
    counts = generate(args.settings, args.out_dir, args.eval_dir)
    print(json.dumps({k: v for k, v in counts.items() if k != "settings"}, ensure_ascii=False))
    return 0


STAGE = Stage(
    "corpus",
    __doc__.splitlines()[0],
    (
        Verb(
            "generate",
            "generate the trilingual corpus, gold tags and evaluation sets",
            run_generate,
            (
                arg("--out-dir", required=True, help="corpus folder (mono/, para/, gold/, lexicon/)"),
                arg("--eval-dir", required=True, help="evaluation folder (news/, sentiment/, noisy/)"),
            ),
            settings=GenerateSettings,
        ),
    ),
)
