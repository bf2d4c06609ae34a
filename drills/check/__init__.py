"""``qkv check``: a hand computation judged step by step (:mod:`drills.check.steps`, the chains
of :mod:`drills.check.kernels`) or a count judged to the figures given
(:mod:`drills.check.counts`). Values are read by the one answer reader (:mod:`drills.answers`)
and compared by the one judge's comparators (:mod:`question_bank.grading`); what is the
checker's own is the chain of steps and which one is wrong first."""

from drills.check.counts import CountCheck, Explanation, check_bytes_in_bits, check_count, stated_sig_figs
from drills.check.kernels import (
    attention_chain,
    layernorm_chain,
    pe_chain,
    rmsnorm_chain,
    rope_chain,
    softmax_chain,
)
from drills.check.steps import (
    Chain,
    CheckReport,
    ReadError,
    StepCheck,
    Typed,
    check_chain,
    judge,
    matches,
    read_value,
)
from question_bank.conventions import breakdown_conventions, flop_conventions, memory_conventions

__all__ = [
    "Chain", "CheckReport", "CountCheck", "Explanation", "ReadError", "StepCheck", "Typed",
    "attention_chain", "breakdown_conventions", "check_bytes_in_bits", "check_chain", "check_count",
    "flop_conventions", "judge", "layernorm_chain", "matches", "memory_conventions", "pe_chain",
    "read_value", "rmsnorm_chain", "rope_chain", "softmax_chain", "stated_sig_figs",
]
