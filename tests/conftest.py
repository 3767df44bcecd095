import os
import shutil
import tempfile
from collections import Counter

import pytest
from hypothesis import settings

from gdln.derive.spec import load_spec
from gdln.numeric.precision import use_x64

from .helpers import XOR_SPEC

use_x64()  # the suite computes as gdln's entry points do
# every property test runs the same examples on every run and has no per-example deadline: a
# loaded machine slows examples down, and a deadline would then fail tests that hold
settings.register_profile("gdln", derandomize=True, deadline=None)
settings.load_profile("gdln")
# The CLI under test (in process and in subprocesses) keeps its caches here, never in the user's,
# and the key of its entries in a test config folder, never the user's. The pytest process that
# makes them owns them; xdist's workers start after this file is imported in the controller and
# inherit its environment, so the whole run shares one cache and one key: a cold derivation
# (Section 4 takes a minute) is paid once per run, not once per worker. Entries are written
# atomically, so workers may read and write them side by side.
SHARED_FOLDERS = "GDLN_TEST_SHARED_FOLDERS"
if os.environ.get("PYTEST_XDIST_WORKER") and SHARED_FOLDERS in os.environ:
    TEST_CACHE, TEST_CONFIG = os.environ[SHARED_FOLDERS].split(os.pathsep)
    OWNS_FOLDERS = False
else:
    TEST_CACHE = tempfile.mkdtemp(prefix="gdln-test-cache-")
    TEST_CONFIG = tempfile.mkdtemp(prefix="gdln-test-config-")
    os.environ[SHARED_FOLDERS] = os.pathsep.join((TEST_CACHE, TEST_CONFIG))
    OWNS_FOLDERS = True
os.environ["GDLN_CACHE_DIR"] = TEST_CACHE
os.environ["GDLN_CONFIG_DIR"] = TEST_CONFIG


def pytest_addoption(parser):
    parser.addoption(
        "--exhaustive", action="store_true", help="also run the exhaustive tier (K = 5 race; README, Tests)"
    )


def pytest_sessionfinish(session, exitstatus):
    if OWNS_FOLDERS:  # a worker finishing early must not remove what the others still read
        shutil.rmtree(TEST_CACHE, ignore_errors=True)
        shutil.rmtree(TEST_CONFIG, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    _heaviest_modules_first(items, config.getoption("--exhaustive"))
    # the exhaustive tier repeats a checked claim at another size; CI's 20 minutes leave it out
    if config.getoption("--exhaustive"):
        return
    skip = pytest.mark.skip(reason="exhaustive tier: run with --exhaustive")
    for item in items:
        if "exhaustive" in item.keywords:
            item.add_marker(skip)


def _heaviest_modules_first(items, exhaustive: bool) -> None:
    """Modules with the most slow tests run first, each module's tests in their order: xdist's
    workers then end on quick tests, not one on a minute-long test while the other waits (the
    Section 4 search, last but one module by name, once ended the run 20 s after the rest). The
    order is the same in every worker, as xdist requires."""
    counts = Counter(
        item.module.__name__
        for item in items
        if "slow" in item.keywords and (exhaustive or "exhaustive" not in item.keywords)
    )
    items.sort(key=lambda item: -counts[item.module.__name__])  # stable: ties keep pytest's order


@pytest.fixture(scope="session")
def xor_task():
    return load_spec(XOR_SPEC)


@pytest.fixture(scope="session")
def xor_models(xor_task):
    from gdln.numeric.prediction import TaskPredictions

    return TaskPredictions(xor_task)
