"""Every preset against its module on the meta device; the memory guard; ``qkv models``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

from drills.cli import cli
from solver.counting import param_breakdown
from solver.counting.config import ModelConfig
from solver.counting.presets import PRESETS
from solver.errors import SolverInputError
from solver.models import build_model
from solver.models.guard import check_fits, estimate_bytes
from solver.models.verify import instantiated_breakdown

SMALL_PRESETS = ["seed004-minigpt", "seed000-bert-classifier", "seed000-encoder"]


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_instantiated_on_meta_equals_analytic(name):
    """GPT-3 175B and Llama-2-70B included: the meta device allocates nothing."""
    cfg = PRESETS[name].config
    model = build_model(cfg, "meta")
    mine = instantiated_breakdown(model)
    bd = param_breakdown(cfg)
    assert sum(mine.values()) == bd.total_with_lora
    assert {g: n for g, n in mine.items() if n} == {g: n for g, n in bd.by_group().items() if n}


# ---- memory guard ---------------------------------------------------------------------------

def test_guard_refuses_absurd_sizes_in_one_line():
    cfg = ModelConfig(d_model=10**12, n_heads=1, d_ff=4, vocab_size=8, max_positions=4, n_layers=1)
    for device in ("cpu", "meta"):  # meta: the shapes overflow int64 before anything else
        with pytest.raises(SolverInputError) as err:
            build_model(cfg, device)
        assert "\n" not in str(err.value) and err.value.param == "device"


def test_guard_refuses_what_does_not_fit_and_accepts_what_does(monkeypatch):
    import solver.models.guard as guard

    gpt3 = PRESETS["gpt3-175b"].config
    monkeypatch.setattr(guard, "available_bytes", lambda device: 64 * 2**30)  # a 64 GiB machine
    with pytest.raises(SolverInputError, match="gpt3|175|refusing"):
        check_fits(gpt3.replace(name="gpt3-175b"), "cpu")
    assert check_fits(PRESETS["seed004-minigpt"].config, "cpu") > 0
    assert check_fits(gpt3, "meta") == 0


def test_guard_estimate_equals_the_bytes_a_real_build_allocates():
    """The estimate (analytic count × dtype bytes + buffers) is the model's real footprint."""
    for cfg in (PRESETS["seed000-encoder"].config, PRESETS["seed004-minigpt"].config.replace(lora_rank=2)):
        model = build_model(cfg, "cpu")
        held = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
        assert estimate_bytes(cfg, 4) == held


# ---- the command line -----------------------------------------------------------------------

def test_models_verify_meta_exits_zero():
    result = CliRunner().invoke(cli, ["models", "verify", "--device", "meta", "--seq", "16", *SMALL_PRESETS])
    assert result.exit_code == 0, result.output
    assert result.output.count(" OK") == len(SMALL_PRESETS)


def test_models_verify_json():
    result = CliRunner().invoke(cli, ["models", "verify", "--json", "--seq", "8", "seed004-minigpt"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (rec,) = data["models"]
    assert data["ok"] and rec["ok"]
    params = next(c for c in rec["checks"] if c["quantity"] == "params")
    assert params["measured"] == params["analytic"] == PRESETS["seed004-minigpt"].exact()


def test_models_verify_json_has_the_keys_its_help_describes():
    runner = CliRunner()
    helptext = runner.invoke(cli, ["models", "verify", "--help"]).output
    data = json.loads(runner.invoke(cli, ["models", "verify", "--json", "--seq", "8", "seed000-encoder"]).output)
    keys = set(data) | set(data["models"][0]) | set(data["models"][0]["checks"][0])
    assert keys == {"device", "batch", "seq", "ok", "models", "name", "seconds", "error", "checks",
                    "quantity", "analytic", "measured", "note"}
    for key in keys:
        assert f'"{key}"' in helptext, key


def test_models_verify_full_train_agrees_with_the_default():
    """seed004-minigpt has 4 layers: by default its train FLOPs come from 1- and 2-layer slices."""
    runner = CliRunner()
    args = ["models", "verify", "--json", "--seq", "8", "seed004-minigpt"]
    default, full = (json.loads(runner.invoke(cli, args + extra).output)["models"][0]["checks"]
                     for extra in ([], ["--full-train"]))
    train = [next(c for c in checks if c["quantity"] == "flops[train]") for checks in (default, full)]
    assert train[0]["ok"] and train[0]["measured"] == train[1]["measured"]
    assert "slices" in train[0]["note"] and train[1]["note"] == ""


def test_models_verify_cpu_builds_what_fits_and_lists_the_rest(monkeypatch):
    """On cpu the small presets are built for real; one that would not fit (here: anything above
    ~40 MB of free memory's 80 %) is listed as not built, and that is no mismatch."""
    import solver.models.guard as guard

    monkeypatch.setattr(guard, "available_bytes", lambda device: 50 * 10**6)
    result = CliRunner().invoke(cli, ["models", "verify", "--device", "cpu", "--seq", "8",
                                      "seed000-minigpt", "seed000-bert-classifier", "gpt3-175b"])
    assert result.exit_code == 0, result.output
    assert result.output.count(" OK") == 2
    assert "not built gpt3-175b: refusing to build gpt3-175b on cpu" in result.output
    assert "2 of 3 models match exactly on cpu (batch 1, seq 8); 1 not built" in result.output


def test_models_verify_exits_nonzero_on_a_mismatch(monkeypatch):
    import solver.counting as counts

    real = counts.param_breakdown

    class Plus:  # one parameter too many on the analytic side
        def __init__(self, bd):
            self.bd = bd
            self.total_with_lora = bd.total_with_lora + 1

        def by_group(self):
            return self.bd.by_group()

    monkeypatch.setattr(counts, "param_breakdown", lambda cfg: Plus(real(cfg)))
    result = CliRunner().invoke(cli, ["models", "verify", "--seq", "8", "seed004-minigpt"])
    assert result.exit_code == 1
    assert "MISMATCH seed004-minigpt: params" in result.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_models_verify_cuda_without_gpu_exits_2_in_one_line():
    result = CliRunner().invoke(cli, ["models", "verify", "--device", "cuda", "gpt2"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "no CUDA GPU" in result.output


def test_models_show_and_list():
    runner = CliRunner()
    shown = runner.invoke(cli, ["models", "show", "gpt2"])
    assert shown.exit_code == 0 and f"{PRESETS['gpt2'].exact():,}" in shown.output
    missing = runner.invoke(cli, ["models", "show", "gpt-5"])
    assert missing.exit_code == 2 and "unknown preset" in missing.output
    listed = json.loads(runner.invoke(cli, ["models", "list", "--json"]).output)
    assert [p["name"] for p in listed["presets"]] == list(PRESETS)


def test_models_list_does_not_import_torch():
    code = ("import sys; from click.testing import CliRunner; from drills.cli import cli; "
            "r = CliRunner().invoke(cli, ['models', 'list']); assert r.exit_code == 0, r.output; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- the O(n^2) memory claim, on a GPU only ----------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_math_attention_holds_the_score_matrix_flash_does_not():
    from solver.models.verify import attention_peak_memory

    cfg = ModelConfig(d_model=256, n_layers=1, n_heads=8, d_ff=512, vocab_size=128, pos="rope")
    mem = attention_peak_memory(cfg, batch=2, seq=2048)
    assert mem["math"] - mem["sdpa"] >= mem["score_matrix_bytes"]


@pytest.mark.slow
def test_verify_many_in_worker_processes_equals_in_process():
    """Two worker processes (spawned: each imports torch) give the same records, in order."""
    from solver.models.verify import verify_many

    named = [(n, PRESETS[n].config) for n in SMALL_PRESETS]
    seen = []
    parallel = verify_many(named, "meta", seq=8, jobs=2, on_done=lambda r: seen.append(r.name))
    serial = verify_many(named, "meta", seq=8, jobs=1)
    assert [r.name for r in parallel] == SMALL_PRESETS and sorted(seen) == sorted(SMALL_PRESETS)
    assert [[c.to_json() for c in r.checks] for r in parallel] == [[c.to_json() for c in r.checks] for r in serial]
    assert all(r.ok for r in parallel)
