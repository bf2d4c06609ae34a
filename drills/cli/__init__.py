"""The ``qkv`` command line: one group, commands imported only when run.

Each entry names the module that implements it; ``qkv --help`` is served from this table
alone, so it imports neither numpy nor torch.
"""

from __future__ import annotations

import gc
import os
import sys

_GC_WAS_ON = gc.isenabled()
gc.disable()  # no cyclic collection while click loads (allocations, no garbage); as it was at the end

import click  # noqa: E402

from drills import __version__  # noqa: E402
from drills.cli.lazy import LazyGroup  # noqa: E402

SOLVE_COMMANDS = {
    # by-hand kernels (issue: foundation)
    "attention": ("drills.cli.solve_kernels:attention", "Scaled dot-product attention, step by step."),
    "softmax": ("drills.cli.solve_kernels:softmax", "Softmax of a vector (with temperature)."),
    "layernorm": ("drills.cli.solve_kernels:layernorm", "LayerNorm of a vector or of each row of a matrix."),
    "rmsnorm": ("drills.cli.solve_kernels:rmsnorm", "RMSNorm of a vector or of each row of a matrix."),
    "pe": ("drills.cli.solve_kernels:pe", "Sinusoidal positional encoding values."),
    "rope": ("drills.cli.solve_kernels:rope", "Rotary position embedding of a vector."),
    # counting engine
    "params": ("drills.cli.solve_counts:params", "Exact parameter count of a Transformer."),
    "flops": ("drills.cli.solve_counts:flops", "Exact matmul FLOPs of a forward, decode or training step."),
    "memory": ("drills.cli.solve_counts:memory", "Bytes of weights, KV cache, attention scores or training state."),
    # hardware arithmetic
    "matmul": ("drills.cli.solve_hardware:matmul", "FLOPs, bytes, intensity and roofline time of a matmul."),
    "roofline": ("drills.cli.solve_hardware:roofline", "Critical arithmetic intensity of a chip."),
    "attention-flops": ("drills.cli.solve_hardware:attention_flops", "Attention FLOPs and intensity, prefill or decode."),
    "prefill": ("drills.cli.solve_hardware:prefill", "Time of a prefill at a given MFU."),
    "decode": ("drills.cli.solve_hardware:decode", "Lower bound of one decode step."),
    "train": ("drills.cli.solve_hardware:train", "Training compute (6ND), time, PF-days and MFU."),
    "zero": ("drills.cli.solve_hardware:zero", "Model-state memory per GPU under ZeRO stages 0-3."),
    "activations": ("drills.cli.solve_hardware:activations", "Activation memory per layer (Korthikanti et al.)."),
    "chips": ("drills.cli.solve_hardware:chips", "Fewest chips that hold the weights (and KV cache)."),
    # parallelism, communication and serving
    "collective": ("drills.cli.solve_parallel:collective", "Collective time, algbw and busbw (α-β model)."),
    "allreduce": ("drills.cli.solve_parallel:allreduce", "All-reduce time, algbw and busbw (ring or tree)."),
    "tp": ("drills.cli.solve_parallel:tp", "Bytes a tensor-parallel layer all-reduces per step."),
    "tp-matmul": ("drills.cli.solve_parallel:tp_matmul", "When a sharded matmul's all-reduce hides behind compute."),
    "pipeline": ("drills.cli.solve_parallel:pipeline", "Pipeline bubble of GPipe, 1F1B or interleaved schedules."),
    "dp-comm": ("drills.cli.solve_parallel:dp_comm", "Data-parallel / ZeRO communication volume per step."),
    "serve": ("drills.cli.solve_parallel:serve", "Largest batch that fits and tokens/s at it."),
    "generate": ("drills.cli.solve_parallel:generate", "End-to-end time of prefill plus n decode steps."),
    "speculative": ("drills.cli.solve_parallel:speculative", "Speculative decoding: tokens per step, speed-up."),
    "compute-optimal": ("drills.cli.solve_parallel:compute_optimal", "Chinchilla compute-optimal N and D."),
    "mfu": ("drills.cli.solve_parallel:mfu", "MFU against HFU (with recomputation)."),
    # relative positions, loss and sampling, quantisation (issue 10)
    "alibi": ("drills.cli.solve_relative:alibi", "ALiBi slopes (any head count) and one head's bias."),
    "t5-buckets": ("drills.cli.solve_relative:t5_buckets", "T5's relative-position bucket of a distance."),
    "cross-entropy": ("drills.cli.solve_loss_quant:cross_entropy", "Cross-entropy of logits for a target (nats, bits)."),
    "sampling": ("drills.cli.solve_loss_quant:sampling", "The top-k / top-p (nucleus) set with a temperature."),
    "quant": ("drills.cli.solve_loss_quant:quant", "Bytes of quantised weights with their scales (ggml, GPTQ, NF4)."),
    "float-format": ("drills.cli.solve_precision:float_format", "FP8/FP16/BF16/FP4: largest, smallest, spacing, nearest value."),
    "block-format": ("drills.cli.solve_precision:block_format", "Bytes per parameter of MXFP4/MXFP8/NVFP4 (scales counted)."),
    "mx-quantize": ("drills.cli.solve_precision:mx_quantize", "One MX block: shared power-of-two scale, elements, error."),
    "quant-error": ("drills.cli.solve_precision:quant_error", "Absmax / zero-point quantisation error; per-tensor, channel, block."),
    "smoothquant": ("drills.cli.solve_precision:smoothquant", "SmoothQuant migration scales s_j and the maxima after."),
    "fp8-memory": ("drills.cli.solve_precision:fp8_memory", "Model-state memory of FP8 training (which tensors stay high)."),
    "lr": ("drills.cli.solve_training_scale:lr", "Learning rate at a step: warmup, inverse-sqrt, cosine."),
    "fsdp": ("drills.cli.solve_training_scale:fsdp", "FSDP/ZeRO-3 per-layer gather/scatter bytes; hidden behind compute?"),
    "grad-accum": ("drills.cli.solve_training_scale:grad_accum", "Gradient-accumulation steps and the pipeline bubble."),
    "fit-3d": ("drills.cli.solve_training_scale:fit_3d", "Does a TP×PP×DP run fit: ZeRO states + 1F1B activations."),
    "busbw": ("drills.cli.solve_training_scale:busbw", "nccl-tests' size and time (or algbw) to bus bandwidth."),
    "run-flops": ("drills.cli.solve_training_scale:run_flops", "A run's FLOPs from GPU-hours or days × chips × peak × MFU."),
    "mfu-step": ("drills.cli.solve_training_scale:mfu_step", "MFU from a logged step time."),
    "flash-attention": ("drills.cli.solve_attention_systems:flash_attention", "FlashAttention block sizes and HBM traffic vs standard attention."),
    "online-softmax": ("drills.cli.solve_attention_systems:online_softmax", "Online softmax block by block (running max, sum, rescaled output)."),
    "mla-decode": ("drills.cli.solve_attention_systems:mla_decode", "MLA decode FLOPs and bytes, absorbed vs naive."),
    "rope-scaling": ("drills.cli.solve_long_context:rope_scaling", "RoPE context extension (PI, NTK, dynamic, YaRN) pair by pair."),
    "ring-attention": ("drills.cli.solve_long_context:ring_attention", "Ring attention bytes per step and when they hide."),
    "ulysses": ("drills.cli.solve_long_context:ulysses", "Ulysses sequence-parallel all-to-all bytes per layer."),
    "sliding-window": ("drills.cli.solve_long_context:sliding_window", "Sliding-window stack: receptive field, sinks, KV per layer."),
    "softcap": ("drills.cli.solve_long_context:softcap", "Logit soft-capping cap·tanh(x/cap) (Gemma 2)."),
    "mlp": ("drills.cli.solve_more:mlp", "Parameters or FLOPs of a plain fully connected network."),
    "rope-score": ("drills.cli.solve_more:rope_score", "Score q·k of RoPE-rotated vectors at positions m and n."),
    "perplexity": ("drills.cli.solve_more:perplexity", "Perplexity from log-probabilities, logits or a loss."),
    "paged-kv": ("drills.cli.solve_serving_systems:paged_kv", "PagedAttention KV blocks, fragmentation, sequences that fit."),
    "batching": ("drills.cli.solve_serving_systems:batching", "Static vs continuous batching: throughput and latency."),
    "disaggregation": ("drills.cli.solve_serving_systems:disaggregation", "KV cache a prefill hands to decode, time over a link."),
    "moe-all-to-all": ("drills.cli.solve_moe_systems:moe_all_to_all", "Expert-parallel all-to-all bytes and time of a MoE layer."),
    "expert-capacity": ("drills.cli.solve_moe_systems:expert_capacity", "Expert capacity and the tokens dropped for a routing."),
    "router-loss": ("drills.cli.solve_moe_systems:router_loss", "Switch load-balancing loss and router z-loss by hand."),
    "transfer": ("drills.cli.registry_command:transfer", "Point-to-point time of one message over one link."),
    "dp-batch": ("drills.cli.registry_command:dp_batch", "DP/FSDP: per-chip batch above which training is compute-bound."),
    "pipeline-batch": ("drills.cli.registry_command:pipeline_batch", "Fewest microbatches (and batch) that keep the pipeline bubble small."),
    "ep-d-ff": ("drills.cli.registry_command:ep_d_ff", "Expert parallelism: least expert width F that hides the all-to-alls."),
    "tp-max": ("drills.cli.registry_command:tp_max", "Largest tensor-parallel degree before comms dominate training."),
    "fsdp-tp-batch": ("drills.cli.registry_command:fsdp_tp_batch", "FSDP+TP: per-chip batch above which training is compute-bound."),
    "fsdp-opt": ("drills.cli.registry_command:fsdp_opt", "FSDP degree minimising the comms of FSDP+TP on N chips."),
    "tp-decode-max": ("drills.cli.registry_command:tp_decode_max", "Decode: TP degree above which ICI exceeds weight loading."),
    "decode-batch": ("drills.cli.registry_command:decode_batch", "Batch above which decode is compute-bound (dense, MoE); attention intensity."),
    "decode-latency": ("drills.cli.registry_command:decode_latency", "Decode latency and tokens/s at a batch; where it turns compute-bound."),
    "kv-budget": ("drills.cli.registry_command:kv_budget", "HBM left for the KV cache; the largest batch or context."),
    "sharded-matmul": ("drills.cli.registry_command:sharded_matmul", "A[I_X,J]·B[J,K_Y] cases: collective, bytes, time."),
    "weight-stationary": ("drills.cli.registry_command:weight_stationary", "Inference MLP sharding: 2D weight-stationary vs 1D comms; best X."),
    "chip-figures": ("drills.cli.registry_command:chip_figures", "A chip's figures: the preset's or a text's, sparse/dense, one/both ways."),
    "gpu-peak": ("drills.cli.registry_command:gpu_peak", "A GPU's peak from SMs, tensor cores and clock, vs its datasheet."),
    "warps-resident": ("drills.cli.registry_command:warps_resident", "Warps an SM keeps resident (registers, shared memory)."),
    "elementwise": ("drills.cli.registry_command:elementwise", "Roofline of an elementwise (fused) kernel."),
    "reduction": ("drills.cli.registry_command:reduction", "Roofline of a row reduction."),
    "torus": ("drills.cli.registry_command:torus", "A TPU slice's torus: chips, hosts, links, bisection bandwidth."),
    "pod": ("drills.cli.registry_command:pod", "A pod's FLOP/s, HBM and bandwidth from its chips'."),
    "node": ("drills.cli.registry_command:node", "A GPU node / NVLink domain (HGX H100, B200, GB200 NVL72): links, egress, C/W."),
    "two-level-all-reduce": ("drills.cli.registry_command:two_level_all_reduce", "All-reduce inside nodes, then across nodes."),
    "train-memory": ("drills.cli.registry_command:train_memory", "Training memory by named recipe (bytes per parameter)."),
}

COMMANDS = {
    "solve": ("drills.cli:solve", "Compute an answer exactly, with its worked solution."),
    "calc": ("drills.cli.calc:calc", "Arithmetic with units over presets and every formula (a calculator)."),
    "models": ("drills.cli.models:models", "The model zoo: list, show, verify against real PyTorch models."),
    "hw": ("drills.cli.hw:hw", "Hardware presets: peak FLOP/s, HBM, bandwidth."),
    "measure": ("drills.cli.hw:measure", "Run an operation for real and compare with the roofline."),
    "bank": ("drills.cli.bank:bank", "The question bank: list, show, validate, errata."),
    "quiz": ("drills.cli.quiz:quiz", "Drill problems in the terminal, with spaced repetition."),
    "check": ("drills.cli.check:check", "Check a hand computation step by step."),
    "stats": ("drills.cli.progress:stats", "Accuracy, misconceptions, items due, streak."),
    "history": ("drills.cli.progress:history", "Export or import your answer history."),
    "sheet": ("drills.cli.sheet:sheet", "Write a practice set (PDF, Markdown, HTML, Anki, Moodle, JSON)."),
    "exam": ("drills.cli.exam:exam", "A timed GATE-style mock exam."),
    "grade": ("drills.cli.grade:grade", "Grade a class's answers (CSV) against a key file; item analysis."),
}


class QkvGroup(LazyGroup):
    """The top-level group: turns every error into one line on stderr."""

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        if name not in LATE_GC:
            import gc

            gc.enable()  # main() held it off for the start-up only
        return name, cmd, rest

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from solver.errors import SolverInputError

        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.ClickException as e:
            from drills.output import strip_controls

            click.echo(f"qkv: error: {strip_controls(e.format_message(), keep='')}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("", err=True)
            sys.exit(130)
        except KeyboardInterrupt:
            click.echo("", err=True)
            sys.exit(130)
        except SolverInputError as e:
            from drills.output import strip_controls

            click.echo(f"qkv: error: {strip_controls(str(e), keep='')}", err=True)
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(0)
        except MemoryError:
            click.echo("qkv: error: out of memory: this command needs more memory than the computer could give; "
                       "use smaller sizes or close other programs", err=True)
            sys.exit(2)
        except Exception as e:  # noqa: BLE001 - the user gets one line, developers a traceback
            if os.environ.get("QKV_DEBUG"):
                raise
            if type(e).__name__ == "OutOfMemoryError" or "can't allocate memory" in str(e):  # torch, CPU or GPU
                click.echo(f"qkv: error: out of memory: {str(e).splitlines()[0][:160]}; use smaller sizes or "
                           "close other programs", err=True)
                sys.exit(2)
            click.echo(f"qkv: internal error: {type(e).__name__}: {e} (QKV_DEBUG=1 shows the traceback)", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=QkvGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="qkv")
def cli() -> None:
    """qkv: drills on Transformers and attention for GATE-style exams and ML interviews.

    Every answer comes from an exact solver (NumPy, SymPy, and real PyTorch models).
    """


#: names people reach for that another command answers (``qkv check kv-cache`` has a ``solve`` of the same name)
SOLVE_ALIASES = {
    "kv-cache": ("memory", ["--what", "kv-cache"], "KV-cache bytes (qkv solve memory --what kv-cache)."),
}


@click.group(cls=LazyGroup, lazy=SOLVE_COMMANDS, aliases=SOLVE_ALIASES)
def solve() -> None:
    """Compute an answer exactly, with its worked solution.

    \b
    Numbers: 3, 0.5, 1e-3, 1/2, 2^-3, 1,024; every number must be finite and in its option's
    range (one-line refusal otherwise). Suffixes:
      sequence lengths and layer sizes (--seq, --context, --prompt, --d-model, --d-ff ...):
        k = 1024, M = 2^20 (8k = 8,192 tokens, as "8k context" is meant);
      counts (parameters, training tokens, batch, weights, FLOPs, chips):
        K = 10^3, M = 10^6, B = 10^9, T = 10^12 (70B, 1.4T);
      bytes: GB = 10^9, GiB = 2^30 (80GB, 80GiB, 3.35TB/s);
      a vocabulary size takes none (32k is 32,000 or 32,768 depending on the model).
    Names from papers and configs work too: matmul -M/-K/-N, --hidden / --hidden-size,
    --heads, --flops for -C, alibi --i/--j, t5-buckets -r, --preset/--config on every command
    that needs a model's sizes.
    """


#: commands that turn the cyclic garbage collector back on themselves, once their start-up is done
#: (the quiz: when its first question is on screen); every other command gets it back before it runs
LATE_GC = frozenset({"quiz"})


def main() -> None:
    import gc

    from drills.dataclass_cache import install

    # start-up allocates many objects and frees few: no cyclic collection while the modules load
    # (a seventh of the quiz's work to its first question); on again before a command runs
    gc.disable()
    install()  # the methods dataclasses writes, compiled once and kept (a quarter of the quiz's start-up)
    try:
        cli(prog_name="qkv")
    finally:
        gc.enable()


if _GC_WAS_ON:
    gc.enable()

if __name__ == "__main__":
    main()
