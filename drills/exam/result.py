"""Marking a sat exam with GATE's rules (:mod:`drills.exam.marking`) through the one judge, and
storing every question as an attempt in the progress database."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from drills.exam.marking import NotOnPaper, paper_marks, paper_type

if TYPE_CHECKING:
    from drills.answers import Answer as Response
    from drills.exam.session import Exam
    from drills.progress import ProgressStore
    from question_bank.grading import Verdict
    from question_bank.problem import Problem


@dataclass(frozen=True)
class QuestionResult:
    number: int
    problem: Problem
    paper_type: str  # mcq | msq | nat
    marks: int  # the question's marks
    response: Response | None
    verdict: Verdict  # question_bank.grading.Verdict, None when unanswered
    outcome: str  # correct | partial (a blueprint's partial credit) | wrong | unanswered
    awarded: Fraction  # signed
    negative: Fraction  # ≥ 0
    seconds: float
    marked: bool
    status: str  # palette status at the end
    changes: int

    def to_json(self) -> dict[str, Any]:
        from question_bank.grading import describe_key
        from question_bank.problem import key_value

        p = self.problem
        v = self.verdict
        return {
            "number": self.number, "id": p.id, "family": p.family, "seed": p.seed, "topic": p.topic,
            "type": p.type, "paper_type": self.paper_type, "marks": self.marks,
            "answer": None if self.response is None else self.response.text,
            "parsed": None if self.response is None else self.response.parsed,
            "outcome": self.outcome, "awarded": float(self.awarded), "negative": float(self.negative),
            "status": None if v is None else v.status, "message": None if v is None else v.message,
            "misconception": None if v is None or v.misconception is None else
            {"id": v.misconception.id, "label": v.misconception.label, "feedback": v.misconception.feedback},
            "key": describe_key(p.key, p.options_text or None), "answer_key": key_value(p.key),
            "seconds": self.seconds, "marked": self.marked, "palette": self.status, "changes": self.changes,
            "solution": p.solution_text,
        }


@dataclass(frozen=True)
class ExamResult:
    questions: tuple[QuestionResult, ...]
    reason: str  # submitted | time | end of input
    elapsed_s: float
    duration_s: float
    seed: int
    topics: tuple[str, ...] = ()
    session_id: str | None = field(default=None, compare=False)
    sections: tuple[str, ...] = ()  # per question, on a blueprint's paper (issue 26)
    blueprint: str = ""
    partial: tuple[str, ...] = ()  # the GATE types that earned partial credit (a blueprint's, issue 41)

    def breakdown(self, by: str) -> dict[str, dict[str, Any]]:
        """Per section (``by="section"``) or topic (``"topic"``): score (exact, negative marks
        subtracted), maximum, right / partial / wrong / unanswered, and the seconds spent, in paper
        order."""
        out: dict[str, dict[str, Any]] = {}
        for i, q in enumerate(self.questions):
            name = (self.sections[i] if i < len(self.sections) else "") if by == "section" else q.problem.topic
            row = out.setdefault(name, {"score": Fraction(0), "max": 0, "correct": 0, "partial": 0, "wrong": 0,
                                        "unanswered": 0, "questions": 0, "seconds": 0.0})
            row["score"] += q.awarded
            row["max"] += q.marks
            row[q.outcome] += 1
            row["questions"] += 1
            row["seconds"] += q.seconds
        return out

    @property
    def score(self) -> Fraction:
        """Marks obtained, negative marks subtracted (exact)."""
        return sum((q.awarded for q in self.questions), Fraction(0))

    @property
    def max_score(self) -> int:
        return sum(q.marks for q in self.questions)

    @property
    def negative(self) -> Fraction:
        """Marks lost to negative marking (≥ 0)."""
        return sum((q.negative for q in self.questions), Fraction(0))

    def tally(self) -> dict[str, int]:
        out = {"correct": 0, "partial": 0, "wrong": 0, "unanswered": 0}
        for q in self.questions:
            out[q.outcome] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "score": float(self.score), "max_score": self.max_score, "negative": float(self.negative),
            "positive": float(self.score + self.negative), "reason": self.reason, "elapsed_s": self.elapsed_s,
            "duration_s": self.duration_s, "seed": self.seed, "topics": list(self.topics),
            **self.tally(), "session_id": self.session_id,
            "questions": [q.to_json() | ({"section": self.sections[i]} if self.sections else {})
                          for i, q in enumerate(self.questions)],
            "by_topic": {k: v | {"score": float(v["score"])} for k, v in self.breakdown("topic").items()},
            # "partial" is the count of partly right answers (beside correct, wrong, unanswered);
            # "partial_credit" the types the blueprint gives partial credit (its ``partial``)
            **({"blueprint": self.blueprint, "partial_credit": list(self.partial),
                "by_section": {k: v | {"score": float(v["score"])} for k, v in self.breakdown("section").items()}}
               if self.sections else {}),
        }


def mark_exam(exam: Exam, reason: str, elapsed: float) -> ExamResult:
    """Grade every response with the one judge and mark it with
    :func:`drills.exam.marking.paper_marks`, the rule ``qkv grade`` marks a class's answers with:
    GATE's, or the paper's blueprint's penalties (issue 26) and partial credit (issue 41)."""
    from question_bank.grading import grade

    paper = exam.paper
    out = []
    for q in exam.questions:
        p = q.problem
        verdict = None
        chosen = None
        if q.response is None:
            outcome = "unanswered"
        else:
            verdict = grade(p, q.response.value, written=q.response.written, unit=q.response.unit)
            outcome = "correct" if verdict.correct else "wrong"
            if p.type in ("mcq", "msq"):
                chosen = frozenset(getattr(q.response.parsed, "indices", ()))
        try:
            m = paper_marks(p.type, p.marks, outcome, paper.penalties, paper.partial, chosen,
                            getattr(p.key, "correct", None))
        except NotOnPaper as e:  # assemble_paper never puts one there
            raise AssertionError(str(e)) from None
        out.append(QuestionResult(
            number=q.number, problem=p, paper_type=paper_type(p.type), marks=p.marks, response=q.response,
            verdict=verdict, outcome=m.outcome, awarded=m.awarded, negative=m.negative, seconds=q.seconds,
            marked=q.marked, status=q.status, changes=q.changes))
    return ExamResult(questions=tuple(out), reason=reason, elapsed_s=elapsed, duration_s=exam.duration_s,
                      seed=paper.seed, topics=paper.topics, sections=paper.sections,
                      blueprint=paper.blueprint, partial=paper.partial)


def record(store: ProgressStore, session_id: str, result: ExamResult) -> None:
    """Store every question of a marked exam as an attempt of mode ``exam`` (``score`` = marks
    awarded, signed; ``marks`` = the question's marks; ``negative`` = marks lost), and close the
    session with the score, the maximum and the negative marks. Answered questions update the
    review card of their family or item; unanswered ones are stored without a review. Questions
    already stored for this session (a submission cut short by a kill) are not stored twice."""
    done = store.recorded_numbers(session_id)
    for q in result.questions:
        if q.number in done:
            continue
        p = q.problem
        v = q.verdict
        store.record_attempt(
            problem_id=p.id, mode="exam", session_id=session_id, family=p.family, seed=p.seed, topic=p.topic,
            type=p.type, answer=None if q.response is None else q.response.text,
            parsed=None if q.response is None else q.response.parsed,
            correct=None if q.outcome == "unanswered" else q.outcome == "correct",  # partial: not right
            score=float(q.awarded), marks=float(q.marks), negative=float(q.negative),
            time_ms=round(q.seconds * 1000),
            misconception=None if v is None or v.misconception is None else v.misconception.id,
            misconception_label=None if v is None or v.misconception is None else v.misconception.label,
            review=q.response is not None,
            extra={"number": q.number, "paper_type": q.paper_type, "outcome": q.outcome, "marked": q.marked,
                   "palette": q.status, "status": None if v is None else v.status, "changes": q.changes},
        )
    t = result.tally()
    store.end_session(session_id, score=float(result.score), max_score=float(result.max_score),
                      negative=float(result.negative),
                      summary={"reason": result.reason, "elapsed_s": result.elapsed_s,
                               "duration_s": result.duration_s, "seed": result.seed, **t,
                               "score_exact": f"{result.score.numerator}/{result.score.denominator}"})
