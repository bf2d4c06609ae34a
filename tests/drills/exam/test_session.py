"""The mock exam (drills.exam.session, drills.exam.view, ``qkv exam``).

- Marking: hypothesis draws papers from the real bank and an answer sheet (per question the
  right answer, a wrong one, a partially right MSQ, or blank) and checks the exam's score
  against a second, deliberately simple computation of GATE's rules written here from the
  official table (not calling drills.exam.marking).
- The sitting: time per question, the palette, navigation, and nothing accepted after zero,
  on a fake clock.
- ``qkv exam`` over stdin: a scripted exam whose input arrives too slowly runs out of time and
  submits what was answered (a subprocess fed through a pipe with sleeps); a scripted exam
  answered entirely right scores the maximum. The answers are computed here from the keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from drills.cli import cli
from drills.exam.paper import Paper, assemble_paper
from drills.exam.session import Exam, parse_exam_command
from drills.output import InputError
from drills.progress import ProgressStore

ROOT = Path(__file__).resolve().parents[3]
LETTERS = "abcdefghij"

# GATE's marking, from the official rules: (type, marks) -> (marks for a right answer, for a
# wrong one). Only MCQ has negative marks (1/3 of the question's marks); MSQ is all or
# nothing; unanswered is 0. qkv's integer problems are numerical answers (NAT).
GATE_TABLE = {
    ("mcq", 1): (Fraction(1), Fraction(-1, 3)),
    ("mcq", 2): (Fraction(2), Fraction(-2, 3)),
    ("msq", 1): (Fraction(1), Fraction(0)),
    ("msq", 2): (Fraction(2), Fraction(0)),
    ("nat", 1): (Fraction(1), Fraction(0)),
    ("nat", 2): (Fraction(2), Fraction(0)),
}
AS_GATE = {"mcq": "mcq", "msq": "msq", "nat": "nat", "integer": "nat"}


def expected_marks(problem, kind: str) -> tuple[Fraction, Fraction]:
    """(awarded, lost) for one question answered as ``kind`` (right/wrong/partial/blank)."""
    right, wrong = GATE_TABLE[(AS_GATE[problem.type], problem.marks)]
    if kind == "blank":
        return Fraction(0), Fraction(0)
    if kind == "right":
        return right, Fraction(0)
    return wrong, -wrong  # wrong, or a partially right MSQ: both are wrong answers


@lru_cache(maxsize=1)
def pool() -> tuple:
    """Real single-answer problems of the four paper types: curated items and two variants of
    every family at each difficulty."""
    from question_bank import bank

    out = [p for p in bank.curated() if p.type in AS_GATE and not p.parts]
    for f in bank.families().values():
        if not set(f.types) & set(AS_GATE):
            continue
        for d in f.levels:
            for s in (0, 1):
                p = f.generate(s, d)
                if p.type in AS_GATE and not p.parts:
                    out.append(p)
    return tuple(out)


def right_text(p) -> str:
    """The right answer as a student would type it, from the key."""
    k = p.key
    if p.type in ("mcq", "msq"):
        return ",".join(LETTERS[i] for i in sorted(k.correct))
    if p.type == "integer":
        return str(k.value)
    return repr(float(k.value))


def test_pool_exercises_every_rule():
    ps = pool()
    kinds = {(AS_GATE[p.type], p.marks) for p in ps}
    assert {("mcq", 1), ("mcq", 2), ("msq", 1), ("nat", 1), ("nat", 2)} <= kinds
    assert any(p.type == "msq" and len(p.key.correct) >= 2 for p in ps)


@st.composite
def answer_sheets(draw):
    ps = pool()
    idx = draw(st.lists(st.integers(0, len(ps) - 1), min_size=1, max_size=8, unique=True))
    sheet = []
    for p in (ps[i] for i in idx):
        n_opt = len(p.options)
        key = set(p.key.correct) if p.type in ("mcq", "msq") else None
        kinds = ["right", "wrong", "blank"]
        if p.type == "msq" and (len(key) >= 2 or len(key) < n_opt):
            kinds.append("partial")
        if p.type == "msq" and len(key) == n_opt:
            kinds.remove("wrong")  # every option is right: only subsets can be wrong
        kind = draw(st.sampled_from(kinds))
        if kind == "blank":
            text = None
        elif kind == "right":
            text = right_text(p)
        elif p.type == "mcq":
            text = LETTERS[draw(st.sampled_from(sorted(set(range(n_opt)) - key)))]
        elif p.type == "msq":
            others = sorted(set(range(n_opt)) - key)
            if kind == "wrong":
                chosen = set(draw(st.lists(st.sampled_from(others), min_size=1, unique=True)))
            else:  # partial: some of the right options only, or all of them and a wrong one
                ways = (["subset"] if len(key) >= 2 else []) + (["superset"] if others else [])
                if draw(st.sampled_from(ways)) == "subset":
                    chosen = set(draw(st.lists(st.sampled_from(sorted(key)), min_size=1, max_size=len(key) - 1,
                                               unique=True)))
                else:
                    chosen = key | {draw(st.sampled_from(others))}
            text = ",".join(LETTERS[i] for i in sorted(chosen))
        elif p.type == "integer":
            text = str(p.key.value + max(10, abs(p.key.value)))
        else:
            k = p.key
            text = repr(k.hi + 10 * (k.hi - k.lo) + 1.0)
        sheet.append((p, kind, text))
    return sheet


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@given(answer_sheets())
def test_score_matches_gate_rules(sheet):
    paper = Paper(problems=tuple(p for p, _, _ in sheet), seed=0)
    exam = Exam(paper, 600, clock=FakeClock())
    exam.start()
    for i, (_, _, text) in enumerate(sheet):
        exam.go(i)
        if text is not None:
            exam.answer(text)
    result = exam.submit()
    awarded = [expected_marks(p, kind) for p, kind, _ in sheet]
    assert result.score == sum((a for a, _ in awarded), Fraction(0))
    assert result.negative == sum((lost for _, lost in awarded), Fraction(0))
    assert result.max_score == sum(p.marks for p, _, _ in sheet)
    for q, (p, kind, _), (a, lost) in zip(result.questions, sheet, awarded, strict=True):
        assert q.outcome == {"right": "correct", "blank": "unanswered"}.get(kind, "wrong"), (p.id, kind)
        assert (q.awarded, q.negative) == (a, lost), (p.id, kind)


def _problem(pid: str):
    from question_bank import bank

    return bank.problem(pid)


def test_two_mark_mcq_wrong_costs_two_thirds_and_three_wrong_cost_one():
    q3 = _problem("004.gate.q3")  # a 2-mark MCQ, key (c)
    one = _problem("004.gate.q1")  # a 1-mark MCQ
    assert q3.marks == 2 and one.marks == 1
    wrong_q3 = LETTERS[min(set(range(4)) - set(q3.key.correct))]
    wrong_one = LETTERS[min(set(range(4)) - set(one.key.correct))]
    exam = Exam(Paper((one, q3), 0), 60, clock=FakeClock())
    exam.start()
    exam.answer(wrong_one)
    exam.go(1)
    exam.answer(wrong_q3)
    r = exam.submit()
    assert r.score == Fraction(-1, 3) + Fraction(-2, 3) == -1
    assert r.negative == 1


# --------------------------------------------------------------------------------------------
# the sitting


def _small_paper() -> Paper:
    return Paper(tuple(_problem(i) for i in ("004.gate.q1", "004.gate.q2", "004.gate.q4")), seed=0)


def test_time_per_question_navigation_and_deadline():
    clock = FakeClock()
    paper = _small_paper()
    exam = Exam(paper, 60, clock=clock)
    exam.start()
    assert exam.palette() == [(1, "not_answered"), (2, "not_visited"), (3, "not_visited")]
    clock.t += 5
    out = exam.handle(right_text(paper.problems[0]))  # saved, then question 2
    assert out.kind == "answered" and exam.question.number == 2
    clock.t += 7
    assert exam.handle("prev").kind == "moved" and exam.question.number == 1
    clock.t += 2
    exam.handle("goto 3")
    assert exam.handle("mark").kind == "marked"  # marked for review, then next: wraps to 1
    assert exam.question.number == 1
    assert exam.palette() == [(1, "answered"), (2, "not_answered"), (3, "marked")]
    exam.handle("#3")
    clock.t += 100  # past the deadline (60 s)
    late = exam.handle(right_text(paper.problems[2]))
    assert late.kind == "expired" and late.done and exam.over
    r = exam.result
    assert r.reason == "time"
    assert [q.outcome for q in r.questions] == ["correct", "unanswered", "unanswered"]  # the late answer is not taken
    # question 1: 5 s then 2 s; question 2: 7 s; question 3: the rest up to the deadline only
    assert [q.seconds for q in r.questions] == [7.0, 7.0, 46.0]
    assert r.elapsed_s == 60.0
    assert exam.submit("submitted") is r  # submitting again changes nothing


def test_rich_view_palette_marks_and_word_wrap():
    """The palette carries the legend's marks (readable without colour), and long lines are
    wrapped between words by rich, not cut mid-word by the terminal."""
    import io

    from rich.console import Console

    from drills.exam.view import RichView

    clock = FakeClock()
    paper = _small_paper()
    exam = Exam(paper, 60, clock=clock)
    exam.start()
    exam.handle("mark " + right_text(paper.problems[0]))  # 1 answered & marked, now on 2
    view = RichView()
    view.console = Console(file=io.StringIO(), width=40, color_system=None, highlight=False)
    view.console.print(view._palette(exam))
    view.echo("MCQ: one option, a wrong answer costs 1/3 of its marks; MSQ: all the right options, "
              "no negative marks; NAT: a number, no negative marks.")
    out = view.console.file.getvalue().splitlines()
    # 2 is seen and not answered: an open circle, not ✗ (nothing is judged during the exam)
    assert out[0].split() == ["1✓?", "2○", "3·"]
    assert "✗" not in out[0]
    words = {w for line in out[1:] for w in line.split()}
    assert {"marks;", "negative", "options,"} <= words
    assert all(len(line) <= 40 for line in out)


def test_clear_unmark_and_errors_keep_the_question():
    paper = _small_paper()
    exam = Exam(paper, 60, clock=FakeClock())
    exam.start()
    assert exam.handle("zz").kind == "error" and exam.question.number == 1
    assert exam.handle("goto 9").kind == "error"
    exam.handle("mark " + right_text(paper.problems[0]))
    exam.handle("goto 1")
    assert exam.question.status == "answered_marked"
    exam.handle("unmark")
    assert exam.question.status == "answered"
    exam.handle("clear")
    assert exam.question.status == "not_answered" and exam.question.response is None
    asked = exam.handle("submit")  # asks first, as GATE's interface does
    assert asked.kind == "confirm" and not asked.done and not exam.over
    assert "0 answered, 3 not answered" in asked.message
    assert exam.handle("no").kind == "resumed" and not exam.over
    assert exam.handle("submit").kind == "confirm"
    assert exam.handle("yes").done
    assert exam.result.tally() == {"correct": 0, "partial": 0, "wrong": 0, "unanswered": 3}


@pytest.mark.parametrize(("text", "expected"), [
    ("b", None), ("c", None), ("3", None), ("0.25", None), ("a,c", None),
    ("next", ("next", "")), ("skip", ("next", "")), (":n", ("next", "")), ("prev", ("prev", "")),
    ("goto 3", ("goto", "3")), (":g 12", ("goto", "12")), ("#2", ("goto", "2")),
    ("mark", ("mark", "")), ("mark a,c", ("mark", "a,c")), (":c", ("clear", "")), ("clear", ("clear", "")),
    ("submit", ("submit", "")), ("SUBMIT", ("submit", "")), ("palette", ("palette", "")),
    ("submit yes", ("submit", "yes")), ("submit now", ("submit", "yes")),
])
def test_commands(text, expected):
    cmd = parse_exam_command(text)
    assert (None if cmd is None else (cmd.name, cmd.arg)) == expected


def test_command_errors():
    from drills.answers import AnswerParseError

    for bad in ("goto", "goto x", ":zz"):
        with pytest.raises(AnswerParseError):
            parse_exam_command(bad)


# --------------------------------------------------------------------------------------------
# the paper


def test_paper_is_deterministic_and_gate_shaped():
    a = assemble_paper(8, (), seed=42)
    b = assemble_paper(8, (), seed=42)
    assert [p.id for p in a.problems] == [p.id for p in b.problems]
    assert [p.statement_text for p in a.problems] == [p.statement_text for p in b.problems]
    assert len({p.id for p in a.problems}) == 8
    assert all(p.type in AS_GATE and not p.parts for p in a.problems)
    marks = [p.marks for p in a.problems]
    assert marks == sorted(marks) and set(marks) == {1, 2}  # 1-mark questions first, both kinds
    assert len({AS_GATE[p.type] for p in a.problems}) >= 2
    other = assemble_paper(8, (), seed=43)
    assert [p.id for p in other.problems] != [p.id for p in a.problems]


def test_paper_topics_and_size():
    paper = assemble_paper(3, ("positional",), seed=1)
    assert all(p.topic == "positional" or p.id.startswith("positional.") or "positional" in p.tags
               for p in paper.problems)
    with pytest.raises(InputError):
        assemble_paper(500, ("positional",), seed=1)
    with pytest.raises(InputError):
        assemble_paper(3, ("no-such-topic",), seed=1)


# --------------------------------------------------------------------------------------------
# qkv exam


def test_scripted_exam_all_right_scores_the_maximum(tmp_path):
    n, seed = 6, 11
    paper = assemble_paper(n, (), seed)
    lines = [right_text(p) for p in paper.problems]
    result = CliRunner().invoke(
        cli, ["exam", "-n", str(n), "--seed", str(seed), "--minutes", "5", "--data-dir", str(tmp_path), "--json"],
        input="\n".join(lines) + "\nsubmit\nyes\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    maximum = sum(p.marks for p in paper.problems)
    assert out["max_score"] == maximum and out["score"] == maximum and out["negative"] == 0
    assert out["reason"] == "submitted"
    assert [q["id"] for q in out["questions"]] == [p.id for p in paper.problems]
    with ProgressStore.open(tmp_path) as store:
        session = store.session(out["session_id"])
        rows = store.attempts(session_id=out["session_id"])
        stats = store.stats()
    assert session["mode"] == "exam" and session["score"] == maximum and session["max_score"] == maximum
    assert [r["problem_id"] for r in rows] == [p.id for p in paper.problems]
    assert all(r["mode"] == "exam" and r["correct"] == 1 for r in rows)
    assert [r["score"] for r in rows] == [p.marks for p in paper.problems]
    assert stats["exams"][0]["session_id"] == out["session_id"] and stats["exams"][0]["score"] == maximum
    text = CliRunner().invoke(cli, ["stats", "--data-dir", str(tmp_path)]).output
    assert f"{maximum} / {maximum}" in text


def test_end_of_input_submits_what_was_answered(tmp_path):
    paper = assemble_paper(4, (), 3)
    first = paper.problems[0]
    result = CliRunner().invoke(
        cli, ["exam", "-n", "4", "--seed", "3", "--minutes", "5", "--data-dir", str(tmp_path)],
        input=right_text(first) + "\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "End of input" in result.output
    assert f"Score: {first.marks} / {sum(p.marks for p in paper.problems)}" in result.output
    assert "Worked solution:" in result.output and "Key:" in result.output
    with ProgressStore.open(tmp_path) as store:
        rows = store.attempts()
    assert [r["correct"] for r in rows] == [1, None, None, None]


class _Output:
    """Collects a subprocess's stdout as it comes (prompts end without a newline)."""

    def __init__(self, stream):
        self.buf = b""
        self.lock = threading.Lock()
        threading.Thread(target=self._run, args=(stream,), daemon=True).start()

    def _run(self, stream):
        while chunk := os.read(stream.fileno(), 4096):
            with self.lock:
                self.buf += chunk

    def text(self) -> str:
        with self.lock:
            return self.buf.decode("utf-8", "replace")

    def wait_for(self, needle: str, timeout: float = 20.0) -> float:
        end = time.monotonic() + timeout
        while needle not in self.text():
            if time.monotonic() > end:
                raise AssertionError(f"{needle!r} never came; output so far:\n{self.text()}")
            time.sleep(0.02)
        return time.monotonic()


def test_exam_that_runs_out_of_time_submits_what_was_answered(tmp_path):
    """Input through a pipe with sleeps: two answers in time, then silence with stdin still
    open; the exam must submit itself at zero (3 s), and the late third answer counts for nothing."""
    n, seed, minutes = 4, 5, 0.05
    paper = assemble_paper(n, (), seed)
    proc = subprocess.Popen(
        [sys.executable, "-m", "drills", "exam", "-n", str(n), "--seed", str(seed), "--minutes", str(minutes),
         "--data-dir", str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    out = _Output(proc.stdout)
    try:
        started = out.wait_for(f"Question 1 of {n}")
        proc.stdin.write((right_text(paper.problems[0]) + "\n").encode())
        proc.stdin.flush()
        out.wait_for(f"Question 2 of {n}")
        time.sleep(0.3)
        proc.stdin.write((right_text(paper.problems[1]) + "\n").encode())
        proc.stdin.flush()
        out.wait_for(f"Question 3 of {n}")
        rc = proc.wait(timeout=15)  # stdin is still open: only the clock can end it
        ended = time.monotonic()
        try:
            proc.stdin.write((right_text(paper.problems[2]) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    text = out.text()
    assert rc == 0, text
    assert "Time is up" in text and "Time ran out" in text
    assert 2.0 <= ended - started <= 10.0
    first, second = paper.problems[0], paper.problems[1]
    assert f"Score: {first.marks + second.marks} / {sum(p.marks for p in paper.problems)}" in text
    with ProgressStore.open(tmp_path) as store:
        rows = store.attempts()
        sid = rows[0]["session_id"]
        session = store.session(sid)
    assert session["mode"] == "exam" and session["ended_at"] is not None
    assert session["score"] == first.marks + second.marks and session["summary"]["reason"] == "time"
    assert [r["problem_id"] for r in rows] == [p.id for p in paper.problems]
    assert [r["correct"] for r in rows] == [1, 1, None, None]
    assert [r["answer"] for r in rows][:2] == [right_text(first), right_text(second)]
    assert all(r["session_id"] == sid for r in rows)


def test_exam_path_imports_no_torch():
    code = ("import sys\n"
            "from drills.exam.paper import assemble_paper\nfrom drills.exam.session import Exam\n"
            "import drills.cli.exam, drills.exam.view\n"
            "e = Exam(assemble_paper(6, (), 1), 60); e.start(); e.submit()\n"
            "print('torch' in sys.modules, 'matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_an_answer_in_bits_is_marked_as_the_quiz_marks_it():
    """A KV-cache size keyed in GB or GiB, typed in Gb/Gib (bits): the exam takes the answer (a
    refusal that says "÷ 8" would hand the student the fix in the middle of an exam) and marks
    it wrong with the quiz's diagnosis ("you answered in bits; the key is in bytes (÷ 8)"); the
    right figure typed in the key's byte unit is right. A unit of another kind is still refused
    as the quiz refuses it."""
    from drills.answers import AnswerParseError
    from drills.exam.session import parse_response
    from question_bank.family import all_families
    from question_bank.grading import grade

    fam = dict(all_families())["counting.kv_cache"]
    p = next(q for q in (fam.generate(s) for s in range(20)) if getattr(q.key, "unit", "") in ("GB", "GiB"))
    bits = {"GB": "Gb", "GiB": "Gib"}[p.key.unit]
    r = parse_response(p, f"{p.key.value * 8!r} {bits}")
    v = grade(p, r.value, written=r.written, unit=r.unit)
    assert not v.correct and v.status == "wrong_unit" and v.score == 0
    assert "you answered in bits" in v.message and "÷ 8" in v.message
    with pytest.raises(AnswerParseError, match=rf"^the answer is in {p.key.unit}, not s$"):
        parse_response(p, "3 s")
    r = parse_response(p, f"{p.key.value!r} {p.key.unit}")
    assert r.value == pytest.approx(p.key.value) and grade(p, r.value, written=r.written, unit=r.unit).correct


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_the_palette_legend_breaks_between_entries(width):
    """Every legend entry stays whole on one line of at most ``width`` columns, in order."""
    from drills.exam.view import LEGEND, PALETTE_MARK, legend_lines

    lines = legend_lines(width)
    assert all(len(line) <= width for line in lines)
    entries = [f"{PALETTE_MARK[k]} {v}" for k, v in LEGEND.items()]
    assert [e for line in lines for e in line.strip().split("   ")] == entries
    assert (len(lines) == 1) == (width >= len("  " + "   ".join(entries)))  # one line when it fits


def test_rich_view_wraps_indented_lines_under_themselves():
    """At 80 columns an indented worked-solution line, an option and a list item wrap under
    their own text: no continuation line falls back to column 0 (or under the label)."""
    import io

    from rich.console import Console

    from drills.exam.view import RichView

    view = RichView()
    buf = io.StringIO()
    view.console = Console(file=buf, width=80, color_system=None)
    words = " ".join(f"word{i}" for i in range(40))
    view.echo(f"  Worked solution:\n    {words}\n    (b) {words}\n    • {words}\nflush {words}")
    out = buf.getvalue().splitlines()
    assert all(len(line) <= 80 for line in out)
    sol = [line for line in out[1:] if not line.lstrip().startswith(("(b)", "•", "flush"))]
    block = out[1 : out.index(next(line for line in out if line.startswith("flush")))]
    assert block and all(line.startswith("    ") for line in block), block
    opt = out.index(next(line for line in out if line.startswith("    (b) ")))
    assert out[opt + 1].startswith(" " * 8) and out[opt + 1][8] != " "
    bullet = out.index(next(line for line in out if line.startswith("    • ")))
    assert out[bullet + 1].startswith(" " * 6) and out[bullet + 1][6] != " "
    assert sol and out[-1].startswith("word")  # an unindented line still wraps to column 0
