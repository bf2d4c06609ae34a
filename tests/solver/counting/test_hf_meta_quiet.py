"""Reading a config.json through transformers prints none of transformers' own Python warnings
(:func:`solver.counting.hf_meta.quiet`): Kimi-Linear's file carries ``rope_scaling``, which transformers 5.24
deprecates with a ``FutureWarning`` that would otherwise reach the terminal with a source path, between qkv's lines."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers", minversion="5.0")
pytest.importorskip("torch")

FILE = Path(__file__).parent / "configs" / "corpus" / "kimi-linear-48b-a3b-instruct.json"


def test_transformers_itself_warns_on_this_file():
    """The premise, checked on transformers directly: its config class warns on the file's rope_scaling."""
    raw = json.loads(FILE.read_text())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        transformers.KimiLinearConfig.from_dict({k: v for k, v in raw.items() if k not in ("model_type", "auto_map")})
    assert any(issubclass(w.category, FutureWarning) for w in seen)


@pytest.mark.parametrize("what", ["count", "kv_layout"])
def test_qkv_reads_it_without_a_python_warning(what):
    from solver.counting.hf_meta import count_with_transformers, kv_layout

    raw = json.loads(FILE.read_text())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (count_with_transformers if what == "count" else kv_layout)(raw)
    assert not [w for w in seen if issubclass(w.category, (FutureWarning, DeprecationWarning, UserWarning))], \
        [str(w.message)[:80] for w in seen]
