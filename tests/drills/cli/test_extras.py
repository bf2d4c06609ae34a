"""The light install (issue 29): without torch (and matplotlib) the quiz, ``solve``, ``sheet``
work, and the commands that need torch say in one line which extra to install.

A fresh interpreter gets a ``sitecustomize`` that puts a blocker first on ``sys.meta_path``: any
import of ``torch`` or ``matplotlib`` fails as it would where they are not installed. (Where a
real venv without them is at hand, bench/readme_figures.py --fresh-venv measures that install.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

BLOCKER = '''
import sys

class _Missing:
    """Behave as if these packages were not installed."""
    blocked = ("torch", "matplotlib")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
'''

PROBE = """
import json, sys
sys.argv = ["qkv", *json.loads(sys.argv[1])]
from drills.cli import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
mods = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "matplotlib"})
print("PROBE=" + json.dumps({"code": code, "loaded": mods}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("site")
    (d / "sitecustomize.py").write_text(BLOCKER)
    return d


def qkv(site: Path, home: Path, *argv: str, stdin: str = "", blocked: bool = True) -> tuple[int, list, str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(([str(site)] if blocked else []) + [str(REPO), env.get("PYTHONPATH", "")])
    env["QKV_HOME"] = str(home)
    env.pop("QKV_DEBUG", None)
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(argv))], input=stdin, capture_output=True,
                         text=True, env=env, timeout=120, cwd=home)
    probe = json.loads([s for s in out.stderr.splitlines() if s.startswith("PROBE=")][-1][len("PROBE="):])
    err = "\n".join(s for s in out.stderr.splitlines() if not s.startswith("PROBE="))
    return probe["code"] or 0, probe["loaded"], out.stdout, err


def test_the_blocker_blocks(site, tmp_path):
    """The check is able to fail: with the blocker, importing torch fails; without it, it succeeds."""
    env = dict(os.environ, PYTHONPATH=str(site))
    blocked = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert blocked.returncode != 0 and "No module named 'torch'" in blocked.stderr


@pytest.mark.slow
def test_models_verify_and_measure_name_the_extra(site, tmp_path):
    for argv in (["models", "verify", "gpt2"], ["measure", "matmul"]):
        code, _, out, err = qkv(site, tmp_path, *argv)
        assert code == 2, (argv, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err
        assert "needs torch" in lines[0] and "pip install 'qkv[torch]'" in lines[0]


@pytest.mark.slow
def test_light_commands_work_without_torch_or_matplotlib(site, tmp_path):
    code, loaded, out, err = qkv(site, tmp_path, "solve", "params", "--preset", "llama2-7b")
    assert code == 0, err
    assert "6,738,415,616" in out and loaded == []
    code, loaded, out, err = qkv(site, tmp_path, "quiz", "-n", "3", "--seed", "3", "--plain", stdin="1\n" * 6)
    assert code == 0, err
    assert "Session over" in out and loaded == []
    code, loaded, out, err = qkv(site, tmp_path, "sheet", "-n", "3", "--seed", "1", "-o", "x.pdf")
    assert code == 0, err
    assert (tmp_path / "x.pdf").read_bytes()[:5] == b"%PDF-" and loaded == []


@pytest.mark.slow
def test_plot_file_names_the_plot_extra_and_the_sketch_needs_nothing(site, tmp_path):
    code, _, out, err = qkv(site, tmp_path, "solve", "roofline", "--hw", "h100", "--plot", "r.png")
    assert code == 2 and "pip install 'qkv[plot]'" in err and len(err.strip().splitlines()) == 1
    code, loaded, out, err = qkv(site, tmp_path, "solve", "roofline", "--hw", "h100", "--plot", "-")
    assert code == 0 and "ridge" in out and loaded == []


@pytest.mark.parametrize("argv", [["--help"], ["solve", "pipeline", "-p", "4", "-m", "8"],
                                  ["quiz", "-n", "2", "--seed", "5", "--plain"]])
def test_cli_and_quiz_import_neither_matplotlib_nor_torch(tmp_path, argv):
    """With both installed (no blocker), the CLI and a quiz session still leave them unimported."""
    code, loaded, out, err = qkv(Path("/nonexistent"), tmp_path, *argv, stdin="1\n" * 4, blocked=False)
    assert code == 0, err
    assert loaded == []


def test_import_drills_cli_loads_neither(tmp_path):
    out = subprocess.run([sys.executable, "-c", "import sys, drills.cli; "
                          "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'matplotlib'}))"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
