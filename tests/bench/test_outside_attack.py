"""The outside attacker (bench/outside_attack.py) finds a planted give-away and does not see one in
a fair level: run on synthetic family-like draws, so it cannot rot silently."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("sklearn")

from bench import outside_attack as oa  # noqa: E402

WORDS = ["bandwidth", "latency", "tokens", "heads", "layers", "bytes", "cache", "window"]


def numeric_draws(seeds: range, key_rule: str) -> list[dict]:
    """MCQs of four values: ``key_rule`` "largest" keys the largest, "uniform" a letter drawn at random
    (the options then carry nothing about the key)."""
    out = []
    for s in seeds:
        r = random.Random(s)
        a, b = r.randint(2, 900), r.randint(2, 900)
        vals = sorted({round(a * b * r.uniform(0.3, 3.0), 2) for _ in range(4)})
        while len(vals) < 4:
            vals = sorted(set(vals) | {round(a * b * r.uniform(0.3, 3.0), 2)})
        key = len(vals) - 1 if key_rule == "largest" else r.randrange(4)
        out.append({"id": f"synthetic/{key_rule}/{s}", "type": "mcq",
                    "statement": f"A layer has a = {a} {r.choice(WORDS)} and b = {b}. How many bytes does it move?",
                    "options": [f"{v:.2f} GB" for v in vals], "key": [key]})
    return out


def worded_draws(seeds: range) -> list[dict]:
    """MSQs of four statements whose true ones always say "each" and false ones "every": only a learner
    that reads the wording finds it (no value, length or position rule does)."""
    out = []
    for s in seeds:
        r = random.Random(s)
        truth = [r.random() < 0.5 for _ in range(4)]
        if not any(truth):
            truth[r.randrange(4)] = True
        opts = [f"The {r.choice(WORDS)} of {'each' if t else 'every'} {r.choice(WORDS)} grows with {r.randint(2, 99)}."
                for t in truth]
        out.append({"id": f"synthetic/worded/{s}", "type": "msq", "statement": "Which of these statements are true?",
                    "options": opts, "key": [i for i, t in enumerate(truth) if t]})
    return out


def test_planted_largest_key_is_found():
    res = oa.attack_level(numeric_draws(range(120), "largest"), numeric_draws(range(10_000, 10_120), "largest"))
    assert res["beaten"], res
    assert res["rate"] > 0.9, res


def test_uniform_random_key_is_not_beaten():
    res = oa.attack_level(numeric_draws(range(120), "uniform"), numeric_draws(range(10_000, 10_120), "uniform"))
    assert res["chance"] == pytest.approx(0.25)
    assert not res["beaten"], res


def test_learners_read_a_planted_wording():
    learners = ["gradient boosting (features)", "text n-grams (logistic)"]
    res = oa.attack_level(worded_draws(range(120)), worded_draws(range(10_000, 10_120)), only=learners)
    assert res["chance"] == pytest.approx(1 / 15, abs=1e-4)
    assert res["attacker"] in learners and res["beaten"], res


def test_numbers_read_as_printed():
    """Values with units and powers read the way the statement prints them."""
    assert oa.option_value("1.5 GiB") == pytest.approx(1.5 * 2**30)
    assert oa.option_value("21.00 ms") == pytest.approx(0.021)
    assert oa.option_value("12 × 4") != oa.option_value("12 × 4")  # not one number: NaN
    assert oa.numbers("1 GiB = 2³⁰ bytes, n = 1,024") == pytest.approx([2.0**30, 1.0, 2.0, 1024.0])


def test_the_fixed_rules_alone_reproduce_the_recorded_rule_figure():
    """``outside_figures`` (what ``bench/choice_attack.py`` records when it measures a level again) runs the fixed rules
    and the options-only learner without the other learners and gives the figures the full attacker wrote for the
    same draws: one offered level, its recorded ``outside_rule`` and ``outside_options`` recomputed (the record is the
    bank's gate, so a drift here is a wrong gate)."""
    import json

    from question_bank.choice_record import RECORD

    levels = json.loads(RECORD.read_text())["levels"]
    name = "hardware.pf_days_mcq/easy"
    rec = levels[name]
    fid, lv = name.rsplit("/", 1)
    rule, options = oa.outside_figures(fid, lv)
    if rule["first20"] != rec["outside_rule"]["first20"]:
        pytest.skip(f"{name} draws otherwise than when recorded (the every-level test reports it)")
    assert rule == rec["outside_rule"]
    assert options == rec["outside_options"] and options["numeric_options"]


def test_the_fixed_rules_run_without_scikit_learn():
    """``bench/choice_attack.py`` records the rule figure on any machine that can measure a level: the rules import
    no scikit-learn (here made unimportable)."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['sklearn'] = None; sys.path.insert(0, 'bench'); import outside_attack as oa; "
            "r = oa.attack_level(oa.draw('hardware.pf_days_mcq', 'easy', range(30)), "
            "oa.draw('hardware.pf_days_mcq', 'easy', range(90000, 90030)), only=[n for n, _ in oa.rules()]); "
            "print(sorted(r['attackers']) == sorted(n for n, _ in oa.rules()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=oa.ROOT, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def _bytes(v: float) -> str:
    """Bytes to three significant figures in the unit that keeps the number below 1,000 ("12.3 MB")."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.3g} bytes"


def statement_keyed_draws(seeds: range) -> list[dict]:
    """MCQs of four values a factor 2 apart whose key is the option equal to a · b, the two printed numbers:
    only a student who reads the statement (and multiplies) finds it; the options alone are the same geometric
    ladder in every draw, its lowest rung drawn log-uniformly over nine decades and the key at a random rung (a
    key drawn as a product of two uniform numbers would have a typical size, which the options alone tell)."""
    out = []
    for s in seeds:
        r = random.Random(s)
        rung, low = r.randrange(4), 10 ** r.uniform(3, 12)
        a = r.randint(20, 900)
        b = low * 2.0**rung / a
        vals = [a * b * 2.0 ** (i - rung) for i in range(4)]
        out.append({"id": f"synthetic/statement/{s}", "type": "mcq",
                    "statement": f"A layer has a = {a} {r.choice(WORDS)} and b = {b:.2f}. How many bytes does it move?",
                    "options": [_bytes(v) for v in vals], "key": [rung]})
    return out


def test_the_options_only_learner_reads_the_options_and_nothing_else():
    """It finds a key planted in the options' own look (the largest), and cannot find one that only the statement
    tells (the product of its printed numbers), which the rule that reads the statement finds."""
    only = [oa.OPTIONS_ONLY]
    planted = oa.attack_level(numeric_draws(range(150), "largest"), numeric_draws(range(10_000, 10_150), "largest"),
                              only=only)
    assert planted["attackers"][oa.OPTIONS_ONLY]["heldout"] > 0.9 and planted["numeric_options"]
    told = statement_keyed_draws(range(300)), statement_keyed_draws(range(10_000, 10_300))
    blind = oa.attack_level(*told, only=only)
    assert blind["attackers"][oa.OPTIONS_ONLY]["heldout"] < 0.25 + 0.1, blind["attackers"]
    reads = oa.attack_level(*told, only=["nearest a product of two printed numbers"])
    assert reads["attackers"]["nearest a product of two printed numbers"]["heldout"] > 0.9
    assert all(not oa._READS_STATEMENT.search(oa.feature_names()[i].removesuffix("-vs-others"))
               for i in oa.options_only_columns())
