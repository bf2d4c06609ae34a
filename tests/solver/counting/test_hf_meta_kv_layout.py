"""The arithmetic of :class:`solver.counting.hf_meta.HFKVLayout` (no transformers needed): a layer keeping K and V
stores 2 × KV heads × head size per kept position; a latent-attention layer (DeepSeek-V2 §2.1: c_KV and the RoPE
key, transformers' cache of DeepSeek-V3, GLM-4.7-Flash, Kimi-Linear) stores one vector of its width per kept
position, half of what a one-head K-and-V layer of the same width keeps; a window keeps at most W positions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from solver.counting.hf_meta import LATENT, HFKVLayout


def _layout(kind: str, n: int, kv: int, width: int, window: int | None) -> HFKVLayout:
    return HFKVLayout("t", "T", "5.24", tuple((kind, kv, width, window) for _ in range(n)))


@given(n=st.integers(1, 128), batch=st.integers(1, 16), seq=st.integers(1, 1 << 20),
       window=st.none() | st.integers(1, 1 << 16), width=st.integers(1, 4096), elem=st.sampled_from([1, 2, 4]))
def test_a_latent_layer_keeps_one_vector_per_kept_position(n, batch, seq, window, width, elem):
    """Property: latent bytes = layers × batch × kept positions × width × bytes, and twice that for one K-and-V head."""
    [(name, latent, formula)] = _layout(f"{LATENT} (r + p)", n, 1, width, window).bytes(batch, seq, elem)
    kept = seq if window is None else min(seq, window)
    assert latent == n * batch * kept * width * elem and name.startswith(LATENT)
    [(_, kv_bytes, _)] = _layout("full attention", n, 1, width, window).bytes(batch, seq, elem)
    assert kv_bytes == 2 * latent


def test_deepseek_v3_2s_cache_by_hand():
    """61 layers × 4,096 positions × (512 + 64 + 128) values × 2 bytes (bf16) = 351,797,248 B."""
    [(_, size, formula)] = _layout(f"{LATENT} (512 + 64 + 128)", 61, 1, 704, None).bytes(1, 4096, 2)
    assert size == 351_797_248 and formula == "61 × 1 × 4,096 × 704 × 2 B"
