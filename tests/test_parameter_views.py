"""Parameters written through views: a step reads mass, pinned, rest, k and c again only when a
writable view of them was handed out since the last step or is still alive, and then it steps
exactly as a fresh system with those parameters would; a step whose parameters did not change
gives the same bits as before."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

import msprings

DT = 1e-3


def network() -> dict[str, np.ndarray]:
    """A 9 x 9 damped cloth (lane groups) with a few long irregular springs, two corners pinned."""
    n = 9
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.column_stack([0.1 * cols.ravel(), np.zeros(n * n), 0.1 * rows.ravel()])
    node = np.arange(n * n).reshape(n, n)
    pairs = [(node[:, :-1], node[:, 1:]), (node[:-1, :], node[1:, :]), (node[:-1, :-1], node[1:, 1:])]
    springs = np.concatenate([np.column_stack([a.ravel(), b.ravel()]) for a, b in pairs])
    extra = np.array([[0, 80], [7, 45], [33, 12], [60, 2]])
    springs = np.concatenate([springs, extra])
    rng = np.random.default_rng(7)
    m = springs.shape[0]
    rest = np.linalg.norm(positions[springs[:, 1]] - positions[springs[:, 0]], axis=1)
    return {"positions": positions, "springs": springs, "rest": rest, "k": rng.uniform(50.0, 80.0, m),
            "c": rng.uniform(0.0, 0.05, m), "mass": rng.uniform(0.01, 0.02, n * n),
            "pinned": np.isin(np.arange(n * n), [0, n - 1])}


def build(net: dict[str, np.ndarray], positions: np.ndarray | None = None,
          velocities: np.ndarray | None = None) -> msprings.System:
    """The network as a one-worker system, from its initial state or the one given."""
    s = msprings.System(net["positions"] if positions is None else positions, net["springs"], mass=net["mass"],
                        k=net["k"], c=net["c"], pinned=net["pinned"], velocities=velocities, rest=net["rest"])
    s.threads = 1
    return s


#: name -> how to change the parameter (in place, on the array given)
CHANGES: dict[str, Callable[[np.ndarray], None]] = {
    "k": lambda a: a.__imul__(1.5),
    "rest": lambda a: a.__imul__(0.9),
    "c": lambda a: a.__iadd__(0.2),
    "mass": lambda a: a.__imul__(2.0),
    "pinned": lambda a: a.__setitem__(40, True),
}


def fresh_after(net: dict[str, np.ndarray], s: msprings.System, name: str) -> msprings.System:
    """A fresh system at the state of s with the parameter changed as CHANGES says."""
    changed = {key: np.array(value) for key, value in net.items()}
    CHANGES[name](changed[name])
    return build(changed, np.array(s.x), np.array(s.v))


def same_bits(a: msprings.System, b: msprings.System) -> bool:
    return np.array_equal(a.x, b.x) and np.array_equal(a.v, b.v) and np.array_equal(a.f, b.f)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_view_kept_alive_across_steps_is_read_again_by_every_step(name: str) -> None:
    net = network()
    s = build(net)
    view = getattr(s, name)  # taken before the first step, kept alive throughout
    s.step(DT, 20)
    s.step(DT)
    CHANGES[name](view)  # written between steps, through the old view
    reference = fresh_after(net, s, name)
    for _ in range(5):
        s.step(DT)
        reference.step(DT)
    assert same_bits(s, reference)
    assert not np.array_equal(s.x, build(net).x)  # the cloth moved


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_view_taken_after_a_step_and_dropped_is_seen_by_the_next_step(name: str) -> None:
    net = network()
    s = build(net)
    s.step(DT, 20)
    CHANGES[name](getattr(s, name))  # a new view, gone before the next step
    reference = fresh_after(net, s, name)
    s.step(DT, 5)
    reference.step(DT, 5)
    assert same_bits(s, reference)


def test_a_second_write_through_a_live_view_is_seen_too() -> None:
    net = network()
    s = build(net)
    k = s.k
    s.step(DT, 10)
    k *= 1.5
    s.step(DT, 10)
    k *= 0.5  # the step above saw 1.5 k; this one must see 0.75 k
    changed = dict(net, k=net["k"] * 1.5 * 0.5)
    reference = build(changed, np.array(s.x), np.array(s.v))
    s.step(DT, 5)
    reference.step(DT, 5)
    assert same_bits(s, reference)


def test_a_write_through_a_slice_of_a_live_view_is_seen() -> None:
    net = network()
    s = build(net)
    part = s.k[:10]  # a view of a view: it keeps the view it came from alive
    s.step(DT, 10)
    part *= 3.0
    changed = dict(net, k=np.concatenate([net["k"][:10] * 3.0, net["k"][10:]]))
    reference = build(changed, np.array(s.x), np.array(s.v))
    s.step(DT, 5)
    reference.step(DT, 5)
    assert same_bits(s, reference)


def test_a_bad_value_written_through_a_live_view_is_refused_at_every_step() -> None:
    net = network()
    s = build(net)
    k = s.k
    s.step(DT, 3)
    k[5] = -1.0
    for _ in range(2):
        with pytest.raises(ValueError, match=r"k\[5\]"):
            s.step(DT)
    assert s.steps == 3


def test_unchanged_parameters_step_as_before_call_by_call() -> None:
    """Single calls with nothing written (the parameters read once) equal one call of n steps,
    and a system that read its parameters at every call (a live view) equals both."""
    net = network()
    one, calls, watched = build(net), build(net), build(net)
    alive = watched.c  # never written: only makes every step read the parameters again
    one.step(DT, 40)
    for _ in range(40):
        calls.step(DT)
        watched.step(DT)
    assert same_bits(one, calls) and same_bits(one, watched)
    assert alive.shape == (net["springs"].shape[0],)


@pytest.mark.parametrize("keep", [True, False])
def test_a_non_finite_position_or_velocity_written_between_steps_is_refused(keep: bool) -> None:
    """The step skips re-checking x and v only when no view of them can have been written."""
    net = network()
    for name in ("x", "v"):
        s = build(net)
        view = getattr(s, name) if keep else None
        s.step(DT, 3)
        (view if keep else getattr(s, name))[7, 1] = np.nan
        with pytest.raises(ValueError, match=rf"{name}\[7, 1\]"):
            s.step(DT)
        assert s.steps == 3


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_xpbd_reads_a_written_parameter_again(name: str) -> None:
    """xpbd keeps its per-spring constants between calls; a write through a view renews them."""
    net = network()
    s = build(net)
    s.integrator = "xpbd"
    s.step(DT, 20)
    CHANGES[name](getattr(s, name))
    reference = fresh_after(net, s, name)
    reference.integrator = "xpbd"
    s.step(DT, 5)
    reference.step(DT, 5)
    assert same_bits(s, reference)


def test_xpbd_renews_its_constants_for_a_new_step_size() -> None:
    net = network()
    s = build(net)
    s.integrator = "xpbd"
    s.step(DT, 20)
    reference = build(net, np.array(s.x), np.array(s.v))
    reference.integrator = "xpbd"
    s.step(2 * DT, 5)
    reference.step(2 * DT, 5)
    assert same_bits(s, reference)
