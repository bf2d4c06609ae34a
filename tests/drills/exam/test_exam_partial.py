"""A blueprint's partial credit (``partial = ["msq"]``, issue 41) in ``qkv exam``: an MSQ answered
with some of the right options and no wrong one earns that share of its marks, in the exam's score,
review and JSON, as ``qkv grade`` marks the same answers on the same paper; without ``partial`` the
MSQ stays all or nothing. An exam saved before the exam applied partial credit still resumes.
Expected marks are worked out here from the rule (marks × right options chosen / right options),
not by qkv."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from drills.exam.blueprint import assemble, load
from question_bank.grading import LETTERS

BP = ('name = "pp"\ntitle = "partial paper"\nminutes = 10\n{partial}'
      '[[section]]\nname = "S"\nquestions = [{{ type = "mcq", marks = 1, count = 1 }}, '
      '{{ type = "msq", marks = 2, count = 1 }}]\n')


def _blueprint(tmp_path, partial: bool):
    f = tmp_path / ("partial.toml" if partial else "plain.toml")
    f.write_text(BP.format(partial='partial = ["msq"]\n' if partial else ""))
    return f


def _seed_with_a_wide_msq(bp_file):
    """A seed whose MSQ has two right options or more (so a part of them is a right subset)."""
    bp = load(str(bp_file))
    for seed in range(50):
        paper = assemble(bp, seed)
        msq = [(i, p) for i, p in enumerate(paper.problems, 1) if p.type == "msq"]
        if msq and len(msq[0][1].key.correct) >= 2:
            return seed, msq[0][0], msq[0][1]
    pytest.skip("no seed gives an MSQ with two right options")


def _cli(args, **kw):
    from drills.cli import cli as main

    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def _exam_json(bp_file, seed, number, answer, data_dir):
    """``qkv exam --plain --json`` sat through its prompt: question ``number`` answered, the rest
    skipped, then submitted."""
    lines = ["next"] * (number - 1) + [answer, "submit yes"]
    r = _cli(["exam", "--paper", bp_file, "--seed", seed, "--plain", "--json", "--data-dir", data_dir],
             input="\n".join(lines) + "\n")
    assert r.exit_code == 0, r.output
    return r.output, json.loads(r.output[r.output.index("\n{") + 1:])


def _grade_json(tmp_path, bp_file, seed, number, answer):
    """``qkv grade`` of the same answer on version 1 of the same blueprint and seed (the exam's paper)."""
    out = tmp_path / "class"
    out.mkdir(exist_ok=True)
    r = _cli(["sheet", "--paper", bp_file, "--seed", seed, "--versions", "1", "-o", out / "c.md"])
    assert r.exit_code == 0, r.output
    (out / "a.csv").write_text(f'student,version,question,answer\ns1,V01,{number},"{answer}"\n')
    r = _cli(["grade", out / "c.key.json", out / "a.csv", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output[r.output.index("{"):])


def _close(x: float, want: Fraction) -> bool:
    return abs(x - float(want)) < 1e-9


@pytest.mark.parametrize("partial", [True, False])
def test_partly_right_msq_in_the_exam_and_in_grade(tmp_path, partial):
    bp_file = _blueprint(tmp_path, partial)
    seed, number, msq = _seed_with_a_wide_msq(bp_file)
    right = sorted(msq.key.correct)
    chosen = right[:-1]  # some of the right options, no wrong one
    answer = ", ".join(LETTERS[i] for i in chosen)
    want = Fraction(msq.marks * len(chosen), len(right)) if partial else Fraction(0)
    assert not partial or 0 < want < msq.marks

    text, out = _exam_json(bp_file, seed, number, answer, tmp_path / "data")
    q = out["questions"][number - 1]
    assert q["outcome"] == ("partial" if partial else "wrong")
    assert _close(q["awarded"], want) and q["negative"] == 0
    assert _close(out["score"], want)
    assert (out["partial"], out["wrong"]) == ((1, 0) if partial else (0, 1))
    assert out["partial_credit"] == (["msq"] if partial else [])
    assert out["by_section"]["S"]["partial"] == (1 if partial else 0)
    assert "applied by qkv grade" not in text and "all or nothing" not in text  # the old warning is gone
    intro = text.splitlines()[1]
    assert ("a share of the marks for some right options and no wrong one" in intro) == partial
    if partial:  # the review says why it earned what it did; the summary counts it
        assert f"Partial credit: {len(chosen)} of the {len(right)} right options" in text
        assert "Right 0, partial 1, wrong 0, unanswered 1" in text

    graded = _grade_json(tmp_path, bp_file, seed, number, answer)
    [res] = graded["results"]
    assert _close(res["score"], want)  # qkv grade: the same marks for the same answer


def test_a_wrong_option_beside_right_ones_earns_nothing(tmp_path):
    bp_file = _blueprint(tmp_path, True)
    seed, number, msq = _seed_with_a_wide_msq(bp_file)
    wrong = next(i for i in range(len(msq.options)) if i not in msq.key.correct)
    answer = ", ".join(LETTERS[i] for i in sorted({min(msq.key.correct), wrong}))
    _, out = _exam_json(bp_file, seed, number, answer, tmp_path / "data")
    q = out["questions"][number - 1]
    assert q["outcome"] == "wrong" and q["awarded"] == 0 and out["score"] == 0


def test_saved_state_keeps_partial_and_an_older_one_still_resumes(tmp_path):
    """The state now holds the paper's partial credit; a state saved before (no "partial") resumes,
    marked all or nothing as that exam said it would be."""
    from drills.exam.session import Exam, parse_response

    bp_file = _blueprint(tmp_path, True)
    seed, number, msq = _seed_with_a_wide_msq(bp_file)
    exam = Exam(assemble(load(str(bp_file)), seed), 600.0)
    exam.start()
    chosen = sorted(msq.key.correct)[:-1]
    exam.questions[number - 1].response = parse_response(msq, ",".join(LETTERS[i] for i in chosen))
    state = json.loads(json.dumps(exam.state()))
    assert state["paper"]["partial"] == ["msq"]

    now = Exam.resume(state).submit()
    q = now.questions[number - 1]
    assert q.outcome == "partial" and q.awarded == Fraction(msq.marks * len(chosen), len(msq.key.correct))

    old = copy.deepcopy(state)
    del old["paper"]["partial"]
    before = Exam.resume(old).submit()
    assert before.questions[number - 1].outcome == "wrong" and before.score == 0

    bad = copy.deepcopy(state)
    bad["paper"]["partial"] = ["nat"]
    with pytest.raises(ValueError, match="partial"):
        Exam.resume(bad)
