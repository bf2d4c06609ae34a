"""The solver: exact reference computations for everything qkv asks.

Its parts (import what you need; nothing heavy is imported here):

- ``solver.kernels``: the by-hand reference kernels in NumPy, Torch and exact SymPy (attention,
  norms, positional encodings, activations), the mask conventions, relative positions, losses and
  sampling.
- ``solver.counting``: ``ModelConfig`` (the one description of a Transformer), exact parameters,
  FLOPs and memory, named counting conventions, the model zoo (``presets``) and the config.json
  readers (``config_json``).
- ``solver.models``: a reference PyTorch model built from any config, and its verification
  against the counts (``verify``).
- ``solver.systems``: the arithmetic of machines: chips, rooflines, inference, training,
  parallelism, collectives, interconnects, serving, quantised formats.
- At the top, what every part uses: ``units`` (dtypes and byte views), ``errors``
  (``SolverInputError``), ``trace`` (the step trace of a kernel) and ``result`` (the answer,
  unit, conventions, breakdown and steps of a formula).

The solver knows nothing about the terminal, the quiz or the question bank.
"""
