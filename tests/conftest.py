import os
import shutil
import tempfile

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
# the CLI under test (in process and in subprocesses) keeps its caches here, never in the user's
TEST_CACHE = tempfile.mkdtemp(prefix="gdln-test-cache-")
os.environ["GDLN_CACHE_DIR"] = TEST_CACHE
# and the key of its entries, never the user's config folder
TEST_CONFIG = tempfile.mkdtemp(prefix="gdln-test-config-")
os.environ["GDLN_CONFIG_DIR"] = TEST_CONFIG


def pytest_addoption(parser):
    parser.addoption(
        "--exhaustive", action="store_true", help="also run the exhaustive tier (K = 5 race; README, Tests)"
    )


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)
    shutil.rmtree(TEST_CONFIG, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # the exhaustive tier repeats a checked claim at a larger size; CI's 20 minutes leave it out
    if config.getoption("--exhaustive"):
        return
    skip = pytest.mark.skip(reason="exhaustive tier: run with --exhaustive")
    for item in items:
        if "exhaustive" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def xor_task():
    return load_spec(XOR_SPEC)


@pytest.fixture(scope="session")
def xor_models(xor_task):
    from gdln.numeric.prediction import TaskPredictions

    return TaskPredictions(xor_task)
