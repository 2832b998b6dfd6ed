"""Sentiment CSV/TSV: label mapping, dedupe, seeded stratified split (the real code-mixed set:
tests/realdata/test_data_sentiment_real.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lem.cli import command
from lem.core.inputs import InputError
from lem.data.sentiment import SentimentDataSettings, prepare_sentiment

main = command("data")


def test_fixture_split_is_stratified_and_seeded(tmp_path: Path) -> None:
    rows = [f"{i},text {i},{['Positive', 'Negative', 'Neutral'][i % 3]}" for i in range(60)]
    rows += ["60,text 0,Positive", "61,dup label,Positive", "62,dup label,Negative", "63,c,Conflict"]
    (tmp_path / "d.csv").write_text(",Sentence,Sentiment\n" + "\n".join(rows) + "\n")
    s = SentimentDataSettings.from_dict({"drop_labels": ["Conflict"], "seed": 3})
    a = prepare_sentiment(tmp_path / "d.csv", s, tmp_path / "a")
    assert a["removed"] == {"dropped_label_Conflict": 1, "duplicate_conflicting_labels_dropped": 2,
                            "duplicate_texts_dropped": 1}  # fmt: skip
    assert a["splits"]["test"] == {"Negative": 2, "Neutral": 2, "Positive": 2}
    prepare_sentiment(tmp_path / "d.csv", s, tmp_path / "b")
    assert (tmp_path / "a" / "train.tsv").read_text() == (tmp_path / "b" / "train.tsv").read_text()
    texts = [
        set((tmp_path / "a" / f"{k}.tsv").read_text().splitlines()[1:]) for k in ("train", "valid", "test")
    ]
    assert not (texts[0] & texts[1]) and not (texts[0] & texts[2])


def test_settings_reject_unknown_keys_and_unmapped_labels(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown key"):
        SentimentDataSettings.from_dict({"text_col": "x"})
    (tmp_path / "d.tsv").write_text("text\tlab\nhello\tA\nbye\tB\n")
    s = SentimentDataSettings.from_dict(
        {"text_column": "text", "label_column": "lab", "label_map": {"A": "pos"}}
    )
    with pytest.raises(ValueError, match=r"labels \['B'\]"):
        prepare_sentiment(tmp_path / "d.tsv", s, tmp_path / "o")


@pytest.mark.parametrize(
    "settings",
    [
        {"label_map": {"Positive": "Positive", "Negative": None}},  # the other class mapped to null
        {"drop_labels": ["Negative"]},
    ],
)
def test_a_set_left_with_one_class_is_refused_naming_the_file(tmp_path: Path, settings) -> None:
    """Before: it trained and reported macro-F1 1.0."""
    path = tmp_path / "d.csv"
    path.write_text(
        "Sentence,Sentiment\n" + "".join(f"t{i},{('Positive', 'Negative')[i % 2]}\n" for i in range(40))
    )
    with pytest.raises(InputError, match=rf"^{path}: expected at least two classes, got only 'Positive'"):
        prepare_sentiment(path, SentimentDataSettings.from_dict(settings), tmp_path / "o")
    assert not (tmp_path / "o").exists()
    stats = prepare_sentiment(path, SentimentDataSettings.from_dict({}), tmp_path / "ok")
    assert stats["splits"]["test"] == {"Negative": 2, "Positive": 2}
