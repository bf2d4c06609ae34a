"""Test-wide settings.

- Hypothesis profiles: 'ci' (the default: 30 examples, no deadline, derandomized, so that the
  README's test command and .ci/run run the same tests, issue 40) and 'dev' (60 examples, random;
  HYPOTHESIS_PROFILE=dev).
- Torch runs the suite's tiny tensors on one thread: with several, thread start-up dominates
  and a busy 2-core machine gets up to 100x slower. Set before torch is imported anywhere.
"""

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
