"""Integration of race ODEs with diffrax (Tsit5).

These ODEs are not stiff while they learn; near a minimum an explicit solver is held at its
stability limit (steps of about ``tau / s``), so long horizons are read off with an early stop
(:func:`numeric.race.ode_race`) rather than integrated step by step."""

from __future__ import annotations

import hashlib
import pickle
import threading
import weakref
from collections.abc import Callable

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
from jax.experimental.serialize_executable import deserialize_and_load, serialize

from gdln.derive import cache

from .types import ArrayLike, Float

#: per vector field, its jit-compiled solves by configuration: one ``jax.jit`` around diffrax, so
#: a call goes through jit's dispatch rather than diffrax's ``filter_jit``, which partitions and
#: hashes every argument on each call (the search's races call it thousands of times).
_SOLVERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: compiled solves of vector fields that name themselves (``f.persistent_key``), by a digest of
#: that name, the configuration, the argument shapes, the code and the device; kept on disk
_EXECUTABLES: dict[str, Callable] = {}


def _solver(f, every_step: bool, rtol: float, max_steps: int):
    """``run(y0, t0, t1, args, ts, atol) -> (ts, ys, ok)``: one Tsit5 solve of
    ``dy/dt = f(t, y, args)`` (x64, PID steps), saved at every accepted step or at ``ts``; ``ok``
    is false where the solver failed before ``t1`` (saving every step, running out of
    ``max_steps`` ends a segment and is not a failure). The absolute tolerance is an input, not
    part of the program: flows scale it to their smallest starting component
    (:meth:`numeric.reduced_flow.ReducedFlow.start`), a different value at every seed."""
    known = _SOLVERS.setdefault(f, {})
    key = (every_step, rtol, max_steps)
    if key not in known:

        def run(y0, t0, t1, args, ts, atol):
            import diffrax  # when traced: a warm process reads compiled solves and never imports it (0.45 s)

            solution = diffrax.diffeqsolve(
                diffrax.ODETerm(f),
                diffrax.Tsit5(),
                t0=t0,
                t1=t1,
                dt0=None,
                y0=y0,
                args=args,
                saveat=diffrax.SaveAt(steps=True) if every_step else diffrax.SaveAt(ts=ts),
                stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
                max_steps=max_steps,
                throw=False,
            )
            ok = solution.result == diffrax.RESULTS.successful
            if every_step:  # a segment of at most max_steps steps: stopping there is its end
                ok = ok | (solution.result == diffrax.RESULTS.max_steps_reached)
            return solution.ts, solution.ys, ok

        known[key] = jax.jit(run)
    return known[key]


def _digest(name: str, configuration: tuple, inputs: tuple) -> str:
    """What a compiled solve depends on: the vector field's name, the solver's settings, the
    argument shapes, gdln's code, JAX and the device."""
    shapes = jax.tree_util.tree_map(lambda a: (np.shape(a), str(jnp.result_type(a))), inputs)  # no device copy
    device = jax.local_devices()[0]
    key = (
        cache.code_version(),
        jax.__version__,
        jaxlib.__version__,
        device.platform,
        device.device_kind,
        name,
        configuration,
        shapes,
    )
    return hashlib.sha256(repr(key).encode()).hexdigest()[:32]


def _compile_and_keep(run, inputs: tuple, path) -> Callable:
    """``run`` compiled for ``inputs`` and written to ``path``. Compiled with JAX's persistent
    cache switched off: a program read from there serializes without its machine code (XLA:CPU)
    and fails in the next process ("Function ... not found")."""
    from .precision import use_compilation_cache

    folder = jax.config.values["jax_compilation_cache_dir"]
    use_compilation_cache(None)
    try:
        compiled = run.lower(*inputs).compile()
    finally:
        use_compilation_cache(folder)
    try:
        data = pickle.dumps(serialize(compiled))
    except Exception:  # an executable that cannot be serialized stays in this process
        return compiled
    cache.write_sealed(path, _label(path), data)  # behind gdln's keyed digest, like every entry
    return compiled


#: held while a program is read or compiled: :func:`_compile_and_keep` switches JAX's cache
#: folder off and on, and threads that run batches of one program (:mod:`numeric.batched_race`)
#: read or compile it once
_LOADING = threading.Lock()
#: executables read from the cache folder that have not yet run once without failing
_UNCHECKED: set[str] = set()


def run_solver(f, run, configuration: tuple, inputs: tuple):
    """``run(*inputs)``; for a vector field with a ``persistent_key`` while the disk cache is on,
    through its compiled executable, read from the cache folder, else compiled now and written
    there. A warm process then neither traces diffrax nor compiles (about 0.7 s per flow
    structure). A read executable is checked by its first call: if that fails (a stale or
    foreign entry) the entry is compiled again. Safe to call from several threads: one of them
    reads or compiles, and every call runs outside the lock."""
    name = getattr(f, "persistent_key", None)
    root = cache.cache_root()
    if name is None or root is None:
        return run(*inputs)
    digest = _digest(name, configuration, inputs)
    path = root / "jax" / "executables" / f"{digest}.pickle"
    if digest not in _EXECUTABLES:
        with _LOADING:
            if digest not in _EXECUTABLES:
                loaded = _read_executable(path)
                if loaded is None:
                    loaded = _compile_and_keep(run, inputs, path)
                else:
                    _UNCHECKED.add(digest)
                _EXECUTABLES[digest] = loaded
    executable = _EXECUTABLES[digest]
    if digest not in _UNCHECKED:
        return executable(*inputs)
    try:
        outputs = jax.block_until_ready(executable(*inputs))
    except Exception:  # a stale or foreign entry: compiled again
        with _LOADING:
            if _EXECUTABLES[digest] is executable:
                _EXECUTABLES[digest] = _compile_and_keep(run, inputs, path)
                _UNCHECKED.discard(digest)
        return _EXECUTABLES[digest](*inputs)
    _UNCHECKED.discard(digest)
    return outputs


def _label(path) -> str:
    """What an executable's file is authenticated as: its digest (:func:`_digest`), so that a
    file moved under another digest is not run as that program."""
    return f"executable/{path.stem}"


def _read_executable(path) -> Callable | None:
    """The executable written at ``path``, or ``None``: authenticated as gdln's own entry
    (:func:`derive.cache.read_sealed`, which deletes one that is not) before it is unpickled."""
    data = cache.read_sealed(path, _label(path))
    if data is None:
        return None
    try:
        return deserialize_and_load(*pickle.loads(data))
    except Exception:  # gdln's, but unreadable by this JAX: compiled again and written over
        return None


def _solve(f, y0, t0, t1, args, ts, rtol: float, atol: float, max_steps: int):
    """Solve from ``y0`` at ``t0`` to ``t1``; saved at ``ts``, or at every accepted step when ``ts`` is ``None``."""
    configuration = (ts is None, float(rtol), int(max_steps))
    inputs = (
        np.asarray(y0, dtype=np.float64),
        jnp.float64(t0),
        jnp.float64(t1),
        args,
        jnp.zeros(1) if ts is None else ts,
        jnp.float64(atol),
    )
    return run_solver(f, _solver(f, *configuration), configuration, inputs)


def integrate_ode(
    f: Callable,
    y0: Float[ArrayLike, " state"],
    ts: Float[ArrayLike, " T"],
    args,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    max_steps: int = 1_000_000,
):
    """Solve ``dy/dt = f(t, y, args)`` from ``y0`` at ``ts[0]``; returns ``y`` at every ``ts`` (rows)."""
    ts = jnp.asarray(ts, dtype=jnp.float64)
    _, states, ok = _solve(f, y0, ts[0], ts[-1], args, ts, rtol, atol, max_steps)
    if not bool(ok):
        raise RuntimeError(f"the solver failed between epochs {float(ts[0]):.6g} and {float(ts[-1]):.6g}")
    return states


_STEPS_PER_SEGMENT = 1024


def solver_steps(
    f,
    y0,
    t0,
    t1,
    args,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    steps: int = _STEPS_PER_SEGMENT,
):
    """Up to ``steps`` accepted Tsit5 steps of ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0``
    towards ``t1``: ``(ts, ys)`` at the end of every accepted step (numpy, finite rows only).

    The step sequence depends only on ``f``, ``y0``, ``t0`` and the tolerances, never on
    ``t1`` beyond clipping the last step at it, so quantities read off these steps do not
    depend on the horizon. Call again from the last row to continue."""
    times, states, ok = _solve(f, y0, t0, t1, args, None, rtol, atol, steps)
    ts = np.asarray(times)
    keep = np.isfinite(ts)
    failed = not bool(ok)
    return ts[keep], np.asarray(states)[keep], failed


def integrate_to(f, y0, t0, t1, args, rtol: float = 1e-10, atol: float = 1e-14):
    """``y(t1)`` of ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0``.

    Runs through :func:`solver_steps`, segment by segment, so it reuses that solve's trace and
    compiled program instead of tracing a second diffrax solve per ODE (about a second each)."""
    t, y = float(t0), np.asarray(y0, dtype=np.float64)
    while t < t1:
        ts, ys, failed = solver_steps(f, y, t, t1, args, rtol, atol)
        if failed or not len(ts):
            raise RuntimeError(f"the solver failed between epochs {t:.6g} and {t1:.6g}")
        t, y = float(ts[-1]), ys[-1]
    return y
