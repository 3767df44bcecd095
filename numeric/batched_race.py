"""The ODE races of many points in batched solves: :func:`ode_races`, which is
:func:`numeric.race.ode_race` for many :class:`numeric.race.RaceODE` at once (the race ODE or
the exact reduced flow of one network at many points), one compiled program for every batch.

Every point of a batch steps in one vmapped loop: Tsit5 (diffrax's tableau) with diffrax's PID
step size controller at ``ode_race``'s tolerances, each point with its own steps, start
``t0``, ``y0`` and absolute tolerance; a step whose end is not finite is rejected and shrunk.
Per point the loop keeps only its current state, its loss, and per fraction the accepted step
within which that fraction's level is first crossed (the step's start state and both its
ends); memory does not grow with the number of steps. A point
stops as ``ode_race`` stops it: at the horizon; once settled (its loss within
``SETTLED_TOLERANCE`` of the initial loss above its least loss, and every pending level below
that least loss), checked at every accepted step rather than every segment of steps; after
``budget`` accepted steps; at a loss that is not finite (not accepted: the point keeps its
crossings so far, and its final loss is NaN); or when its step size collapses (a solver
failure). Stopped points are masked: they neither move nor change what the others compute.

Each crossing is then solved along its step's interpolant (:func:`tsit5_step`: the step made
again from its start, diffrax's fourth-order dense output of it), all crossings of a batch at
once: regula falsi with the Illinois modification, safeguarded by bisection, down to
``CROSSING_RTOL`` of the crossing time. ``ode_race`` solves its crossings on fresh solves
within the step instead (brentq), which cost the batch a third of its time (a fresh Tsit5 solve
per iteration); the three-context example's 64-point sweep over ``g`` gives the same crossings
both ways to 6e-9 relative, and the race at rtol 1e-10 to 5e-9 (the sweep's tests ask 1e-6).

Points run in batches of a few (:data:`BATCH_BYTES`).

The batch runs its own loop rather than ``diffrax.diffeqsolve`` under ``vmap``: on Section 4's
flow of 2413 variables, a step of a vmapped ``diffeqsolve`` over 4 points took 222 us of CPU
time per point, and a step here 88 us (the stage loop that diffrax keeps inside each step does
not batch well on the CPU); one loop also keeps the crossings' step starts without saving
every step."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from . import sharding
from .integrate import run_solver
from .race import CROSSING_RTOL, SETTLED_TOLERANCE, STEP_BUDGET, RaceODE
from .sharding import on_cores

RUNNING, HORIZON, SETTLED, BUDGET, NOT_FINITE, FAILED = range(6)
#: the solver state one batch of points holds, in bytes (about one core's L2 cache): on 2 CPU
#: cores, a step of Section 4's flow of 2413 variables took 88 us of CPU time per point in batches
#: of 4, 104 in batches of 6, 117 in batches of 16 and 145 alone; its flow of 4045 variables
#: 215 us in batches of 3 and 325 in batches of 4 (larger batches leave the cache)
BATCH_BYTES = 3 * 2**19
#: states of the ODE's size held per point (stages, step ends, crossing starts, temporaries), besides one per fraction
_STATES_PER_POINT = 16
#: iterations of a crossing's bracketing search (it converges in far fewer: superlinear, bisection at worst)
CROSSING_ITERATIONS = 200

#: per vector field, the compiled programs by (loss, tolerances)
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class RaceBatch:
    """Races of many points: ``crossings`` ``(points, fractions)`` in epochs (NaN where not
    crossed within the horizon or not finite, :class:`numeric.race.RaceResult`'s ``None`` and
    NaN), ``final_loss`` over the initial loss (NaN when not finite), ``stopped_at`` the epoch at
    which a point stopped short of its horizon without settling (NaN otherwise), ``steps`` its
    accepted solver steps."""

    initial_loss: np.ndarray
    crossings: np.ndarray
    final_loss: np.ndarray
    stopped_at: np.ndarray
    steps: np.ndarray


def _tsit5():
    """diffrax's Tsit5 tableau as float64 numpy arrays ``(a_lower, b_error, c)``."""
    import diffrax  # when traced only

    tableau = diffrax.Tsit5.tableau
    a_lower = [np.asarray(row, dtype=np.float64) for row in tableau.a_lower]
    b_sol, b_error, c = (np.asarray(x, dtype=np.float64) for x in (tableau.b_sol, tableau.b_error, tableau.c))
    # first same as last: the last stage is evaluated at the step's end, which the next step starts from
    assert tableau.fsal and np.array_equal(a_lower[-1], b_sol[:-1]) and b_sol[-1] == 0 and c[-1] == 1
    return a_lower, b_error, c


def _combine(y, h, coefficients, stages):
    """``y + h sum_i coefficients[i] stages[i]`` over the nonzero coefficients, in order."""
    terms = [coefficient * k for coefficient, k in zip(coefficients, stages) if coefficient != 0]
    return y + h * sum(terms[1:], terms[0])


def _stages(f, t, h, y, k, args):
    """One Tsit5 step of ``dy/dt = f(t, y, args)`` from ``(t, y)`` over ``h``, ``k`` the field at its
    start: its end and its seven stage derivatives (the last the field at the end)."""
    a_lower, _, c = _tsit5()
    stages = [k]
    for row, fraction in zip(a_lower, c):
        stage_y = _combine(y, h, row, stages)
        stages.append(f(t + fraction * h, stage_y, args))
    return stage_y, stages  # the last stage's input is the step's end (first same as last)


def tsit5_step(f, t_start, t_end, y_start, args):
    """One Tsit5 step of ``dy/dt = f(t, y, args)`` from ``(t_start, y_start)`` to ``t_end``
    (traceable): its end ``y(t_end)`` and ``y(t)`` for any ``t`` within the step, diffrax's
    interpolant of the step (Tsitouras' continuous extension, of fourth order: what
    ``diffrax.diffeqsolve(..., saveat=SaveAt(dense=True))`` evaluates there)."""
    import diffrax  # when traced only

    h = t_end - t_start
    y_end, stages = _stages(f, t_start, h, y_start, f(t_start, y_start, args), args)
    interpolation = diffrax.Tsit5.interpolation_cls(t0=t_start, t1=t_end, y0=y_start, y1=y_end, k=h * jnp.stack(stages))
    return y_end, interpolation.evaluate


#: the most terms :func:`ordered_sum` adds one after another
ORDERED_TERMS = 64


def ordered_sum(x):
    """The sum of ``x``'s entries; up to :data:`ORDERED_TERMS` of them added one after another in
    a fixed order. XLA's reduction of a few entries under ``vmap`` adds them in an order that
    depends on how many points are batched, and a point's race must not depend on the points
    batched with it."""
    if x.size > ORDERED_TERMS:
        return jnp.sum(x)
    terms = jnp.ravel(x)
    total = terms[0]
    for k in range(1, terms.size):
        total = total + terms[k]
    return total


def ordered_rms_norm(x):
    """diffrax's ``rms_norm`` of an array, summed by :func:`ordered_sum`."""
    return jnp.sqrt(ordered_sum(jnp.square(x)) / max(x.size, 1))


def _stepper(f, rtol: float):
    """``(begin, attempt)`` for ``dy/dt = f(t, y, args)``: ``begin`` gives the first step's end and
    the controller's state (diffrax's initial step when ``dt0`` is ``None``); ``attempt`` makes
    one Tsit5 step and lets diffrax's PID controller accept it and choose the next, as
    ``diffrax.diffeqsolve`` does (steps ending within 100 ulps of ``t1`` end at ``t1``)."""
    import diffrax  # when traced only

    terms = diffrax.ODETerm(f)
    solver = diffrax.Tsit5()
    order = solver.error_order(terms)
    _, b_error, _ = _tsit5()

    def controller(atol):
        return diffrax.PIDController(rtol=rtol, atol=atol, norm=ordered_rms_norm)

    def begin(t0, t1, y0, args, atol, dt0=None):
        tnext, state = controller(atol).init(terms, t0, t1, y0, dt0, args, solver.func, order)
        return jnp.minimum(tnext, t1), jax.tree_util.tree_map(jnp.asarray, state)

    def attempt(t, tnext, y, k, state, args, atol, t1, floor):
        h = tnext - t
        y1, stages = _stages(f, t, h, y, k, args)
        error = _combine(jnp.zeros_like(y), h, b_error, stages)
        # a step into a region where the field is not finite is rejected and shrunk, as diffrax
        # rejects NaN; diffrax lets an infinite end through, its scaled error inf/inf = NaN, and
        # the next step size with it (the race ODE in log a overflows so on too long a step)
        finite = jnp.all(jnp.isfinite(y1))
        error = jnp.where(jnp.isnan(error) | ~finite, jnp.inf, error)
        checked = jnp.where(finite, y1, y)
        keep, tprev, tn, _, state, _ = controller(atol).adapt_step_size(t, tnext, y, checked, args, error, order, state)
        tprev = jnp.minimum(tprev, t1)
        tn = jnp.where(tn > floor, jnp.where(keep, t1, tprev + 0.5 * (t1 - tprev)), tn)
        return keep, tprev, tn, y1, stages[-1], jax.tree_util.tree_map(jnp.asarray, state)

    return begin, attempt


def _floor(t1):
    """About 100 ulps below ``t1``: a step ending above it ends at ``t1`` (diffrax's rule)."""
    return t1 - 100 * (jnp.nextafter(t1, jnp.inf) - t1)


def _programs(f, loss, rtol: float):
    known = _PROGRAMS.setdefault(f, {})
    key = (loss, float(rtol))
    if key not in known:
        known[key] = (
            jax.jit(jax.vmap(_race_one(f, loss, rtol), in_axes=(0,) * 8 + (None,) * 3)),
            jax.jit(jax.vmap(_crossing_one(f, loss), in_axes=(0,) * 6)),
        )
    return known[key]


def _race_one(f, loss, rtol: float):
    """One point's race (vmapped over points by :func:`_programs`)."""

    def race(y0, t0, args, loss_args, levels, initial, minimum, atol, horizon, floor, budget):
        begin, attempt = _stepper(f, rtol)
        tnext, state = begin(t0, horizon, y0, args, atol)
        count = levels.shape[0]
        carry = {
            "t": t0,
            "tnext": tnext,
            "y": y0,
            "k": f(t0, y0, args),
            "state": state,
            "loss": loss(y0, *loss_args),
            "steps": jnp.zeros((), jnp.int64),
            "attempts": jnp.zeros((), jnp.int64),
            "status": jnp.where(t0 < horizon, RUNNING, HORIZON).astype(jnp.int64),
            "found": jnp.zeros(count, bool),
            "t_start": jnp.zeros(count),
            "y_start": jnp.zeros((count, *y0.shape)),
            "t_end": jnp.zeros(count),
        }

        def body(s):
            keep, tprev, tn, y1, k1, state = attempt(
                s["t"], s["tnext"], s["y"], s["k"], s["state"], args, atol, horizon, floor
            )
            loss1 = loss(y1, *loss_args)
            bad = keep & ~jnp.isfinite(loss1)
            accept = keep & ~bad
            crossed = accept & ~s["found"] & (loss1 <= levels)
            t = jnp.where(accept, tprev, s["t"])
            current = jnp.where(accept, loss1, s["loss"])
            found = s["found"] | crossed
            steps = s["steps"] + accept
            attempts = s["attempts"] + 1
            settled = (current - minimum <= SETTLED_TOLERANCE * initial) & jnp.all(found | (levels < minimum))
            collapsed = ~(tn > t) | (attempts >= 4 * budget)
            status = jnp.select(
                [bad, t >= horizon, settled, steps >= budget, collapsed],
                [NOT_FINITE, HORIZON, SETTLED, BUDGET, FAILED],
                RUNNING,
            ).astype(jnp.int64)
            return {
                "t": t,
                "tnext": jnp.where(bad, s["tnext"], tn),
                "y": jnp.where(accept, y1, s["y"]),
                "k": jnp.where(accept, k1, s["k"]),
                "state": state,
                "loss": current,
                "steps": steps,
                "attempts": attempts,
                "status": status,
                "found": found,
                "t_start": jnp.where(crossed, s["t"], s["t_start"]),
                "y_start": jnp.where(crossed[:, None], s["y"][None], s["y_start"]),
                "t_end": jnp.where(crossed, tprev, s["t_end"]),
            }

        out = jax.lax.while_loop(lambda s: s["status"] == RUNNING, body, carry)
        keys = ("status", "t", "loss", "steps", "found", "t_start", "y_start", "t_end")
        return tuple(out[key] for key in keys)

    return race


def _crossing_one(f, loss):
    """One crossing within one accepted step (vmapped over crossings by :func:`_programs`): the
    time in ``[t_start, t_end]`` at which the loss along the step's interpolant
    (:func:`tsit5_step`, the step from ``(t_start, y_start)`` made again) falls to ``level``,
    where it lies above ``level`` at ``t_start``. A loss still above ``level`` at the
    interpolant's end (the step's end loss was at ``level`` to rounding) gives ``t_end``. NaN if
    the loss along the interpolant is not finite."""

    def crossing(t_start, y_start, t_end, level, args, loss_args):
        _, along = tsit5_step(f, t_start, t_end, y_start, args)

        def excess(t):
            return loss(along(t), *loss_args) - level

        above, below = loss(y_start, *loss_args) - level, excess(t_end)
        carry = {
            "a": t_start,
            "b": t_end,
            "fa": above,
            "fb": below,
            "side": jnp.zeros((), jnp.int64),
            "widths": jnp.full(2, jnp.inf),
            "iteration": jnp.zeros((), jnp.int64),
            "done": ~(below < 0) | ~(above > 0),
            "failed": ~jnp.isfinite(below),
        }

        def going(s):
            return ~s["done"] & (s["iteration"] < CROSSING_ITERATIONS)

        def body(s):
            a, b, fa, fb = s["a"], s["b"], s["fa"], s["fb"]
            width = b - a
            secant = b - fb * width / (fb - fa)
            # the bracket must halve every two iterations, else bisect (the Illinois weights may stall)
            halve = (width > 0.5 * s["widths"][0]) | ~((secant > a) & (secant < b))
            c = jnp.where(halve, a + 0.5 * width, secant)
            fc = excess(c)
            failed = ~jnp.isfinite(fc)
            low = fc <= 0
            # Illinois: an end kept twice in a row has its value halved
            fa_new = jnp.where(low, jnp.where(s["side"] == -1, 0.5 * fa, fa), fc)
            fb_new = jnp.where(low, fc, jnp.where(s["side"] == 1, 0.5 * fb, fb))
            a_new, b_new = jnp.where(low, a, c), jnp.where(low, c, b)
            done = failed | (fc == 0) | (c <= a) | (c >= b) | (b_new - a_new <= CROSSING_RTOL * jnp.abs(b_new))
            return {
                "a": a_new,
                "b": b_new,
                "fa": fa_new,
                "fb": fb_new,
                "side": jnp.where(low, -1, 1).astype(jnp.int64),
                "widths": jnp.stack([s["widths"][1], width]),
                "iteration": s["iteration"] + 1,
                "done": done,
                "failed": failed,
            }

        out = jax.lax.while_loop(going, body, carry)
        return jnp.where(out["failed"], jnp.nan, out["b"])

    return crossing


def batch_size(points: int, state_size: int, fractions: int) -> int:
    """Points per batch: at most what :data:`BATCH_BYTES` holds, in a whole number of rounds of
    batches over the cores, as even as that allows (Section 4's 32 points: 4 batches of 8, not
    3 of 9 and one of 5 padded to 9)."""
    most = max(1, BATCH_BYTES // ((_STATES_PER_POINT + fractions) * max(state_size, 1) * 8))
    batches = -(-points // most)
    batches = -(-batches // sharding.CORES) * sharding.CORES
    return max(1, -(-points // batches))


def _stack(trees):
    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *trees)


def _in_batches(run, inputs: tuple, size: int):
    """``run`` over ``inputs`` (leading axis: items) in batches of ``size`` items, the last one
    padded with copies of its first item (every batch has one shape: one compiled program);
    outputs joined along the items.

    Batches run one per core at a time (:func:`numeric.sharding.on_cores`;
    :func:`numeric.integrate.run_solver` reads or compiles their program once). On 2 CPU cores the 32
    points of Section 4's init-scale race took 2.8-3.0 s so, against 5.6-5.8 s one batch after
    another."""
    count = len(jax.tree_util.tree_leaves(inputs[0])[0])

    def one(start):
        rows = np.arange(start, min(start + size, count))
        rows = np.concatenate([rows, np.full(size - len(rows), rows[0])]) if count > size else rows
        out = run(*jax.tree_util.tree_map(lambda leaf: leaf[rows], inputs))
        return [np.asarray(x)[: min(size, count - start)] for x in (out if isinstance(out, tuple | list) else (out,))]

    outputs = list(on_cores(one, range(0, count, size)))
    return [np.concatenate(parts) for parts in zip(*outputs)]


def ode_races(
    problems: Sequence[RaceODE], fractions: Sequence[float], horizon: float, budget: int = STEP_BUDGET
) -> RaceBatch:
    """:func:`numeric.race.ode_race` of every problem (one network at many points: one vector
    field, one loss, one state size, one relative tolerance), solved together (see the module
    docstring); the result of point ``k`` is that of ``problems[k].race(fractions, horizon)``
    up to the solvers' tolerances."""
    count, fractions = len(problems), tuple(float(x) for x in fractions)
    if not count:
        empty = np.zeros(0)
        return RaceBatch(empty, np.zeros((0, len(fractions))), empty, empty, np.zeros(0, dtype=int))
    first = problems[0]
    if any((p.f is not first.f) or (p.loss != first.loss) or p.rtol != first.rtol for p in problems):
        raise ValueError("ode_races: the problems must share one vector field, loss and relative tolerance")
    initial = np.array([p.initial_loss for p in problems], dtype=np.float64)
    crossings = np.full((count, len(fractions)), np.nan)
    final = np.full(count, np.nan)
    stopped = np.full(count, np.nan)
    steps = np.zeros(count, dtype=int)
    usable = np.flatnonzero(np.isfinite(initial) & (initial > 0))
    if not len(usable):
        return RaceBatch(initial, crossings, final, stopped, steps)
    chosen = [problems[int(k)] for k in usable]
    minimum = np.array([_nan_if_none(p.minimum_loss()) for p in chosen], dtype=np.float64)
    atol = np.array([p.atol for p in chosen], dtype=np.float64)
    levels = initial[usable, None] * np.asarray(fractions)[None, :]
    state_size = int(np.size(first.y0))
    size = batch_size(len(chosen), state_size, len(fractions))
    race, crossing = _programs(first.f, first.loss, first.rtol)
    configuration = ("ode_races", first.rtol)
    horizon = float(horizon)
    floor = float(np.asarray(_floor(jnp.float64(horizon))))

    def run_race(*batch):
        inputs = (*batch, jnp.float64(horizon), jnp.float64(floor), jnp.int64(budget))
        return run_solver(first.f, race, (*configuration, "race"), inputs)

    status, t, loss, taken, found, t_start, y_start, t_end = _in_batches(
        run_race,
        (
            np.stack([np.asarray(p.y0, dtype=np.float64) for p in chosen]),
            np.array([p.t0 for p in chosen], dtype=np.float64),
            _stack([p.args for p in chosen]),
            _stack([p.loss_args for p in chosen]),
            levels,
            initial[usable],
            minimum,
            atol,
        ),
        size,
    )
    final[usable] = np.where(status == NOT_FINITE, np.nan, loss / initial[usable])
    stopped[usable] = np.where(np.isin(status, (BUDGET, NOT_FINITE, FAILED)), t, np.nan)
    steps[usable] = taken
    points, which = np.nonzero(found)
    if len(points):
        solved = _in_batches(
            lambda *batch: run_solver(first.f, crossing, (*configuration, "crossing"), batch),
            (
                t_start[points, which],
                y_start[points, which],
                t_end[points, which],
                levels[points, which],
                _stack([chosen[int(k)].args for k in points]),
                _stack([chosen[int(k)].loss_args for k in points]),
            ),
            batch_size(len(points), state_size, 0),
        )[0]
        crossings[usable[points], which] = solved
    return RaceBatch(initial, crossings, final, stopped, steps)


def _nan_if_none(value) -> float:
    return np.nan if value is None else float(value)
