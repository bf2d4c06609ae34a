"""``qkv solve params --config FILE`` beyond qkv's own model types (issue 20): transformers' own class,
built on the meta device (:mod:`solver.counting.hf_meta`), counts a config.json whose ``model_type``
qkv does not read; ``--compare-transformers`` runs both counts for a type qkv reads and names any
difference. The quiz never reaches this module (it imports transformers only inside the command).
"""

from __future__ import annotations

import json
from typing import Any

from drills.cli.model_flags import given_fields
from drills.output import InputError, emit, emit_json


def qkv_reads(kind: Any) -> bool:
    """Whether ``solver.counting.config_json`` (or the T5/ViT reader) reads this model_type."""
    from solver.counting import config_json
    from solver.counting.config_json.t5_vit import OWN_MODEL_TYPES

    # a model_type that is not a string is qkv's reader's to refuse, in one line naming the key
    return not isinstance(kind, str) or kind in config_json.KNOWN_TYPES or kind in OWN_MODEL_TYPES


from solver.errors import SolverInputError  # noqa: E402


def _raw(path: str) -> dict[str, Any] | None:
    try:
        from solver.counting.config_json import read_config_bytes  # capped: a link to /dev/zero is refused

        raw = json.loads(read_config_bytes(path))
    except (OSError, ValueError, RecursionError, SolverInputError):
        return None
    return raw if isinstance(raw, dict) else None


def hf_meta_params(kw: dict[str, Any], as_json: bool, explain: bool, compare: bool) -> bool:
    """Print transformers' count when ``--config`` is of a type qkv does not read and return True;
    with ``compare`` on a type qkv reads, print both counts (and return True); False otherwise."""
    from solver.counting.hf_meta import count_with_transformers
    from solver.errors import SolverInputError

    path = kw.get("config_file")
    raw = _raw(path) if path else None
    if raw is None:
        if compare:
            raise InputError("--compare-transformers needs --config FILE (a config.json)", "--compare-transformers")
        return False
    from solver.counting.config_json import type_of

    kind = raw.get("model_type")
    if qkv_reads(type_of(raw)) and not compare:
        return False
    if given_fields(kw):
        names = ", ".join("--" + f.replace("_", "-") for f in sorted(given_fields(kw)))
        raise InputError(f"{names}: not read when transformers counts the config.json; edit the file", "--config")
    try:
        theirs = count_with_transformers(raw)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    counted_by = (f"transformers {theirs.transformers_version}: {theirs.model_class} built on the meta device "
                  f"(no weights, no download); sum of numel over its parameters, a tied tensor once")
    if not qkv_reads(type_of(raw)):
        convention = {"counted_by": counted_by, "model_type": kind, "class": theirs.model_class,
                      "named_class": theirs.named_class}
        if theirs.fallback:
            convention["not_the_named_class"] = theirs.fallback
        if theirs.notes:
            convention["notes"] = list(theirs.notes)
        if theirs.active is not None:
            convention["active"] = (f"parameters one token uses: top-{theirs.experts['top_k']} of the "
                                    f"{theirs.experts['experts']} experts in each of {theirs.experts['moe_layers']} "
                                    "expert layers (modules named experts), everything else whole")
        if as_json:
            out = {"answer": theirs.total, "unit": "parameters", "convention": convention,
                   "breakdown": theirs.to_json()}
            if theirs.active is not None:
                out["active"] = theirs.active
            emit_json(out)
            return True
        emit(f"answer: {theirs.total:,} parameters ({kind}: counted by transformers, not by qkv)")
        emit(f"  counted by {counted_by}")
        if theirs.fallback:
            emit(f"  NOT the class the file names: {theirs.fallback}")
        for note in theirs.notes:
            emit(f"  {note}")
        for part, n in theirs.parts.items():
            emit(f"  {part:<48} {n:>18,}")  # text model, vision tower, projector, heads: the whole checkpoint
        if theirs.active is not None:
            emit(f"  {'active/token':<48} {theirs.active:>18,}  (top-{theirs.experts['top_k']} of "
                 f"{theirs.experts['experts']} experts)")
        elif theirs.experts:
            emit(f"  active/token: not derived ({theirs.experts['unresolved']})")
        emit("  by module:")
        for name, n in theirs.by_module.items():
            emit(f"  {name:<48} {n:>18,}")
        return True
    from solver.counting import param_breakdown
    from solver.counting.config_json import read_hf_config

    try:
        cfg, _ = read_hf_config(path)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    mine = param_breakdown(cfg).total
    diff = theirs.total - mine
    verdict = "the same count" if diff == 0 else f"transformers counts {diff:+,} parameters more than qkv"
    if as_json:
        emit_json({"answer": mine, "unit": "parameters",
                   "convention": {"counted_by": "qkv (solver.counting)", "compared_with": counted_by},
                   "comparison": {"qkv": mine, "transformers": theirs.total, "difference": diff,
                                  "verdict": verdict},
                   "breakdown": {"qkv": param_breakdown(cfg).to_json(), "transformers": theirs.to_json()}})
        return True
    emit(f"answer: {mine:,} parameters (qkv)")
    emit(f"  transformers: {theirs.total:,} ({theirs.model_class}, meta device)")
    emit(f"  {verdict}")
    if explain or diff:
        for name, n in theirs.by_module.items():
            emit(f"  {name:<48} {n:>18,}")
    return True


def check_unread(path: str, raw: dict[str, Any], cfg: Any, notes: list[str]) -> str | None:
    """Issue 37: where the reader named keys it did not read, qkv's parameter count checked against
    transformers' class built on the meta device: a note line saying the counts agree or by how much
    they differ (never hidden). Without transformers, keys that may change a count are refused in one
    line (nothing can check them); keys that may not are only named."""
    from solver.counting import param_breakdown
    from solver.counting.config_json import unread_of
    from solver.counting.hf_meta import count_with_transformers

    unread, counting = unread_of(notes)
    if not counting:
        return None
    try:
        import transformers  # noqa: F401
    except ImportError:
        if counting:
            raise InputError(f"{path}: {', '.join(counting)}: not read by qkv and may change the count; "
                             f"transformers would check it ({INSTALL_HINT_SHORT})", "--config") from None
        return None
    try:
        theirs = count_with_transformers(raw)
    except SolverInputError as e:
        if counting:
            raise InputError(f"{path}: {', '.join(counting)}: not read by qkv and may change the count, and "
                             f"transformers cannot check it: {e.args[0]}", "--config") from None
        return None
    mine = param_breakdown(cfg).total
    if theirs.total == mine:
        return (f"checked: transformers {theirs.transformers_version}'s {theirs.model_class} counts the same "
                f"{mine:,} parameters (the keys not read change no parameter)")
    return (f"DIFFERENCE: transformers {theirs.transformers_version}'s {theirs.model_class} counts "
            f"{theirs.total:,} parameters, {theirs.total - mine:+,} against qkv's {mine:,}: a key not read "
            f"({', '.join(counting)}) or a default qkv assumed changes the count; qkv's answer is not confirmed")


INSTALL_HINT_SHORT = "pip install transformers torch"


def hf_meta_kv(spec: Any, batch: int | None, seq: int | None, dtype: str | None, as_json: bool,
               plot: str | None) -> bool:
    """Issue 37: ``memory --what kv-cache --config FILE`` for a type qkv does not read: the cache layout
    of transformers' own config (:func:`solver.counting.hf_meta.kv_layout`), printed; True when answered."""
    path = spec.config_file
    raw = _raw(path) if path else None
    if raw is None:
        return False
    from solver.counting.config_json import type_of

    if qkv_reads(type_of(raw)):
        return False
    if spec.given:
        names = ", ".join("--" + f.replace("_", "-") for f in sorted(spec.given))
        raise InputError(f"{names}: not read when transformers' config gives the cache; edit the file", "--config")
    if plot is not None:
        raise InputError("--plot: not drawn for a type qkv does not read", "--plot")
    missing = ["--" + m for m, v in (("batch", batch), ("seq", seq), ("dtype", dtype)) if v is None]
    if missing:
        raise InputError(f"the KV cache needs {', '.join(missing)}")
    from solver.counting.hf_meta import kv_layout
    from solver.counting.memory import dtype_bytes

    try:
        layout = kv_layout(raw)
    except SolverInputError as e:
        raise InputError(f"{path}: {e.args[0]}", "--config") from None
    items = layout.bytes(batch, seq, dtype_bytes(dtype))
    total = sum(b for _, b, _ in items)
    counted_by = (f"transformers {layout.transformers_version}: {layout.config_class} (the decoder's config): "
                  "per layer, K and V of every KV head for each position kept (a window keeps at most W); a latent-"
                  "attention layer keeps one compressed vector per position")
    if as_json:
        emit_json({"answer": total, "unit": "bytes",
                   "convention": {"unit": "bytes; GB = 10^9 bytes, GiB = 2^30 bytes", "counted_by": counted_by,
                                  "model_type": raw.get("model_type"), "model": f"config ({path})"},
                   "breakdown": {"items": [{"name": n, "bytes": b, "formula": f} for n, b, f in items]}})
        return True
    emit(f"answer: {total:,} B = {total / 1e9:.4g} GB = {total / 2**30:.4g} GiB "
         f"({raw.get('model_type')}: derived from transformers' config, not by qkv)")
    emit(f"  counted by {counted_by}")
    for name, b, formula in items:
        emit(f"  {name:<26} {b:>22,} B   {formula}")
    return True


def quantization_of(spec: Any) -> dict[str, Any] | None:
    """The config file's ``quantization_config`` (top level or in ``text_config``), or None."""
    path = getattr(spec, "config_file", None)
    raw = _raw(path) if path else None
    if raw is None:
        return None
    q = raw.get("quantization_config")
    if not isinstance(q, dict) and isinstance(raw.get("text_config"), dict):
        q = raw["text_config"].get("quantization_config")
    return q if isinstance(q, dict) else None


def native_quantized(spec: Any, hint: str) -> Any:
    """Issue 37: the file's weights under its ``quantization_config`` as qkv lays them out
    (:func:`solver.counting.quantization.quantized_weights`) from the file's native reading, or None
    when the file has no quantization_config, qkv does not read its type, or the method is not
    modelled (the caller may then ask transformers' quantizer). A setting qkv cannot honour is refused
    in one line ending with ``hint``."""
    from solver.counting.quantization import NotModelled, quantized_weights, scheme_of

    q = quantization_of(spec)
    if q is None:
        return None
    try:
        scheme_of(q)
    except NotModelled:
        return None  # a method qkv does not lay out: transformers' quantizer may (hf_quantized_weights)
    except SolverInputError:
        pass  # refused below, with the file's name
    try:
        cfg = spec.config()
    except InputError:
        return None  # a type without a native reader: transformers' quantizer (hf_quantized_weights)
    raw = _raw(spec.config_file)
    try:
        return quantized_weights(cfg, q, raw)
    except NotModelled:
        return None
    except SolverInputError as e:
        raise InputError(f"{spec.config_file}: {e.args[0]}; {hint}", "--config") from None


def native_quantized_weights(spec: Any, dtype: str | None, as_json: bool, plot: str | None, explain: bool) -> bool:
    """Issue 37: ``memory --what weights --config FILE`` of a file with a ``quantization_config`` and no
    ``--dtype``, laid out by qkv (FP8 blocks and their scales, MXFP4 and its shared exponents, int4
    groups and their scales and zeros); True when answered."""
    if dtype is not None or quantization_of(spec) is None:
        return False
    if spec.given:
        names = ", ".join("--" + f.replace("_", "-") for f in sorted(spec.given))
        raise InputError(f"{names}: not read with the file's quantization_config; edit the file or give --dtype",
                         "--config")
    qw = native_quantized(spec, "give --dtype for one precision")
    if qw is None:
        return False
    if plot is not None:
        raise InputError("--plot: not drawn for a quantized checkpoint's layout; give --dtype", "--plot")
    f = qw.scheme.format
    how = (f"qkv's layout of {f.name} ({f.source}); every other tensor (embeddings, norms, biases, "
           f"{'the router, ' if qw.which() == 'the experts' else ''}the LM head unless quantised) at the file's "
           f"dtype, {qw.stored}")
    by = qw.by_dtype()
    if as_json:
        emit_json({"answer": qw.bytes, "unit": "bytes",
                   "convention": {"unit": "bytes; GB = 10^9 bytes, GiB = 2^30 bytes", "counted_by": how,
                                  "weights": qw.summary(), "quantization_config": q_summary(quantization_of(spec)),
                                  "model": f"config ({spec.config_file})"},
                   "breakdown": {"by_dtype": {k: {"elements": n, "bytes": b} for k, (n, b) in by.items()},
                                 "quantization": qw.to_json()}})
        return True
    emit(f"answer: {qw.bytes:,} B = {qw.bytes / 1e9:.4g} GB = {qw.bytes / 2**30:.4g} GiB "
         f"(weights: {qw.summary()})")
    emit(f"  counted by {how}")
    for key, (n, b) in by.items():
        emit(f"  {key:<24} {n:>20,} elements {b:>22,} B")
    if explain:
        emit("")
        emit("by tensor kind (quantised tensors / all):")
        for i in qw.items:
            emit(f"  {i.label:<44} {i.quantised:>6}/{i.tensors:<6} {i.bytes:>20,} B")
        if qw.scheme.skip:
            emit(f"  left at {qw.stored}: " + ", ".join(qw.scheme.skip))
    return True


def hf_quantized_weights(spec: Any, dtype: str | None, as_json: bool, plot: str | None) -> bool:
    """Issue 37: ``memory --what weights --config FILE`` of a file with a ``quantization_config`` and no
    ``--dtype``: the bytes transformers' quantizer lays out (FP8 weights and their block scales, ...),
    by dtype; True when answered. With ``--dtype`` the command answers at that one precision and says the
    file's quantization is not applied (:func:`quant_line`)."""
    q = quantization_of(spec)
    if q is None or dtype is not None:
        return False
    if spec.given:
        names = ", ".join("--" + f.replace("_", "-") for f in sorted(spec.given))
        raise InputError(f"{names}: not read with the file's quantization_config; edit the file or give --dtype",
                         "--config")
    if plot is not None:
        raise InputError("--plot: not drawn for a quantized checkpoint's layout; give --dtype", "--plot")
    from solver.counting.hf_meta import quantized_weights

    raw = _raw(spec.config_file)
    try:
        rep = quantized_weights(raw)
    except SolverInputError as e:
        raise InputError(f"{spec.config_file}: {e.args[0]}", "--config") from None
    total = rep.bytes
    how = (f"quantization_config ({rep.method}): transformers {rep.transformers_version}'s quantizer applied to "
           f"{rep.model_class} on the meta device, as from_pretrained loads the checkpoint; bytes of every parameter "
           "by dtype (quantized weights, their scales, the weights left in the file's torch_dtype)")
    if as_json:
        emit_json({"answer": total, "unit": "bytes",
                   "convention": {"unit": "bytes; GB = 10^9 bytes, GiB = 2^30 bytes", "counted_by": how,
                                  "quantization_config": q_summary(quantization_of(spec)),
                                  "model": f"config ({spec.config_file})"},
                   "breakdown": {"by_dtype": {k: {"elements": n, "bytes": b} for k, (n, b) in rep.by_dtype.items()}}})
        return True
    emit(f"answer: {total:,} B = {total / 1e9:.4g} GB = {total / 2**30:.4g} GiB (weights as the file's "
         f"quantization_config stores them: {q_summary(quantization_of(spec))})")
    emit(f"  counted by {how}")
    for key, (n, b) in rep.by_dtype.items():
        emit(f"  {key:<16} {n:>20,} elements {b:>22,} B")
    return True


def q_summary(q: dict[str, Any] | None) -> str:
    """``fp8, weight_block_size [128, 128]``: a quantization_config in a few words."""
    if not q:
        return ""
    parts = [str(q.get("quant_method"))]
    for key in ("fmt", "weight_block_size", "bits", "group_size"):
        if q.get(key) is not None:
            parts.append(f"{key} {q[key]}")
    return ", ".join(parts)


def quant_line(spec: Any, dtype: str | None) -> str | None:
    """With ``--dtype`` on a file that has a quantization_config: the line saying it is not applied."""
    q = quantization_of(spec)
    if q is None or dtype is None:
        return None
    return (f"quantization_config ({q_summary(q)}) not applied: every weight at --dtype {dtype} as asked "
            "(without --dtype the file's quantized layout is answered)")


def quantized_for(spec: Any, cfg: Any, weight_dtype: str | None, params: Any) -> Any:
    """Issue 37: the layout of the config file's ``quantization_config`` (qkv's, see
    ``solver.counting.quantization``) when the weights are the file's own (no --weight-dtype, no --params),
    for ``serve``, ``generate``, ``decode`` and ``chips``; None otherwise. A quantization_config qkv cannot
    lay out is never dropped silently: the weights are then at --dtype, and :func:`name_weights` says so
    (the returned string)."""
    if cfg is None or params is not None or weight_dtype is not None or quantization_of(spec) is None:
        return None
    try:
        qw = native_quantized(spec, "")
    except InputError as e:
        why = e.args[0].split(": quantization_config ", 1)[-1].rstrip("; ")
        return f"quantization_config {why}: not applied, every weight at --dtype (give --weight-dtype to choose)"
    if qw is None:
        return (f"quantization_config ({q_summary(quantization_of(spec))}): its layout is not modelled by qkv: not "
                "applied, every weight at --dtype (give --weight-dtype to choose)")
    return qw


def layout_of(quant: Any) -> Any:
    """The layout :func:`quantized_for` gave, or None (none, or not applied)."""
    return None if isinstance(quant, str) else quant


def weight_bytes_of(quant: Any) -> Any:
    """The :class:`solver.systems.serving.WeightBytes` of a layout (None for None or a note)."""
    if quant is None or isinstance(quant, str):
        return None
    from solver.counting.quantization import weights_line
    from solver.systems.serving import WeightBytes

    return WeightBytes(quant.bytes, weights_line(quant))


def name_weights(r: Any, quant: Any) -> None:
    """Issue 37: the weights' format in a result's breakdown (``weight_format``), printed with the answer."""
    if isinstance(quant, str):  # not applied, said so
        r.breakdown["weight_format"] = quant
        r.convention["quantization_config"] = quant
    elif quant is not None:
        r.breakdown["weight_format"] = quant.summary()
