"""bench/gpu.py, the GPU run of full models, on its CPU path (--device cpu --tiny): it must not rot
while no GPU is at hand. One run (about 25-35 s on the loaded 2-core machine) checks the JSON's shape,
that every count verified on a real model equals the analytic one, and the page; a second call,
in this process, that the hard limit stops the run and still writes both files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ["verify", "matmul", "attention", "forward", "decode"]


def _load_bench():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import gpu
    finally:
        sys.path.pop(0)
    return gpu


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_run")
    done = subprocess.run([sys.executable, "bench/gpu.py", "--device", "cpu", "--tiny", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=150,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(out / "gpu_run.json") as f:
        result = json.load(f)
    return result, (out / "gpu_run.md").read_text(), done.stdout


def test_json_shape(tiny_run):
    r, _, stdout = tiny_run
    assert r["schema"] == 1 and r["tiny"] is True and r["stopped"] is None
    info = r["info"]
    assert info["device"] == "cpu" and info["torch"] == torch.__version__ and "driver" in info
    assert info["date"].endswith("+00:00")
    assert r["reference"]["peak_flops"] > 0 and r["reference"]["bandwidth"] > 0
    assert [s["name"] for s in r["stages"]] == STAGES
    assert r["seconds"] < r["limit_s"]
    for stage in r["stages"]:
        assert stage["seconds"] >= 0 and stage["items"], stage["name"]
        for item in stage["items"]:
            assert item["status"] in ("ok", "MISMATCH", "not built", "skipped", "unavailable", "error"), item
            assert item["status"] != "error", item
    s = r["summary"]
    assert s["mismatches"] == 0 and s["models_ok"] >= 1 and s["measured"] >= 5
    assert f"{s['models_ok']} of {s['models_built']} models built match exactly" in stdout


def test_verified_counts_equal_the_analytic_ones(tiny_run):
    """Each model built: parameters, FlopCounterMode's FLOPs and the KV cache's bytes equal the
    analytic counts, for the config the record names (recomputed here from the preset)."""
    import solver.counting as counts
    from solver.counting.presets import get_preset
    from solver.models.verify import with_layers

    gpu = _load_bench()
    r, _, _ = tiny_run
    models = [m for m in r["stages"][0]["items"] if m["status"] == "ok"]
    assert models and models[0]["name"] == "llama2-7b"
    for m in models:
        checks = {c["quantity"]: c for c in m["checks"]}
        for q in ("params", "flops[forward]", "flops[decode]", "flops[train]", "kv_cache_bytes"):
            assert q in checks, (m["name"], q)
        for c in m["checks"]:
            assert c["ok"] and isinstance(c["measured"], int) and c["analytic"] == c["measured"], (m["name"], c)
        cfg = with_layers(gpu.shrink(get_preset(m["name"]).config), m["layers"])
        assert checks["params"]["analytic"] == counts.param_breakdown(cfg).total_with_lora
        assert m["depth"] == "reduced" and m["layers"] != m["full_layers"]
    forward = r["stages"][3]["items"][0]
    assert forward["flops_counted_by_torch"] == forward["flops"] and forward["flops_counted_ratio"] == 1
    for d in r["stages"][4]["items"]:
        if d["status"] == "ok":
            assert d["kv_cache_bytes"] == d["kv_cache_bytes_analytic"] > 0
            assert d["roofline_fraction"] == pytest.approx(d["solve_decode_s"] / d["measured_s"])
            # the reference model's step moves the weights once and the cache three times (torch.cat
            # reads and writes it, attention reads it): more than the bound's weights + cache
            assert d["weight_bytes"] + d["kv_bytes"] == d["bytes"]
            assert d["reference_model_bytes"] == d["weight_bytes"] + 3 * d["kv_bytes"] > d["bytes"]
            assert d["fraction_of_bandwidth_reference_model"] == pytest.approx(
                d["reference_model_bytes"] / d["measured_s"] / d["bandwidth"])
    for m in r["stages"][1]["items"]:
        if m["status"] == "ok":
            assert m["flops"] == 2 * m["n"] ** 3
            assert m["roofline_fraction"] == pytest.approx(m["roofline_s"] / m["measured_s"])
            assert m["fraction_of_peak"] == pytest.approx(m["flops"] / m["measured_s"] / r["reference"]["peak_flops"])
    backends = {(a["seq"], a["backend"]): a for a in r["stages"][2]["items"]}
    assert backends[(64, "math")]["status"] == "ok" and backends[(64, "math")]["memory_estimate_bytes"] > 0


def test_page_lists_every_figure(tiny_run):
    r, page, _ = tiny_run
    assert page.startswith("# qkv on ") and r["info"]["torch"] in page
    for name in STAGES:
        assert f"## {name} (" in page
    for m in r["stages"][0]["items"]:
        assert f"| {m['name']} |" in page
    assert "roofline ÷ measured" in page and "qkv solve decode" in page


def test_the_hard_limit_stops_the_run_and_still_writes(tmp_path, monkeypatch):
    """A stage still running at --limit is stopped and the run written. The stage here sleeps past the limit: the
    real verify stage can finish within 0.3 s once its models are cached in the process, and then nothing stops."""
    import time

    gpu = _load_bench()
    monkeypatch.setitem(gpu.STAGE_FUNCS, "verify", lambda run: time.sleep(20))
    rc = gpu.main(["--device", "cpu", "--tiny", "--stages", "verify", "--limit", "0.3", "--out", str(tmp_path)])
    r = json.loads((tmp_path / "gpu_run.json").read_text())
    assert rc == 0 and r["stopped"] == "stopped at the 0.3 s limit" and r["seconds"] < 30
    assert (tmp_path / "gpu_run.md").read_text().startswith("# qkv on ")

