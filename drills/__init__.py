"""qkv's user-facing side: the command line, the quiz, the checker, sheets and progress.

Nothing here knows a formula: every number comes from ``solver`` (directly or through
``question_bank``). Heavy libraries (torch, sympy, matplotlib) are imported inside the
commands that need them, so that ``qkv --help`` and ``qkv quiz`` start quickly.
"""

__version__ = "0.1.0"
