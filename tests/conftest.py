import os
import shutil
import tempfile
from pathlib import Path

import pytest

from derive.spec import load_spec
from numeric.precision import use_x64

use_x64()  # the suite computes as gdln's entry points do
# the CLI under test (in process and in subprocesses) keeps its caches here, never in the user's
TEST_CACHE = tempfile.mkdtemp(prefix="gdln-test-cache-")
os.environ["GDLN_CACHE_DIR"] = TEST_CACHE

ROOT = Path(__file__).resolve().parent.parent
XOR_SPEC = ROOT / "examples" / "xor.toml"


def pytest_addoption(parser):
    parser.addoption(
        "--exhaustive", action="store_true", help="also run the exhaustive tier (K = 5 race; README, Tests)"
    )


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)


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
    from numeric.prediction import TaskPredictions

    return TaskPredictions(xor_task)
