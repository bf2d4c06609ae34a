"""The cyclic garbage collector is held off during start-up only (drills.cli.main): importing
drills.cli leaves it as it was, every command but the quiz runs with it on, and the quiz turns it
back on once its first question is on screen. Each check runs ``main()`` in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json, sys
seen = []
{patch}
sys.argv = ["qkv", *json.loads(sys.argv[1])]
from drills.cli import main
try:
    main()
except SystemExit:
    pass
print("\\nSEEN=" + json.dumps({{"seen": seen, "after": gc.isenabled()}}))
"""


def _run(patch: str, argv: list[str], stdin: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(patch=patch), json.dumps(argv)], input=stdin,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out.split("SEEN=")[-1])


def test_importing_the_cli_leaves_the_collector_as_it_was():
    code = "import gc; import drills.cli; a = gc.isenabled(); gc.disable(); import importlib, drills.cli as m; " \
           "importlib.reload(m); print(a, gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["True", "False"]


def test_a_command_runs_with_the_collector_on(tmp_path):
    patch = ("from drills.cli import progress\ncb = progress.stats.callback\n"
             "def probe(*a, **k):\n    seen.append(gc.isenabled())\n    return cb(*a, **k)\n"
             "progress.stats.callback = probe")
    got = _run(patch, ["stats", "--data-dir", str(tmp_path)])
    assert got == {"seen": [True], "after": True}


def test_the_quiz_turns_it_on_at_its_first_question(tmp_path):
    """Off while the first question is prepared and shown, on from then on (the second question)."""
    patch = ("from drills.quiz import view\nshow = view.PlainView.problem\n"
             "def probe(self, *a, **k):\n    seen.append(gc.isenabled())\n    return show(self, *a, **k)\n"
             "view.PlainView.problem = probe")
    got = _run(patch, ["quiz", "--seed", "3", "-n", "2", "--plain", "--data-dir", str(tmp_path)], "skip\nskip\n")
    assert got == {"seen": [False, True], "after": True}
