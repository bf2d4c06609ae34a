"""Issue 39: choice items a test-wise student cannot game.

- each attacker the adversary gained finds the leak it is for (a synthetic family that has it), and
  the attackers stay near chance on a fair family: the checks can fail;
- every MCQ/MSQ level the bank offers has its figure at 500 draws in
  ``question_bank/data/choice_attack.json`` (``bench/choice_attack.py``), within chance + 5 points,
  measured with today's adversary on today's draws (a sample of levels is drawn again, and one is
  attacked again on fewer draws, with the noise allowance of ``--quality``);
- a level the record beats is withdrawn: drawn by no quiz, exam or sheet (``question_bank.choice_record``);
- ``--type mcq`` draws from at least :data:`MCQ_FAMILIES_FLOOR` families, the goal of 40.
"""

from __future__ import annotations

import json
import pathlib
import random
import sys

import numpy as np
import pytest

from question_bank import adversary as adv
from question_bank import choice_record
from question_bank.family import Draw, Family, all_families
from question_bank.grading import choice_key
from question_bank.render import Doc

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "question_bank" / "data" / "choice_attack.json"
sys.path.insert(0, str(ROOT / "bench"))
import choice_attack  # noqa: E402


def _doc(text: str) -> Doc:
    d = Doc()
    d.p(text)
    return d


def _draws(build, n: int):
    fam = Family(id="synthetic.t39", topic="test", title="t", types=("mcq",), build=build)
    return [fam.build(Draw(fam, s, "easy")) for s in range(n)]


def _shuffled(rng: random.Random, vals: list[float], fmt=lambda v: f"{v:g}") -> tuple[list[str], int]:
    order = list(range(len(vals)))
    rng.shuffle(order)
    return [fmt(vals[i]) for i in order], order.index(0)


def _multiple_build(d: Draw):
    """The key has an exact 1.5x partner; the other two are the key plus or minus a count (issue 39's
    counting.mlp_params_mcq)."""
    rng = d.rng
    k = rng.randrange(1000, 9000) * 4
    c = rng.randrange(50, 900)
    opts, at = _shuffled(rng, [k, k * 1.5, k + c, k - c])
    return d.problem(type="mcq", statement=_doc("How many?"), key=choice_key(at), solution=_doc("."), options=opts)


def _fair_build(d: Draw):
    rng = d.rng
    vals = [round(10 ** rng.uniform(3, 4)) for _ in range(4)]
    opts, at = _shuffled(rng, vals)
    return d.problem(type="mcq", statement=_doc(f"How many? {rng.randrange(10, 99)}"), key=choice_key(at),
                     solution=_doc("."), options=opts)


def test_the_structural_learner_reads_an_exact_multiple_and_stays_at_chance_on_a_fair_family():
    got = adv.learned_attack(_draws(_multiple_build, 80))
    assert got is not None and got.rate > 0.8, got
    fair = adv.learned_attack(_draws(_fair_build, 80))
    assert fair is not None
    assert all(r <= 0.25 + adv.LEARNED_MARGIN + adv.allowance(0.25, n) for r, _, n in adv.gated_figures(fair)), fair


def test_key_pool_memory_out_of_range_and_nearest_farthest_rules_each_find_their_leak():
    def pool(d: Draw):  # twelve keys, distractors from a wide range (attention.one_weight_mcq easy)
        rng = d.rng
        opts, at = _shuffled(rng, [rng.choice(range(12)) / 20 + 0.013, *rng.sample(range(100, 999), 3)], lambda v: f"{v:.3f}")
        return d.problem(type="mcq", statement=_doc("Which?"), key=choice_key(at), solution=_doc("."), options=opts)

    ps = _draws(pool, 200)
    score = adv._pool_scores(ps[::2])
    assert np.mean([adv._choice_credit("mcq", score(p), p.key.correct, 1) for p in ps[1::2]]) > 0.9

    def weight(d: Draw):  # an attention weight, two options above 1
        rng = d.rng
        opts, at = _shuffled(rng, [rng.uniform(0.2, 0.9), rng.uniform(0.05, 0.15), rng.uniform(1.2, 3), rng.uniform(3.5, 9)],
                             lambda v: f"{v:.3f}")
        return d.problem(type="mcq", statement=_doc("What is the attention weight of key 2?"), key=choice_key(at),
                         solution=_doc("."), options=opts)

    ws = _draws(weight, 60)
    rng_rate = np.mean([adv._choice_credit("mcq", adv.RULES["out-of-range options struck out"](
        adv.structure_features(p.statement_text, p.options)), p.key.correct, 1) for p in ws])
    assert rng_rate >= 0.45, rng_rate

    def near_far(d: Draw):  # the nearest token if asked true, the farthest if asked false (concept.mask_pairs_one)
        rng = d.rng
        q = rng.randrange(10, 20)
        asked_false = rng.random() < 0.5
        ds = [1, 2, 3, 6] if asked_false else [1, 4, 5, 6]
        key_d = 6 if asked_false else 1
        rng.shuffle(ds)
        opts = [f"Key token {q - x} is seen by query token {q}." for x in ds]  # the rule reads an option's first number
        st = f"Query token {q}. Which statement is {'false' if asked_false else 'true'}?"
        return d.problem(type="mcq", statement=_doc(st), key=choice_key(ds.index(key_d)), solution=_doc("."), options=opts)

    nf = _draws(near_far, 60)
    rule = adv.RULES["nearest if asked true, farthest if asked false"]
    assert np.mean([adv._choice_credit("mcq", rule(adv.structure_features(p.statement_text, p.options)), p.key.correct, 1)
                    for p in nf]) > 0.9


# --------------------------------------------------------------------------------------------
# the bank's offered choice levels


def _offered() -> list[tuple[str, str]]:
    return [(fid, lv) for fid, f in all_families().items() if set(f.types) & {"mcq", "msq"} for lv in f.difficulties]


def _withdrawn() -> list[tuple[str, str]]:
    return [(fid, lv) for fid, f in all_families().items() for lv in f.withdrawn]


def _record(fid: str, lv: str) -> dict:
    return json.loads(DATA.read_text())["levels"].get(f"{fid}/{lv}", {})


def test_every_offered_choice_level_is_within_chance_plus_five_points_at_500_draws():
    """Every MCQ/MSQ level the bank offers has its figure at 400-500 draws, within chance + 5 points
    (a subset under 400 draws, such as the draws whose key was never a key in training, also three
    standard errors); every level the record beats is withdrawn, and no other."""
    bad = []
    for fid, lv in _offered():
        rec = _record(fid, lv)
        if "best" not in rec:
            if "choice items" in rec.get("error", ""):  # a level drawn as NAT (a mixed family): not a choice level
                continue
            bad.append(f"{fid}/{lv}: not measured (python bench/choice_attack.py {fid})")
        elif rec["draws"] < 400 or not choice_attack.passes(rec):
            r, what, n = choice_attack.gated(rec)
            bad.append(f"{fid}/{lv}: offered, but {what} {r:.0%} of {n} at {rec['draws']} draws (chance {rec['chance']:.0%})")
    for fid, lv in _withdrawn():
        rec = _record(fid, lv)
        if "best" not in rec or choice_attack.passes(rec):
            bad.append(f"{fid}/{lv}: withdrawn, but its record passes or is missing")
    # the verdict written beside the figures (read without NumPy) is today's rule on them
    for name, rec in json.loads(DATA.read_text())["levels"].items():
        written = {k: rec[k] for k in choice_record.VERDICT_KEYS if k in rec}
        if "best" in rec and written != choice_attack.verdict(rec):
            bad.append(f"{name}: its written verdict is not today's rule (python bench/choice_attack.py --verdicts)")
    assert not bad, "\n".join(bad)


def test_a_withdrawn_level_is_drawn_by_no_quiz_exam_or_sheet(tmp_path):
    """The withdrawn levels are in no listing, no quiz plan, no sheet and no paper; `bank show` still
    shows one, with the figure that withdrew it."""
    from click.testing import CliRunner

    from drills.cli import cli
    from drills.exam.blueprint import assemble, load
    from drills.sheets.select import select_problems
    from question_bank.bank import entries

    out = set(_withdrawn())
    assert out, "nothing is withdrawn: this test has nothing to check"
    fams = all_families()
    listed = {(e.id, lv) for e in entries(kind="family") for lv in e.difficulties}
    assert not listed & out
    assert not [e.id for e in entries(kind="family") if not fams[e.id].difficulties]
    from question_bank.family_index_data import FAMILY_INDEX

    assert not {(fid, lv) for fid, row in FAMILY_INDEX.items() for lv in row[3]} & out  # the quiz's plan reads these
    drawn = select_problems(300, 5, types=("mcq", "msq"))
    drawn = getattr(drawn, "problems", drawn)
    assert drawn and not {(p.family, p.difficulty) for p in drawn if p.family} & out
    paper = assemble(load("gate"), 3)
    assert not {(p.family, p.difficulty) for p in paper.problems if p.family} & out
    fid, lv = sorted(out)[0]
    r = CliRunner().invoke(cli, ["bank", "show", fid, "--seed", "1", "--difficulty", lv])
    assert r.exit_code == 0 and "Not offered: this level is withdrawn as a choice item: a test-wise student scores" in r.output
    # asked for by id, the quiz says why in one line (and where the NAT form is)
    view = next((f, v) for f, v in sorted(out) if f.endswith("_mcq"))
    r = CliRunner().invoke(cli, ["quiz", "--topic", view[0], "--difficulty", view[1], "-n", "1", "--plain",
                                 "--data-dir", str(tmp_path)], input="quit\n")
    assert r.exit_code != 0 and f"{view[0]} is not offered at {view[1]}: a test-wise student scores" in r.output
    assert f"its NAT form is `--topic {view[0][:-4]}`" in r.output and "Traceback" not in r.output


def test_a_sampled_withdrawn_level_is_gamed_on_fresh_draws():
    """The record's verdict holds on draws it never used: one withdrawn level per commit, attacked on
    fresh seeds, is beaten beyond chance (so the withdrawal is not the record's noise)."""
    from tests.question_bank.quality.test_validate_many import window_start

    fams = all_families()
    # the clearly beaten (20 points or more at 500 draws), attacked on 400 fresh draws as the record was:
    # a learned attacker trained on 100 draws falls to +5 on a level it beats by +16 on 500 (seen in CI)
    clear = sorted((f, lv) for f, lv in _withdrawn() if choice_attack.gated(_record(f, lv))[0] - _record(f, lv)["chance"] >= 0.20)
    fid, lv = random.Random(window_start()[0] + 1).choice(clear)
    ps = [p for p in (fams[fid].generate(s, lv) for s in range(20_000, 20_400)) if p.type in ("mcq", "msq")]
    L = adv.learned_attack(ps)
    chance = adv.choice_chance(ps)
    assert L is not None
    worst = max(r - chance for r, _, _ in adv.gated_figures(L))
    assert worst > adv.LEARNED_MARGIN, f"{fid}/{lv}: on fresh draws the best attacker is {worst:+.0%} over chance"


def test_the_recorded_figures_are_of_todays_adversary_and_todays_draws():
    """Every offered level's first 20 draws are those its figure was measured on (about 7 s): a change to
    a family that its record does not follow fails here, whichever family it is."""
    data = json.loads(DATA.read_text())
    assert data["adversary"] == choice_attack.adversary_digest(), "the adversary changed: run bench/choice_attack.py again"
    fams = all_families()
    for fid, lv in _offered():
        rec = _record(fid, lv)
        if "best" not in rec:
            continue
        assert rec["adversary"] == data["adversary"], (fid, lv)
        ps = [fams[fid].generate(s, lv) for s in range(20)]
        assert choice_attack.draws_digest([p for p in ps if p.type in ("mcq", "msq")]) == rec["first20"], \
            f"{fid}/{lv} draws differently from its record: python bench/choice_attack.py {fid}"


def test_a_sampled_offered_level_holds_its_figure_on_fresh_draws():
    """`--quality`'s gate on one offered level, drawn at seeds the record never used."""
    fams = all_families()
    from tests.question_bank.quality.test_validate_many import window_start

    # one level per commit (the validation window's seed picks it), so a red run can be run again as it was
    fid, lv = random.Random(window_start()[0]).choice([(f, lv) for f, lv in _offered() if "best" in _record(f, lv) and choice_attack.passes(_record(f, lv))])
    # 400 draws, as the record: on 120 a level whose right statements repeat (zoo.which_model) is gated
    # on another figure than its record's, since "repeat" means at most a quarter of the draws distinct
    ps = [p for p in (fams[fid].generate(s, lv) for s in range(10_000, 10_400)) if p.type in ("mcq", "msq")]
    L = adv.learned_attack(ps)
    chance = adv.choice_chance(ps)
    assert L is not None
    for rate, what, n in adv.gated_figures(L):
        assert rate <= chance + adv.LEARNED_MARGIN + adv.allowance(chance, n), f"{fid}/{lv}: {what} {rate:.0%} of {n}"


#: The families `--type mcq` draws from, at least (a ratchet: raise it as withdrawn views pass again; the
#: goal is 40). Withdrawing every level a test-wise student games left 8; the rebuilt draws brought back 15,
#: to 44; the outside attacker's rules (bench/outside_attack.py) took 5 away: the views whose key alone is a
#: product of the printed numbers (attention memory, a KV cache at easy, activation memory) and
#: attention.why_sqrt_dk, whose key is the option least like the others; its four rules on ratios and digits
#: of the printed numbers and its options-only learner took 5 more to 34: every offered level of Ulysses, the
#: K/V projections, paged KV blocks, nccl-tests' bus bandwidth and the pipeline bubble (bench/outside_attack.py).
MCQ_FAMILIES_FLOOR = 34


def test_every_offered_level_holds_against_the_outside_attackers_rules():
    """Every offered MCQ/MSQ level carries the outside attacker's figures (bench/outside_attack.py, which shares no
    code with the in-house adversary), measured on today's draws: no fixed rule it chose on its training seeds
    beats chance + 5 points there and on 500 fresh draws, nor, where the options are numbers, does its learner
    that reads the options alone; a level either beats is withdrawn."""
    bad = []
    for fid, lv in _offered():
        rec = _record(fid, lv)
        o, b = rec.get("outside_rule"), rec.get("outside_options")
        if "best" not in rec:
            continue
        if not o or o.get("first20") != rec.get("first20") or not b or b.get("first20") != rec.get("first20"):
            bad.append(f"{fid}/{lv}: no outside figures for today's draws (python bench/choice_attack.py {fid} "
                       f"measures the level and its outside figures again)")
        elif choice_record.outside_beaten(rec):
            bad.append(f"{fid}/{lv}: offered, but {choice_record.verdict(rec)['gated'][1]} scores "
                       f"{choice_record.verdict(rec)['gated'][0]:.0%}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("validation, heldout, beaten", [
    (0.40, 0.38, True),  # the rule found on the training seeds holds on fresh draws
    (0.40, 0.27, False),  # it does not hold there
    (0.26, 0.40, False),  # chosen on held-out draws alone, which the gate never does
])
def test_the_outside_rule_gate(validation, heldout, beaten):
    rec = {"first20": "d", "outside_rule": {"rule": "r", "validation": validation, "heldout": heldout, "chance": 0.25,
                                            "draws": 500, "first20": "d"}}
    assert choice_record.outside_beaten(rec) is beaten
    rec["outside_rule"]["first20"] = "other draws"
    assert choice_record.outside_beaten(rec) is False  # a figure of other draws than the record's says nothing


@pytest.mark.parametrize("numeric, heldout, beaten", [
    (True, 0.35, True),  # numbers told apart by their look alone
    (True, 0.28, False),  # within chance + 5 points
    (False, 0.90, False),  # sentences: a pool of true statements the student knows, the item's subject
])
def test_the_options_only_gate(numeric, heldout, beaten):
    rec = {"first20": "d", "outside_options": {"attacker": "a", "numeric_options": numeric, "validation": 0.2,
                                               "heldout": heldout, "chance": 0.25, "draws": 500, "first20": "d"}}
    assert choice_record.outside_beaten(rec) is beaten  # one learner, not chosen among many: its fresh draws decide
    rec["outside_options"]["first20"] = "other draws"
    assert choice_record.outside_beaten(rec) is False


def test_type_mcq_draws_from_at_least_the_floor_of_families():
    from question_bank.bank import entries

    assert len([e for e in entries(type="mcq") if e.kind == "family"]) >= MCQ_FAMILIES_FLOOR


def test_attention_shapes_levels_are_disjoint():
    """Issue 39: `attention.shapes` easy seed 434 and medium seed 401 were the same problem (both asked the
    output's shape). Easy now asks QKᵀ's or the weights' shape, medium the output's: no problem of one
    level is a problem of the other, in those two draws and in 400 of each."""
    from question_bank.quality import _asked

    f = all_families()["attention.shapes"]
    assert _asked(f.generate(434, "easy")) != _asked(f.generate(401, "medium"))
    easy = {_asked(f.generate(s, "easy")) for s in range(400)}
    medium = {_asked(f.generate(s, "medium")) for s in range(400)}
    assert easy.isdisjoint(medium)
    assert all("the output" not in f.generate(s, "easy").statement_text for s in range(100))
    assert all("the output" in f.generate(s, "medium").statement_text for s in range(100))


def test_a_repeated_right_statement_excuses_memory_but_not_an_answer_blind_rule():
    """Sentence options whose right statements repeat are gated on the learners over unseen right
    statements (remembering a fact is knowing it), but a rule that learns nothing (the option whose
    symbol the statement names) is gated on every held-out draw: complexity.attention_variants hard
    scored 24 % by it against 8 % chance and was offered until this gate."""
    attackers = {"logistic regression": 0.30, "key-pool memory": 0.60, "the symbols the statement names": 0.24}
    L = adv.Learned(0.60, "key-pool memory", 500, 0.10, 245, attackers, None, None, False)
    figures = adv.gated_figures(L)
    assert (0.24, "the best answer-blind rule (the symbols the statement names) on held-out draws", 500) in figures
    assert all(r != 0.60 for r, _, _ in figures)  # memory of a repeated right statement is not gated
    rec = {"best": 0.60, "attacker": "key-pool memory", "draws": 500, "unseen_rate": 0.10, "unseen_n": 245,
           "attackers": attackers, "unseen_key_rate": None, "unseen_key_n": None, "numeric": False, "chance": 0.0837}
    fair = {**rec, "attackers": {**attackers, "the symbols the statement names": 0.10}}
    assert not choice_attack.passes({**rec, "holdout": fair})
    assert choice_attack.passes({**fair, "holdout": fair})


def test_a_level_passes_only_when_its_fresh_block_passes_too():
    """A level tuned until it passes on seeds 0-499 can sit on the line there: it is offered only
    when a fresh block (seeds from HOLDOUT_FROM, measured by ``--holdout``) passes as well; a level
    with no fresh block is not offered, and the reason says so."""
    from question_bank import choice_record as cr

    block = {"best": 0.27, "attacker": "boosted trees", "draws": 500, "unseen_rate": None, "unseen_n": 0,
             "attackers": {"boosted trees": 0.27}, "unseen_key_rate": None, "unseen_key_n": None, "numeric": True,
             "chance": 0.25}
    assert cr._passes_block(block) and not cr.passes(block)
    assert "not measured yet" in cr.reason({**block, **cr.verdict(block)})
    fresh_bad = {**block, "best": 0.33, "attackers": {"boosted trees": 0.33}}
    rec = {**block, "holdout": fresh_bad}
    assert not cr.passes(rec)
    v = cr.verdict(rec)
    assert v["passes"] is False and v["gated"][0] == 0.33 and "fresh draws" in v["gated"][1]
    assert "33%" in cr.reason({**rec, **v})
    assert cr.passes({**block, "holdout": block})
    # and the record: every offered level has a fresh block that passes, of today's adversary
    for fid, lv in _offered():
        r = _record(fid, lv)
        if "best" in r:
            assert r.get("holdout", {}).get("adversary") == r["adversary"] and cr._passes_block(r["holdout"]), (fid, lv)


def test_the_reason_a_level_is_withdrawn_is_read_without_numpy():
    """The quiz's one-line refusal for a withdrawn level reads the written verdict: it imports neither
    the adversary nor NumPy (the quiz starts in well under a second)."""
    import subprocess

    code = ("import sys, json\n"
            "from question_bank import choice_record as cr\n"
            "levels = json.loads(cr.RECORD.read_text())['levels']\n"
            "lines = [cr.reason(r) for r in levels.values() if 'best' in r and not r['passes']]\n"
            "assert lines and all(l.strip() for l in lines), lines[:3]\n"
            "print(len(lines), 'numpy' in sys.modules, 'question_bank.adversary' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=pathlib.Path(__file__).resolve().parents[3]).stdout.split()
    assert int(out[0]) > 0 and out[1:] == ["False", "False"], out


def test_a_numeric_level_whose_keys_repeat_is_not_offered():
    """A numeric level draws its keys from a wide range: a block of 500 draws with fewer than
    ``MIN_DISTINCT_KEYS`` distinct keys fails, whatever the attackers score (a pool a student can learn by
    heart), on either block, and the one-line reason says so; a text level's fixed statements do not count."""
    from question_bank import choice_record as cr

    block = {"best": 0.26, "attacker": "boosted trees", "draws": 500, "unseen_rate": None, "unseen_n": 0,
             "attackers": {"boosted trees": 0.26}, "unseen_key_rate": None, "unseen_key_n": None, "numeric": True,
             "chance": 0.25, "distinct_keys": 400}
    assert cr.passes({**block, "holdout": block})
    few = {**block, "distinct_keys": cr.MIN_DISTINCT_KEYS - 1}
    for rec in ({**few, "holdout": block}, {**block, "holdout": few}):
        v = cr.verdict(rec)
        assert not cr.passes(rec) and v["passes"] is False and v["few_keys"] == [cr.MIN_DISTINCT_KEYS - 1, 500]
        assert f"{cr.MIN_DISTINCT_KEYS - 1} distinct keys in 500 draws" in cr.reason({**rec, **v})
    text = {**few, "numeric": False}
    assert cr.passes({**text, "holdout": text})
    # and the record: every offered numeric level drew at least that many distinct keys on both blocks
    for fid, lv in _offered():
        r = _record(fid, lv)
        for b in (r, r.get("holdout") or {}):
            if b.get("numeric"):
                assert b["distinct_keys"] >= cr.MIN_DISTINCT_KEYS, (fid, lv, b["distinct_keys"])
