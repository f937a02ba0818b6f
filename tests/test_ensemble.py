"""msprings.Ensemble: many systems of one topology stepped by one call.

Every member must give the bits its system gives stepped alone (single-threaded) with the
same calls: positions, velocities, time, energies and ledger; on the batched path (tiny
members of the Euler methods, four or eight to a vector) and on the per-member path alike.  A member
that diverges is put back alone; bad input is refused with nothing changed.
"""
from __future__ import annotations

import json
import pickle
import os
import subprocess
import sys

import numpy as np
import pytest

import msprings
from msprings import scenes
from package_path import python_path

DT = 1e-3


def state_bits(system: msprings.System) -> list:
    """What must agree bit for bit: x, v, t, steps, the energies and the ledger."""
    return [system.x.tobytes(), system.v.tobytes(), float(system.t).hex(), int(system.steps),
            [float(value).hex() for value in system.energy()], [float(value).hex() for value in system.ledger()]]


def member_bits(ens: msprings.Ensemble, i: int) -> list:
    energy, ledger = ens.energy(), ens.ledger()
    return [ens.x[i].tobytes(), ens.v[i].tobytes(), float(ens.t[i]).hex(), int(ens.steps[i]),
            [float(part[i]).hex() for part in energy], [float(part[i]).hex() for part in ledger]]


def alone(system: msprings.System) -> msprings.System:
    copy = system.copy()
    copy.threads = 1
    return copy


def assert_as_alone(ens: msprings.Ensemble, systems: list[msprings.System], calls: list[int]) -> None:
    """Steps the ensemble and each system alone with the same calls, comparing after each."""
    singles = [alone(s) for s in systems]
    for n in calls:
        ens.step(DT, n)
        for single in singles:
            single.step(DT, n)
        for i, single in enumerate(singles):
            assert member_bits(ens, i) == state_bits(single), f"member {i} after a call of {n} steps"


def varied_chains(count: int, nodes: int, **options) -> list[msprings.System]:
    systems = []
    for i in range(count):
        s = scenes.chain(nodes, k=20.0 + 7.0 * i, c=0.1 + 0.05 * i, **options)
        s.v[1:] = [0.1 * i, 0.2, -0.05 * i]
        s.mass[1:] = 1.0 + 0.1 * i
        systems.append(s)
    return systems


@pytest.mark.parametrize("integrator", msprings.INTEGRATORS)
def test_every_integrator_gives_the_bits_of_each_system_alone(integrator: str) -> None:
    systems = varied_chains(5, 6, integrator=integrator, drag=0.05)
    for i, s in enumerate(systems):
        s.gravity = (0.0, -9.81 + i, 0.1 * i)
    ens = msprings.Ensemble(systems)
    assert ens.integrator == integrator
    assert_as_alone(ens, systems, [1, 3, 1, 10])


@pytest.mark.parametrize("integrator", ["symplectic_euler", "velocity_verlet", "implicit_euler", "xpbd"])
def test_colliders_external_force_and_ledger(integrator: str) -> None:
    systems = varied_chains(3, 5, integrator=integrator)
    for i, s in enumerate(systems):
        s.add_plane((0.0, -0.02 - 0.01 * i, 0.0), restitution=0.3, friction=0.2)
        s.add_sphere((2.0, -0.45, 0.0), 0.4, velocity=(0.0, 0.5, 0.0))
        s.external[2] = (0.3 * i, 0.0, 0.1)
    ens = msprings.Ensemble(systems)
    assert_as_alone(ens, systems, [50, 1, 200])
    # the contact and collider parts of the ledger are exercised
    ledger = ens.ledger()
    assert np.all(ledger.contact > 0) and np.all(ledger.external != 0)


@pytest.mark.parametrize("count", [1, 7, 13])
@pytest.mark.parametrize("integrator", ["symplectic_euler", "explicit_euler", "velocity_verlet"])
def test_tiny_members(count: int, integrator: str) -> None:
    """Single springs and chain-11s, a member count that is not a multiple of the lanes."""
    springs = [scenes.single_spring(k=10.0 + 5.0 * i, c=0.5, integrator=integrator) for i in range(count)]
    for i, s in enumerate(springs):
        s.x[1] = (0.0, -1.0 - 0.01 * i, 0.0)
    ens = msprings.Ensemble(springs)
    assert_as_alone(ens, springs, [1, 2, 100, 1])
    chains = varied_chains(count, 11, integrator=integrator)
    chain_ensemble = msprings.Ensemble(chains)
    assert_as_alone(chain_ensemble, chains, [3, 100])
    # the Euler methods step four or eight members to a vector; Verlet one member at a time
    batched = count if integrator != "velocity_verlet" else 0
    assert ens.batched == batched and chain_ensemble.batched == batched


def batch_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The batched kernel's vector paths this build and processor have, fastest first, as
    MSPRINGS_BATCH_PATH caps them."""
    paths = []
    for cap in ("avx512", "avx2", "plain"):
        monkeypatch.setenv("MSPRINGS_BATCH_PATH", cap)
        path = msprings._core.batch_path()
        if path not in paths:
            paths.append(path)
    monkeypatch.delenv("MSPRINGS_BATCH_PATH")
    return paths


def test_batch_path_is_capped_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = batch_paths(monkeypatch)
    assert msprings._core.batch_path() == paths[0]
    # the build's own path is always there; AVX2 and AVX-512 only above it
    assert paths[-1] == ("sse2" if msprings._core.vector_path() in ("avx2", "sse2") else
                         msprings._core.vector_path())
    assert ("avx2" in paths) == msprings._core.avx2()
    assert set(paths) <= {"avx512", "avx2", "sse2", "neon", "plain"}
    monkeypatch.setenv("MSPRINGS_BATCH_PATH", "no such path")  # left to the processor
    assert msprings._core.batch_path() == paths[0]


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
@pytest.mark.parametrize("scene", ["single", "chain", "string"])
def test_every_batch_path_gives_the_same_bits(scene: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each vector path of the batched kernel (AVX-512 eight members to a vector, two groups
    at a time; AVX2 and SSE2 four) gives every member the bits of its system alone: both
    Euler methods in one ensemble, member counts that are no multiple of the lanes, one or
    two workers, and a member that diverges in a group stepped beside another.  The string
    (springs to the next node and the one after) has nodes that sum several springs' forces
    in lane groups."""
    systems = []
    for i in range(21 + 13):
        integrator = "symplectic_euler" if i < 21 else "explicit_euler"
        if scene == "single":
            s = scenes.single_spring(k=10.0 + 5.0 * i, c=0.5 + 0.01 * i, integrator=integrator)
            s.x[1] = (0.01 * i, -1.0 - 0.01 * i, 0.0)
        elif scene == "string":
            springs = [[a, a + step] for a in range(11) for step in (1, 2) if a + step < 11]
            s = msprings.System([[0.1 * a, 0.0, 0.01 * (a % 3)] for a in range(11)], springs, mass=0.1,
                                k=4.0 + 0.3 * i, c=0.01 * (i % 3), pinned=[0], integrator=integrator)
            s.v[7] = (0.0, 0.1 * i, 0.0)
        else:
            s = scenes.chain(11, k=20.0 + 3.0 * i, c=0.1 + 0.02 * i, integrator=integrator)
            s.v[1:] = [0.1, 0.01 * i, -0.02 * i]
            s.mass[1:] = 1.0 + 0.05 * i
        s.gravity = (0.0, -9.81, 0.01 * i)
        systems.append(s)
    systems[3].k[:] = 1e9  # blows up within the first call (in the first group)
    singles = [alone(s) for s in systems]
    expected = []
    for single in singles:
        try:
            single.step(DT, 200)
        except msprings.DivergenceError:
            pass
        expected.append(state_bits(single))
    assert expected[3] == state_bits(alone(systems[3]))  # put back where it began
    results = {}
    for path in batch_paths(monkeypatch):
        for threads in (1, 2):
            monkeypatch.setenv("MSPRINGS_BATCH_PATH", path)
            ens = msprings.Ensemble(systems)
            ens.threads = threads
            ens.step(DT, 150)
            ens.step(DT, 50)
            assert ens.batched == len(systems) - 1  # all but the diverged member
            assert list(np.flatnonzero(ens.diverged)) == [3]
            results[path, threads] = [member_bits(ens, i) for i in range(len(ens))]
            for i, bits in enumerate(results[path, threads]):
                assert bits == expected[i], f"member {i} on the {path} path with {threads} threads"
    assert len({str(bits) for bits in results.values()}) == 1


def test_batched_and_per_member_members_in_one_call() -> None:
    """Members that the batched path cannot take (drag, an external force, a moving pin, a
    collider, another integrator) step one by one beside those it takes."""
    systems = varied_chains(11, 7)
    systems[2].drag = 0.1
    systems[3].external[4] = (0.0, 1.0, 0.0)
    systems[5].v[0] = (0.1, 0.0, 0.0)  # the pinned node moves
    systems[7].add_plane((0.0, -0.1, 0.0))
    systems[8].integrator = "explicit_euler"
    systems[9].integrator = "rk4"
    ens = msprings.Ensemble(systems)
    assert_as_alone(ens, systems, [5, 40])
    assert ens.batched == 6


def test_writes_through_views_are_stepped_and_booked_as_alone() -> None:
    systems = varied_chains(7, 4)
    ens = msprings.Ensemble(systems)
    singles = [alone(s) for s in systems]
    ens.step(DT, 10)
    for s in singles:
        s.step(DT, 10)
    ens.k[3] = 55.0
    ens.x[5, 2, 1] += 0.01
    ens.gravity[1] = (0.0, -3.0, 0.0)
    ens.mass[6, 1] = 2.5
    singles[3].k[:] = 55.0
    singles[5].x[2, 1] += 0.01
    singles[1].gravity = (0.0, -3.0, 0.0)
    singles[6].mass[1] = 2.5
    ens.step(DT, 20)
    for s in singles:
        s.step(DT, 20)
    for i, s in enumerate(singles):
        assert member_bits(ens, i) == state_bits(s)
    assert ens.ledger().user[5] != 0.0


def test_large_members_take_the_per_member_path_on_their_own_threads() -> None:
    """Members of 10,000 springs or more, fewer than the workers: each steps on all of them."""
    systems = [scenes.cloth(48, integrator="symplectic_euler") for _ in range(2)]
    assert systems[0].n_springs >= 10_000
    systems[1].k[:] *= 1.5
    ens = msprings.Ensemble(systems)
    ens.threads = 2
    assert_as_alone(ens, systems, [3, 2])


def test_any_number_of_threads_gives_the_same_bits() -> None:
    systems = varied_chains(9, 3, integrator="rk4")
    results = []
    for threads in (1, 2, 3):
        ens = msprings.Ensemble(systems)
        ens.threads = threads
        ens.step(DT, 50)
        results.append([member_bits(ens, i) for i in range(len(ens))])
    assert results[0] == results[1] == results[2]


@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_a_diverging_member_is_put_back_alone() -> None:
    systems = [scenes.single_spring(k=20.0 * (i + 1), c=0.5) for i in range(6)]
    systems[4].k[:] = 1e9  # unstable at this step: blows up within the call
    ens = msprings.Ensemble(systems)
    ens.step(DT, 5)
    before = member_bits(ens, 4)
    singles = [alone(s) for s in systems]
    for s in singles:
        s.step(DT, 5)
    ens.step(DT, 3000)  # does not raise
    assert list(ens.diverged) == [False] * 4 + [True, False]
    assert member_bits(ens, 4) == before  # rolled back to the start of the call
    with pytest.raises(msprings.DivergenceError) as error:
        singles[4].step(DT, 3000)
    assert ens.divergence_step[4] == error.value.step
    assert ens.divergence_time[4] == error.value.time
    assert np.isnan(ens.divergence_time[[0, 1, 2, 3, 5]]).all()
    assert list(ens.divergence_step[[0, 1, 2, 3, 5]]) == [-1] * 5
    for i in (0, 1, 2, 3, 5):
        singles[i].step(DT, 3000)
        assert member_bits(ens, i) == state_bits(singles[i])
    ens.step(DT, 10)  # the diverged member is left alone
    assert member_bits(ens, 4) == before
    ens.k[4] = 20.0
    ens.diverged[4] = False  # cleared: it steps again
    ens.step(DT, 10)
    assert ens.steps[4] == 15 and not ens.diverged[4]


def test_mismatched_topology_is_refused_naming_the_member() -> None:
    base = scenes.chain(4)
    with pytest.raises(ValueError, match=r"systems\[2\] has 5 nodes"):
        msprings.Ensemble([base, base.copy(), scenes.chain(5)])
    other = msprings.System(base.x, [[0, 1], [1, 2], [3, 2]], pinned=[0])
    with pytest.raises(ValueError, match=r"systems\[1\]'s spring 2"):
        msprings.Ensemble([base, other])
    with pytest.raises(ValueError, match=r"systems\[1\]'s node 3 is pinned"):
        msprings.Ensemble([base, scenes.chain(4, anchor="both")])
    with pytest.raises(TypeError, match=r"systems\[1\]"):
        msprings.Ensemble([base, "not a system"])
    with pytest.raises(ValueError, match="at least one"):
        msprings.Ensemble([])
    with pytest.raises(ValueError, match="count"):
        msprings.Ensemble.replicate(base, 0)


@pytest.mark.parametrize(("dt", "n", "error", "words"), [
    (0.0, 1, ValueError, "dt"), (-1e-3, 1, ValueError, "dt"), (float("nan"), 1, ValueError, "dt"),
    (float("inf"), 1, ValueError, "dt"), ("1e-3", 1, TypeError, "dt"), (True, 1, TypeError, "dt"),
    (DT, -1, ValueError, "n"), (DT, 1.5, TypeError, "n"),
])
def test_bad_arguments_are_refused(dt, n, error, words) -> None:
    ens = msprings.Ensemble(varied_chains(3, 3))
    before = [member_bits(ens, i) for i in range(3)]
    with pytest.raises(error, match=words):
        ens.step(dt, n)
    assert [member_bits(ens, i) for i in range(3)] == before


@pytest.mark.parametrize(("view", "index", "value", "words"), [
    ("k", (2, 0), float("nan"), "member 2: k"), ("c", (1, 1), -1.0, "member 1: c"),
    ("mass", (0, 1), 0.0, "member 0: mass"), ("x", (2, 1, 0), float("inf"), "member 2: x"),
    ("v", (1, 2, 2), float("nan"), "member 1: v"), ("rest", (0, 0), -0.5, "member 0: rest"),
    ("gravity", (2, 1), float("nan"), "member 2: gravity"),
])
def test_bad_values_written_through_views_are_refused(view, index, value, words) -> None:
    ens = msprings.Ensemble(varied_chains(3, 3))
    ens.step(DT, 2)
    before = [member_bits(ens, i) for i in range(3)]
    found = float(getattr(ens, view)[index])
    getattr(ens, view)[index] = value
    with pytest.raises(ValueError, match=words):
        ens.step(DT, 5)
    getattr(ens, view)[index] = found
    assert [member_bits(ens, i) for i in range(3)] == before


def test_member_as_a_system_round_trip() -> None:
    systems = varied_chains(4, 5, integrator="velocity_verlet")
    systems[2].add_plane((0.0, -0.3, 0.0), friction=0.5)
    systems[2].families["structural"] = np.arange(4)
    ens = msprings.Ensemble(systems)
    ens.step(DT, 100)
    member = ens.system(-2)
    assert isinstance(member, msprings.System) and member.integrator == "velocity_verlet"
    assert len(member.colliders) == 1 and list(member.families["structural"]) == [0, 1, 2, 3]
    assert state_bits(member) == member_bits(ens, 2)
    member.threads = 1
    member.step(DT, 300)
    ens.step(DT, 300)
    assert state_bits(member) == member_bits(ens, 2)
    member.x[:] = 0.0  # independent of the ensemble
    assert not np.array_equal(ens.x[2], member.x)
    assert len(ens) == 4 and "4 members" in repr(ens)
    with pytest.raises(IndexError):
        ens.system(4)
    with pytest.raises(IndexError):
        ens.system(-5)


def test_the_ensemble_owns_copies() -> None:
    systems = varied_chains(2, 3)
    ens = msprings.Ensemble(systems)
    x = ens.x.copy()
    systems[0].x[:] = 5.0
    systems[1].k[:] = 1e6
    systems[1].step(DT, 10)
    assert np.array_equal(ens.x, x) and ens.t[1] == 0.0 and ens.k[1, 0] != 1e6
    view = ens.x
    del ens
    assert view.shape == (2, 3, 3)  # a view keeps the ensemble alive


def test_damped_springs_follow_the_closed_form() -> None:
    """B single springs of different k, no gravity, from a 0.1 m stretch: each follows
    x(t) = A e^(-zeta omega t) (cos(omega_d t) + zeta omega / omega_d sin(omega_d t))."""
    stiffness = np.linspace(10.0, 100.0, 11)
    base = scenes.single_spring(k=10.0, c=0.5, stretch=0.1, gravity=(0.0, 0.0, 0.0))
    ens = msprings.Ensemble.replicate(base, stiffness.size)
    ens.k[:, 0] = stiffness
    h, steps = 1e-4, 20_000
    ens.step(h, steps)
    t = steps * h
    omega = np.sqrt(stiffness / 1.0)
    zeta = 0.5 / (2.0 * np.sqrt(stiffness * 1.0))
    damped = omega * np.sqrt(1.0 - zeta**2)
    expected = 0.1 * np.exp(-zeta * omega * t) * (np.cos(damped * t) + zeta * omega / damped * np.sin(damped * t))
    assert np.allclose(ens.x[:, 1, 0] - 1.0, expected, atol=2e-4)
    assert np.allclose(ens.t, t)


INTERRUPT_SCRIPT = r"""
import json, signal, threading, time
import msprings
from msprings import scenes

ens = msprings.Ensemble([scenes.chain(11, k=20.0 + i) for i in range(200)])
ens.threads = int(__import__("sys").argv[1])
ens.step(1e-3, 2)
before = [ens.x.tobytes(), ens.v.tobytes(), ens.t.tobytes(), ens.steps.tobytes(),
          [part.tobytes() for part in ens.ledger()]]
timer = threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
start = time.perf_counter()
timer.start()
try:
    ens.step(1e-3, 10**12)
    raised = "nothing"
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
seconds = time.perf_counter() - start
timer.join()
after = [ens.x.tobytes(), ens.v.tobytes(), ens.t.tobytes(), ens.steps.tobytes(),
         [part.tobytes() for part in ens.ledger()]]
ens.step(1e-3)
print(json.dumps({"raised": raised, "seconds": seconds, "unchanged": after == before,
                  "steps_after": int(ens.steps[0])}))
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_puts_every_member_back(threads: int) -> None:
    env = dict(os.environ, PYTHONPATH=python_path())
    done = subprocess.run([sys.executable, "-c", INTERRUPT_SCRIPT, str(threads)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["raised"] == "KeyboardInterrupt"
    assert result["seconds"] < 3.0
    assert result["unchanged"]
    assert result["steps_after"] == 3


def test_building_stepping_and_dropping_ensembles_does_not_grow_the_process() -> None:
    """Success and error paths, the batched path and the per-member path, a diverging member."""
    from test_memory import settled_resident_bytes

    systems = varied_chains(6, 20)
    systems[1].integrator = "rk4"
    systems[2].k[:] = 1e9  # diverges

    def once() -> None:
        ens = msprings.Ensemble(systems)
        ens.step(DT, 20)
        ens.k[0, 0] = float("nan")
        try:
            ens.step(DT)
        except ValueError:
            pass
        ens.k[0, 0] = 20.0
        ens.step(DT, 3)
        ens.energy(), ens.ledger(), ens.system(1).step(DT)
        try:
            msprings.Ensemble([systems[0], scenes.chain(3)])
        except ValueError:
            pass
        view = ens.x
        del ens
        assert view.shape == (6, 20, 3)

    for _ in range(50):
        once()
    before = settled_resident_bytes()
    for _ in range(400):
        once()
    assert settled_resident_bytes() - before < 4 << 20


def test_views_options_and_threads() -> None:
    systems = varied_chains(3, 4)
    ens = msprings.Ensemble(systems)
    assert ens.x.shape == ens.v.shape == (3, 4, 3) and ens.mass.shape == (3, 4)
    assert ens.k.shape == ens.c.shape == ens.rest.shape == (3, 3) and ens.gravity.shape == (3, 3)
    assert ens.t.shape == ens.steps.shape == ens.diverged.shape == (3,)
    assert np.array_equal(ens.springs, systems[0].springs) and np.array_equal(ens.pinned, systems[0].pinned)
    for name in ("t", "steps", "springs", "pinned", "divergence_time", "divergence_step"):
        with pytest.raises(ValueError):
            getattr(ens, name).flat[0] = 1
    assert np.shares_memory(ens.x, ens.x) and ens.x.base is ens
    ens.integrator = "rk4"
    assert ens.integrator == "rk4" and ens.system(2).integrator == "rk4"
    with pytest.raises(ValueError, match="integrator"):
        ens.integrator = "leapfrog"
    assert ens.integrator == "rk4"
    with pytest.raises(ValueError, match="threads"):
        ens.threads = -1
    # the process-wide setting when threads is 0: the same bits on one thread and on two
    results = []
    try:
        for threads in (1, 2):
            msprings.set_num_threads(threads)
            copy = msprings.Ensemble(systems)
            copy.step(DT, 30)
            results.append(copy.x.tobytes())
    finally:
        msprings.set_num_threads(0)  # the initial setting: all cores
    assert results[0] == results[1]


def test_colliders_added_to_the_ensemble_act_on_every_member() -> None:
    systems = varied_chains(5, 6)
    ens = msprings.Ensemble(systems)
    ens.step(DT, 10)
    singles = [alone(s) for s in systems]
    for s in singles:
        s.step(DT, 10)
    ens.add_plane((0.0, -0.05, 0.0), restitution=0.2, friction=0.4)
    ens.add_box((1.0, -0.5, -1.0), (2.0, -0.2, 1.0), velocity=(0.0, 0.1, 0.0))
    for s in singles:
        s.add_plane((0.0, -0.05, 0.0), restitution=0.2, friction=0.4)
        s.add_box((1.0, -0.5, -1.0), (2.0, -0.2, 1.0), velocity=(0.0, 0.1, 0.0))
    ens.step(DT, 300)
    for s in singles:
        s.step(DT, 300)
    for i, s in enumerate(singles):
        assert member_bits(ens, i) == state_bits(s)
    assert ens.batched == 0 and np.all(ens.ledger().contact > 0)
    assert len(ens.system(2).colliders) == 2
    with pytest.raises(ValueError, match="lower"):
        ens.add_box((0.0, 0.0, 0.0), (-1.0, 1.0, 1.0))
    with pytest.raises(ValueError):
        ens.add_sphere((0.0, 0.0, 0.0), -1.0)
    assert len(ens.system(0).colliders) == 2


def test_unknown_settings_views_and_zero_steps_are_refused() -> None:
    """A setting the ensemble does not have (or a typo) is refused, not kept silently; views
    are written into, not replaced; n < 1 is refused as System.step refuses it."""
    spring = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], pinned=[0], velocities=[[0, 0, 0], [1, 0, 0]])
    ens = msprings.Ensemble.replicate(spring, 3)
    before = ens.x.copy()
    with pytest.raises(AttributeError, match="no attribute 'drag'.*ens.system"):
        ens.drag = 5.0
    with pytest.raises(AttributeError, match="did you mean integrator"):
        ens.integrater = "rk4"
    with pytest.raises(AttributeError, match=r"written into, not replaced: ens.k\[:\]"):
        ens.k = np.ones((3, 1))
    with pytest.raises(TypeError, match=r"ens.system\(i\)"):
        ens[1]
    with pytest.raises(ValueError, match="n = 0 is out of range"):
        ens.step(1e-3, 0)
    assert np.array_equal(ens.x, before) and ens.integrator == "symplectic_euler"
    ens.integrator, ens.threads = "rk4", 1  # settings it has are set
    ens.step(1e-3, 5)
    alone = spring.copy()
    alone.integrator = "rk4"
    alone.step(1e-3, 5)
    assert all(np.array_equal(ens.x[i], alone.x) for i in range(3))


def test_a_member_cleared_to_go_on_forgets_its_blow_up_and_bad_options_are_refused() -> None:
    ens = msprings.Ensemble([msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], pinned=[0], k=1e9)])
    ens.step(1e-3, 100)
    assert ens.diverged[0] and ens.divergence_step[0] > 0 and np.isfinite(ens.divergence_time[0])
    ens.k[0] = 20.0
    ens.diverged[0] = False
    ens.step(1e-3, 10)
    assert not ens.diverged[0] and ens.divergence_step[0] == -1 and np.isnan(ens.divergence_time[0])
    with pytest.raises(ValueError, match="drag = -1"):
        ens._set_option("drag", -1.0)
    ens.step(1e-3, 1)  # nothing was set: the ensemble still steps


def all_bits(ens: msprings.Ensemble) -> list:
    """Every member's bits with the ensemble's divergence record and the members' settings."""
    return ([member_bits(ens, i) for i in range(ens.n_members)] +
            [ens.diverged.tobytes(), ens.divergence_time.tobytes(), ens.divergence_step.tobytes(),
             ens.mass.tobytes(), ens.k.tobytes(), ens.c.tobytes(), ens.rest.tobytes(), ens.gravity.tobytes(),
             ens.integrator, ens.threads, ens.batched])


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("integrator", ["symplectic_euler", "explicit_euler", "velocity_verlet", "implicit_euler"])
@pytest.mark.filterwarnings("ignore::msprings.StabilityWarning")
def test_an_ensemble_pickles_and_steps_on_bit_for_bit(integrator: str, protocol: int) -> None:
    systems = varied_chains(11, 6, integrator=integrator)
    systems[2].k[:] = 1e12  # blows up (but on implicit Euler): its divergence record travels
    ens = msprings.Ensemble(systems)
    ens.threads = 2
    ens.step(DT, 100)
    assert bool(ens.diverged[2]) == (integrator != "implicit_euler")
    ens.x[5, 3, 1] += 0.01  # a change still pending for member 5's ledger
    ens.v[7, 2] = (0.1, 0.0, -0.2)
    copy = pickle.loads(pickle.dumps(ens, protocol=protocol))
    assert type(copy) is msprings.Ensemble
    assert all_bits(copy) == all_bits(ens)
    for part in (ens, copy):
        part.step(DT, 25)
    assert all_bits(copy) == all_bits(ens)
    assert ens.ledger().user[5] != 0.0
    # the members alone also agree with the unpickled ensemble's
    for i in (0, 5, 10):
        member = copy.system(i)
        assert state_bits(member) == member_bits(copy, i)


class Named(msprings.Ensemble):
    """A subclass with an attribute of its own (pickled with it)."""

    label = ""


def test_pickled_members_keep_families_uv_colliders_and_a_subclass() -> None:
    s = scenes.cloth(4, 4, pin="top")
    s.families = {"edge": np.array([0, 1], dtype=np.int64)}
    ens = Named([s, s.copy()])
    ens.add_plane((0.0, -3.0, 0.0))
    ens.label = "two cloths"
    ens.step(DT, 10)
    copy = pickle.loads(pickle.dumps(ens))
    assert type(copy) is Named and copy.label == "two cloths"
    assert [sorted(copy.system(i).families) for i in range(2)] == [["edge"], ["edge"]]
    assert len(copy.system(1).colliders) == len(ens.system(1).colliders) == 1
    assert all_bits(copy) == all_bits(ens)
    ens.step(DT, 20)
    copy.step(DT, 20)
    assert all_bits(copy) == all_bits(ens)


def test_pickling_leaves_the_original_unchanged() -> None:
    ens = msprings.Ensemble(varied_chains(5, 4))
    ens.step(DT, 7)
    before = all_bits(ens)
    pickle.dumps(ens)
    assert all_bits(ens) == before


@pytest.mark.parametrize(("change", "words"), [
    (lambda args: (args[0], 99) + args[2:], "data version 99"),
    (lambda args: (int,) + args[1:], "not an Ensemble"),
    (lambda args: args[:2] + ([],) + args[3:], "non-empty list of Systems"),
    (lambda args: args[:3] + ((args[3][0], args[3][1], args[3][2]),) + args[4:], "malformed"),
    (lambda args: args[:3] + ((args[3][0][:2],) + args[3][1:],) + args[4:], "hold 5 members"),
    (lambda args: args[:3] + ((np.ones(5, bool),) + args[3][1:],) + args[4:], "do not go together"),
    (lambda args: args[:3] + (args[3][:3] + (6,),) + args[4:], "batched = 6"),
])
def test_damaged_ensemble_data_raises_value_error(change, words) -> None:
    ens = msprings.Ensemble(varied_chains(5, 4))
    ens.step(DT, 3)
    function, args = ens.__reduce_ex__(2)
    with pytest.raises(ValueError, match=words):
        function(*change(args))
