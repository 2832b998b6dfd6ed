"""Properties of the LEM collator over random word/flag layouts, plus the standard baseline and statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lem.masking.collate import (
    MaskingSettings,
    fixed_masked_examples,
    make_collator,
    masking_budget,
    variant_aliases,
)
from lem.masking.stats import masking_stats

PAD, CLS, SEP, UNK, MASK, VOCAB = 1, 0, 2, 3, 99, 100


class StubTokenizer:
    """What the LEM collator reads from a tokenizer: special ids and vocabulary size."""

    pad_token_id, mask_token_id, all_special_ids = PAD, MASK, [CLS, PAD, SEP, UNK, MASK]

    def __len__(self) -> int:
        return VOCAB


def make_row(sides: list[list[tuple[int, int]]], rng: np.random.Generator, lang: str = "en") -> dict:
    """A feature row from sides of (subwords, flags) words: `<s> A </s>` or `<s> A </s></s> B </s>`."""
    ids, word_ids, flags, w = [CLS], [-1], [], 0
    for k, side in enumerate(sides):
        if k:
            ids += [SEP]
            word_ids += [-1]
        for size, flag in side:
            ids += rng.integers(5, MASK, size=size).tolist()
            word_ids += [w] * size
            flags.append(flag)
            w += 1
        ids += [SEP]
        word_ids += [-1]
    return {"input_ids": ids, "word_ids": word_ids, "word_flags": flags, "lang": lang}


word = st.tuples(st.integers(1, 4), st.integers(0, 7))
side = st.lists(word, min_size=0, max_size=25)
example = st.lists(side, min_size=1, max_size=2)
types = st.lists(st.sampled_from(["ne", "noun", "verb"]), unique=True, max_size=3)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(example, min_size=1, max_size=6),
    types,
    st.sampled_from(["non_special", "all_tokens"]),
    st.sampled_from(["half_up", "half_even"]),
    st.integers(0, 2**31),
)
def test_lem_invariants(layouts, entity_types, count_rule, rounding, seed):
    rng = np.random.default_rng(seed)
    rows = [make_row(sides, rng) for sides in layouts]
    s = MaskingSettings.from_dict(
        {"entity_types": entity_types, "count_rule": count_rule, "rounding": rounding, "mask_prob": 1.0,
         "random_prob": 0.0}
    )  # fmt: skip
    out = make_collator(StubTokenizer(), s, seed)(rows)
    labels, ids, att = out["labels"].numpy(), out["input_ids"].numpy(), out["attention_mask"].numpy()
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        assert att[i, :n].all() and not att[i, n:].any()
        masked = labels[i, :n] != -100
        assert (labels[i, n:] == -100).all() and (ids[i, n:] == PAD).all()
        wid = np.array(row["word_ids"])
        assert not masked[wid < 0].any(), "special token masked"
        assert (labels[i, :n][masked] == np.array(row["input_ids"])[masked]).all()
        assert (ids[i, :n][masked] == MASK).all() and (
            ids[i, :n][~masked] == np.array(row["input_ids"])[~masked]
        ).all()
        n_words = len(row["word_flags"])
        want = masking_budget(wid[None, :], np.array([n]), s.budget, count_rule, rounding)[0]
        # budget met exactly when there are enough words, never more than one subword per word
        assert masked.sum() == min(want, n_words)
        hit_words = wid[masked]
        assert len(set(hit_words)) == len(hit_words)
        flags = np.array(row["word_flags"], dtype=np.uint8)
        entity = (flags & s.entity_mask) != 0
        if entity.sum() >= want:
            assert entity[hit_words].all(), "a non-entity word was masked although entity words sufficed"
        else:
            assert entity[hit_words].sum() == entity.sum(), "pass 2 ran before pass 1 used every entity word"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(example, min_size=1, max_size=6),
    types,
    st.sampled_from([0.15, 0.15, 0.05, 0.25, 0.5]),
    st.integers(0, 2**31),
)
def test_authors_budget_counts_all_tokens_and_rounds_half_to_even(layouts, entity_types, budget, seed):
    """The paper config's rule, checked against the authors' formula in plain Python (not masking_budget):
    max(1, round(num_tokens * budget)) over every token of the example, <s> and </s> included."""
    rng = np.random.default_rng(seed)
    rows = [make_row(sides, rng) for sides in layouts]
    s = MaskingSettings.from_dict(
        {"entity_types": entity_types, "budget": budget, "count_rule": "all_tokens", "rounding": "half_even"}
    )
    labels = make_collator(StubTokenizer(), s, seed)(rows)["labels"].numpy()
    for i, row in enumerate(rows):
        n_words = len(row["word_flags"])
        want = max(1, round(len(row["input_ids"]) * budget)) if n_words else 0
        assert (labels[i] != -100).sum() == min(want, n_words)


@settings(max_examples=40, deadline=None)
@given(st.lists(example, min_size=1, max_size=6), st.integers(0, 2**31))
def test_default_budget_counts_text_tokens_and_rounds_half_up(layouts, seed):
    rng = np.random.default_rng(seed)
    rows = [make_row(sides, rng) for sides in layouts]
    labels = make_collator(StubTokenizer(), MaskingSettings(), seed)(rows)["labels"].numpy()
    for i, row in enumerate(rows):
        n_words, text = len(row["word_flags"]), sum(w >= 0 for w in row["word_ids"])
        want = max(1, math.floor(text * 0.15 + 0.5)) if n_words else 0
        assert (labels[i] != -100).sum() == min(want, n_words)


def test_rounding_of_halves_and_numpy_agrees_with_python_round():
    counts = np.arange(0, 200_001)
    wid = np.zeros((len(counts), 1), dtype=np.int64)  # one content token each: no example is empty
    for rounding in ("half_even", "half_up"):
        got = masking_budget(wid, counts, 0.15, "all_tokens", rounding)
        if rounding == "half_even":
            assert (got == [max(1, round(int(n) * 0.15)) for n in counts]).all()
        else:
            assert (got == np.maximum(1, np.floor(counts * 0.15 + 0.5))).all()
    # 10, 30, 50, 70 tokens: 1.5, 4.5, 7.5, 10.5 positions
    halves = np.array([10, 30, 50, 70])
    wid = np.zeros((4, 1), dtype=np.int64)
    assert masking_budget(wid, halves, 0.15, "all_tokens", "half_even").tolist() == [2, 4, 8, 10]
    assert masking_budget(wid, halves, 0.15, "all_tokens", "half_up").tolist() == [2, 5, 8, 11]
    with pytest.raises(ValueError, match="rounding"):
        MaskingSettings.from_dict({"rounding": "up"})


def test_canonical_settings_and_variant_aliases():
    a = MaskingSettings.from_dict({"strategy": "lem", "entity_types": ["ne", "noun", "verb"]})
    b = MaskingSettings.from_dict({"entity_types": ["verb", "ne", "noun"], "budget": 0.15})
    assert a != b and a.canonical() == b.canonical() and a.canonical().entity_types == ("ne", "noun", "verb")
    assert (
        a.canonical() == MaskingSettings(entity_types=("verb", "ne", "noun"), mlm_probability=0.3).canonical()
    )
    assert a.canonical() != MaskingSettings.from_dict({"rounding": "half_even"}).canonical()
    std = [MaskingSettings(strategy="standard", entity_types=t) for t in (("ne",), ())]
    assert std[0].canonical() == std[1].canonical()  # entity types mean nothing to standard masking
    # ... so a config may not set them: a key the strategy does not use is refused, not ignored
    for bad in ({"strategy": "standard", "entity_types": ["ne"]}, {"strategy": "standard", "whole_word": False},
                {"strategy": "lem", "mlm_probability": 0.15}, {"mlm_probability": 0.2}):  # fmt: skip
        with pytest.raises(ValueError, match="not used by strategy"):
            MaskingSettings.from_dict(bad)
    paperlike = {
        "mlm_tlm": {"strategy": "standard", "mlm_probability": 0.15},
        "lem": {"strategy": "lem", "entity_types": ["ne", "noun", "verb"]},
        "lem_ne": {"strategy": "lem", "entity_types": ["ne"]},
        "lem_ne_noun_verb": {"strategy": "lem", "entity_types": ["verb", "noun", "ne"]},
        "lem_noun_verb": {"entity_types": ["noun", "verb"]},
        "lem_verb_noun": {"entity_types": ["verb", "noun"], "count_rule": "non_special"},
        "lem_wide": {"entity_types": ["ne", "noun", "verb"], "budget": 0.2},
    }
    assert variant_aliases(paperlike, list(paperlike)) == {
        "mlm_tlm": "mlm_tlm", "lem": "lem", "lem_ne": "lem_ne", "lem_ne_noun_verb": "lem",
        "lem_noun_verb": "lem_noun_verb", "lem_verb_noun": "lem_noun_verb", "lem_wide": "lem_wide",
    }  # fmt: skip
    # the first listed is the one trained
    assert variant_aliases(paperlike, ["lem_ne_noun_verb", "lem"])["lem"] == "lem_ne_noun_verb"


@settings(max_examples=40, deadline=None)
@given(st.lists(example, min_size=1, max_size=5), st.integers(0, 2**31))
def test_whole_word_masks_whole_words_and_reaches_budget(layouts, seed):
    rng = np.random.default_rng(seed)
    rows = [make_row(sides, rng) for sides in layouts]
    s = MaskingSettings.from_dict({"whole_word": True, "mask_prob": 1.0, "random_prob": 0.0})
    labels = make_collator(StubTokenizer(), s, seed)(rows)["labels"].numpy()
    for i, row in enumerate(rows):
        wid = np.array(row["word_ids"])
        masked = labels[i, : len(wid)] != -100
        hit = set(wid[masked])
        assert all(masked[wid == w].all() for w in hit)
        want = masking_budget(wid[None, :], np.array([len(wid)]), s.budget, s.count_rule)[0]
        content = int((wid >= 0).sum())
        assert masked.sum() >= min(want, content)
        if hit:
            assert masked.sum() - max((wid == w).sum() for w in hit) < want


@settings(max_examples=40, deadline=None)
@given(st.lists(example, min_size=1, max_size=6), st.sampled_from([0.2, 0.5, 1.0]), st.integers(0, 2**31))
def test_other_share_reserves_part_of_the_budget_for_non_entity_words(layouts, share, seed):
    """Ablation `other_share`: round(share x n) of the n chosen words are non-entity words whenever the
    example has that many, the rest entity words first; one subword per word, exactly n in all."""
    rng = np.random.default_rng(seed)
    rows = [make_row(sides, rng) for sides in layouts]
    s = MaskingSettings.from_dict(
        {"entity_types": ["ne"], "other_share": share, "mask_prob": 1.0, "random_prob": 0.0}
    )
    labels = make_collator(StubTokenizer(), s, seed)(rows)["labels"].numpy()
    for i, row in enumerate(rows):
        wid, flags = np.array(row["word_ids"]), np.array(row["word_flags"], dtype=np.int64)
        masked = labels[i, : len(wid)] != -100
        hit = wid[masked]
        assert len(set(hit.tolist())) == len(hit)  # one subword per chosen word
        n_words = len(flags)
        n = min(masking_budget(wid[None, :], np.array([len(wid)]), s.budget, s.count_rule)[0], n_words)
        assert len(hit) == n
        is_ne = (flags & 1) != 0
        n_other, n_ne = int((~is_ne[hit]).sum()), int(is_ne[hit].sum())
        reserve = min(int((~is_ne).sum()), math.floor(share * n + 0.5))
        assert n_other >= reserve  # the reserved share goes to other words where there are any
        assert n_ne == min(int(is_ne.sum()), n - reserve)  # the rest: entity words first


def test_binomial_budget_rule_draws_the_baselines_count():
    """Ablation `budget_rule: binomial`: n ~ Binomial(counted tokens, budget) per example (0 included), the
    mean of the standard collator's per-token draw, instead of a fixed max(1, round(...))."""
    rng = np.random.default_rng(0)
    rows = [make_row([[(1, 1)] * 20], rng) for _ in range(400)]
    s = MaskingSettings.from_dict({"budget_rule": "binomial", "mask_prob": 1.0, "random_prob": 0.0})
    counts = (make_collator(StubTokenizer(), s, 3)(rows)["labels"].numpy() != -100).sum(axis=1)
    assert counts.mean() == pytest.approx(3.0, abs=0.25) and counts.var() == pytest.approx(
        20 * 0.15 * 0.85, rel=0.3
    )
    assert (counts == 0).any() and len(set(counts.tolist())) > 3
    fixed = make_collator(
        StubTokenizer(), MaskingSettings.from_dict({"mask_prob": 1.0, "random_prob": 0.0}), 3
    )
    assert set((fixed(rows)["labels"].numpy() != -100).sum(axis=1).tolist()) == {3}
    with pytest.raises(ValueError, match="budget_rule 'poisson' not in"):
        MaskingSettings.from_dict({"budget_rule": "poisson"})
    with pytest.raises(ValueError, match="other_share is for one-subword mode"):
        MaskingSettings.from_dict({"other_share": 0.2, "whole_word": True})
    with pytest.raises(ValueError, match="not used by strategy 'standard'"):
        MaskingSettings.from_dict({"strategy": "standard", "other_share": 0.2})


def test_same_seed_same_masks_and_different_seed_differs():
    rng = np.random.default_rng(0)
    rows = [make_row([[(2, 1), (1, 2), (3, 0)] * 5, [(1, 4), (2, 0)] * 6], rng) for _ in range(8)]
    s = MaskingSettings()
    a = [make_collator(StubTokenizer(), s, 7)(rows) for _ in range(2)]
    b = make_collator(StubTokenizer(), s, 8)(rows)
    assert all(torch.equal(a[0][k], a[1][k]) for k in a[0])
    assert not torch.equal(a[0]["labels"], b["labels"])


def test_replacement_split_within_tolerance():
    rng = np.random.default_rng(1)
    rows = [make_row([[(int(rng.integers(1, 4)), 0) for _ in range(60)]], rng) for _ in range(32)]
    collator = make_collator(StubTokenizer(), MaskingSettings(), seed=3)
    mask = rand = keep = 0
    for _ in range(30):
        out = collator(rows)
        ids, labels = out["input_ids"].numpy(), out["labels"].numpy()
        m = labels != -100
        mask += int((ids[m] == MASK).sum())
        keep += int((ids[m] == labels[m]).sum())
        rand += int(((ids[m] != MASK) & (ids[m] != labels[m])).sum())
        specials = np.isin(ids[m], StubTokenizer.all_special_ids)
        assert not (specials & (ids[m] != MASK)).any(), "random replacement drew a special token"
    total = mask + rand + keep
    # about 3e4 draws: 4 standard deviations of a share around 0.8 / 0.1 is < 0.01
    assert abs(mask / total - 0.8) < 0.015 and abs(keep / total - 0.1) < 0.015
    assert abs(rand / total - 0.1) < 0.015 + 1 / VOCAB  # a random draw can equal the original token


def test_settings_reject_unknown_and_bad_values_and_select_variants():
    with pytest.raises(ValueError, match="unknown key"):
        MaskingSettings.from_dict({"budjet": 0.2})
    with pytest.raises(ValueError, match="entity_types"):
        MaskingSettings.from_dict({"entity_types": ["ner"]})
    with pytest.raises(ValueError, match="exceeds 1"):
        MaskingSettings.from_dict({"mask_prob": 0.9, "random_prob": 0.2})
    assert MaskingSettings.for_variant("lem_ne").entity_types == ("ne",)
    assert MaskingSettings.for_variant("lem_noun_verb").entity_mask == 6
    assert MaskingSettings.for_variant("lem").entity_mask == 7
    assert MaskingSettings.for_variant("mlm_tlm").strategy == "standard"
    assert MaskingSettings.from_dict({}).count_rule == "non_special"
    assert MaskingSettings.from_dict({}).rounding == "half_up"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from lem.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("tok")
    rng = np.random.default_rng(0)
    vocab = "the road bank river Kamal went Colombo city market saw big house walked".split()
    text = "\n".join(" ".join(rng.choice(vocab, 8)) + "." for _ in range(300))
    (root / "en.txt").write_text(text + "\n", encoding="utf-8")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(train_tokenizer([root / "en.txt"], 80, root / "tok", seed=0)))


def test_standard_baseline_is_seeded_and_returns_only_model_inputs(tokenizer):
    rng = np.random.default_rng(0)
    rows = [make_row([[(1, 1)] * 30], rng) for _ in range(16)]
    for r in rows:
        r["input_ids"] = [CLS] + rng.integers(5, len(tokenizer) - 1, len(r["input_ids"]) - 2).tolist() + [SEP]
    s = MaskingSettings.for_variant("mlm_tlm")
    a, b = (make_collator(tokenizer, s, 5)(rows) for _ in range(2))
    assert set(a) == {"input_ids", "attention_mask", "labels"}
    assert all(torch.equal(a[k], b[k]) for k in a)
    labels = a["labels"].numpy()
    assert (labels[:, 0] == -100).all() and (labels != -100).sum() > 0


def test_fixed_validation_masks_pass_through_and_stats(tokenizer):
    rng = np.random.default_rng(2)
    rows = [make_row([[(2, 1), (1, 0)] * 6], rng, "en") for _ in range(20)]
    rows += [make_row([[(1, 2)] * 5, [(2, 4)] * 5], rng, "si-en") for _ in range(20)]
    for r in rows:  # ids from the real vocabulary
        r["input_ids"] = [i if i in (CLS, SEP) else 5 + i % 40 for i in r["input_ids"]]
    collator = make_collator(tokenizer, MaskingSettings.for_variant("lem_ne"), seed=1)
    fixed = fixed_masked_examples(collator, rows, batch_size=8, seed=0)
    assert fixed == fixed_masked_examples(collator, rows, batch_size=8, seed=0)
    again = collator(fixed[:4])
    assert torch.equal(again["labels"][0, : len(fixed[0]["labels"])], torch.tensor(fixed[0]["labels"]))
    stats = masking_stats(collator, rows, tokenizer, n_examples=40, batch_size=8)
    assert stats["budget_rule"] == {
        "budget": 0.15, "count_rule": "non_special", "rounding": "half_up",
        "rule": "max(1, round_half_up(non-special tokens * 0.15))",
    }  # fmt: skip
    authors = MaskingSettings.from_dict({"count_rule": "all_tokens", "rounding": "half_even"})
    rule = masking_stats(make_collator(tokenizer, authors, 1), rows, tokenizer, 40, 8)["budget_rule"]
    assert rule["rule"] == "max(1, round_half_even(all tokens * 0.15))"
    en, pair = stats["per_lang"]["en"], stats["per_lang"]["si-en"]
    assert en["budget_hit_rate"] == 1.0 and en["max_subwords_masked_per_word"] == 1
    assert en["entity_share"]["ne"]["masked"] == 1.0  # NE words suffice in every en row
    assert pair["entity_share"]["ne"]["text"] == 0.0 and pair["n_examples"] == 20


def test_entity_first_broken_counts_examples_that_skip_an_unmasked_entity_word(tokenizer):
    # rows of 12 words, 3 of them NE: lem_ne masks its budget of 2 among the NE words, never elsewhere
    rng = np.random.default_rng(4)
    rows = [make_row([[(1, 1), (1, 0), (1, 0), (1, 0)] * 3], rng, "en") for _ in range(24)]
    for r in rows:
        r["input_ids"] = [i if i in (CLS, SEP) else 5 + i % 40 for i in r["input_ids"]]
    lem = make_collator(tokenizer, MaskingSettings.for_variant("lem_ne"), seed=1)
    assert masking_stats(lem, rows, tokenizer, 24, 8)["per_lang"]["en"]["entity_first_broken"] == 0

    class Uniform:  # lem_ne's settings, standard masking's choices: the statistic must see the difference
        settings = lem.settings

        def with_seed(self, seed):
            return make_collator(tokenizer, MaskingSettings.for_variant("mlm_tlm"), seed=seed)

    broken = masking_stats(Uniform(), rows, tokenizer, 24, 8)["per_lang"]["en"]["entity_first_broken"]
    assert broken > 0.3
