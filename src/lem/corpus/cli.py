"""`lem corpus generate`: write the embedded generated corpus and evaluation sets."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from lem.corpus.generate import GenerateSettings, generate


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lem corpus", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    gen = verbs.add_parser("generate", help="generate the trilingual corpus, gold tags and evaluation sets")
    gen.add_argument("--settings", default="{}", help="JSON object of GenerateSettings fields")
    gen.add_argument("--out-dir", required=True, help="corpus folder (mono/, para/, gold/, lexicon/)")
    gen.add_argument("--eval-dir", required=True, help="evaluation folder (news/, sentiment/, noisy/)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        raw = json.loads(args.settings)
        if not isinstance(raw, dict):
            raise ValueError("--settings must be a JSON object")
        settings = GenerateSettings.from_dict(raw)
    except (json.JSONDecodeError, ValueError) as err:
        print(f"lem corpus generate: bad --settings: {err}", file=sys.stderr)
        return 2
    counts = generate(settings, args.out_dir, args.eval_dir)
    print(json.dumps({k: v for k, v in counts.items() if k != "settings"}, ensure_ascii=False))
    return 0
