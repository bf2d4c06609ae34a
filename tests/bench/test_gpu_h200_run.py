"""The H200 run committed in bench/ (gpu_run_h200.json, written there by bench/gpu.py), read
against today's counts: every count the GPU measured must still be what qkv computes now, so a
change to a count fails here until the GPU run is made again or the difference is explained; and
the README's figures are the run's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import solver.counting as counts
from solver.counting.config import ModelConfig
from solver.counting.presets import get_preset
from solver.models.verify import default_seq, stack_layers, with_layers

ROOT = Path(__file__).resolve().parents[2]
RUN = json.loads((ROOT / "bench" / "gpu_run_h200.json").read_text())
STAGES = {s["name"]: s["items"] for s in RUN["stages"]}
BATCH, SEQ = 1, 128  # bench/gpu.py's verify sizes on a GPU (SIZES["gpu"]["verify"])


def built_config(item):
    cfg = get_preset(item["name"]).config
    if item.get("experts"):
        assert item["experts"]["full"] == cfg.n_experts
        cfg = cfg.replace(n_experts=item["experts"]["built"])
    return with_layers(cfg, item["layers"])


def test_the_run_is_a_gpu_run_of_every_stage():
    assert RUN["info"]["device"] == "cuda" and not RUN["tiny"] and "H200" in RUN["info"]["name"]
    assert [s["name"] for s in RUN["stages"]] == ["verify", "matmul", "attention", "forward", "decode"]
    assert RUN["summary"]["mismatches"] == 0 and RUN["summary"]["models_built"] == len(STAGES["verify"])


@pytest.mark.parametrize("item", STAGES["verify"], ids=lambda i: i["name"])
def test_every_count_measured_on_the_gpu_is_todays_count(item):
    assert item["status"] == "ok"
    cfg = built_config(item)
    assert stack_layers(get_preset(item["name"]).config) == item["full_layers"]
    measured = {c["quantity"]: c["measured"] for c in item["checks"]}
    seq = default_seq(cfg, SEQ)  # clipped to a learned position table, as verify clips it
    assert measured["params"] == counts.param_breakdown(cfg).total_with_lora
    for mode in ("forward", "decode", "train"):
        if f"flops[{mode}]" in measured:
            assert measured[f"flops[{mode}]"] == counts.matmul_flops(cfg, batch=BATCH, seq=seq, mode=mode).total
    if "kv_cache_bytes" in measured:
        assert measured["kv_cache_bytes"] == counts.kv_cache_bytes_cfg(cfg, batch=BATCH, seq=seq, dtype="fp32")
    if cfg.arch == "decoder":
        assert {"params", "flops[forward]", "flops[decode]", "flops[train]", "kv_cache_bytes"} <= set(measured)


def test_attention_memory_is_todays_estimate():
    """The math backend's peak (torch.cuda.max_memory_allocated) against sdpa_math_workspace now:
    within 0.01 %; flash and efficient hold the output (and flash a log-sum-exp per row), within 0.03 %."""
    ran = [a for a in STAGES["attention"] if a["status"] == "ok"]
    assert {a["backend"] for a in ran} == {"math", "flash", "efficient"}
    for a in ran:
        element = 2 if a["dtype"] == "bf16" else 4
        rows = a["batch"] * a["heads"] * a["seq"]
        estimate = {"math": sum(counts.sdpa_math_workspace(a["batch"], a["heads"], a["seq"], a["d_head"], element,
                                                           a["causal"]).values()),
                    "flash": rows * a["d_head"] * element + 4 * rows,
                    "efficient": rows * a["d_head"] * element}[a["backend"]]
        # flash's log-sum-exp is allocated with 1 KiB more than 4 bytes per row (0.02 % at 1k tokens)
        assert a["peak_memory_bytes"] == pytest.approx(estimate, rel=1e-4 if a["backend"] == "math" else 3e-4), a
    for a in STAGES["attention"]:
        if a["status"] == "skipped":  # refused before it ran, by today's estimate too
            assert a["backend"] == "math" and int(re.findall(r"[\d,]+(?= free)", a["note"])[0].replace(",", "")) < \
                sum(counts.sdpa_math_workspace(a["batch"], a["heads"], a["seq"], a["d_head"], 2, True).values())


def test_forward_and_decode_are_todays_counts():
    f = STAGES["forward"][0]
    cfg = ModelConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=16384, vocab_size=32000, max_positions=f["seq"])
    assert f["flops_counted_by_torch"] == f["flops"] == counts.matmul_flops(cfg, f["batch"], f["seq"], "forward").total
    llama = get_preset("llama2-7b").config
    for d in STAGES["decode"]:
        assert d["kv_cache_bytes"] == counts.kv_cache_bytes_cfg(llama, batch=d["batch"], seq=d["context"] - 1,
                                                                dtype="bf16")
        assert d["graph"]["status"] == "ok" and d["graph"]["measured_s"] <= d["measured_s"]
        assert d["reference_model_bytes"] == d["weight_bytes"] + 3 * d["kv_bytes"]
        assert d["kv_bytes"] == counts.kv_cache_bytes_cfg(llama, batch=d["batch"], seq=d["context"], dtype="bf16")
        assert d["weight_bytes"] == 2 * counts.param_breakdown(llama).total_with_lora


def test_the_readme_quotes_the_run():
    readme = (ROOT / "README.md").read_text()
    para = readme[readme.index("bench/gpu_run_h200.md"):]
    para = " ".join(para[:para.index("\n\n")].split())
    v, m = STAGES["verify"], {i["n"]: i for i in STAGES["matmul"]}
    att = {(a["seq"], a["backend"]): a for a in STAGES["attention"]}
    d1 = next(d for d in STAGES["decode"] if d["batch"] == 1)

    def pct(x):
        return f"{100 * x:.1f} %"
    experts = [f"{i['experts']['built']} of {i['experts']['full']}" for i in v if i.get("experts")]
    quoted = [f"{len([i for i in v if i['status'] == 'ok'])} of {len(v)} presets",
              f"{sum(i['depth'] == 'full' for i in v)} at full depth", f"to {experts[0]} and {experts[1]})",
              f"{pct(m[8192]['fraction_of_peak'])} of the {RUN['reference']['peak_flops'] / 1e12:.1f} TFLOP/s",
              f"({pct(m[16384]['fraction_of_peak'])} at 16k)", f"{pct(att[(32768, 'flash')]['fraction_of_peak'])} with flash",
              f"{pct(att[(32768, 'efficient')]['fraction_of_peak'])} with the memory-efficient",
              f"math backend {pct(att[(16384, 'math')]['fraction_of_peak'])} at 16k",
              f"{pct(STAGES['forward'][0]['fraction_of_peak'])} of peak",
              f"{1e3 * d1['measured_s']:.1f} ms eager", f"{1e3 * d1['graph']['measured_s']:.1f} ms replayed",
              f"{1e3 * d1['solve_decode_s']:.1f} ms bound", f"({100 * d1['graph']['fraction_of_bandwidth']:.0f} % of the bandwidth)",
              *(f"{pct(d['graph']['fraction_of_bandwidth_reference_model'])} of the bandwidth at batch {d['batch']}"
                if d["batch"] == 1 else f"{pct(d['graph']['fraction_of_bandwidth_reference_model'])} at batch {d['batch']}"
                for d in STAGES["decode"]),
              f"{round(RUN['seconds'])} s", RUN["info"]["date"][:10], "torch " + ".".join(RUN["info"]["torch"].split(".")[:2])]
    for q in quoted:
        assert q in para, q
    worst = max(abs(a["memory_ratio"] - 1) for a in STAGES["attention"] if a["backend"] == "math" and "memory_ratio" in a)
    assert worst < 1e-4 and "within 0.01 %" in para


def test_the_page_is_the_json_written_by_the_script():
    """bench/gpu_run_h200.md is what bench/gpu.py's ``markdown`` writes from the committed JSON: the
    page and the figures it shows were not edited by hand."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "gpu.py")
    gpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu)
    assert gpu.markdown(RUN) == (ROOT / "bench" / "gpu_run_h200.md").read_text()
