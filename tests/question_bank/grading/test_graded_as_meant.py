"""Issue 21: every answer graded as the student meant it, and every draw's feedback right.

Each repro of the issue runs through the real command (``python -m drills``, the ``qkv`` CLI);
the properties run over every family on a sample of draws: a key typed in every scale form its
value allows is accepted, each 10³ⁿ slip is named, and misconceptions that give the same value
are all named (by the one judge)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction

import pytest

from drills.answers import read_answer
from question_bank.family import all_families
from question_bank.grading import (
    grade,
    grade_parts,
    key_factor,
    round_half_up,
    safe_for_rounding,
    values_coincide,
)
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the repository


def qkv(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    env.pop("QKV_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "drills", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_HOME", str(tmp_path))  # the progress store of the quiz runs
    return tmp_path


def graded(p, text, target=None):
    t = target or p
    a = read_answer(t, text)
    return grade(t, a.value, written=a.written, unit=a.unit)


# ---------------------------------------------------------------------------- the repros, through the CLI


@pytest.fixture(scope="module")
def active_key(tmp_path_factory):
    """The key (billions of parameters) of the problem ``qkv quiz --topic moe.active_params -n 1 --seed 1``
    draws, read from the family by the id the quiz prints (issue 22 changed the family's draws, so the
    typed forms follow the key rather than a pinned 12.88 billion)."""
    import re

    from question_bank.family import get_family

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QKV_HOME", str(tmp_path_factory.mktemp("qkv_home")))
        out = qkv("quiz", "--topic", "moe.active_params", "-n", "1", "--plain", "--seed", "1", stdin="\n\n\n")
    fid, level, seed = re.search(r"(moe\.active_params)/(\w+)/(\d+)", out.stdout).groups()
    p = get_family(fid).generate(int(seed), level)
    assert p.key.unit.startswith("billion") or "billion" in p.statement_text
    return p.key.value


FORMS = {  # how people write a count with a scale, from the key v in billions
    "B": lambda v: f"{v:.2f}B", "billion": lambda v: f"{v:.2f} billion", "e9": lambda v: f"{v:.2f}e9",
    "digits": lambda v: str(round(v * 1e9)), "separators": lambda v: f"{round(v * 1e9):,}",
    "M": lambda v: f"{v * 1000:.0f}M",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_quiz_accepts_a_count_with_a_scale(home, active_key, form):
    """The issue's repro: ``printf '12.88B\\n\\n' | qkv quiz --topic moe.active_params -n 1 --plain --seed 1``
    (then keyed 12.88 billion parameters) was "✗ Not right"; every scale form of the key is right."""
    typed = FORMS[form](active_key)
    out = qkv("quiz", "--topic", "moe.active_params", "-n", "1", "--plain", "--seed", "1", stdin=f"{typed}\n\n")
    assert out.returncode == 0, out.stderr
    assert "✓" in out.stdout and "✗ Not right" not in out.stdout, (typed, out.stdout)


def test_quiz_names_a_slip_of_a_thousand(home, active_key):
    typed = f"{active_key * 1000:.0f}"  # millions typed where billions are asked
    out = qkv("quiz", "--topic", "moe.active_params", "-n", "1", "--plain", "--seed", "1", stdin=f"{typed}\n\n")
    assert "a thousand times the answer" in out.stdout and "scale_slip_up3" in out.stdout, out.stdout


def test_check_attention_accepts_carried_rounding():
    """The issue's repro: weights given at two decimals, the output computed from them (1.66, 1.88) with
    the plain 2 where every value averaged is 2: right, exit 0 (it said "none of the usual ones matches")."""
    out = qkv("check", "attention", "--q", "1 -1; 1 2; 2 2", "--k", "1 0; -1 0; -1 0", "--v", "2 2; 2 2; 2 0",
              "--weights", "0.67 0.16 0.16; 0.67 0.16 0.16; 0.89 0.05 0.05", "--output", "2 1.66; 2 1.66; 2 1.88")
    assert out.returncode == 0, out.stdout
    assert "follows from your rounded previous step" in out.stdout
    # a wrong entry is still wrong
    bad = qkv("check", "attention", "--q", "1 -1; 1 2; 2 2", "--k", "1 0; -1 0; -1 0", "--v", "2 2; 2 2; 2 0",
              "--weights", "0.67 0.16 0.16; 0.67 0.16 0.16; 0.89 0.05 0.05", "--output", "2 1.66; 2 1.66; 2 1.70")
    assert bad.returncode == 1


@pytest.mark.parametrize("preset,answer,wrong_way", [
    ("llama2-7b", "7.0B", "counts the embeddings"),  # above the exact count: nothing that lowers it explains it
    ("bert-base", "110M", "counts the pooler"),
])
def test_check_params_explains_only_the_way_the_answer_differs(preset, answer, wrong_way):
    out = qkv("check", "params", "--preset", preset, "--answer", answer)
    assert wrong_way not in out.stdout, out.stdout
    assert "above" in out.stdout or "within" in out.stdout


def test_check_params_still_explains_a_gap_the_right_way():
    out = qkv("check", "params", "--preset", "llama2-7b", "--answer", "6.5B")  # below: without the embeddings
    assert "without the embeddings" in out.stdout, out.stdout


def test_top_p_hard_seed_188_no_longer_crashes():
    out = qkv("bank", "show", "sampling.top_p", "--seed", "188", "--difficulty", "hard")
    assert out.returncode == 0 and "Answer:" in out.stdout, out.stderr


def test_compute_optimal_offers_the_besiroglu_refit():
    """Besiroglu et al. 2024 (arXiv:2404.10102) report that their refit is consistent with about 20
    tokens per parameter, while Hoffmann et al.'s approach-3 constants give several times more."""
    import json

    refit = json.loads(qkv("solve", "compute-optimal", "-C", "1e24", "--method", "besiroglu", "--json").stdout)
    fitted = json.loads(qkv("solve", "compute-optimal", "-C", "1e24", "--json").stdout)
    tpp = refit["breakdown"]["tokens_per_param"]
    assert 15 < tpp < 25, tpp
    assert fitted["breakdown"]["tokens_per_param"] / tpp > 3
    # independently: minimise L(N, C/6N) with the refit's constants on a grid
    E, A, B, a, b = 1.8172, 482.01, 2085.43, 0.3478, 0.3658
    C = 1e24
    best = min((E + A / n**a + B / (C / 6 / n) ** b, n) for n in (10 ** (9 + i / 2000) for i in range(6000)))[1]
    assert refit["answer"] == pytest.approx(best, rel=2e-3)


# ---------------------------------------------------------------------------- the reader


def _prob(fid, diff, seed):
    return all_families()[fid].generate(seed, diff)


def test_rates_are_units():
    p = _prob("parallel.bus_bandwidth", "easy", 0)
    r = round_half_up(p.key.value, 2)
    assert graded(p, f"{r:.2f} GB/s").correct
    assert graded(p, f"{r / 1000:.5f} TB/s").correct
    assert graded(p, f"{r * 1e9:.0f} B/s").correct
    assert graded(p, f"{r * 8:.2f} Gb/s").status == "wrong_unit"  # bits for bytes
    from drills.answers import parse_number

    assert parse_number("100 tokens/s").dimension == "tokens/s"
    assert parse_number("3 TFLOP/s").value == 3e12


def test_an_option_typed_as_its_text_is_that_option():
    from drills.answers.choices import parse_choice_or_text

    opts = ["2 × 3", "3 × 6", "O(n²·d)", "none"]
    assert parse_choice_or_text("3x6", 4, opts).indices == {1}
    assert parse_choice_or_text("3 * 6", 4, opts).indices == {1}
    assert parse_choice_or_text("o(n^2·d)", 4, opts).indices == {2}
    assert parse_choice_or_text("b", 4, opts).indices == {1}
    from drills.answers import AnswerParseError

    with pytest.raises(AnswerParseError):  # a digit that is one option's number and another's text
        parse_choice_or_text("2", 4, ["8", "4", "2", "16"])


# ---------------------------------------------------------------------------- carried rounding (quiz and exam)


def test_by_hand_output_from_the_students_own_rounded_weights_is_right():
    """grade_parts (the quiz's and the exam's): (c) right at two decimals, (d) computed from it, an entry
    written exactly where the exact and the carried value round differently: right, not "wrong"."""
    import numpy as np

    fam = all_families()["attention.by_hand"]
    checked = 0
    for seed in range(40):
        p = fam.generate(seed, "medium")
        labels = [pt.label for pt in p.parts]
        answers = {pt.label: [list(r) for r in pt.key.value] for pt in p.parts}
        w = np.array([[round_half_up(x, 2) for x in r] for r in p.parts[-2].key.value])
        carried = w @ np.array(p.given["v"], dtype=float)
        exact = np.array(p.parts[-1].key.value)
        mixed = np.where(np.abs(carried - exact) < 1e-9, exact, carried)
        out = [[round_half_up(x, 2) for x in r] for r in mixed]
        answers[labels[-2]] = w.tolist()
        answers[labels[-1]] = out
        v = grade_parts(p, answers)[labels[-1]]
        assert v.correct, (p.id, v.message)
        checked += 1
    assert checked


# ---------------------------------------------------------------------------- properties over every family

SEEDS = (3, 11)


def _draws():
    for fid, fam in sorted(all_families().items()):
        for diff in fam.levels:
            for s in SEEDS:
                yield fid, diff, s


def _targets(p):
    return [p] + [pt for pt in p.parts if pt is not p.parts[-1]]


def _scale_forms(key) -> list[str]:
    """The key typed in every scale form its value allows: plain, with a suffix and a word, in
    e-notation and in full."""
    forms = []
    if isinstance(key, NumericKey) and key.decimals is not None:
        d = key.decimals
        r = Fraction(str(round_half_up(key.value, d)))
        f = key_factor(key)
        forms.append(f"{float(r):.{d}f}")
        if f is not None and f.denominator == 1 and math.log10(f).is_integer():
            e = round(math.log10(f))
            for suffix, word, k in (("K", "thousand", 3), ("M", "million", 6), ("B", "billion", 9), ("T", "trillion", 12)):
                places = d - e + k  # exactly the key's digits, restated in the suffix's unit
                if places < 0 or abs(r * f) < 10**k:  # a form the value allows: at least one of the unit
                    continue
                shown = f"{float(r * f / 10**k):.{places}f}"
                forms += [f"{shown}{suffix}", f"{shown} {word}"]
            if e:
                forms.append(f"{float(r):.{d}f}e{e}")
        if f is not None and f > 1 and (key.value * f) > 1e3:
            forms.append(f"{float(r * f):.0f}" if d <= math.log10(f) else f"{float(r * f)}")
    elif isinstance(key, IntegerKey):
        v = key.value
        forms.append(f"{v}")
        forms.append(f"{v:,}")
        for suffix, k in (("K", 3), ("M", 6), ("B", 9)):
            if abs(v) >= 10**k:
                q = Fraction(v, 10**k)
                places = 0
                while (q * 10**places).denominator != 1:
                    places += 1
                forms.append(f"{float(q):.{places}f}{suffix}")
        if abs(v) >= 1000:
            forms.append(f"{v:.{len(str(abs(v))) - 1}e}")  # 1.073741824e+09
    return forms


def test_a_key_typed_in_every_scale_form_is_accepted_and_every_slip_named():
    missed, unnamed = [], []
    for fid, diff, s in _draws():
        p = all_families()[fid].generate(s, diff)
        for t in _targets(p):
            key = t.key
            if not isinstance(key, NumericKey | IntegerKey) or key.value == 0:
                continue
            for form in _scale_forms(key):
                v = graded(p, form, t)
                if not v.correct:
                    missed.append((p.id, form, key.unit, v.message))
            base = round_half_up(key.value, key.decimals) if isinstance(key, NumericKey) and key.decimals is not None \
                else key.value
            f = key_factor(key)
            for e in (3, -3, 6, -6):
                if f is not None and f == Fraction(10) ** e:
                    continue  # the full count, which is right
                v = grade(t, base * 10.0**e)
                if v.correct or v.status != "misconception":
                    unnamed.append((p.id, e, v.status, v.message))
    assert not missed, missed[:10]
    assert not unnamed, unnamed[:10]


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _by_hand(form: str) -> list[str]:
    """An e-notation form (``4.25e9``, ``1.073741824e+09``) as people write it by hand, and any form with "about"
    before it: each must be graded as the form itself is."""
    out = [f"~{form}", f"≈ {form}"]
    mantissa, e, exp = form.partition("e")
    if e and mantissa.replace(".", "").replace(",", "").lstrip("-").isdigit():
        k = int(exp)
        out += [f"{mantissa} × 10^{k}", f"{mantissa}x10^{k}", f"{mantissa}*10**{k}", f"{mantissa}×10{str(k).translate(_SUPERSCRIPT)}",
                f"{mantissa} · 10^{{{k}}}"]
    return out


def test_a_key_written_by_hand_is_graded_as_its_plain_form():
    """Scientific notation as written on paper (4.25 × 10^9, 4.25x10^9, 4.25×10⁹) and "about" (~, ≈) before a figure:
    the same verdict and the same words as the plain form (× 10^9 was an exact product: digits not counted)."""
    differ = []
    for fid, diff, s in _draws():
        p = all_families()[fid].generate(s, diff)
        for t in _targets(p):
            if not isinstance(t.key, NumericKey | IntegerKey) or t.key.value == 0:
                continue
            for form in _scale_forms(t.key):
                want = graded(p, form, t)
                for hand in _by_hand(form):
                    got = graded(p, hand, t)
                    if (got.correct, got.status, got.message) != (want.correct, want.status, want.message):
                        differ.append((p.id, form, hand, want.message, got.message))
    assert not differ, differ[:5]


def test_misconceptions_that_give_the_same_value_are_all_named():
    """On a sample of draws of every family, every misconception's value is graded, and every other
    misconception of the same value (under the key's rule) is named in that verdict too."""
    bad = []
    for fid, diff, s in _draws():
        p = all_families()[fid].generate(s, diff)
        for t in [p, *p.parts]:
            ms = t.misconceptions
            for m in ms:
                value = {m.value} if isinstance(t.key, ChoiceKey) and isinstance(m.value, int) else m.value
                v = grade(t, value)
                named_ids = {x.id for x in v.misconceptions}
                same = {o.id for o in ms if (o.value == m.value if isinstance(t.key, ChoiceKey | MatrixKey)
                                             else values_coincide(o.value, m.value, t.key)
                                             or values_coincide(m.value, o.value, t.key))}
                if not same <= named_ids:
                    bad.append((p.id, m.id, sorted(same - named_ids)))
    assert not bad, bad[:10]


#: families whose key sits only 0.03 of a unit from a rounding edge, and why that is safe: the key is one exact
#: expression of whole numbers, so no intermediate rounding can carry a student across the edge; held 0.1 off it,
#: the key's text stood out among the options (issue 39, round 3: more often exactly twice or half another's)
NEAR_EDGE_OK = {
    "parallel.pipeline_bubble": "(p − 1)/(v·m + p − 1) of whole numbers",
    "parallel.bus_bandwidth": "S/t times 2(n − 1)/n, of the printed size and time (medium and hard)",
    "parallel.tensor_parallel_bytes": "a product of the printed sizes over 2²⁰ (medium and hard)",
    "scaling.chinchilla": "the compute or the tokens, one product or division of printed figures (N is held 0.1 off)",
    "hardware.pf_days": "6·N·D over 8.64 × 10¹⁹, of the printed N and D",
}


def test_every_family_key_is_a_tenth_of_a_unit_from_a_rounding_edge():
    bad = []
    for fid, diff, s in _draws():
        p = all_families()[fid].generate(s, diff)
        margin = 0.03 if fid in NEAR_EDGE_OK else 0.1
        for t in [p, *p.parts]:
            k = t.key
            if isinstance(k, NumericKey) and k.decimals is not None and not safe_for_rounding(k.value, k.decimals, margin):
                bad.append((p.id, t is p or t.label, k.value, k.decimals))
    assert not bad, bad


# ---------------------------------------------------------------------------- the audited families


def test_critical_intensity_names_every_slip_of_the_same_value():
    """On NVIDIA chips the with-sparsity peak doubles I*, as do counting 1 FLOP per multiply-add (B*)
    and taking int8 weights as 2 bytes: a student who gives that value is told all of them."""
    fam = all_families()["hardware.critical_intensity"]
    seen = 0
    for seed in range(60):  # issue 22: the one-byte weights (int8, fp8) are drawn at medium
        p = fam.generate(seed, "medium")
        if p.given["hw"] not in ("a100-80gb", "h100-sxm", "h200") or p.given["weight_dtype"] not in ("int8", "fp8"):
            continue
        v = grade(p, 2 * p.key.value)
        ids = {m.id for m in v.misconceptions}
        assert {"sparse_peak", "forgot_two_flops", "ignored_weight_dtype"} <= ids, (p.id, ids)
        assert all(m.feedback in v.message for m in v.misconceptions)
        seen += 1
    assert seen


def test_vit_names_the_three_slips_of_d():
    fam = all_families()["counting.vit_params"]
    for diff in ("medium", "hard"):
        p = fam.generate(1, diff)
        dm = p.given["d_model"]
        v = grade(p, p.key.value - dm)
        # issue 39: a draw with DeiT's distillation token has a fourth slip of d (forgetting that token)
        assert len(v.misconceptions) == (4 if p.given.get("distillation_token") else 3), (p.id, [m.id for m in v.misconceptions])


def test_alibi_hard_states_the_rule_and_its_feedback_quotes_it():
    fam = all_families()["positional.alibi_bias"]
    for seed in range(30):
        p = fam.generate(seed, "hard")
        assert "largest power of two below" in p.statement_text
        for m in p.misconceptions:
            if m.id == "base_ignores_heads":
                assert "2^(−8h/" not in m.feedback and "not a power of two" in m.feedback


def test_max_batch_quotes_the_chips_own_capacity_and_diagnoses_mib_as_mb():
    fam = all_families()["serving.max_batch"]
    for seed in range(60):
        p = fam.generate(seed, ("easy", "medium", "hard")[seed % 3])
        ids = {m.id: m for m in p.misconceptions}
        if p.given["hw"] == "h200" and "gb_for_gib" in ids:
            assert "141 GB" in ids["gb_for_gib"].feedback and "80 GB" not in ids["gb_for_gib"].feedback
        if p.given["hbm_figure"] == "device":
            assert "gb_for_gib" not in ids
            assert "mib_as_mb" in ids or any("mib_as_mb" in m.id for m in p.misconceptions) or \
                grade(p, ids["mib_as_mb"].value if "mib_as_mb" in ids else -1).correct is False


def test_tensor_parallel_bytes_sent_keeps_its_ring_factor_mistakes():
    fam = all_families()["parallel.tensor_parallel_bytes"]
    for seed in range(40):
        for diff in ("medium", "hard"):
            p = fam.generate(seed, diff)
            assert p.given["tp"] != 2
            assert {"message_only", "forgot_ring_factor"} <= {m.id for m in p.misconceptions}, p.id


def test_allreduce_rings_fit_one_machine():
    fam = all_families()["parallel.allreduce_time"]
    for seed in range(60):
        p = fam.generate(seed, ("easy", "medium", "hard")[seed % 3])
        if "NVLink" in p.statement_text or "PCIe" in p.statement_text:
            assert " 16 GPUs" not in p.statement_text and " 64 GPUs" not in p.statement_text, p.id


def test_nf4_keys_are_clear_of_a_rounding_edge():
    fam = all_families()["quantisation.nf4_bits"]
    for seed in range(20):
        for diff in fam.levels:
            p = fam.generate(seed, diff)
            assert safe_for_rounding(p.key.value, p.key.decimals, 0.1), p.id


def test_moe_decode_reads_one_embedding_row_per_token():
    """The family and the solver agree that the input embedding is a lookup (B rows of d read)."""
    from solver.counting.params import param_breakdown
    from solver.counting.presets import get_preset
    from solver.systems.decode_read import model_read

    cfg = get_preset("mixtral-8x7b").config
    pb = param_breakdown(cfg)
    one, two = model_read(cfg, 1, 1).weight_bytes, model_read(cfg, 2, 1, experts="all").weight_bytes
    assert two - model_read(cfg, 1, 1, experts="all").weight_bytes == cfg.d_model * 2  # one row more, bf16
    assert one < pb.active * 2
    p = all_families()["moe.decode_weight_bytes"].generate(0, "easy")
    assert "lookup" in p.statement_text and any(m.id == "whole_embedding_read" for m in p.misconceptions)


def test_decode_step_and_t5_say_what_they_count():
    p = all_families()["hardware.decode_step"].generate(0, "easy")
    assert "not read from HBM" in p.statement_text
    p = all_families()["positional.t5_bias_params"].generate(0, "easy")
    assert "all the layers of that stack share" in p.statement_text


def test_top_p_hard_generates_for_300_seeds():
    fam = all_families()["sampling.top_p"]
    for seed in range(300):
        fam.generate(seed, "hard")


def test_bank_validate_draws_enough_seeds_for_a_one_in_a_hundred_failure():
    """``qkv bank validate --full`` (and the library's default) draws enough seeds to catch a 1 % failure
    with 95 % probability; the quick default (about 30 s, issue 40) says how much less it catches."""
    import inspect

    from question_bank import bank

    n = inspect.signature(bank.validate).parameters["seeds"].default
    assert n == bank.VALIDATE_SEEDS and 1 - 0.99**n >= 0.95, n
    from click.testing import CliRunner

    from drills.cli.bank import bank as bank_cli

    r = CliRunner().invoke(bank_cli, ["validate", "--help"])
    text = " ".join(r.output.split())
    assert f"--full The full sweep: {n} seeds per family and difficulty" in text, text
    q = bank.QUICK_SEEDS
    assert f"[default: {q}, about 30 s on one core" in text and f"{1 - 0.99 ** (3 * q):.0%}" in text.replace(" %", "%")


def test_the_judge_counts_the_mistakes_it_names():
    from question_bank.grading import named
    from question_bank.problem import Misconception

    ms = [Misconception(f"m{i}", f"slip {i}", f"Feedback {i}.", 1.0) for i in range(3)]
    m, msg = named(ms)
    assert msg.startswith("Not right. Three typical mistakes") and all(f"Feedback {i}." in msg for i in range(3))
    assert m.id == "m0+m1+m2" and m.label == "slip 0 or slip 1 or slip 2"
    assert named(ms[:1]) == (ms[0], "Not right. Feedback 0.")


def test_check_params_names_a_slip_of_the_scale():
    out = qkv("check", "params", "--preset", "llama2-7b", "--answer", "6.74M")
    assert out.returncode == 1 and "slip of the scale" in out.stdout, out.stdout


@pytest.mark.slow
def test_quiz_names_every_mistake_of_the_same_value(home):
    """Through the real quiz: on an NVIDIA chip with int8 weights, 2 × B* is the with-sparsity peak, the
    forgotten 2 FLOPs per multiply-add and 2-byte weights alike; the quiz names all three."""
    import re

    for seed in range(1, 40):
        first = qkv("quiz", "--topic", "hardware.critical_intensity", "--difficulty", "hard", "-n", "1", "--plain",
                    "--seed", str(seed), stdin="skip\n\n")
        pid = re.search(r"hardware\.critical_intensity/hard/\d+", first.stdout).group(0)
        p = all_families()["hardware.critical_intensity"].generate(int(pid.rsplit("/", 1)[1]), "hard")
        if p.given["hw"] in ("a100-80gb", "h100-sxm", "h200") and p.given["weight_dtype"] == "int8":
            break
    else:
        pytest.skip("no NVIDIA int8 draw among the quiz seeds tried")
    out = qkv("quiz", "--topic", "hardware.critical_intensity", "--difficulty", "hard", "-n", "1", "--plain",
              "--seed", str(seed), stdin=f"{round_half_up(2 * p.key.value, 1)}\n\n")
    for label in ("with-sparsity peak", "forgot 2 FLOPs per multiply-add", "assumed 2-byte weights"):
        assert label in out.stdout, out.stdout


@pytest.mark.parametrize("fid,seed,diff,absent,present", [
    ("positional.alibi_bias", 3, "hard", "", "largest power of two below"),
    ("quantisation.nf4_bits", 0, "easy", "", "5 decimal places"),
    ("hardware.decode_step", 0, "medium", "", "not read from HBM"),
    ("scaling.compute_optimal", 0, "easy", "", "Besiroglu"),
    ("scaling.compute_optimal", 0, "medium", "", "approach 3"),
])
def test_bank_show_statements_say_what_they_need(fid, seed, diff, absent, present):
    out = qkv("bank", "show", fid, "--seed", str(seed), "--difficulty", diff)
    assert out.returncode == 0 and present in out.stdout, out.stdout[:2000]


def test_bank_show_max_batch_feedback_uses_the_chips_figure():
    import json

    for seed in range(40):
        p = all_families()["serving.max_batch"].generate(seed, "easy")
        if p.given["hw"] == "h200":
            break
    out = json.loads(qkv("bank", "show", "serving.max_batch", "--seed", str(seed), "--difficulty", "easy", "--json").stdout)
    fb = {m["id"]: m["feedback"] for m in out["misconceptions"]}
    assert "141 GB" in fb["gb_for_gib"] and "80 GB" not in fb["gb_for_gib"]
    out = json.loads(qkv("bank", "show", "serving.max_batch", "--seed", "1", "--difficulty", "hard", "--json").stdout)
    assert "mib_as_mb" in {m["id"] for m in out["misconceptions"]} or out["given"]["hbm_figure"] != "device"


def test_by_hand_worked_solution_computes_o_from_exact_weights():
    """The issue's repro: row 3 of attention.by_hand/hard/838475 printed [0.666, 0.999] (from the weights
    rounded to 0.333); the exact values are [0.667, 1.000]. That draw (K of equal rows: every scaling gave the
    same weights) is now drawn again (``told_apart``); 839035 has a row of weights 1/3 too."""
    out = qkv("bank", "show", "attention.by_hand/hard/839035")
    assert out.returncode == 0
    assert "= [0.667, 1.000]" in out.stdout and "[0.666, 0.999]" not in out.stdout, out.stdout


def test_quiz_takes_an_option_typed_as_its_text(home):
    """``40x44`` for the option "40 × 44" is that option (attention.shapes/medium/683155, the quiz's draw
    for seed 2: Q 40 × 34, V 29 × 44, the output one row per query and d_v columns: (c) 40 × 44). The
    option typed is the key's text as the bank draws it, written the way people type a shape."""
    from question_bank import bank as qb

    p = qb.problem("attention.shapes/medium/683155")
    typed = p.options_text[min(p.key.correct)].replace(" × ", "x")
    assert typed == "40x44"  # the draw this docstring works by hand
    out = qkv("quiz", "--topic", "attention.shapes", "--difficulty", "medium", "-n", "1", "--plain", "--seed", "2",
              stdin=f"{typed}\n\n")
    assert "attention.shapes/medium/683155" in out.stdout and "✓ Correct" in out.stdout, out.stdout
