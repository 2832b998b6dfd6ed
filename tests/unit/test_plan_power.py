"""`lem plan power` and `lem plan settings` answer in seconds or refuse in one line (issue 51): the seeds a
comparison needs found by bisection, a level planning cannot resolve refused, a rule's wildcards checked."""

from __future__ import annotations

import pytest

from lem.evidence import power
from lem.plan import power as plan_power
from lem.plan import settings as plan_settings
from lem.run.settings import SETTINGS

PARTS = {"var_seed": 0.0004, "var_item": 0.0001, "var_res": 0.002, "items": 60}


@pytest.mark.parametrize("delta", [0.06, 0.1])
def test_the_bisection_finds_the_seeds_a_scan_finds(delta):
    """lem.evidence.power.seeds_needed is the fewest seeds reaching the power (power grows with seeds)."""

    def scan(parts, delta, alpha, target, items):
        for s in range(2, 201):
            se, df = power.planned(parts, s, items)
            if power.power_at(delta, se, df, alpha) >= target:
                return s
        return None

    want = scan(PARTS, delta, 0.05, 0.8, 60)
    assert want is not None and want <= 6  # a short scan keeps this test fast
    assert power.seeds_needed(PARTS, delta, 0.05, 0.8, 60) == want


def test_an_unreachable_power_costs_one_integral_and_a_reachable_one_a_bisection(monkeypatch):
    calls = []
    monkeypatch.setattr(power, "planned", lambda parts, seeds, items: (1 / seeds, float(seeds)))
    monkeypatch.setattr(power, "power_at", lambda d, se, df, a: calls.append(df) or 0.0)
    assert power.seeds_needed(PARTS, 1e-9, 0.05, 0.8, 60) is None and len(calls) == 1  # was 199 integrals
    calls.clear()
    monkeypatch.setattr(power, "power_at", lambda d, se, df, a: calls.append(df) or float(df >= 137))
    assert power.seeds_needed(PARTS, 0.05, 0.05, 0.8, 60) == 137 and len(calls) <= 9
    calls.clear()
    monkeypatch.setattr(power, "power_at", lambda d, se, df, a: calls.append(df) or 1.0)
    assert power.seeds_needed(PARTS, 0.05, 0.05, 0.8, 60) == 2  # never one seed


@pytest.mark.parametrize("alpha", [1e-300, 1e-7, 0.0])
def test_a_level_planning_cannot_resolve_is_refused(alpha):
    with pytest.raises(
        power.PowerError, match=r"--alpha .*: expected a (level of at least 1e-06|probability)"
    ):
        plan_power.level("--alpha", alpha)
    assert plan_power.level("--alpha", 1e-6) == 1e-6


def test_every_function_an_account_names_says_which_wildcards_it_reads():
    named = {
        code
        for rule in SETTINGS.values()
        for part in rule.parts
        for code in (
            part.finish,
            *(m.code for m in (*part.before, *part.after)),
            *(m.job for m in (*part.before, *part.after)),
        )
        if code is not None
    }
    assert set(plan_settings.CODE_WILDCARDS) == named


@pytest.mark.parametrize(
    "rule, wildcards",
    [
        ("pretrain_mono", {"scope", "seed", "tvariant"}),
        ("report", set()),
        ("embed_reference", {"ref", "variant"}),
        ("annotation_eval", {"annotator", "lang"}),
        ("nmt_run", {"seed"}),
        ("madlad", {"lang"}),
    ],
)
def test_a_rules_wildcards_come_from_its_row(rule, wildcards):
    assert set(plan_settings.rule_wildcards(rule)) == wildcards


def test_every_rule_with_settings_has_its_wildcards_read():
    for rule in SETTINGS:
        plan_settings.rule_wildcards(rule)
