"""pytest's conftest for the upstream test suites that upstream_tests.sh runs (staged beside it by
stage_upstream_tests.sh). STREAMPOOL_UPSTREAM=torch or cupy selects streampool's pluggable
allocator before the suite's first CUDA allocation (this file is imported before any test module);
unset, the suite runs with the framework's own allocator, for comparison.

CuPy's memory tests select their own pools and restore CuPy's default pool afterwards, so before
each test streampool's allocator is made current again (streampool.cupy.use()); PyTorch's allocator
cannot be changed once chosen. The summary ends with one line saying how many allocations
streampool served, which shows the suite ran on it."""
import os

import pytest

MODE = os.environ.get("STREAMPOOL_UPSTREAM", "")

if MODE == "torch":
    import streampool.torch  # pylint: disable=import-error

    streampool.torch.use()
elif MODE == "cupy":
    import streampool.cupy  # pylint: disable=import-error

    streampool.cupy.use()

_reselected = {"tests": 0}


@pytest.fixture(autouse=True)
def _streampool_current():
    """Before each CuPy test: streampool is CuPy's allocator again, whatever the last test set."""
    if MODE == "cupy" and not streampool.cupy.active():
        streampool.cupy.use()
        _reselected["tests"] += 1
    yield


def pytest_terminal_summary(terminalreporter):
    if MODE not in ("torch", "cupy"):
        terminalreporter.write_line("streampool: not used (the framework's own allocator)")
        return
    import streampool.pluggable  # pylint: disable=import-error,import-outside-toplevel

    stats = streampool.pluggable.memory_stats()
    terminalreporter.write_line(
        f"streampool: served the {MODE} suite: {stats['allocation.all.allocated']} allocations, "
        f"{stats['allocation.all.freed']} frees, peak {stats['allocated_bytes.all.peak']} bytes allocated, "
        f"peak {stats['reserved_bytes.all.peak']} bytes reserved; made current again before "
        f"{_reselected['tests']} tests")
