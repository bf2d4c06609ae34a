"""Start-up stays light: the help/version paths import none of torch, sympy, matplotlib.

Each check runs in a fresh interpreter (a subprocess), runs the command the way the console
script does (``drills.cli.main`` with the given argv), and lists the heavy packages that
ended up in ``sys.modules``.
"""

import json
import subprocess
import sys

import pytest

HEAVY = ["torch", "sympy", "matplotlib"]

PROBE = """
import json, sys
argv, heavy = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
if argv is not None:
    sys.argv = ["qkv", *argv]
    from drills.cli import main
    try:
        main()
    except SystemExit:
        pass
else:
    import drills.cli  # noqa: F401
loaded = sorted({m.split(".")[0] for m in sys.modules} & heavy)
print("\\nLOADED=" + json.dumps(loaded))
"""


def heavy_loaded(argv, heavy=HEAVY):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(heavy)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    line = [s for s in out.splitlines() if s.startswith("LOADED=")][-1]
    return json.loads(line[len("LOADED="):])


@pytest.mark.parametrize(
    "argv",
    [None, ["--help"], ["--version"], ["solve", "--help"], ["solve", "attention", "--help"]],
    ids=["import drills.cli", "qkv --help", "qkv --version", "qkv solve --help", "qkv solve attention --help"],
)
def test_help_paths_import_no_heavy_module(argv):
    assert heavy_loaded(argv, HEAVY + ["numpy"]) == []


def test_float_solve_needs_neither_sympy_nor_torch():
    argv = ["solve", "attention", "--q", "1 0", "--k", "1 0; 0 1", "--v", "1; 2", "--json"]
    assert heavy_loaded(argv) == []


def test_probe_can_see_a_heavy_import():
    """The probe is able to fail: --exact does load sympy."""
    argv = ["solve", "softmax", "--x", "1 2", "--exact", "--json"]
    assert heavy_loaded(argv) == ["sympy"]


def test_bench_reports_ratio():
    out = subprocess.run(
        [sys.executable, "bench/startup.py", "--reps", "3"], capture_output=True, text=True, timeout=120,
    )
    assert "ratio" in out.stdout and "import drills.cli loads: none" in out.stdout, out.stdout + out.stderr
