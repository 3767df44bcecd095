from pathlib import Path

import pytest

from derive.spec import load_spec
from numeric.precision import use_x64

use_x64()  # the suite computes as gdln's entry points do

ROOT = Path(__file__).resolve().parent.parent
XOR_SPEC = ROOT / "examples" / "xor.toml"


@pytest.fixture(scope="session")
def xor_task():
    return load_spec(XOR_SPEC)


@pytest.fixture(scope="session")
def xor_models(xor_task):
    from numeric.prediction import TaskPredictions

    return TaskPredictions(xor_task)
