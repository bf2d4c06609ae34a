"""Run a fixed list of qkv commands and record, or compare, their exact output.

A reorganisation of the code must leave every command's output byte-identical. Record the
outputs before the change and compare after it:

    .venv/bin/python bench/same_output.py record /tmp/before
    ... move modules ...
    .venv/bin/python bench/same_output.py compare /tmp/before

Session ids and measured times are masked (``VOLATILE``). Each command runs as ``python -m drills ...`` from the repository root in a fresh, empty data
directory (``QKV_HOME``), so progress on this machine never leaks into the output. What is
recorded per command: exit status, stdout, stderr and the files it wrote (a sheet's ``-o {out}.md``). ``compare`` prints the commands whose output
differs (with the first differing line) and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ATT = ["--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1", "--v", "1 0; 0 1; 0.5 0.5"]

# (name, arguments after `qkv`, standard input or None)
COMMANDS: list[tuple[str, list[str], str | None]] = [
    ("help", ["--help"], None),
    ("solve-help", ["solve", "--help"], None),
    ("solve-attention", ["solve", "attention", *ATT], None),
    ("solve-attention-exact", ["solve", "attention", *ATT, "--exact"], None),
    ("solve-attention-json", ["solve", "attention", *ATT, "--json"], None),
    ("solve-softmax", ["solve", "softmax", "--x", "1 2 3"], None),
    ("solve-layernorm", ["solve", "layernorm", "--x", "1 2 3 4"], None),
    ("solve-rmsnorm", ["solve", "rmsnorm", "--x", "1 2 3 4"], None),
    ("solve-pe", ["solve", "pe", "--pos", "3", "--d-model", "8"], None),
    ("solve-rope", ["solve", "rope", "--x", "1 0 0 1", "--pos", "2"], None),
    ("solve-params-bert", ["solve", "params", "--preset", "bert-base"], None),
    ("solve-params-llama-json", ["solve", "params", "--preset", "llama2-7b", "--json"], None),
    ("solve-params-explain", ["solve", "params", "--preset", "gpt2", "--explain"], None),
    ("solve-flops", ["solve", "flops", "--preset", "gpt2", "--seq", "1024", "--batch", "1"], None),
    ("solve-memory-kv", ["solve", "memory", "--preset", "mistral-7b", "--what", "kv-cache", "--seq", "16384", "--batch", "1", "--dtype", "bf16"], None),
    ("solve-memory-train", ["solve", "memory", "--preset", "gpt2", "--what", "training"], None),
    ("solve-matmul", ["solve", "matmul", "-B", "256", "-D", "4096", "-F", "4096", "--hw", "h100"], None),
    ("solve-roofline", ["solve", "roofline", "--hw", "h100", "--explain"], None),
    ("solve-decode", ["solve", "decode", "--preset", "llama2-7b", "--hw", "h100", "--batch", "8", "--context", "4096"], None),
    ("solve-prefill", ["solve", "prefill", "--preset", "llama2-7b", "--hw", "h100", "-T", "2048"], None),
    ("solve-train", ["solve", "train", "--preset", "llama2-7b", "--hw", "h100", "--tokens", "1e12", "--chips", "1024"], None),
    ("solve-zero", ["solve", "zero", "-N", "7.5e9", "--gpus", "64", "--stage", "3", "--hw", "h100"], None),
    ("solve-chips", ["solve", "chips", "--preset", "llama2-70b", "--hw", "h100"], None),
    ("solve-allreduce", ["solve", "allreduce", "-S", "1GB", "-n", "8", "--link", "nvlink4", "--explain"], None),
    ("solve-pipeline", ["solve", "pipeline", "--stages", "4", "--microbatches", "8"], None),
    ("solve-serve", ["solve", "serve", "--preset", "llama2-7b", "--hw", "h100", "-S", "4096", "--json"], None),
    ("solve-compute-optimal", ["solve", "compute-optimal", "-C", "1e23"], None),
    ("solve-speculative", ["solve", "speculative", "-g", "4", "-a", "0.8"], None),
    ("solve-bad-input", ["solve", "attention", "--q", "1 0; 0 1", "--k", "1 0 0", "--v", "1; 2"], None),
    ("check-attention", ["check", "attention", *ATT, "--scores", "1 0 1; 0 1 1; 1 1 2",
                         "--output", "0.602 0.399; 0.399 0.602; 0.500 0.500"], None),
    ("check-params", ["check", "params", "--preset", "bert-base", "--answer", "110M"], None),
    ("check-kv", ["check", "kv-cache", "--preset", "llama2-7b", "--answer", "2 GiB", "--batch", "1", "--seq", "4096", "--dtype", "fp16"], None),
    ("models-list", ["models", "list"], None),
    ("models-show", ["models", "show", "deepseek-v2-lite"], None),
    ("models-verify-meta", ["models", "verify", "--device", "meta", "gpt2"], None),
    ("hw-list", ["hw", "list"], None),
    ("hw-show", ["hw", "show", "h100"], None),
    ("bank-list-json", ["bank", "list", "--json"], None),
    ("bank-show-family", ["bank", "show", "attention.by_hand/hard/838475"], None),
    ("bank-show-seed", ["bank", "show", "hardware.matmul_bound", "--seed", "3", "--difficulty", "medium"], None),
    ("bank-errata", ["bank", "errata"], None),
    ("quiz-plain", ["quiz", "--topic", "attention", "--seed", "24", "-n", "3", "--plain"],
     "1.61\n0.38\n1 0 1; 0 1 1; 1 1 2\n1 0 1; 0 1 1; 1 1 2\n0.422 0.155 0.422; 0.155 0.422 0.422; 0.212 0.212 0.576\n"
     "0.633 0.366; 0.366 0.633; 0.5 0.5\n"),
    ("quiz-json", ["quiz", "--topic", "counting", "--seed", "5", "-n", "2", "--json"], "100\nskip\n"),
    ("sheet-md", ["sheet", "--topic", "attention", "-n", "4", "--seed", "4", "--format", "md", "-o", "{out}.md"], None),
    ("sheet-json", ["sheet", "-n", "6", "--seed", "9", "--format", "json", "-o", "{out}.json"], None),
]


# What legitimately changes from run to run: a session's random id and measured times.
VOLATILE = [(re.compile(r"[0-9a-f]{32}"), "<id>"), (re.compile(r'"(elapsed|seconds|time)_?s?": [0-9.e-]+'), r'"\1": <t>'),
            (re.compile(r"\b\d+\.\d+ +OK\b"), "<s> OK"), (re.compile(r"\b\d+ s\b"), "<n> s"),
            (re.compile(r'"time_ms": \d+'), '"time_ms": <t>'), (re.compile(r"\d{4}-\d\d-\d\dT[0-9:.+]+"), "<date>")]


def steady(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def run_all() -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name, args, stdin in COMMANDS:
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "QKV_HOME": home, "COLUMNS": "100", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
            env.pop("CI", None)
            out = str(Path(home) / "out")
            argv = [a.replace("{out}", out) for a in args]
            proc = subprocess.run([sys.executable, "-m", "drills", *argv], input=stdin, capture_output=True,
                                  text=True, env=env, cwd=ROOT, timeout=300)
            files = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(home).glob("out*"))}
        results[name] = {"args": args, "rc": proc.returncode, "stdout": steady(proc.stdout.replace(home, "$QKV_HOME")),
                         "stderr": proc.stderr.replace(home, "$QKV_HOME"), "files": files}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument("folder", type=Path, help="where the recorded outputs are kept")
    args = parser.parse_args()
    now = run_all()
    snapshot = args.folder / "outputs.json"
    if args.action == "record":
        args.folder.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(json.dumps(now, indent=1, ensure_ascii=False), encoding="utf-8")
        digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()[:16]
        print(f"recorded {len(now)} commands to {snapshot} (sha256 {digest})")
        return 0
    before = json.loads(snapshot.read_text(encoding="utf-8"))
    differ = 0
    for name, rec in before.items():
        cur = now.get(name)
        if cur == rec:
            continue
        differ += 1
        for field in ("rc", "stdout", "stderr", "files"):
            if cur is None or cur[field] != rec[field]:
                a = str(rec[field]).splitlines()
                b = str(cur[field]).splitlines() if cur else []
                i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                print(f"DIFFERS {name} [{field}] line {i + 1}:\n  before: {a[i] if i < len(a) else '<end>'}\n"
                      f"  after : {b[i] if i < len(b) else '<end>'}")
                break
    print(f"{len(before) - differ} of {len(before)} commands byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
