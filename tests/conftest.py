"""Test-wide settings.

- Hypothesis profiles: 'ci' (the default: 30 examples, no deadline, derandomized, so that the
  README's test command and .ci/run run the same tests, issue 40) and 'dev' (60 examples, random;
  HYPOTHESIS_PROFILE=dev).
- qkv's cache of parsed data files goes to a temporary folder ($QKV_CACHE_DIR), not the user's.
- Torch runs the suite's tiny tensors on one thread: with several, thread start-up dominates
  and a busy 2-core machine gets up to 100x slower. Set before torch is imported anywhere.
"""

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

# qkv's cache of parsed data files (question_bank.parsed_cache): one folder for the run, not the
# user's cache directory (the tests parse many files of their own); subprocesses inherit it
if "QKV_CACHE_DIR" not in os.environ:
    os.environ["QKV_CACHE_DIR"] = tempfile.mkdtemp(prefix="qkv-test-cache-")
    atexit.register(shutil.rmtree, os.environ["QKV_CACHE_DIR"], True)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
