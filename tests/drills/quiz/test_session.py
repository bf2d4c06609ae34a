"""`qkv quiz`: scripted sessions over stdin for every problem type, the database rows they leave,
follow-through on a multi-part problem, the --json event stream, --seed reproducibility,
SIGKILL mid-quiz, and the quiz path importing no torch (and no sympy before the first problem).

Answers are never copied numbers: they are written from the problem object the quiz will ask
(its key, a misconception's value, a part's follow-through key), which the test rebuilds with
the same planner on an equally empty history.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli.quiz import quiz
from drills.progress import ProgressStore
from drills.quiz.plan import Catalogue, Pick, QuizOptions, plan
from drills.quiz.source import ProblemSource, without_slow_imports
from question_bank.grading import round_half_up
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, key_value

REPO = Path(__file__).resolve().parents[3]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
UNREADABLE = {"mcq": "zz", "msq": "zz", "nat": "abc", "integer": "12..5", "matrix": "1 2; 3"}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    # The quiz puts first a problem that builds without importing SymPy (a start-up speed-up).
    # Once SymPy is loaded nothing is reordered; load it here so that the problems predicted
    # below and the in-process quiz runs see the same order.
    import sympy  # noqa: F401

    return Catalogue.load()


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["QKV_HOME"] = str(home)
    env.pop("QKV_DEBUG", None)
    return env


def _qkv() -> list[str]:
    script = Path(sys.executable).with_name("qkv")
    return [str(script)] if script.exists() else [sys.executable, "-m", "drills"]


# --------------------------------------------------------------------------------------------
# answers written from a problem's key


def text_for(key, value) -> str:
    """``value`` (shaped like ``key``'s value) written the way a student types it."""
    if isinstance(key, NumericKey):
        if key.decimals is None:
            return repr(float(value))
        return f"{round_half_up(float(value), key.decimals):.{key.decimals}f}"
    if isinstance(key, IntegerKey):
        v = float(value)
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(key, MatrixKey):
        return "; ".join(" ".join(repr(float(x)) for x in row) for row in value)
    assert isinstance(key, ChoiceKey)
    chosen = {value} if isinstance(value, int) else set(value)
    return ",".join(LETTERS[i] for i in sorted(chosen))


def right_lines(problem) -> list[str]:
    targets = problem.parts or [problem]
    return [text_for(t.key, key_value(t.key)) for t in targets]


def predict(catalogue: Catalogue, tmp: Path, opts: QuizOptions) -> list:
    """The problems a quiz with ``opts`` asks on an empty history, in order."""
    with ProgressStore.open(tmp) as store:
        picks = plan(catalogue, store, opts)
    source = ProblemSource(catalogue, picks, opts.type)
    source.start()
    return [source.get(i) for i in range(len(source))]


def find_session(catalogue: Catalogue, tmp: Path, ptype: str):
    """A seed (and difficulty) whose first problem of ``ptype`` is single-part with a
    misconception: (opts, [first, second])."""
    fallback = None
    for difficulty in (None, "hard", "medium", "easy"):
        for seed in range(40):
            opts = QuizOptions(type=ptype, difficulty=difficulty, count=2, seed=seed)
            problems = predict(catalogue, tmp / f"p-{difficulty}-{seed}", opts)
            first = problems[0]
            if not first.parts and first.misconceptions:
                return opts, problems
            if fallback is None and not first.parts and ptype == "msq":
                fallback = opts, problems
    # the offered MSQ levels name no mistake of their own (the one that did, complexity.attention_variants
    # hard, is withdrawn): a wrong set without a name is asked instead
    if fallback is not None:
        return fallback
    pytest.fail(f"no {ptype} problem with a misconception in the bank")


def cli_args(opts: QuizOptions, data: Path) -> list[str]:
    args = ["--type", opts.type, "-n", str(opts.count), "--seed", str(opts.seed), "--data-dir", str(data)]
    if opts.difficulty:
        args += ["--difficulty", opts.difficulty]
    return args


# --------------------------------------------------------------------------------------------
# scripted quizzes over stdin (plain view), one per problem type


@pytest.mark.parametrize("ptype", ["mcq", "msq", "nat", "integer", "matrix"])
def test_scripted_quiz_per_type(ptype, catalogue, tmp_path):
    opts, (first, second) = find_session(catalogue, tmp_path, ptype)
    assert first.type == ptype
    mis = first.misconceptions[0] if first.misconceptions else None
    if mis is not None:
        mis_text = text_for(first.key, mis.value)
    else:  # an MSQ with one option's verdict wrong
        wrong = set(first.key.correct) ^ {0}
        mis_text = text_for(first.key, wrong or set(first.key.correct) ^ {1})
    bad = UNREADABLE[ptype]
    script = [bad, mis_text, *right_lines(second)]
    data = tmp_path / "data"
    result = CliRunner().invoke(quiz, cli_args(opts, data), input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    out = result.output
    # the unreadable answer: one message, asked again, nothing counted
    assert out.count("nothing counted; answer again") == 1
    assert out.index(f"answer> {bad}\n") < out.index("nothing counted") < out.index(f"answer> {mis_text}\n")
    # the misconception is diagnosed by id and its feedback shown
    if mis is not None:
        assert f"[{mis.id}]" in out
        assert mis.feedback in out
    assert "Worked solution:" in out  # after the wrong answer
    assert "Session over: 1 of 2 right" in out
    with ProgressStore.open(data) as store:
        rows = store.attempts()
    assert len(rows) == 1 + max(1, len(second.parts))
    assert all(r["answer"] != bad for r in rows)
    r = rows[0]
    assert (r["problem_id"], r["type"], r["answer"], r["correct"]) == (first.id, ptype, mis_text, 0)
    if mis is not None:
        assert r["misconception"] == mis.id and r["misconception_label"] == mis.label
    else:
        assert r["misconception"] is None
    assert r["seed"] == first.seed and r["family"] == first.family
    assert r["time_ms"] is not None and r["time_ms"] >= 0
    assert r["rating"] == 1  # wrong: Again
    for row in rows[1:]:
        assert row["problem_id"] == second.id and row["correct"] == 1 and row["misconception"] is None
    assert rows[-1]["rating"] in (2, 3, 4)  # right: Hard, Good or Easy by the time taken


def test_follow_through_on_a_multi_part_problem(catalogue, tmp_path):
    opts = QuizOptions(topics=("attention.by_hand",), count=1, seed=5)
    (p,) = predict(catalogue, tmp_path / "p", opts)
    a, b = p.parts[0], p.parts[1]
    assert b.follow is not None
    wrong_a = [list(row) for row in key_value(a.key)]
    wrong_a[0][0] += 1.0  # one score wrong
    ft_b = b.follow({a.label: wrong_a}).value  # what (b) is, given that (a)
    lines = [text_for(a.key, wrong_a), text_for(b.key, ft_b)]
    earlier = {a.label: wrong_a, b.label: [list(r) for r in ft_b]}
    for part in p.parts[2:]:
        k = part.follow(dict(earlier)) if part.follow is not None else part.key
        lines.append(text_for(part.key, k.value))
        earlier[part.label] = [list(r) for r in k.value]
    data = tmp_path / "data"
    args = ["--topic", "attention.by_hand", "-n", "1", "--seed", "5", "--data-dir", str(data)]
    result = CliRunner().invoke(quiz, args, input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    assert "(1,1)" in result.output  # the wrong cell of (a) is named
    with ProgressStore.open(data) as store:
        rows = store.attempts()
    assert [r["part"] for r in rows] == [pt.label for pt in p.parts]
    assert rows[0]["correct"] == 0
    for r in rows[1:]:
        assert r["correct"] == 1 and r["extra"]["status"] == "follow_through"
    assert [r["rating"] for r in rows[:-1]] == [None] * (len(rows) - 1)  # one review per problem
    assert rows[-1]["rating"] == 1  # (a) was wrong: Again


def test_commands_hint_skip_report_another(catalogue, tmp_path):
    opts = QuizOptions(type="nat", count=2, seed=2)
    first, second = predict(catalogue, tmp_path / "p", opts)
    lines = ["help", "hint", "another", "skip", "report last the key looks wrong", "quit"]
    data = tmp_path / "data"
    result = CliRunner().invoke(quiz, ["--type", "nat", "-n", "2", "--seed", "2", "--data-dir", str(data)],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "hint (:h)" in out
    assert ("Hint 1/" in out) == bool(first.hints)
    with ProgressStore.open(data) as store:
        rows = store.attempts()
        reports = store.reports()
    # 'another' replaced the first problem by a fresh variant of its family, or said it has none
    skipped_id = rows[0]["problem_id"]
    if first.family:
        assert skipped_id != first.id and skipped_id.startswith(first.family + "/")
    else:
        assert skipped_id == first.id and "no other variants" in out
    assert len(rows) == 1 and rows[0]["correct"] is None and rows[0]["answer"] is None
    assert rows[0]["extra"]["action"] == "skip" and rows[0]["rating"] == 1
    # 'report last' (typed at the next problem's prompt) is about the skipped one
    assert len(reports) == 1 and reports[0]["problem_id"] == skipped_id
    assert reports[0]["note"] == "the key looks wrong"
    lines_in_file = (data / "reports.jsonl").read_text().splitlines()
    assert json.loads(lines_in_file[-1])["problem_id"] == skipped_id


def test_end_of_input_ends_cleanly_and_bad_filters_are_one_line(tmp_path):
    result = CliRunner().invoke(quiz, ["-n", "3", "--seed", "1", "--data-dir", str(tmp_path)], input="")
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "Session over: 0 of 0 right" in result.output
    bad = subprocess.run([*_qkv(), "quiz", "--topic", "no-such-topic", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.startswith("qkv: error: no problems match --topic no-such-topic")
    assert len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------
# the import guard that picks a fast first problem


def test_import_guard_stops_a_slow_import_and_leaves_no_trace():
    import importlib

    name = "colorsys"
    sys.modules.pop(name, None)
    ok, value = without_slow_imports(lambda: importlib.import_module(name), frozenset({name}))
    assert (ok, value) == (False, None)
    assert name not in sys.modules
    assert not any(type(f).__name__ == "_ImportGuard" for f in sys.meta_path)
    ok, value = without_slow_imports(lambda: 41 + 1, frozenset({name}))
    assert (ok, value) == (True, 42)
    ok, mod = without_slow_imports(lambda: importlib.import_module(name), frozenset())
    assert ok and mod.__name__ == name


# --------------------------------------------------------------------------------------------
# subprocesses: JSON stream over a real pipe, --seed, SIGKILL, imports


class Driver:
    """A `qkv quiz --json` subprocess read event by event."""

    def __init__(self, args: list[str], home: Path):
        self.proc = subprocess.Popen([*_qkv(), "quiz", "--json", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=_env(home), bufsize=1)
        self.events: list[dict] = []

    def next(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"quiz ended early: {self.proc.stderr.read()}"
        ev = json.loads(line)
        self.events.append(ev)
        return ev

    def until(self, *names: str) -> dict:
        while True:
            ev = self.next()
            if ev["event"] in names:
                return ev

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()


def _rebuild(catalogue: Catalogue, event: dict):
    pick = (Pick("family", event["family"], event["seed"], event["difficulty"]) if event["family"]
            else Pick("item", event["id"]))
    return catalogue.build(pick)


def test_json_event_stream_over_a_pipe(catalogue, tmp_path):
    d = Driver(["-n", "2", "--seed", "11", "--data-dir", str(tmp_path)], tmp_path)
    start = d.next()
    assert start["event"] == "start" and start["count"] == 2 and start["seed"] == 11
    for _ in range(2):
        ev = d.until("problem")
        assert {"id", "type", "statement", "options", "marks", "index", "total", "parts"} <= set(ev)
        assert "key" not in ev and "answer" not in ev and "solution" not in ev  # nothing given away
        problem = _rebuild(catalogue, ev)
        assert problem.statement_text == ev["statement"]
        for line in right_lines(problem):
            d.send(line)
            ans = d.until("answer")
            assert ans["valid"] is True and ans["text"] == line and ans["problem_id"] == problem.id
            verdict = d.until("verdict")
            assert verdict["correct"] is True and verdict["problem_id"] == problem.id
            assert verdict["recorded_id"] is not None and isinstance(verdict["time_ms"], int)
    d.proc.stdin.close()
    end = d.until("end")
    assert d.proc.wait(timeout=60) == 0
    assert end["asked"] == 2 and end["correct"] == 2 and end["score"] == 2.0
    order = [e["event"] for e in d.events]
    assert order[0] == "start" and order[-1] == "end"
    assert order.index("problem") < order.index("answer") < order.index("verdict")


def _problem_ids(seed: int, home: Path) -> list[str]:
    out = subprocess.run([*_qkv(), "quiz", "--json", "-n", "3", "--seed", str(seed), "--data-dir", str(home)],
                         input="skip\nskip\nskip\n", capture_output=True, text=True, env=_env(home), timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(x)["id"] for x in out.stdout.splitlines() if json.loads(x)["event"] == "problem"]


def test_seed_reproduces_the_same_problems(tmp_path):
    one = _problem_ids(123, tmp_path / "a")
    two = _problem_ids(123, tmp_path / "b")
    other = _problem_ids(124, tmp_path / "c")
    assert len(one) == 3 and one == two
    assert other != one


def _valid_answer(event: dict) -> str:
    """A readable (not necessarily right) answer for a problem or part event."""
    if event["type"] in ("mcq", "msq"):
        return "a"
    if event["type"] == "matrix":
        rows, cols = event["shape"]
        return "; ".join(" ".join("0" for _ in range(cols)) for _ in range(rows))
    return "0"


def test_sigkill_mid_quiz_keeps_exactly_the_confirmed_answers(tmp_path):
    k = 2
    d = Driver(["-n", "5", "--seed", "7", "--data-dir", str(tmp_path)], tmp_path)
    confirmed = []
    while len(confirmed) < k:
        ev = d.until("problem", "part")
        if ev["event"] == "problem" and ev["parts"]:
            continue  # the part events come next
        d.send(_valid_answer(ev))
        confirmed.append(d.until("verdict"))
    time.sleep(0.2)  # the quiz now waits for the next answer
    d.proc.send_signal(signal.SIGKILL)
    assert d.proc.wait(timeout=30) == -signal.SIGKILL
    with ProgressStore.open(tmp_path) as store:
        rows = store.attempts()
        session = store.session(rows[0]["session_id"])
    assert session is not None and session["ended_at"] is None  # killed: never ended
    assert len(rows) == k
    assert [(r["problem_id"], r["answer"]) for r in rows] == [(v["problem_id"], v["answer"]) for v in confirmed]


_PROBE = r"""
import json, sys, tempfile
from drills.progress import ProgressStore
from drills.quiz.plan import Catalogue, QuizOptions, plan
from drills.quiz.source import without_slow_imports

# a seed whose first planned problem is built with SymPy while a later one is not
# (the guarded builds below never let SymPy load)
cat = Catalogue.load()
chosen = None
with ProgressStore.open(tempfile.mkdtemp()) as st:
    for ptype in ("nat", "matrix"):
        for seed in range(40):
            picks = plan(cat, st, QuizOptions(type=ptype, count=3, seed=seed))
            fast = [without_slow_imports(lambda p=p: cat.build(p, ptype))[0] for p in picks]
            if len(fast) > 1 and not fast[0] and any(fast[1:]):
                chosen = {"type": ptype, "seed": seed, "slow_first": picks[0].ref}
                break
        if chosen:
            break
assert "sympy" not in sys.modules and "torch" not in sys.modules
ptype, seed = (chosen["type"], chosen["seed"]) if chosen else ("nat", 3)

import drills.quiz.view as v
seen = []
orig = v.PlainView.problem
def problem(self, p, *a, **k):
    seen.append({"id": p.id, "family": p.family,
                 "heavy": sorted(m for m in ("sympy", "torch") if m in sys.modules)})
    return orig(self, p, *a, **k)
v.PlainView.problem = problem
from drills.cli import cli
code = None
try:
    cli.main(args=["quiz", "--type", ptype, "-n", "3", "--seed", str(seed), *sys.argv[1:]], prog_name="qkv")
except SystemExit as e:
    code = e.code
mods = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "sympy", "matplotlib", "rich"})
print(json.dumps({"code": code, "chosen": chosen, "first": seen[0] if seen else None, "at_exit": mods}),
      file=sys.stderr)
"""


def test_quiz_over_a_pipe_imports_no_torch_and_no_sympy_before_the_first_problem(tmp_path):
    out = subprocess.run([sys.executable, "-c", _PROBE, "--data-dir", str(tmp_path)], input="1\n" * 12,
                         capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    probe = json.loads(out.stderr.strip().splitlines()[-1])
    assert probe["code"] in (0, None), out.stderr
    assert "torch" not in probe["at_exit"]
    assert "rich" not in probe["at_exit"]  # the plain view does without it
    with ProgressStore.open(tmp_path) as store:
        assert store.count_attempts() >= 2  # answers were graded and recorded on this path
    if probe["chosen"] is None:
        pytest.skip("no seed whose first problem needs SymPy while another does not")
    # the SymPy-bound first pick was put later; the first problem shown needed neither
    first = probe["first"]
    assert first["heavy"] == [], probe
    assert (first["family"] or first["id"]) != probe["chosen"]["slow_first"], probe


def test_report_in_a_terminal_is_about_the_problem_on_screen(catalogue, tmp_path):
    """In a terminal the previous problem is reported at its pause; 'report' at the next
    problem's prompt is about that next problem."""
    import io

    from drills.quiz.session import Quiz
    from drills.quiz.view import PlainView

    opts = QuizOptions(type="nat", count=2, seed=2)
    first, second = predict(catalogue, tmp_path / "p", opts)
    view = PlainView(io.StringIO("\n".join([right_lines(first)[0], "", "report looks odd", "quit"]) + "\n"))
    view.interactive = True  # as in a terminal: a pause after each verdict
    with ProgressStore.open(tmp_path / "data") as store:
        picks = plan(catalogue, store, opts)
        source = ProblemSource(catalogue, picks, opts.type)
        Quiz(store, catalogue, source, view, opts, seed=opts.seed).run()
        reports = store.reports()
    assert [r["problem_id"] for r in reports] == [second.id]


def test_a_wrong_choice_shows_the_key_once(catalogue, tmp_path):
    """After a wrong MCQ answer, 'Accepted: (a) …' would only repeat 'Answer: (a) …'."""
    opts, (first, _) = find_session(catalogue, tmp_path, "mcq")
    wrong = next(i for i in range(len(first.options)) if i not in first.key.correct)
    result = CliRunner().invoke(quiz, cli_args(opts, tmp_path / "data"),
                                input=LETTERS[wrong] + "\nquit\n")
    assert result.exit_code == 0, result.output
    assert "Answer: (" in result.output
    assert "Accepted:" not in result.output


def test_summary_counts_a_mistake_once_by_its_label():
    """Two families that name the same mistake alike (ids no_scaling and no_sqrt_dk_scaling,
    both 'forgot to divide by √dₖ') are one line of the summary, counted twice."""
    from collections import Counter
    from types import SimpleNamespace

    from drills.quiz.view import summary_lines

    s = SimpleNamespace(correct=0, asked=2, score=0.0, marks=0.0, max_marks=2, seconds=3.0, skipped=0, revealed=0,
                        reports=0,
                        misconceptions=Counter({("no_scaling", "forgot to divide by √dₖ"): 1,
                                                ("no_sqrt_dk_scaling", "forgot to divide by √dₖ"): 1}),
                        due_next=[], seed=1)
    text = "\n".join(t for _, t in summary_lines(s))
    assert text.count("forgot to divide by √dₖ") == 1 and "(×2)" in text


def test_skipping_a_later_part_keeps_the_credit_of_earlier_parts(catalogue, tmp_path):
    """Parts (a) and (b) right, then 'skip' at (c): (c) and (d) score 0 and (a), (b) keep
    theirs, so the problem scores 2 of its n parts (2/n), i.e. 2/n of its marks. The summary,
    the header of the next problem, the stored rows, the JSON events and the review (Again:
    the problem was not known in full) all say the same."""
    opts = QuizOptions(topics=("attention.by_hand",), count=2, seed=5)
    p, _ = predict(catalogue, tmp_path / "p", opts)
    n = len(p.parts)
    assert n >= 3
    lines = right_lines(p)[:2] + ["skip", "quit"]
    args = ["--topic", "attention.by_hand", "-n", "2", "--seed", "5"]
    expected_score = 2 / n
    marks = expected_score * p.marks

    data = tmp_path / "plain"
    result = CliRunner().invoke(quiz, [*args, "--data-dir", str(data)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    shown = f"{marks:.2f}".rstrip("0").rstrip(".")
    # the next problem's header and the summary count marks: 2/n of p's marks, of p's marks
    assert f"Question 2 of 2 · score {shown}/{p.marks} marks" in result.output
    assert f"Session over: 0 of 1 right · score {shown}/{p.marks} marks" in result.output
    with ProgressStore.open(data) as store:
        rows = store.attempts()
    assert [r["part"] for r in rows] == [pt.label for pt in p.parts[:3]]
    assert [r["score"] for r in rows] == [1.0, 1.0, 0.0]
    assert rows[2]["extra"]["action"] == "skip" and rows[2]["extra"]["problem_score"] == pytest.approx(expected_score)
    assert [r["rating"] for r in rows] == [None, None, 1]  # one review, Again

    d = Driver([*args, "--data-dir", str(tmp_path / "json")], tmp_path / "json")
    for line in lines:
        d.send(line)
    d.proc.stdin.close()
    end = d.until("end")
    assert d.proc.wait(timeout=60) == 0
    skip = next(e for e in d.events if e["event"] == "skip")
    assert skip["part"] == p.parts[2].label and skip["problem_score"] == pytest.approx(expected_score)
    assert skip["marks_earned"] == pytest.approx(marks)
    second = [e for e in d.events if e["event"] == "problem"][1]
    assert second["score"] == pytest.approx(expected_score) and second["marks_scored"] == pytest.approx(marks)
    assert second["max_marks"] == p.marks
    assert end["score"] == pytest.approx(expected_score) and end["asked"] == 1 and end["skipped"] == 1
    assert end["marks"] == pytest.approx(marks) and end["max_marks"] == p.marks


def test_last_part_answered_wrong_scores_the_mean_over_parts(catalogue, tmp_path):
    """All parts but the last right, the last wrong (a zero matrix): n-1 of n parts."""
    opts = QuizOptions(topics=("attention.by_hand",), count=1, seed=5)
    (p,) = predict(catalogue, tmp_path / "p", opts)
    n = len(p.parts)
    rows_, cols = len(key_value(p.parts[-1].key)), len(key_value(p.parts[-1].key)[0])
    zero = "; ".join(" ".join(["0"] * cols) for _ in range(rows_))
    d = Driver(["--topic", "attention.by_hand", "-n", "1", "--seed", "5", "--data-dir", str(tmp_path)], tmp_path)
    for line in right_lines(p)[:-1] + [zero]:
        d.send(line)
    d.proc.stdin.close()
    end = d.until("end")
    assert d.proc.wait(timeout=60) == 0
    last = [e for e in d.events if e["event"] == "verdict"][-1]
    assert last["correct"] is False and last["problem_score"] == pytest.approx((n - 1) / n)
    assert end["score"] == pytest.approx((n - 1) / n) and end["marks"] == pytest.approx((n - 1) / n * p.marks)


@pytest.mark.parametrize("interactive", [False, True])
def test_report_is_about_the_problem_on_screen_and_report_last_the_previous(catalogue, tmp_path, interactive):
    """Piped and terminal input agree: 'report' at the first prompt of problem 2 reports
    problem 2 (plain mode has no pause after a verdict, so this used to report problem 1);
    'report last' reports problem 1, with the answer given to it; the note follows 'last'."""
    import io

    from drills.quiz.session import Quiz
    from drills.quiz.view import PlainView

    opts = QuizOptions(type="nat", count=2, seed=2)
    first, second = predict(catalogue, tmp_path / "p", opts)
    answer = right_lines(first)[0]
    pause = [""] if interactive else []  # Enter at the pause after the verdict
    script = [answer, *pause, "report this one", "report last that one", "quit"]
    view = PlainView(io.StringIO("\n".join(script) + "\n"))
    view.interactive = interactive
    with ProgressStore.open(tmp_path / "data") as store:
        picks = plan(catalogue, store, opts)
        Quiz(store, catalogue, ProblemSource(catalogue, picks, opts.type), view, opts, seed=opts.seed).run()
        reports = store.reports()
    assert [(r["problem_id"], r["note"]) for r in reports] == [(second.id, "this one"), (first.id, "that one")]
    assert reports[0]["answer"] is None and reports[1]["answer"] == answer


def test_report_last_with_nothing_before_records_nothing(catalogue, tmp_path):
    result = CliRunner().invoke(quiz, ["--type", "nat", "-n", "1", "--seed", "2", "--data-dir", str(tmp_path)],
                                input="report last\nquit\n")
    assert result.exit_code == 0, result.output
    assert "No earlier problem to report" in result.output
    with ProgressStore.open(tmp_path) as store:
        assert store.reports() == []


def test_an_answer_in_bits_is_named_and_counted_wrong(catalogue, tmp_path):
    """A KV-cache size keyed in GB (or GiB), answered as 8 × the key in Gb (Gib): the same
    amount in bits, not what was asked; the quiz says so, scores 0 and records the status."""
    opts = QuizOptions(topics=("counting.kv_cache",), count=1, seed=3)
    (p,) = predict(catalogue, tmp_path / "p", opts)
    bits_unit = {"GB": "Gb", "GiB": "Gib"}[p.key.unit]
    answer = f"{p.key.value * 8!r} {bits_unit}"
    data = tmp_path / "data"
    result = CliRunner().invoke(quiz, ["--topic", "counting.kv_cache", "-n", "1", "--seed", "3", "--data-dir", str(data)],
                                input=answer + "\n")
    assert result.exit_code == 0, result.output
    assert "you answered in bits; the key is in bytes (÷ 8)" in result.output
    with ProgressStore.open(data) as store:
        (row,) = store.attempts()
    assert row["correct"] == 0 and row["score"] == 0.0 and row["extra"]["status"] == "wrong_unit"
    assert row["answer"] == answer


@pytest.mark.parametrize("action", ["quit", "another", "eof"])
def test_leaving_a_multi_part_problem_partway_counts_its_answered_parts(catalogue, tmp_path, action):
    """Part (a) right, then 'quit', 'another' or the end of input at (b): the same as a skip at
    (b). (a) keeps its credit, (b) and the later parts score 0, so the problem scores 1 of its
    n parts (1/n of its marks); one row for (b) carries the action and the problem's score,
    the review is Again (once, on that row), and the summary, JSON events and card agree.
    (Before: the row of (a) stood alone, with no problem score and no review, and the summary
    said '0 of 0 right · score 0/0 marks'.)"""
    opts = QuizOptions(topics=("attention.by_hand",), count=2, seed=5)
    p, _ = predict(catalogue, tmp_path / "p", opts)
    n = len(p.parts)
    assert n >= 2
    leave = {"quit": ["quit"], "another": ["another", "quit"], "eof": []}[action]
    lines = right_lines(p)[:1] + leave
    args = ["--topic", "attention.by_hand", "-n", "2", "--seed", "5"]
    score = 1 / n
    marks = score * p.marks
    shown = f"{marks:.2f}".rstrip("0").rstrip(".")

    data = tmp_path / "plain"
    result = CliRunner().invoke(quiz, [*args, "--data-dir", str(data)], input="".join(ln + "\n" for ln in lines))
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"Session over: 0 of 1 right · score {shown}/{p.marks} marks" in out
    assert "1 left partway" in out and "skipped" not in out.split("Session over")[1]
    where = {"quit": "Stopped at", "another": "Left at", "eof": "Input ended at"}[action]
    assert f"{where} ({p.parts[1].label})" in out
    assert "it and the parts after it score 0; earlier parts keep their credit" in out
    if action == "another":  # the fresh variant's header already counts the problem left
        assert f"Question 1 of 2 · score {shown}/{p.marks} marks" in out
    with ProgressStore.open(data) as store:
        rows = store.attempts()
        card = store.cards()[("family", p.family)]
    assert [(r["problem_id"], r["part"]) for r in rows] == [(p.id, p.parts[0].label), (p.id, p.parts[1].label)]
    assert [r["score"] for r in rows] == [1.0, 0.0] and rows[1]["answer"] is None and rows[1]["correct"] is None
    assert rows[1]["extra"]["action"] == action and rows[1]["extra"]["problem_score"] == pytest.approx(score)
    assert [r["rating"] for r in rows] == [None, 1]  # one review, Again
    assert card.reps == 1

    d = Driver([*args, "--data-dir", str(tmp_path / "json")], tmp_path / "json")
    for line in lines:
        d.send(line)
    d.proc.stdin.close()
    end = d.until("end")
    assert d.proc.wait(timeout=60) == 0
    (left,) = [e for e in d.events if e["event"] == "skip"]
    assert left["action"] == action and left["part"] == p.parts[1].label
    assert left["problem_score"] == pytest.approx(score) and left["marks_earned"] == pytest.approx(marks)
    assert end["asked"] == 1 and end["unfinished"] == 1 and end["skipped"] == 0
    assert end["score"] == pytest.approx(score) and end["marks"] == pytest.approx(marks)
    assert end["max_marks"] == p.marks
    with ProgressStore.open(tmp_path / "json") as store:  # the session row counts marks too
        session = store.session(end["session_id"])
    assert session["score"] == pytest.approx(marks) and session["max_score"] == p.marks


def test_another_on_a_curated_multi_part_item_stays_on_the_part(catalogue, tmp_path):
    """A curated item has no other variants: 'another' at part (b) says so and (b) is asked
    again (it used to start the item over at part (a), dropping the answer to (a))."""
    iid = "000.code.scaling_demo"
    p = catalogue.build(Pick("item", iid))
    assert len(p.parts) >= 2 and not p.family
    lines = right_lines(p)[:1] + ["another"] + right_lines(p)[1:]
    data = tmp_path / "data"
    result = CliRunner().invoke(quiz, ["--topic", iid, "-n", "1", "--seed", "1", "--data-dir", str(data)],
                                input="".join(ln + "\n" for ln in lines))
    assert result.exit_code == 0, result.output
    assert "no other variants" in result.output
    assert "Session over: 1 of 1 right" in result.output
    with ProgressStore.open(data) as store:
        rows = store.attempts()
    assert [r["part"] for r in rows] == [pt.label for pt in p.parts]
    assert all(r["correct"] == 1 for r in rows)


def test_a_quiz_says_when_the_filters_leave_fewer_problems_than_asked(tmp_path):
    """`-n 3` on a filter that one curated item matches runs one question, and says so."""
    res = CliRunner().invoke(quiz, ["--topic", "004.ex.a5", "-n", "3", "--plain", "--data-dir", str(tmp_path)], input="")
    assert res.exit_code == 0
    assert "1 question (only 1 matches the filters, 3 asked)" in res.output


_NUMPY_PROBE = r"""
import json, sys
import drills.quiz.view as v
seen = []
orig = v.PlainView.problem
def problem(self, p, *a, **k):
    seen.append({"id": p.id, "numpy": "numpy" in sys.modules})
    return orig(self, p, *a, **k)
v.PlainView.problem = problem
from drills.cli import cli
try:
    cli.main(args=["quiz", "-n", "3", *sys.argv[1:]], prog_name="qkv")
except SystemExit:
    pass
print(json.dumps(seen[0] if seen else None), file=sys.stderr)
"""


@pytest.mark.parametrize("seed", [1, 7, 9, 15, 17, 19])
def test_the_first_question_is_on_screen_before_numpy_is_imported(tmp_path, seed):
    """The quiz's first question is one drawn without NumPy when the plan's first few offer one
    (:data:`drills.quiz.source.SLOW_MODULES`): it is then on screen in less time than ``import numpy``
    alone takes (bench/quiz_startup.py). When this was written, seeds 9, 15, 17 and 19 planned first a
    problem whose draw imports NumPy (a curated item built with it, concept.encoder_decoder), and
    the quiz showed it first."""
    out = subprocess.run([sys.executable, "-c", _NUMPY_PROBE, "--seed", str(seed), "--data-dir", str(tmp_path)],
                         input="quit\n", capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    first = json.loads(out.stderr.strip().splitlines()[-1])
    assert first is not None, out.stderr
    assert first["numpy"] is False, first
