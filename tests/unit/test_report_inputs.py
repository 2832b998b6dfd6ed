"""The report's metrics files read (lem.report.tables): a file that is not JSON (truncated) or holds a value of the
wrong type where the report reads one fails in one line naming the file, the line and column and what was
expected (lem.core.inputs.read_json, json_type_error), never a traceback (issue 51)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lem.cli import command
from lem.core.inputs import InputError, json_position
from lem.report.tables import collect

KEYS = {"variant": "lem", "dataset": "d", "pair": "si-en", "seed": "1"}
PRF = {"precision": 0.5, "recall": 0.5, "f1": 0.5}
GOOD = {
    "sentiment": {"keys": {"task": "sentiment", **KEYS}, "macro_f1": 0.5, "accuracy": 0.7, "labels": ["neg", "pos"],
                  "test_gold": [0, 1, 1, 0], "test_pred": [0, 1, 0, 0]},
    "mining": {"keys": {"task": "mining", **KEYS}, "forward": PRF, "backward": PRF, "intersection": PRF,
               "units": {"units": ["d0", "d1"], "intersection": [[1, 2, 2], [1, 2, 2]]}},
    "curation": {"keys": {"task": "curation", **KEYS}, "average_precision": 0.5, "precision_at_0.5": 0.5,
                 "settings": {"keep_fractions": [0.5]}, "items": {"rank": [1, 2], "clean": [True, False]}},
    "annotation": {"keys": {"task": "annotation", "dataset": "d", "pair": "si"},
                   "pos": {"accuracy": 0.9, "coarse_accuracy": None}, "ner": {"f1": 0.5}},
    "nmt": {"keys": {"task": "nmt", **KEYS, "share": "0.5"}, "bleu": 10.0, "chrf": 30.0},
}  # fmt: skip


def written(tmp_path: Path, task: str, data: dict | str) -> str:
    path = tmp_path / f"{task}.metrics.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return str(path)


def with_value(task: str, keys: tuple, value) -> dict:
    data = json.loads(json.dumps(GOOD[task]))
    at = data
    for key in keys[:-1]:
        at = at[key]
    at[keys[-1]] = value
    return data


def test_well_formed_files_of_every_task_are_read(tmp_path):
    got = collect(**{task: [written(tmp_path, task, data)] for task, data in GOOD.items()}, variants=["lem"])
    assert set(got.values.task) == set(GOOD)


@pytest.mark.parametrize(
    ("task", "keys", "value", "line", "expected"),
    [
        ("sentiment", ("macro_f1",), "0.5", 9, "expected `macro_f1` to be a number, got the string '0.5'"),
        ("sentiment", ("accuracy",), True, 10, "expected `accuracy` to be a number, got the boolean true"),
        ("sentiment", ("test_gold",), {"a": 1}, 15,
         "expected `test_gold` to be a list of label indices, got an object with 1 key"),
        ("sentiment", ("test_pred", 2), -1, 24, "expected `test_pred[2]` to be a label index (an integer >= 0), "
                                                "got the number -1"),
        ("mining", ("intersection", "f1"), None, 22, "expected `intersection.f1` to be a number, got null"),
        ("mining", ("units", "intersection", 1), [1, 2], 35,
         "expected `units.intersection[1]` to be a row of 3 counts (n_correct, n_pred, n_gold), got a list of 2"),
        ("curation", ("items", "clean", 1), "no", 23, "expected `items.clean[1]` to be a clean flag"),
        ("annotation", ("ner", "f1"), "x", 12, "expected `ner.f1` to be a number or null, got the string 'x'"),
        ("annotation", ("pos",), [], 7, "expected `pos` to be an object of its metrics, got a list of 0 items"),
        ("nmt", ("bleu",), "10", 10, "expected `bleu` to be a number, got the string '10'"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_named_at_its_line_and_column(
    tmp_path, task, keys, value, line, expected
):
    path = written(tmp_path, task, with_value(task, keys, value))
    with pytest.raises(InputError) as err:
        collect(**{task: [path]}, variants=["lem"])
    message = str(err.value)
    place = json_position(Path(path).read_text(), keys)
    assert place is not None and place[0] == line
    assert message.startswith(f"{path}:{place[0]}:{place[1]}: {expected}"), message
    assert len(message.splitlines()) == 1


def test_json_position_finds_values_as_json_reads_them():
    text = '{"a": {"b": [1, {"c": "x"}], "d": 2},\n "a2": [ ]  ,\n  "e": "\\"}", "e": [3,\n  4]}'
    assert json_position(text, ("a", "b", 1, "c")) == (1, 23)
    assert json_position(text, ("a", "d")) == (1, 35)
    assert json_position(text, ("e", 1)) == (4, 3)  # a repeated key: its last value, as json.loads keeps it
    assert json_position(text, ("a2", 0)) is None and json_position(text, ("x",)) is None
    assert json_position(text, ("a", "b", 0, "c")) is None  # not an object there


def test_a_truncated_or_empty_file_is_named_at_the_line_and_column(tmp_path):
    text = json.dumps(GOOD["sentiment"], indent=2)
    path = written(tmp_path, "sentiment", text[: text.index('"accuracy"') + 5])
    with pytest.raises(InputError) as err:
        collect(sentiment=[path])
    assert str(err.value) == (
        f"{path}:10:3: expected a JSON sentiment metrics file, got invalid JSON (Unterminated string: the file "
        "is cut short)"
    )
    with pytest.raises(
        InputError, match=r"empty.metrics.json:1:1: expected a JSON mining metrics file, got an empty file$"
    ):
        collect(mining=[written(tmp_path, "empty", "")])


def test_a_file_the_paired_tests_refuse_is_one_line_naming_it(tmp_path):
    """What lem.report.comparisons refuses (per-item values missing) is an InputError too."""
    path = written(tmp_path, "mining", {k: v for k, v in GOOD["mining"].items() if k != "units"})
    with pytest.raises(InputError, match=f"^{path}: a mining metrics file without per-document counts"):
        collect(mining=[path])


def test_lem_report_build_says_a_corrupt_file_in_one_line(tmp_path, capsys):
    path = written(tmp_path, "sentiment", with_value("sentiment", ("test_gold", 0), "a"))
    argv = ["build", "--sentiment", path, "--variants", "lem", "--out-dir", str(tmp_path / "report")]
    assert command("report")(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"lem report build: {path}:16:5: expected `test_gold[0]` to be a label index (an integer >= 0), got "
        "the string 'a'"
    ]
    assert not (tmp_path / "report").exists()
