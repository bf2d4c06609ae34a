"""Errors the solver raises for input it cannot work with."""


class SolverInputError(ValueError):
    """Input that makes no sense for the computation asked (a shape mismatch, a fully masked
    row, an invalid configuration). ``param`` names the argument when one is to blame; the
    command line prints ``param: message`` on one line and exits with status 2."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param

    def __str__(self) -> str:
        msg = super().__str__()
        return f"{self.param}: {msg}" if self.param else msg
