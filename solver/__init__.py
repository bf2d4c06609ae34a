"""The solver: exact reference computations for everything qkv asks.

Modules (import what you need; nothing heavy is imported here):

- ``solver.trace``: the step-trace shape every kernel returns.
- ``solver.masks``: mask conventions and builders (the one place masks are converted).
- ``solver.numpy_ref`` / ``solver.torch_ref``: the same kernels in NumPy and in Torch.
- ``solver.sympy_ref``: exact kernels for small by-hand problems.
- ``solver.config``, ``solver.counts``, ``solver.presets``: model description and counting.
- ``solver.models``: a reference PyTorch model built from any config.
- ``solver.hardware``: chips, rooflines, training and inference arithmetic.

The solver knows nothing about the terminal, the quiz or the question bank.
"""
