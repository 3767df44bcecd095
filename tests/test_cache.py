"""Caches: exact constants reach float64 correctly rounded; derivations and their numbers
survive a process on disk; a warm run gives the cold run's answers bit for bit; ``gdln cache``
and ``--no-cache``."""

import json
from pathlib import Path

import numpy as np
import pytest
import sympy

from gdln.cli import main
from gdln.derive import cache
from gdln.derive.spec import load_spec
from gdln.numeric.compile import compile_expressions, exact_constants
from gdln.numeric.precision import use_compilation_cache
from gdln.numeric.prediction import TaskPredictions

from .helpers import XOR_SPEC, StoredSolve


def test_exact_constants_survive_cancellation():
    # r^3 = r + 1 exactly, so this is 1; term by term in float64 it is lost to cancellation
    r = sympy.CRootOf(sympy.Symbol("x") ** 3 - sympy.Symbol("x") - 1, 0)
    big = sympy.Integer(10) ** 40
    expr = big * r**3 - big * r - big + 1
    assert exact_constants([expr])[0] == 1.0
    assert float(compile_expressions([expr, r], [])()[0]) == 1.0
    naive = sympy.lambdify([], expr.xreplace({r: r.evalf(30)}), modules="jax")()
    assert abs(float(naive) - 1.0) > 1e-3  # the failure this guards against is real


def test_constants_and_varying_expressions_keep_their_order():
    x = sympy.Symbol("x")
    f = compile_expressions([sympy.sqrt(2), x**2, sympy.Rational(1, 3), 2 * x], [x])
    np.testing.assert_array_equal(np.asarray(f(3.0)), [np.sqrt(2), 9.0, 1 / 3, 6.0])
    grid = np.asarray(f(np.array([1.0, 2.0])))
    assert grid.shape == (4, 2)
    np.testing.assert_array_equal(grid[0], [np.sqrt(2)] * 2)
    np.testing.assert_array_equal(grid[3], [2.0, 4.0])


@pytest.fixture
def disk_cache(tmp_path):
    from gdln.numeric import integrate

    previous = cache.cache_root()
    cache.clear(tmp_path)  # forget this process's derivations: every read below is from disk
    # and its compiled solves, which an earlier test in this process may have kept under another
    # cache folder (they are kept by their inputs' shapes, not by folder)
    integrate._EXECUTABLES.clear()
    cache.enable(tmp_path)
    yield tmp_path
    cache.clear(tmp_path)
    if previous is None:
        cache.disable()
    else:
        cache.enable(previous)


def test_derivation_round_trips_through_disk(disk_cache):
    task = load_spec(XOR_SPEC)
    name = task.networks[0].name
    built = TaskPredictions(task).derivation(name)
    scales = TaskPredictions(task).mode_scales(name, list(task.parameters.values()))
    assert cache.flush() == 1
    key = cache.key_of(built)
    assert (disk_cache / "derivations" / key / "derivation.pickle").is_file()
    cache._memory.clear()
    cache._arrays.clear()

    def never():
        raise AssertionError("rebuilt although the entry is on disk")

    loaded = cache.derivation(key, never)
    assert loaded is not built
    assert [m.s for p in loaded.pathways for m in p.modes] == [m.s for p in built.pathways for m in p.modes]
    again = TaskPredictions(task).mode_scales(name, list(task.parameters.values()))
    for (s1, d1), (s2, d2) in zip(scales, again):
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(d1, d2)
    assert cache.flush() == 0  # nothing new was computed: nothing is written


def test_pickled_roots_and_sums_are_rebuilt_equal_without_factoring(monkeypatch):
    """The cache rebuilds ``CRootOf``, ``Add``, ``Mul`` and ``Pow`` as they were pickled, without
    SymPy's constructors: equal objects, the same values (50 digits; complex roots 15), and no
    factoring."""
    import sympy.polys.rootoftools as rootoftools

    x, q = sympy.symbols("x q", positive=True)
    # real roots of a reducible and an irreducible polynomial, and one with complex roots
    roots = [sympy.CRootOf(32 * x**5 - 40 * x**3 + 10 * x - 1, k) for k in range(5)]
    roots += [sympy.CRootOf(4 * x**3 - 6 * x + 1, k) for k in range(3)]
    roots += [sympy.CRootOf(x**3 - x - 1, k) for k in range(3)]
    sums = [roots[0] + 2 * roots[1] * q, sympy.sqrt(roots[8]) / (1 + q) ** 3, roots[3] * sympy.exp(-q * roots[7])]
    data = cache._dumps((roots, sums))
    # a fresh process has no isolating intervals; here the caches are swapped for empty ones
    monkeypatch.setattr(rootoftools, "_reals_cache", rootoftools._pure_key_dict())
    monkeypatch.setattr(rootoftools, "_complexes_cache", rootoftools._pure_key_dict())

    def no_factoring(*args, **kwargs):
        raise AssertionError("factored while unpickling")

    monkeypatch.setattr(rootoftools, "_pure_factors", no_factoring)
    back_roots, back_sums = cache._loads(data, Path("unused"))
    monkeypatch.undo()
    assert back_roots == roots and back_sums == sums
    for built, read in zip(roots, back_roots):
        assert read.is_real == built.is_real
        digits = 50 if built.is_real else 15  # SymPy refines complex roots slowly
        assert abs(complex(read.evalf(digits)) - complex(built.evalf(digits))) < 10.0 ** (5 - digits)
    for built, read in zip(sums, back_sums):
        assert sympy.N(read.subs(q, 0.7) - built.subs(q, 0.7), 50) == 0


def test_key_follows_the_data_and_the_network():
    task = load_spec(XOR_SPEC)
    first, second = task.networks[0], task.networks[1]
    assert cache.derivation_key(task, first) == cache.derivation_key(task, first)
    assert cache.derivation_key(task, first) != cache.derivation_key(task, second)
    other = load_spec(XOR_SPEC)
    changed = type(task)(**{**other.__dict__, "targets": 2 * other.targets})
    assert cache.derivation_key(changed, first) != cache.derivation_key(task, first)


def test_warm_race_equals_cold_race_and_cache_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    previous = cache.cache_root()
    cache.clear(tmp_path)
    try:
        assert main(["race", str(XOR_SPEC), "--json"]) == 0
        cold = capsys.readouterr().out
        cache._memory.clear()
        cache._arrays.clear()
        assert main(["race", str(XOR_SPEC), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(cold)
        assert main(["cache", "--json"]) == 0
        usage = json.loads(capsys.readouterr().out)
        assert usage["path"] == str(tmp_path) and usage["derivations"]["files"] >= 2
        assert main(["cache", "--clear", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["derivations"]["files"] == 0
        assert main(["race", str(XOR_SPEC), "--json", "--no-cache"]) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(cold)
        assert not (tmp_path / "derivations").exists()
    finally:
        cache.clear(tmp_path)
        if previous is None:
            cache.disable()
            use_compilation_cache(None)
        else:
            cache.enable(previous)
            use_compilation_cache(previous / "jax")


def test_reduced_flow_solves_are_read_from_disk_compiled(disk_cache, monkeypatch):
    """A flow's compiled solve is kept under the cache's ``jax/executables``: a process that has
    forgotten it reads it back instead of tracing diffrax again, and gets the same race bit for bit."""
    from gdln.numeric import integrate

    solve = StoredSolve(disk_cache)
    integrate._SOLVERS.clear()

    def no_tracing(*args, **kwargs):
        raise AssertionError("traced diffrax again instead of reading the compiled solve")

    import diffrax

    monkeypatch.setattr(diffrax, "diffeqsolve", no_tracing)
    assert solve.same_race(solve.race_again())
    assert cache.usage(disk_cache)["jax"]["files"] >= len(solve.files)  # `gdln cache` counts and clears them


def test_a_garbled_compiled_solve_is_compiled_again(disk_cache):
    """An executable under ``jax/executables`` that cannot be read is compiled again and written
    over, with the same race."""
    solve = StoredSolve(disk_cache)
    for path in solve.files:
        path.write_bytes(b"not a pickle")
    assert solve.same_race(solve.race_again())
    assert all(path.read_bytes() != b"not a pickle" for path in solve.files)


def test_networks_sharing_a_pathway_read_its_modes_once(disk_cache, monkeypatch):
    """Modes are stored once for every derivation (``derivations/modes``), each pickled once when
    written: networks with the same pathway, read back from disk, hold the very same mode objects,
    equal to the built ones."""
    from gdln.derive.modes import Mode
    from gdln.derive.spec import context_task, task_from_dict

    task = task_from_dict(context_task(2, 3, ["hierarchy"] * 3, "context-subsets"))
    names = [n.name for n in task.networks]
    built = {name: TaskPredictions(task).derivation(name).pathways for name in names}
    pickled: list[int] = []
    dumps = cache._dumps

    def counting(found, modes=None):
        if isinstance(found, Mode):
            pickled.append(id(found))
        return dumps(found, modes)

    monkeypatch.setattr(cache, "_dumps", counting)
    assert cache.flush() == len(names)
    monkeypatch.undo()
    shared = {id(m) for name in names for p in built[name] for m in p.modes}
    assert sorted(pickled) == sorted(shared)  # every mode once, though networks share pathways
    assert list((disk_cache / "derivations" / "modes").glob("*.pickle"))
    cache._memory.clear()
    cache._modes.clear()
    again = TaskPredictions(task)
    read = {name: again.derivation(name).pathways for name in names}
    for name in names:
        for built_pathway, read_pathway in zip(built[name], read[name]):
            assert [(m.s, m.d, m.u, m.v) for m in built_pathway.modes] == [
                (m.s, m.d, m.u, m.v) for m in read_pathway.modes
            ]
    common = [next(p for p in read[name] if len(p.pathway.active) == task.num_datapoints) for name in names]
    assert len(common) > 1 and all(p.modes[0] is common[0].modes[0] for p in common)


@pytest.mark.slow
def test_compiled_solves_written_after_a_persistent_cache_hit_load_in_the_next_process(tmp_path):
    """Three fresh processes: the first fills JAX's persistent cache and the executables; with the
    executables removed, the second compiles them again while JAX's cache holds the programs; the
    third must read what the second wrote, not compile again (an XLA:CPU program read from JAX's
    cache serializes without its machine code, fails to load, and would be rewritten)."""
    import os
    import subprocess
    import sys

    from .helpers import ROOT

    env = {**os.environ, cache.CACHE_ENV: str(tmp_path)}
    spec = tmp_path / "context.toml"  # interacting pathways: raced on the reduced flow
    spec.write_text(
        subprocess.run(
            [sys.executable, "-m", "gdln", "task", "context", "--items", "2", "--contexts", "3"]
            + ["--blocks", "hierarchy,hierarchy,hierarchy", "--candidates", "context-subsets", "--no-cache"],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout
    )

    def race():
        subprocess.run(
            [sys.executable, "-m", "gdln", "race", str(spec), "--json"],
            check=True,
            capture_output=True,
            cwd=ROOT,
            env=env,
        )
        return {p.name: p.stat().st_mtime_ns for p in (tmp_path / "jax" / "executables").glob("*.pickle")}

    race()
    for path in (tmp_path / "jax" / "executables").glob("*.pickle"):
        path.unlink()
    written = race()
    assert written
    assert race() == written  # read back, not compiled and written again


def test_symmetric_groups_and_reduced_system_are_read_back_not_recomputed(disk_cache, monkeypatch):
    """A derivation whose symmetric groups, reduced system and race ODEs were computed is written
    whole (its exact operands, over rings of this process's generator symbols, are left out and
    rebuilt on demand), and a process that reads it back gets them without comparing pathways
    again: equal groups, classes, coupling and ODEs."""
    from gdln.derive import symmetry
    from gdln.derive.spec import context_task, task_from_dict

    # quartic CRootOf modes, radicals, interacting pathways and a group of two symmetric pathways
    task = task_from_dict(context_task(4, 3, ["clusters", "clusters", "chain"], "context-subsets"))
    built = TaskPredictions(task).derivation("common+2")
    system = built.reduced_system
    odes, groups = system.odes, built.symmetric_groups
    assert (2, 3) in groups and built.coupling_numbers == [] and built.cross_correlations
    assert cache.flush() == 1
    cache._memory.clear()
    cache._modes.clear()

    def never(*args, **kwargs):
        raise AssertionError("recomputed although the entry is on disk")

    monkeypatch.setattr(symmetry.Symmetry, "_overlap_norms", never)
    monkeypatch.setattr(symmetry.Symmetry, "_coefficients", never)
    read = cache.derivation(cache.key_of(built), never)
    assert read is not built
    assert read.symmetric_groups == groups
    assert read.reduced_system.kind == system.kind and read.reduced_system.coupling == system.coupling
    assert read.reduced_system.odes == odes
    assert [str(c) for c in read.symmetry.classes[0]] == [str(c) for c in built.symmetry.classes[0]]
    monkeypatch.undo()
    # the operands left out come back equal when asked for
    assert read.symmetry.scaled_map(0, 0).to_Matrix() == built.symmetry.scaled_map(0, 0).to_Matrix()


def test_a_named_coupling_keeps_its_values_through_the_cache(monkeypatch):
    """A :class:`CouplingNumber` read back from a pickle has the values it had computed, and a
    value known to more digits answers a request for fewer (the report asks for 17 and 30 digits
    of numbers the derivation computed at 40)."""
    from gdln.derive.algebraic import CouplingNumber

    x = sympy.Symbol("x")
    root = sympy.CRootOf(x**3 - x - 1, 0)
    vector = sympy.ImmutableMatrix([1, root])
    identity = sympy.ImmutableMatrix.eye(2)
    number = CouplingNumber(0, 1, (vector, vector, vector, vector, identity, identity))
    exact = number.value(40)
    read = cache._loads(cache._dumps(number), Path("unused"))

    def never(*args):
        raise AssertionError("computed again from the vectors")

    monkeypatch.setattr(CouplingNumber, "_compute", never)
    assert read == number and read.value(40) == exact
    assert float(read.evalf(17)) == float(exact) == 1.0  # (1 + r^2)^2 / |(1, r)|^4
    assert abs(read.value(30) - exact) < 10.0**-29


def test_garbled_or_foreign_derivation_entries_are_rebuilt(disk_cache):
    """A derivation entry that does not match its digest (a byte changed), or that is another
    derivation's, and a mode file that does not match its name, are rebuilt, never read; the
    rebuilt entry is written again and read back from then on."""
    from gdln.derive.derivation import NetworkDerivation

    task = load_spec(XOR_SPEC)
    names = [n.name for n in task.networks]
    built = {name: TaskPredictions(task).derivation(name) for name in names}
    # the modes, which the mode files hold (a speed alone needs none)
    singular = {name: [m.s for p in built[name].pathways for m in p.modes] for name in names}
    speeds = {name: built[name].speed for name in names}
    assert cache.flush() == len(names)
    keys = {name: cache.key_of(built[name]) for name in names}
    entry = disk_cache / "derivations" / keys["linear"] / "derivation.pickle"
    builds = []

    def read(*chosen):
        """A new process's reads: each derivation from disk, else built (and counted)."""
        cache._memory.clear()
        cache._modes.clear()
        cache._mode_names.clear()
        for name in chosen:
            found = cache.derivation(keys[name], lambda name=name: builds.append(name) or NetworkDerivation(task, name))
            assert found.speed == speeds[name]
            assert [m.s for p in found.pathways for m in p.modes] == singular[name]

    read("linear")
    assert builds == []  # the entry as written is read
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    read("linear")
    assert builds == ["linear"]
    assert cache.flush() == 1  # written again, and read from then on
    read("linear")
    assert builds == ["linear"]
    cache.flush()
    entry.write_bytes((disk_cache / "derivations" / keys["xor"] / "derivation.pickle").read_bytes())
    read("linear")  # a valid entry, but the xor network's
    assert builds == ["linear"] * 2
    cache.flush()
    mode = next((disk_cache / "derivations" / "modes").glob("*.pickle"))
    mode.write_bytes(mode.read_bytes()[:-1])  # cut short
    read(*names)
    assert len(builds) == 3  # the network that holds the mode is rebuilt
    assert not mode.exists()  # removed: the next flush writes it again
    assert cache.flush() == 1 and mode.is_file()
    read(*names)
    assert len(builds) == 3


def test_derive_summary_is_read_back_and_a_stale_or_garbled_one_recomputed(capsys, tmp_path, monkeypatch):
    """``gdln derive``'s summary and the text of its equations are kept beside the derivation: a
    warm run prints them without deriving or printing anything again. A summary file cut short,
    changed after it was written (still valid JSON), or written for other parameter values is
    computed again and rewritten, and so is an equations file cut short: the output stays the
    cold run's."""
    from gdln.commands import equations
    from gdln.verify import derivation_report as reports

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    previous = cache.cache_root()
    cache.clear(tmp_path)

    def derive(*extra):
        cache._memory.clear()
        cache._documents.clear()
        cache._modes.clear()
        assert main(["derive", str(XOR_SPEC), "--network", "xor", *extra]) == 0
        return capsys.readouterr().out

    def counted(module, name):
        """Calls of ``module.name`` from now on, one entry each."""
        calls, original = [], getattr(module, name)

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
        return calls

    try:
        cold = derive()
        (summary,) = (tmp_path / "derivations").glob("*/summary-*.json")
        (printed,) = (tmp_path / "derivations").glob("*/equations-*.json")
        written, printed_text = summary.read_text(), printed.read_text()
        recomputed = counted(reports, "derive_report")
        rewritten = counted(equations, "system_equations")
        assert derive() == cold and recomputed == [] and rewritten == []  # read back: nothing derived or printed
        summary.write_text(written[: len(written) // 2])
        assert derive() == cold and len(recomputed) == 1
        assert summary.read_text() == written  # rewritten whole
        entry = json.loads(written)
        entry["content"]["speed"]["value"] = 123.0
        summary.write_text(json.dumps(entry))
        assert derive() == cold and len(recomputed) == 2
        other = derive("--set", "Delta=2")
        assert other != cold and len(recomputed) == 3
        (stale,) = set((tmp_path / "derivations").glob("*/summary-*.json")) - {summary}
        summary.write_text(stale.read_text())  # a summary for Delta = 2 under Delta = 1's name
        assert derive() == cold and len(recomputed) == 4
        rewritten.clear()
        printed.write_text(printed_text[: len(printed_text) // 2])
        assert derive() == cold and len(rewritten) == 1 and len(recomputed) == 4
        assert printed.read_text() == printed_text
    finally:
        cache.clear(tmp_path)
        if previous is None:
            cache.disable()
            use_compilation_cache(None)
        else:
            cache.enable(previous)
            use_compilation_cache(previous / "jax")


def test_a_derivation_that_raised_is_not_flushed(disk_cache):
    """A build that raises (a shared graph asked for its module derivation) leaves nothing for
    flush() to write: the next flush in the process writes the rest, where it raised KeyError."""

    def fails():
        raise ValueError("no derivation")

    with pytest.raises(ValueError):
        cache.derivation("a-key-that-failed", fails)
    task = load_spec(XOR_SPEC)
    TaskPredictions(task).derivation(task.networks[0].name)
    assert cache.flush() == 1
