"""Pictures for ``--plot FILE`` (PNG or SVG by suffix) and ``--plot -`` (a plain-text sketch).

One module per picture: ``roofline``, ``pipeline``, ``memory``, ``scaling`` (compute-optimal),
``collective``. Each has ``data(...)``, which takes its figures from the solver functions the
command prints (never recomputed another way), ``figure(d)`` (matplotlib) and ``sketch(d)``
(80 columns of text, no plotting library). matplotlib is the optional extra ``plot`` and is
imported only here, only when a file is asked for; the quiz path never imports this package's
``figure`` functions.

Files are the same bytes on every run: the Agg backend, a fixed size and dpi, matplotlib's
bundled DejaVu Sans drawn as paths (no system fonts), ``svg.hashsalt`` fixed, and no date or
software version in the metadata. Every marked point's label and value is in the SVG as text
(matplotlib writes each text's string in a comment beside its glyphs).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from drills.output import InputError

SUFFIXES = (".png", ".svg")
INSTALL = "pip install 'qkv[plot]' (or pip install matplotlib)"  # as drills.cli.extras.INSTALL["plot"]
WIDTH_IN, HEIGHT_IN, DPI = 7.5, 4.8, 150  # fits an A4 page's text width; 1125 × 720 pixels on screen
STYLE = {
    "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "svg.hashsalt": "qkv", "svg.fonttype": "path", "path.simplify": False, "figure.dpi": DPI,
    "savefig.dpi": DPI, "axes.grid": True, "grid.alpha": 0.3,
}
#: colour-blind-safe (Okabe-Ito) colours, in a fixed order
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#999999")


def check_target(target: str | None) -> None:
    """Refuse a ``--plot`` target that is neither ``-`` nor a .png/.svg path, before any work."""
    if target is None or target == "-":
        return
    if Path(target).suffix.lower() not in SUFFIXES:
        raise InputError(f"{target!r}: give a .png or .svg file, or - for a sketch in the terminal", "--plot")
    from drills.files import check_output

    check_output(Path(target), "--plot", stdout_ok=False)  # a link, a device, a FIFO: refused before any work


def pyplot():
    """matplotlib's pyplot on the Agg backend, or one clear line on how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"--plot FILE needs matplotlib: {INSTALL}; --plot - draws a sketch without it",
                         "--plot") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save(fig, target: str) -> None:
    """Write ``fig`` to ``target`` (PNG or SVG by suffix), the same bytes on every run, and close it."""
    import matplotlib.pyplot as plt

    suffix = Path(target).suffix.lower()
    meta = {"Date": None, "Creator": None} if suffix == ".svg" else {"Software": None}
    import io

    from drills.files import write_files

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=suffix[1:], metadata=meta, dpi=DPI)
    finally:
        plt.close(fig)
    # -o's writer: a temporary file beside the target, flushed, then renamed over it; a link, a
    # device or a FIFO refused; on a full disk the file already there stays as it was
    write_files({Path(target): buf.getvalue()}, "--plot")


def render(module, d: dict[str, Any], target: str) -> str | None:
    """Draw ``d`` with ``module``: the sketch's text for ``-`` (returned), else a file written."""
    check_target(target)
    if target == "-":
        return module.sketch(d)
    plt = pyplot()
    with plt.rc_context(STYLE):
        fig = module.figure(d, plt)
        save(fig, target)
    return None


# ---------------------------------------------------------------------------------------
# Text sketches (no plotting library)
# ---------------------------------------------------------------------------------------


def si(value: float, unit: str = "") -> str:
    """1.23e12 → '1.23 T' + unit: a short engineering form for labels."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1),
                          ("m", 1e-3), ("µ", 1e-6), ("n", 1e-9)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}".rstrip()
    return f"{value:.3g} {unit}".strip()


def count(value: float) -> str:
    """70e9 → '70B': parameter and token counts the way the field writes them (K, M, B, T)."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


class Canvas:
    """A grid of characters with log- or linear-scaled axes, for the terminal sketches."""

    def __init__(self, width: int, height: int, x_range: tuple[float, float], y_range: tuple[float, float],
                 log_x: bool = True, log_y: bool = True):
        self.w, self.h = width, height
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        self.log_x, self.log_y = log_x, log_y
        self.cells = [[" "] * width for _ in range(height)]

    def _frac(self, v: float, lo: float, hi: float, log: bool) -> float:
        if log:
            return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (v - lo) / (hi - lo)

    def col(self, x: float) -> int:
        return round(self._frac(x, self.x0, self.x1, self.log_x) * (self.w - 1))

    def row(self, y: float) -> int:
        return self.h - 1 - round(self._frac(y, self.y0, self.y1, self.log_y) * (self.h - 1))

    def put(self, x: float, y: float, ch: str) -> None:
        c, r = self.col(x), self.row(y)
        if 0 <= c < self.w and 0 <= r < self.h:
            self.cells[r][c] = ch

    def curve(self, fn, ch: str) -> None:
        """Draw y = fn(x) at every column."""
        for c in range(self.w):
            f = c / (self.w - 1)
            x = 10 ** (math.log10(self.x0) + f * (math.log10(self.x1) - math.log10(self.x0))) if self.log_x \
                else self.x0 + f * (self.x1 - self.x0)
            y = fn(x)
            if y is not None and math.isfinite(y) and self.y0 <= y <= self.y1:
                r = self.row(y)
                if self.cells[r][c] == " ":
                    self.cells[r][c] = ch

    def lines(self, y_labels: tuple[str, str], x_labels: tuple[str, str], margin: int = 10) -> list[str]:
        """The grid with a left axis (top and bottom labels) and a bottom axis (left and right labels)."""
        out = []
        for r, row in enumerate(self.cells):
            label = y_labels[0] if r == 0 else (y_labels[1] if r == self.h - 1 else "")
            out.append(f"{label:>{margin - 1}}|" + "".join(row).rstrip())
        out.append(" " * (margin - 1) + "+" + "-" * self.w)
        left, right = x_labels
        out.append(" " * margin + left + right.rjust(self.w - len(left)))
        return out


def fit(lines: list[str], width: int = 80) -> str:
    """Join the sketch's lines, each cut to ``width`` columns."""
    return "\n".join(line[:width].rstrip() for line in lines)
