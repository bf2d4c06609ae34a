"""The by-hand reference kernels: NumPy (``numpy_ref``), Torch (``torch_ref``) and exact SymPy
(``sympy_ref``) implementations of attention, norms, positional encodings and activations; the
mask conventions (``masks``); relative positions (``positions_relative``: ALiBi, T5 buckets, RoPE
scores); losses (``loss``) and sampling (``sampling``). Nothing is imported here."""
