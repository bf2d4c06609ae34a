"""The from-text audits of the kernel families over many seeds: draws checked and disagreements found.

The test files ``tests/question_bank/families/test_from_text_<module>.py`` (attention, heads, scaling,
normalisation, positional, positional_relative, loss_sampling, pretraining, complexity) check a fixed block
of seeds and a few drawn by Hypothesis; this script runs the same audits (and, with ``--mistakes``, the
named-mistake checks) over a wider sweep, by default seeds 0..299 and 70,000..70,299 at every level, and
prints one line per family with the first disagreements in full. Run it as

    .venv/bin/python bench/from_text_sweep.py                       # every module, 600 seeds per level
    .venv/bin/python bench/from_text_sweep.py positional scaling -n 100
    .venv/bin/python bench/from_text_sweep.py --mistakes

The whole sweep takes a few minutes on two cores (40,800 draws; the run of 2026-11-29 found no
disagreement), most of it in the attention families, which draw with exact (SymPy) arithmetic.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODULES = ("attention", "heads", "scaling", "normalisation", "positional", "positional_relative", "loss_sampling",
           "pretraining", "complexity")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", default=list(MODULES), help=f"from {', '.join(MODULES)}")
    ap.add_argument("-n", type=int, default=300, help="seeds per window and level (two windows: 0.. and 70,000..)")
    ap.add_argument("--mistakes", action="store_true", help="check the named mistakes instead of the keys")
    args = ap.parse_args(argv)
    from question_bank.family import FAMILIES
    from tests.question_bank.families.from_text_kernels import audit_all, mistakes_all

    seeds = [*range(args.n), *range(70_000, 70_000 + args.n)]
    total = found = 0
    for name in args.modules:
        mod = importlib.import_module(f"tests.question_bank.families.test_from_text_{name}")
        table = getattr(mod, "MISTAKES", {}) if args.mistakes else mod.AUDITS
        for fid, check in table.items():
            t0 = time.perf_counter()
            n = len(FAMILIES[fid].levels) * len(seeds)
            lines = mistakes_all(fid, check, seeds) if args.mistakes else audit_all(fid, check, seeds)
            total, found = total + n, found + len(lines)
            print(f"{fid}: {n:,} draws, {len(lines)} disagreements ({time.perf_counter() - t0:.0f} s)", flush=True)
            for line in lines[:3]:
                print("   ", line)
    print(f"in all: {total:,} draws, {found} disagreements")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
