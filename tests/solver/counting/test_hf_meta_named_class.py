"""Issue 37: a config.json of a type qkv does not read is counted as the class its ``architectures``
names (the whole checkpoint, with its parts), and says so when that class cannot be built; an MoE's
active parameters come from the experts the model holds. Issue 42: no config causes a network
request, a token read or a download.

Each count is checked a second, independent way: the class built here by the test on the meta
device (the same transformers, without qkv's code path), or a hand count from the config's sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from drills.cli import cli

transformers = pytest.importorskip("transformers", minversion="5.0")
torch = pytest.importorskip("torch")

# A vision-language checkpoint (Mistral 3's class: Pixtral vision tower, projector, Mistral text
# model, untied LM head), at toy sizes.
VLM = {"model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"], "tie_word_embeddings": False,
       "text_config": {"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "head_dim": 16},
       "vision_config": {"model_type": "pixtral", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                         "intermediate_size": 64, "patch_size": 4, "image_size": 32, "head_dim": 16}}
MOE = {"model_type": "olmoe", "architectures": ["OlmoeForCausalLM"], "hidden_size": 32, "num_hidden_layers": 2,
       "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16, "num_experts": 8,
       "num_experts_per_tok": 2, "vocab_size": 50}


def _meta_total(raw: dict, cls_name: str) -> int:
    conf = transformers.CONFIG_MAPPING[raw["model_type"]].from_dict(raw)
    with torch.device("meta"):
        model = getattr(transformers, cls_name)(conf)
    return sum(p.numel() for p in model.parameters())


def _run(tmp_path, raw, *args):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return CliRunner().invoke(cli, ["solve", "params", "--config", str(path), *args])


@pytest.fixture(scope="module")
def vlm_json(tmp_path_factory):
    r = _run(tmp_path_factory.mktemp("vlm"), VLM, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_vision_language_file_is_counted_as_the_class_it_names(vlm_json):
    out = vlm_json
    assert out["convention"]["class"] == out["convention"]["named_class"] == "Mistral3ForConditionalGeneration"
    assert "not_the_named_class" not in out["convention"]
    assert out["answer"] == _meta_total(VLM, "Mistral3ForConditionalGeneration")
    parts = out["breakdown"]["parts"]
    assert sum(parts.values()) == out["answer"] == sum(out["breakdown"]["by_module"].values())
    assert set(parts) == {"vision tower", "projector", "text model", "heads"}
    assert parts["heads"] == 100 * 64  # the untied LM head
    # what the old fallback (AutoModelForCausalLM) counted: the text model and head alone, silently
    assert out["answer"] - _meta_total(VLM["text_config"], "MistralForCausalLM") == parts["vision tower"] + parts["projector"]


def test_the_plain_answer_gives_the_parts(tmp_path):
    r = _run(tmp_path, VLM)
    assert r.exit_code == 0, r.output
    assert "Mistral3ForConditionalGeneration built on the meta device" in r.output
    for part in ("vision tower", "projector", "text model", "heads"):
        assert f"\n  {part} " in r.output


def test_a_class_that_cannot_be_built_is_named_with_what_was_counted(tmp_path):
    raw = {"model_type": "mamba", "architectures": ["MambaForNoSuchTask"], "hidden_size": 16, "num_hidden_layers": 2,
           "vocab_size": 50, "state_size": 4, "expand": 2, "conv_kernel": 4, "tie_word_embeddings": True}
    r = _run(tmp_path, raw)
    assert r.exit_code == 0, r.output
    assert ("NOT the class the file names: transformers " in r.output and "has no class 'MambaForNoSuchTask'; "
            "counted MambaForCausalLM instead" in r.output)
    out = json.loads(_run(tmp_path, raw, "--json").stdout)
    assert out["convention"]["not_the_named_class"].endswith("counted MambaForCausalLM instead")
    assert out["answer"] == 5264  # Mamba by hand: tests/drills/cli/test_solve_hf_meta.py


def test_moe_active_parameters_from_the_experts_built(tmp_path):
    r = _run(tmp_path, MOE, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answer"] == _meta_total(MOE, "OlmoeForCausalLM")
    # by hand: each layer's experts hold 8 × (3 · 32 · 16) = 12,288; a token uses 2 of 8
    per_layer = 8 * 3 * 32 * 16
    assert out["active"] == out["answer"] - 2 * (per_layer - per_layer * 2 // 8)
    assert out["breakdown"]["experts"] == {"experts": 8, "top_k": 2, "moe_layers": 2}
    assert "active/token" in _run(tmp_path, MOE).output


# ---- issue 42: no network, no token, no download ----------------------------------------------

DPT_NAMED = {"model_type": "dpt", "architectures": ["DPTForDepthEstimation"], "backbone": "facebook/dinov2-small",
             "use_pretrained_backbone": True, "use_timm_backbone": False}
DPT_GIVEN = {"model_type": "dpt", "architectures": ["DPTForDepthEstimation"], "use_pretrained_backbone": True,
             "backbone_config": {"model_type": "dinov2", "hidden_size": 32, "num_hidden_layers": 2,
                                 "num_attention_heads": 2, "intermediate_size": 64, "image_size": 32, "patch_size": 8,
                                 "out_features": ["stage1", "stage2"]},
             "is_hybrid": False, "hidden_size": 32, "neck_hidden_sizes": [16, 32], "reassemble_factors": [2, 1],
             "fusion_hidden_size": 16, "backbone_out_indices": None}

_GUARD = textwrap.dedent("""
    import os, sys
    seen = []
    home = os.path.realpath(os.environ["HF_HOME"])
    def hook(event, args):
        if event.startswith("socket.") or event in ("subprocess.Popen", "urllib.Request"):
            seen.append(event)
        elif event == "open" and args and isinstance(args[0], str):
            p = os.path.realpath(args[0])
            if p.startswith(home) or os.path.basename(p) in ("token", "stored_tokens"):
                seen.append("open " + p)
    sys.addaudithook(hook)
    from drills.cli import main
    runs = [["solve", "params", "--config", p] for p in sys.argv[1:]]
    last = sys.argv[-1]  # the other commands that read a config, on the last file
    runs += [["solve", "memory", "--what", "kv-cache", "--config", last, "--batch", "1", "--seq", "64",
              "--dtype", "bf16"], ["solve", "memory", "--what", "weights", "--config", last]]
    for argv in runs:
        sys.argv = ["qkv", *argv]
        try:
            main()
        except SystemExit as e:
            code = e.code
        print("GUARD", repr(seen), code, file=sys.stderr)
""")


def test_no_config_opens_a_socket_or_reads_a_token(tmp_path):
    """A child process whose audit hook (installed before qkv's) records every socket, subprocess and
    open of a token or of anything under HF_HOME, around every command that reads a config (params,
    memory's KV cache and quantized weights): none, whatever the config asks (a DPT config naming
    a Hub backbone with use_pretrained_backbone: refused in one line, no request; one describing its
    backbone: counted offline; a vision-language file). HF_HOME holds a token file, so a read of it
    would be seen."""
    home = tmp_path / "hf"
    home.mkdir()
    (home / "token").write_text("hf_secret")
    paths = []
    vlm_fp8 = {**VLM, "quantization_config": {"quant_method": "fp8", "weight_block_size": [16, 16],
                                              "modules_to_not_convert": ["model.vision_tower", "lm_head"]}}
    for i, raw in enumerate((DPT_NAMED, DPT_GIVEN, VLM, vlm_fp8)):
        paths.append(tmp_path / f"config{i}.json")
        paths[-1].write_text(json.dumps(raw))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_HOME=str(home), HF_TOKEN_PATH=str(home / "token"), PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _GUARD, *map(str, paths)], capture_output=True, text=True, env=env,
                          timeout=180)
    guard = [ln for ln in done.stderr.splitlines() if ln.startswith("GUARD")]
    # params of each file; then memory --what kv-cache and (the file's quantization_config) weights
    assert guard == ["GUARD [] 2", "GUARD [] 0", "GUARD [] 0", "GUARD [] 0", "GUARD [] 0", "GUARD [] 0"], \
        done.stdout + done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("qkv")]
    assert len(errors) == 1 and "qkv never downloads it" in errors[0], errors


def test_the_seal_refuses_sockets_and_token_reads(tmp_path, monkeypatch):
    """The guard itself: inside ``sealed()`` a socket or a read under the Hugging Face home raises and is recorded."""
    import socket

    from solver.counting.hf_meta import sealed

    monkeypatch.setenv("HF_HOME", str(tmp_path))
    (tmp_path / "token").write_text("x")
    with sealed() as blocked:
        with pytest.raises(PermissionError):
            socket.socket()
        with pytest.raises(PermissionError):
            open(tmp_path / "token").read()
    assert len(blocked) == 2
    socket.socket().close()  # outside: untouched
    assert open(tmp_path / "token").read() == "x"


def test_auto_map_and_modules_beside_the_config_are_never_imported(tmp_path):
    """auto_map names code beside the config; a module there that runs would write a marker file."""
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    raw = {**MOE, "auto_map": {"AutoConfig": "evil.Config", "AutoModelForCausalLM": "evil.Model"},
           "architectures": ["Model"]}
    r = _run(tmp_path, raw)
    assert r.exit_code == 0, r.output
    assert not marker.exists()
