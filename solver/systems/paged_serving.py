"""Serving memory and scheduling: PagedAttention's KV blocks, static against continuous batching,
and the KV cache a disaggregated prefill hands to the decode machine.

Sources: Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with
PagedAttention" (vLLM; §4.2: the KV cache is split into blocks of B tokens, a block table maps a
sequence's logical blocks to physical ones, "the waste is bounded within one block"; §3: a
contiguous system reserves the maximum length for every request); Yu et al. 2022, "Orca"
(iteration-level scheduling = continuous batching); Zhong et al. 2024, "DistServe" and Patel et
al. 2024, "Splitwise" (prefill and decode on different machines, the KV cache sent between them).

Conventions (named in each result):

- A sequence of L tokens holds ⌈L/B⌉ blocks of B token slots (the partly filled last block is
  allocated: ``last_block="counted"``); ``last_block="full-only"`` counts the ⌊L/B⌋ full blocks
  only (what a block table can share, e.g. prefix caching). Internal fragmentation: the empty
  slots of the last block, ⌈L/B⌉·B − L (< B).
- X bytes per token of KV cache (2·layers·kv_heads·d_head·bytes). A budget of K bytes holds
  ⌊K/(B·X)⌋ physical blocks; a contiguous allocator reserves L_max·X per sequence.
- Batching model (stated, as an interview states it): the engine runs iterations; an iteration
  costs ``t_step`` plus ``t_prefill`` for each request whose prompt is processed in it (the
  prefill stalls the batch, no chunking); a request's prefill iteration yields its first token,
  each later iteration one more, so a request wanting o tokens occupies a slot for o iterations.
  All requests wait at time 0, in order. Static batching takes them B at a time and starts the
  next batch when the longest of the current one finishes; continuous batching refills a freed
  slot at the next iteration. Latency = completion time of a request; throughput = tokens ÷ time.
- Transfer: time = α + bytes/β over a link of β bytes/s (one direction) and latency α.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt

LAST_BLOCK = ("counted", "full-only")
BATCHING = ("static", "continuous")


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def _pos(name: str, value, zero: bool = False) -> Fraction:
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)  # 0.01 is 1/100


# ---------------------------------------------------------------------------------------
# PagedAttention's blocks
# ---------------------------------------------------------------------------------------


def blocks_for(length: int, block_size: int, last_block: str = "counted") -> int:
    """⌈L/B⌉ (the partial last block counted) or ⌊L/B⌋ (full blocks only)."""
    return -(-length // block_size) if last_block == "counted" else length // block_size


def paged_kv(lengths: Sequence[int], block_size: int, kv_bytes_per_token, *, budget=None, max_len: int | None = None,
             last_block: str = "counted") -> Result:
    """Blocks and internal fragmentation of sequences of the given lengths, and (with a budget)
    how many fit paged against contiguous max-length allocation.

    Answer: the blocks of the sequences (the last block per ``last_block``). With one length and
    a budget, the breakdown gives the sequences of that length that fit paged and contiguously
    (``max_len`` defaults to that length); with several, how many of them, in order, fit."""
    Ls = [_int("lengths", x) for x in lengths]
    if not Ls:
        raise SolverInputError("give at least one sequence length", param="lengths")
    B = _int("block_size", block_size)
    X = None if kv_bytes_per_token is None else _pos("kv_bytes_per_token", kv_bytes_per_token)
    if X is None and budget is not None:
        raise SolverInputError("a budget in bytes needs the KV bytes per token (or a model)",
                               param="kv_bytes_per_token")
    if last_block not in LAST_BLOCK:
        raise SolverInputError(f"last_block must be one of {', '.join(LAST_BLOCK)} (got {last_block!r})",
                               param="last_block")
    r = Result(answer=None, unit="blocks", convention={
        "blocks": f"a sequence of L tokens holds ⌈L/B⌉ blocks of B = {B} slots (Kwon et al. 2023 §4.2)",
        "last_block": "the partly filled last block counted (allocated)" if last_block == "counted" else
                      "full blocks only, ⌊L/B⌋ (the partly filled last block not counted)",
        "fragmentation": "internal: the empty slots of each sequence's last block, ⌈L/B⌉·B − L (< B)",
        "kv": (f"X = {fmt(X)} bytes per token (2·layers·kv_heads·d_head·bytes, or latent attention's "
               "layers·(d_c + d_R)·bytes)") if X is not None else
              "not given: blocks and slots only (bytes need the KV bytes per token)"})
    per = [blocks_for(L, B, last_block) for L in Ls]
    alloc = [blocks_for(L, B) for L in Ls]
    if len(Ls) == 1:
        total = r.step("blocks = ⌈L/B⌉" if last_block == "counted" else "blocks = ⌊L/B⌋",
                       f"{'⌈' if last_block == 'counted' else '⌊'}{fmt(Ls[0])}/{B}{'⌉' if last_block == 'counted' else '⌋'}",
                       per[0], "blocks")
    else:
        total = r.step("blocks = Σ " + ("⌈L/B⌉" if last_block == "counted" else "⌊L/B⌋"),
                       " + ".join(fmt(p) for p in per), sum(per), "blocks")
    waste = [a * B - L for a, L in zip(alloc, Ls, strict=True)]
    frag = r.step("empty slots = Σ (⌈L/B⌉·B − L)", " + ".join(f"({a}·{B} − {L})" for a, L in zip(alloc, Ls, strict=True))
                  if len(Ls) <= 6 else f"{len(Ls)} sequences", sum(waste), "tokens")
    slots = sum(alloc) * B
    r.breakdown = {"blocks": total, "blocks_per_sequence": per, "allocated_blocks": sum(alloc),
                   "empty_slots": frag, "fragmentation_fraction": Fraction(frag, slots)}
    if X is not None:
        r.breakdown.update(kv_bytes=sum(Ls) * X, allocated_bytes=slots * X, wasted_bytes=frag * X)
    if budget is not None:
        K = _pos("budget", budget)
        phys = r.step("physical blocks = ⌊K/(B·X)⌋", f"⌊{fmt(K)}/({B} × {fmt(X)})⌋", int(K // (B * X)), "blocks")
        Lmax = _int("max_len", max_len) if max_len is not None else max(Ls)
        if Lmax < max(Ls):
            raise SolverInputError(f"the maximum length {Lmax} is below a sequence's length {max(Ls)}", param="max_len")
        contiguous = r.step("contiguous sequences = ⌊K/(L_max·X)⌋", f"⌊{fmt(K)}/({fmt(Lmax)} × {fmt(X)})⌋",
                            int(K // (Lmax * X)), "sequences")
        if len(Ls) == 1:
            paged = r.step("paged sequences = ⌊physical blocks / ⌈L/B⌉⌋", f"⌊{fmt(phys)}/{alloc[0]}⌋",
                           phys // alloc[0], "sequences")
        else:
            used, paged = 0, 0
            for a in alloc:
                if used + a > phys:
                    break
                used, paged = used + a, paged + 1
            r.step("paged sequences = how many, in order, whose ⌈L/B⌉ fit the physical blocks",
                   f"{fmt(phys)} blocks", paged, "sequences")
            contiguous = min(contiguous, len(Ls))
        r.breakdown.update({"physical_blocks": phys, "paged_sequences": paged, "contiguous_sequences": contiguous,
                            "max_len": Lmax})
        if contiguous:
            r.breakdown["paged_over_contiguous"] = Fraction(paged, contiguous)
        r.convention["contiguous"] = f"every sequence reserves L_max = {fmt(Lmax)} tokens (Kwon et al. 2023 §3)"
    r.answer = total
    return r


# ---------------------------------------------------------------------------------------
# Static against continuous batching
# ---------------------------------------------------------------------------------------


def schedule(outputs: Sequence[int], batch: int, policy: str) -> list[tuple[list[int], list[int]]]:
    """Per iteration, (requests whose prefill runs in it, requests it serves), under ``policy``."""
    outs = [_int("outputs", o) for o in outputs]
    n, Bm = len(outs), _int("batch", batch)
    left = {}
    waiting = list(range(n))
    iters: list[tuple[list[int], list[int]]] = []
    while waiting or left:
        joined = []
        if policy == "continuous" or not left:
            while waiting and len(left) < Bm:
                i = waiting.pop(0)
                left[i] = outs[i]
                joined.append(i)
        iters.append((joined, sorted(left)))
        for i in list(left):
            left[i] -= 1
            if left[i] == 0:
                del left[i]
    return iters


def batching(outputs: Sequence[int], batch: int, t_step, *, t_prefill=0, policy: str = "continuous") -> Result:
    """Makespan, throughput and mean latency of the requests (all waiting at 0) under ``policy``,
    with the other policy's figures in the breakdown. Answer: throughput in tokens/s."""
    outs = [_int("outputs", o) for o in outputs]
    if not outs:
        raise SolverInputError("give at least one request", param="outputs")
    Bm = _int("batch", batch)
    ts, tp = _pos("t_step", t_step), _pos("t_prefill", t_prefill, zero=True)
    if policy not in BATCHING:
        raise SolverInputError(f"policy must be static or continuous (got {policy!r})", param="policy")
    r = Result(answer=None, unit="tokens/s", convention={
        "iteration": f"t_step = {fmt(ts)} s per iteration, plus t_prefill = {fmt(tp)} s per request whose prompt "
                     "is processed in it (the batch waits; no chunked prefill)",
        "tokens": "a request's prefill iteration gives its first token, each later iteration one more",
        "arrivals": "all requests wait at time 0, served in the order given",
        "static": f"batches of {Bm}; the next batch starts when the current one's longest request ends",
        "continuous": "a freed slot takes the next waiting request at the next iteration (Orca's iteration-level "
                      "scheduling)",
        "latency": "time from 0 to a request's last token"})
    figures = {}
    for pol in BATCHING:
        clock, served, end = Fraction(0), [0] * len(outs), [Fraction(0)] * len(outs)
        busy_slots = 0
        its = schedule(outs, Bm, pol)
        for joined, running in its:
            clock += ts + len(joined) * tp
            busy_slots += len(running)
            for i in running:
                served[i] += 1
                if served[i] == outs[i]:
                    end[i] = clock
        ends = end
        figures[pol] = {"iterations": len(its), "makespan_s": clock, "throughput": Fraction(sum(outs)) / clock,
                        "mean_latency_s": sum(ends) / len(ends), "max_latency_s": max(ends),
                        "slot_utilisation": Fraction(busy_slots, len(its) * Bm)}
    f = figures[policy]
    tokens = r.step("tokens = Σ o_i", " + ".join(fmt(o) for o in outs) if len(outs) <= 8 else f"{len(outs)} requests",
                    sum(outs), "tokens")
    r.step(f"iterations ({policy})", "simulated iteration by iteration", f["iterations"])
    T = r.step("makespan = iterations·t_step + requests·t_prefill",
               f"{f['iterations']} × {fmt(ts)} + {len(outs)} × {fmt(tp)}", f["makespan_s"], "s")
    thr = r.step("throughput = tokens / makespan", f"{fmt(tokens)} / {fmt(T)}", f["throughput"], "tokens/s")
    r.breakdown = {"tokens": tokens, **{k: v for k, v in f.items()}}
    other = "static" if policy == "continuous" else "continuous"
    for k, v in figures[other].items():
        r.breakdown[f"{other}_{k}"] = v
    r.breakdown["continuous_speedup"] = figures["continuous"]["throughput"] / figures["static"]["throughput"]
    r.answer = thr
    return r


# ---------------------------------------------------------------------------------------
# Prefill/decode disaggregation
# ---------------------------------------------------------------------------------------


def disaggregation(prompt: int, kv_bytes_per_token, link_bandwidth, *, batch: int = 1, latency=0,
                   n_layers: int | None = None, prefill_time=None) -> Result:
    """KV-cache bytes a prefill machine hands to a decode machine, and the time over the link.

    Answer: seconds. With ``n_layers`` and ``prefill_time`` the breakdown also gives the exposed time
    when the cache is sent layer by layer as the prefill proceeds (only the last layer's share is
    left after the prefill, unless the link is slower than the prefill)."""
    P, Bt = _int("prompt", prompt), _int("batch", batch)
    X, beta = _pos("kv_bytes_per_token", kv_bytes_per_token), _pos("link_bandwidth", link_bandwidth)
    alpha = _pos("latency", latency, zero=True)
    r = Result(answer=None, unit="s", convention={
        "bytes": "batch · prompt tokens · X bytes per token (the whole KV cache of the prompt)",
        "link": f"time = α + bytes/β, β = {fmt(beta)} bytes/s one way, α = {fmt(alpha)} s",
        "source": "prefill/decode disaggregation (DistServe, Zhong et al. 2024; Splitwise, Patel et al. 2024)"})
    nbytes = r.step("bytes = B·P·X", f"{Bt} × {fmt(P)} × {fmt(X)}", Bt * P * X, "bytes")
    t = r.step("time = α + bytes/β", f"{fmt(alpha)} + {fmt(nbytes)}/{fmt(beta)}", alpha + nbytes / beta, "s")
    r.breakdown = {"kv_bytes": nbytes, "transfer_s": t}
    if n_layers is not None and prefill_time is not None:
        L, tpf = _int("n_layers", n_layers), _pos("prefill_time", prefill_time)
        per_layer = r.step("per layer = bytes / L", f"{fmt(nbytes)}/{L}", nbytes / L, "bytes")
        send = per_layer / beta
        # layer l's share is ready at l·t_p/L and the link sends one share at a time: the last share ends at
        # max over l of (l·t_p/L + (L − l + 1)·send), linear in l, so at l = 1 or l = L
        finish = max(tpf / L + L * send, tpf + send)
        exposed = r.step("exposed = α + (end of the last share) − prefill time", "layer by layer, FIFO on the link",
                         alpha + finish - tpf, "s")
        r.breakdown.update({"per_layer_bytes": per_layer, "layerwise_exposed_s": exposed,
                            "prefill_s": tpf})
        r.convention["layerwise"] = ("layer l's K, V are ready at l·t_prefill/L and are sent at once, one share "
                                     "after another on the link")
    r.answer = t
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's paged_kv(...)
# (one sequence length) and disaggregation(...), from qkv solve paged-kv and disaggregation.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

LAST_BLOCK_COUNT = Convention("last_block", "Whether a partly filled last block counts.", {
    "counted": Choice("the last block allocated, partly filled (what a sequence holds)", "Kwon et al. 2023 (vLLM), §4"),
    "full-only": Choice("full blocks only", "")}, "counted")


@formula("paged_kv", "PagedAttention: KV blocks ⌈L/B⌉ of a sequence, the empty slots, and (with a budget) how many "
         "such sequences fit paged against contiguous.",
         (Input("length", "L: the sequence's tokens", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("lengths", "seq_len", "L")),
          Input("block_size", "B: tokens per KV block (vLLM: 16)", kind="count", integer=True, minimum=1, default=16,
                aliases=("B", "b")),
          Input("kv_bytes_per_token", "X: KV bytes per token (bytes, budget)", unit="B", default=None,
                aliases=("X",)),
          Input("budget", "the KV-cache budget", unit="B", default=None),
          Input("max_len", "the length a contiguous allocator reserves (default L)", kind="count", integer=True,
                minimum=1, default=None, binary_k=True)),
         (Output("blocks", "", "KV blocks"),
          Output("empty_slots", "", "token slots allocated and empty"),
          Output("fragmentation", "", "empty ÷ allocated slots", key="fragmentation_fraction"),
          Output("kv_bytes", "B", "L·X", ("kv_bytes_per_token",)),
          Output("paged_sequences", "", "sequences that fit the budget paged", ("budget",)),
          Output("contiguous_sequences", "", "those that fit reserving max_len each", ("budget",))),
         conventions=(LAST_BLOCK_COUNT,), solve="paged-kv", source="Kwon et al. 2023 (vLLM, PagedAttention)")
def _paged_formula(length, block_size, kv_bytes_per_token, budget, max_len, last_block="counted"):
    return paged_kv([length], block_size, kv_bytes_per_token, budget=budget, max_len=max_len, last_block=last_block)


@formula("disaggregation", "Prefill/decode disaggregation: the KV-cache bytes B·P·X a prefill hands over, and their "
         "time α + bytes/β on the link.",
         (Input("prompt", "P: prompt tokens prefilled", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("P",)),
          Input("kv_bytes_per_token", "X: KV bytes per token", unit="B", aliases=("X",)),
          Input("link", "β: link bandwidth per direction", unit="B/s", aliases=("link_bandwidth", "bandwidth", "bw")),
          Input("batch", "B: prompts handed over", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
          Input("latency", "α: seconds", unit="s", default=0, aliases=("alpha",)),
          Input("layers", "L: layers, sent one by one as the prefill goes (with prefill_time)", kind="count",
                integer=True, minimum=1, default=None, aliases=("n_layers",)),
          Input("prefill_time", "the prefill's time (with layers)", unit="s", default=None)),
         (Output("time", "s", "α + bytes/β", key="transfer_s"),
          Output("kv_bytes", "B", "B·P·X"),
          Output("layerwise_exposed", "s", "what is left after the prefill, sent layer by layer",
                 ("layers", "prefill_time"), key="layerwise_exposed_s")),
         solve="disaggregation", source="Zhong et al. 2024 (DistServe); Patel et al. 2024 (Splitwise)")
def _disaggregation_formula(prompt, kv_bytes_per_token, link, batch, latency, layers, prefill_time):
    if (layers is None) != (prefill_time is None):
        raise SolverInputError("the layer-by-layer figure needs layers and prefill_time together", param="layers")
    return disaggregation(prompt, kv_bytes_per_token, float(link), batch=batch, latency=float(latency),
                          n_layers=layers, prefill_time=None if prefill_time is None else float(prefill_time))


@formula("batching", "Static against continuous batching: throughput, makespan and latency in a stated step model.",
         (Input("outputs", "tokens each request generates, in arrival order ([1, 10, 3, 5])", kind="vector",
                integer=True, minimum=1, maximum=10**5),
          Input("batch", "B: slots (requests served at once)", kind="count", integer=True, minimum=1, maximum=10**6,
                aliases=("B",)),
          Input("step_time", "seconds per decode iteration of the batch", unit="s", aliases=("step",)),
          Input("prefill_time", "seconds a request's prefill adds to the iteration it joins", unit="s", default=0,
                aliases=("prefill",))),
         (Output("throughput", "Hz", "tokens per second of the policy (1/s)", key="answer"),
          Output("makespan", "s", "until the last token", key="makespan_s"),
          Output("mean_latency", "s", "mean time to a request's last token", key="mean_latency_s"),
          Output("iterations", "", "decode iterations"),
          Output("speedup", "", "continuous throughput over static", key="continuous_speedup")),
         conventions=(Convention("policy", "How the slots are refilled.", {
             "continuous": Choice("a finished request's slot is refilled at the next iteration", "Yu et al. 2022 (Orca)"),
             "static": Choice("a batch runs until its longest request ends")}, "continuous"),),
         solve="batching", source="Yu et al. 2022 (Orca)")
def _batching_formula(outputs, batch, step_time, prefill_time=0, policy="continuous"):
    if sum(outputs) > 10**5:
        raise SolverInputError("at most 10^5 tokens in all (the schedule is simulated iteration by iteration)",
                               param="outputs")
    r = batching(outputs, batch, step_time, t_prefill=prefill_time, policy=policy)
    r.breakdown["answer"] = r.answer
    return r


FORMULAS = (_paged_formula.formula, _disaggregation_formula.formula, _batching_formula.formula)
