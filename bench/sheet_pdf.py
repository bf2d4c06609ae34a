"""Time a 50-problem practice-set PDF with answer key and worked solutions (target: < 5 s).

Run: ``.venv/bin/python bench/sheet_pdf.py [-n 50] [--seed 1] [--repeat 3]``. Prints the time
to choose the problems (bank generation), to build the Typst source, and to compile it, and
the total; the best of ``--repeat`` runs for the last two.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t0 = time.perf_counter()
    from drills.sheets import Sheet
    from drills.sheets.pdf import compile_typst, typst_source
    from drills.sheets.select import select_problems

    sel = select_problems(args.n, args.seed)
    sheet = Sheet("Benchmark", sel.problems, args.seed, {"n": args.n})
    t_select = time.perf_counter() - t0
    best_src = best_pdf = float("inf")
    size = 0
    for _ in range(args.repeat):
        t1 = time.perf_counter()
        src = typst_source(sheet, "full")
        t2 = time.perf_counter()
        pdf = compile_typst(src)
        t3 = time.perf_counter()
        best_src, best_pdf = min(best_src, t2 - t1), min(best_pdf, t3 - t2)
        size = len(pdf)
    total = t_select + best_src + best_pdf
    print(f"{len(sheet.problems)} problems ({sheet.total_marks} marks), PDF {size / 1024:.0f} KiB")
    print(f"select {t_select:.2f} s · typst source {best_src:.3f} s · compile {best_pdf:.2f} s · total {total:.2f} s"
          f" ({'under' if total < 5 else 'OVER'} the 5 s target)")


if __name__ == "__main__":
    main()
