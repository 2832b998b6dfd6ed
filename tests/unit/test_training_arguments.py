"""The training arguments saved beside a model (`training_args.json`) are the same bytes whichever staging
folder the job trained in: a rerun of a job writes the same model folder."""

from __future__ import annotations

import json
from pathlib import Path

from transformers import TrainingArguments

from lem.core.training.trainer import arguments_json


def test_a_trainer_folder_inside_the_model_is_written_relative_to_it(tmp_path: Path):
    written = []
    for staging in (".model.abc123", ".model.xyz789"):  # two runs of one job: two random staging names
        model = tmp_path / "results" / staging / "model"
        args = TrainingArguments(output_dir=str(model / "work" / "trainer"), seed=7, report_to=[])
        written.append(arguments_json(args, model))
    assert written[0] == written[1]
    fields = json.loads(written[0])
    assert fields["output_dir"] == "work/trainer" and fields["seed"] == 7


def test_a_trainer_folder_elsewhere_is_kept_as_it_is(tmp_path: Path):
    args = TrainingArguments(output_dir="results/checkpoints/lem/tri/seed15/para", report_to=[])
    text = arguments_json(args, tmp_path / "results" / "models" / "lem")
    assert text == args.to_json_string()  # the pre-training stages' stable checkpoint folders: unchanged
