"""The optional extras a command needs, and the one line that says how to install one that is missing.

qkv installs light: numpy, click, sympy and the terminal/sheet libraries. torch (the ``torch``
extra) is needed only by the commands that build or run models: ``qkv models verify``, ``qkv
measure`` and the torch reference kernels; matplotlib (the ``plot`` extra) only by ``--plot FILE``.
"""

from __future__ import annotations

from drills.output import InputError

INSTALL = {
    "torch": "pip install 'qkv[torch]' (a CPU-only build is enough: "
             "pip install torch --index-url https://download.pytorch.org/whl/cpu)",
    "plot": "pip install 'qkv[plot]' (or pip install matplotlib)",
}


def require_torch(what: str) -> None:
    """Import torch, or stop with one line naming the extra to install (exit status 2)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError(f"{what} needs torch, which is not installed: {INSTALL['torch']}") from None
