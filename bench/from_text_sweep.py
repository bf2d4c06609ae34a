"""The from-text audits over many seeds: draws checked and disagreements found.

Each test file ``tests/question_bank/families/test_from_text_<module>.py`` checks a fixed block of seeds and a
few drawn by Hypothesis; this script runs the same audits (and, with ``--mistakes``, the named-mistake checks)
over a wider sweep, by default seeds 0..299 and 70,000..70,299 at every level, and prints one line per family and
level with the first disagreements in full (``tests.question_bank.families.from_text_audit.sweep``, the same
runner as ``python -m tests.question_bank.families.test_from_text_<module>``). Run it as

    .venv/bin/python bench/from_text_sweep.py                       # the kernel modules, 600 seeds per level
    .venv/bin/python bench/from_text_sweep.py positional scaling -n 100
    .venv/bin/python bench/from_text_sweep.py --mistakes
    .venv/bin/python bench/from_text_sweep.py all -n 20             # every audit file

The default sweep takes a few minutes on two cores (40,800 draws; the run of 2026-11-29 found no disagreement),
most of it in the attention families, which draw with exact (SymPy) arithmetic.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODULES = ("attention", "heads", "scaling", "normalisation", "positional", "positional_relative", "loss_sampling",
           "pretraining", "complexity")
#: every audit file (test_from_text_audit.py tests the shared module itself)
ALL = tuple(sorted({p.stem.removeprefix("test_from_text_")
                   for p in (ROOT / "tests/question_bank/families").glob("test_from_text_*.py")} - {"audit"}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", default=list(MODULES), help=f"from {', '.join(ALL)}, or all")
    ap.add_argument("-n", type=int, default=300, help="seeds per window and level (two windows: 0.. and 70,000..)")
    ap.add_argument("--mistakes", action="store_true", help="check the named mistakes instead of the keys")
    args = ap.parse_args(argv)
    from tests.question_bank.families.from_text_audit import sweep

    names = ALL if args.modules == ["all"] else args.modules
    unknown = sorted(set(names) - set(ALL))
    if unknown:
        ap.error(f"no audit file for {', '.join(unknown)}")
    seeds = [*range(args.n), *range(70_000, 70_000 + args.n)]
    found = 0
    for name in names:
        audit = importlib.import_module(f"tests.question_bank.families.test_from_text_{name}").AUDIT
        found += sweep(audit.recompute, audit.fids, mistakes=audit.mistakes if args.mistakes else None, seeds=seeds,
                       keys=not args.mistakes)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
