import jax
import pytest

jax.config.update("jax_enable_x64", True)

from pathlib import Path  # noqa: E402

from derive.spec import load_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
XOR_SPEC = ROOT / "examples" / "xor.toml"


@pytest.fixture(scope="session")
def xor_task():
    return load_spec(XOR_SPEC)


@pytest.fixture(scope="session")
def xor_models(xor_task):
    from verify.models import TaskModels

    return TaskModels(xor_task)
