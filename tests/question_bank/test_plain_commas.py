"""Issue 38: no literal ``{,}`` in a statement, solution or option as Markdown, HTML and PDF print them."""

from __future__ import annotations

import re

import pytest

from question_bank.family import all_families
from question_bank.render import Doc, plain_commas

FAMS = all_families()
#: the families whose prose carried "{,}" (issue 38), each checked at every level
SEEN = ("counting.flops_forward", "hardware.mfu_from_gpu_hours", "latent.kv_cache", "moe.decode_weight_bytes",
        "msq.attention_vs_recurrence", "msq.kv_cache_below", "msq.model_statements", "window.kv_cache",
        "counting.flops_forward_mcq", "latent.kv_cache_mcq", "window.kv_cache_mcq")


def _outside_math(md: str) -> str:
    return re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "", md, flags=re.S)


def test_plain_commas_only_outside_math():
    assert plain_commas("N = 6{,}828{,}326{,}912 and $x = 1{,}024$") == "N = 6,828,326,912 and $x = 1{,}024$"
    assert plain_commas("$$\na = 2{,}048\n$$ then 3{,}000") == "$$\na = 2{,}048\n$$ then 3,000"
    assert Doc().p("exactly 1{,}517 parameters $\\approx 1{,}5$").md == "exactly 1,517 parameters $\\approx 1{,}5$"


@pytest.mark.parametrize("fid", SEEN)
def test_no_literal_thousands_braces(fid):
    f = FAMS[fid]
    for level in f.levels:
        for seed in range(2):
            p = f.generate(seed, level)
            for md in (p.statement_md, p.solution_md or "", *(p.options or [])):
                assert "{,}" not in _outside_math(md), (p.id, md)
