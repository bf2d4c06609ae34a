"""Commands at the quiz prompt (``hint``, ``:s``, ``report last typo``); a bare letter is an answer."""

from __future__ import annotations

from dataclasses import dataclass

from drills.answers.errors import AnswerParseError


@dataclass(frozen=True)
class Command:
    """A quiz command typed at the prompt; ``arg`` is the rest of the line (a report's note)."""

    name: str  # hint | skip | solution | another | quit | report | help
    arg: str = ""



# --------------------------------------------------------------------------------------------
# commands

_COMMAND_WORDS = {
    "hint": "hint", "skip": "skip", "next": "skip", "pass": "skip",
    "solution": "solution", "show": "solution", "another": "another", "new": "another",
    "quit": "quit", "exit": "quit", "report": "report", "help": "help", "?": "help",
}
_COMMAND_SHORT = {"h": "hint", "s": "skip", "w": "solution", "a": "another", "q": "quit", "r": "report",
                  "?": "help"}
COMMAND_HELP = (
    "hint (:h)   skip (:s)   solution (:w)   another (:a)   report [last] [note] (:r)   quit (:q)   help (:?)"
)
REPORT_HELP = "report: dispute the key of the problem on screen; report last: of the previous problem"


def parse_command(text: str, letters_are_answers: bool = True) -> Command | None:
    """The quiz command in ``text``, or ``None`` when it is an answer.

    Commands are full words or ``:`` and one letter (table in the module docstring). A bare
    letter is an answer while ``letters_are_answers`` (MCQ/MSQ); for number and matrix
    problems pass ``False`` and the bare shortcuts ``h s w a q r`` are commands too."""
    if not isinstance(text, str):
        return None
    raw = text.strip()
    if not raw:
        return None
    head, _, rest = raw.partition(" ")
    word = head.lower()
    if word.startswith(":") and len(word) >= 2:
        name = _COMMAND_SHORT.get(word[1:]) or _COMMAND_WORDS.get(word[1:])
        if name is None:
            raise AnswerParseError(f"unknown command {head!r}; commands: {COMMAND_HELP}")
        return Command(name, rest.strip() if name == "report" else "")
    name = _COMMAND_WORDS.get(word)
    if name is None and not letters_are_answers and len(word) == 1:
        name = _COMMAND_SHORT.get(word)
    if name is None:
        return None
    if rest.strip() and name != "report":
        return None  # "show 3" is not a command; the answer parser says why
    return Command(name, rest.strip())


