from lem.core.text import word_spans, words


def test_punctuation_split_off_but_scripts_kept_whole():
    assert words('The road. "Hi," said Kamal!') == [
        "The",
        "road",
        ".",
        '"',
        "Hi",
        ",",
        '"',
        "said",
        "Kamal",
        "!",
    ]
    # zero-width joiner and vowel signs stay inside the Sinhala word
    assert words("ශ්\u200dරී ලංකා.") == ["ශ්\u200dරී", "ලංකා", "."]
    assert words("தமிழ்நாடு அரசு") == ["தமிழ்நாடு", "அரசு"]


def test_spans_index_the_text():
    text = "  a.b  (c) "
    for (s, e), w in zip(word_spans(text), words(text), strict=True):
        assert text[s:e] == w
    assert words(text) == ["a.b", "(", "c", ")"]
