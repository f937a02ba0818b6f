"""Projective dynamics (``integrator="projective"``, Liu et al. 2013).

A step aims at backward Euler for the springs: local steps project every spring onto its
rest length, global steps solve one prefactored sparse system (a Cholesky factorisation in
C with a fill-reducing ordering), ``iterations`` rounds per step (default 10).  The other
forces (dampers included) act at the start of the step.  The checks: convergence to
converged implicit Euler as the iterations grow, backward Euler exactly on one spring,
refactoring whenever h, a mass, a stiffness or the pins change, stability at frame-rate
steps on a stiff cloth, and contact and strain limiting after the step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import msprings
import msprings.scenes
from scenes import cloth


def stiff_cloth(n: int = 8, integrator: str = "projective", **options: object) -> msprings.System:
    return cloth(n, spacing=0.1, mass=0.1, k=1e4, c=0.0, integrator=integrator, **options)


def test_converges_to_implicit_euler_as_iterations_grow() -> None:
    """One 1/60 s step of a stiff cloth: the distance to backward Euler (Newton to 1e-14)
    falls with the local/global rounds, to below 1e-6 m after 1024 of them."""
    reference = stiff_cloth(integrator="implicit_euler")
    reference.newton_tol, reference.cg_tol = 1e-14, 1e-12
    reference.step(1.0 / 60.0)
    distances = []
    for iterations in (1, 16, 256, 1024):
        s = stiff_cloth()
        s.iterations = iterations
        s.step(1.0 / 60.0)
        distances.append(float(np.abs(s.x - reference.x).max()))
    assert all(later < earlier for earlier, later in zip(distances, distances[1:])), distances
    assert distances[-1] < 1e-6 and distances[-1] < 0.05 * distances[0]


def test_many_steps_track_implicit_euler() -> None:
    """Converged rounds over a second of a hanging stiff cloth: the same motion as implicit
    Euler (positions within 1e-5 m, energies within 1e-4 of what was released)."""
    s, reference = stiff_cloth(), stiff_cloth(integrator="implicit_euler")
    s.iterations = 2000
    reference.newton_tol = 1e-12
    for system in (s, reference):
        system.step(1.0 / 60.0, 30)
    assert np.abs(s.x - reference.x).max() < 1e-5
    released = abs(reference.energy().gravity)
    assert abs(s.energy().mechanical - reference.energy().mechanical) < 1e-4 * released


def test_one_spring_is_backward_euler_for_the_spring() -> None:
    """On one spring along a line the first local/global round is exact: with no damper the
    step is implicit Euler's."""
    def oscillator(integrator: str) -> msprings.System:
        return msprings.System([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0]], [[0, 1]], mass=2.0, k=50.0, c=0.0, rest=1.0,
                               pinned=[0], gravity=(0.0, 0.0, 0.0), integrator=integrator,
                               velocities=[[0.0, 0.0, 0.0], [-0.4, 0.0, 0.0]])
    a, b = oscillator("projective"), oscillator("implicit_euler")
    a.iterations = 1
    for system in (a, b):
        system.step(0.05, 40)
    np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("change", ["k", "mass", "dt", "pins"])
def test_a_change_between_steps_is_seen(change: str) -> None:
    """The factor is made again when h, a mass, a stiffness or the pins change: the run
    equals, bit for bit, a fresh system built with the change."""
    s, fresh = stiff_cloth(), stiff_cloth()
    s.step(1.0 / 60.0, 3)
    dt = 1.0 / 60.0
    if change == "k":
        s.k[::3] *= 2.0
        fresh.k[::3] *= 2.0
    elif change == "mass":
        s.mass[5:20] *= 3.0
        fresh.mass[5:20] *= 3.0
    elif change == "dt":
        dt = 1.0 / 90.0
    else:
        s.pinned[-1] = fresh.pinned[-1] = True
    fresh.x[:], fresh.v[:] = s.x, s.v
    s.step(dt, 5)
    fresh.step(dt, 5)
    assert np.array_equal(s.x, fresh.x) and np.array_equal(s.v, fresh.v)


@pytest.mark.parametrize("iterations", [10, 40])
def test_stiff_cloth_at_frame_steps_is_stable_and_loses_energy(iterations: int) -> None:
    """k = 1e5 N/m, 1 kg nodes, h = 1/60 s (8 times symplectic Euler's limit): bounded below
    the starting energy for 2 s.  With 40 rounds per step the mechanical energy falls at
    every frame; with 10 the springs, not yet converged, stay longer than backward Euler
    would leave them, and their energy measured with the true k rises now and then by a
    little (under 0.5 % of what the fall released)."""
    s = cloth(16, spacing=0.1, mass=1.0, k=1e5, c=0.0, integrator="projective")
    s.iterations = iterations
    assert 1.0 / 60.0 > 8 * s.critical_dt("symplectic_euler")
    assert s.critical_dt() == math.inf
    start = previous = s.energy().mechanical
    rises = []
    for _ in range(120):
        s.step(1.0 / 60.0)
        energy = s.energy().mechanical
        assert energy <= start
        rises.append(energy - previous)
        previous = energy
    assert np.isfinite(s.x).all()
    released = start - previous
    assert released > 0.0
    if iterations >= 40:
        assert max(rises) <= 0.0
    else:
        assert max(rises) < 5e-3 * released


def test_moving_pins_damping_contact_and_strain_limit() -> None:
    """A pin dragged at constant velocity, dampers and drag at the start of the step, a table
    to land on and strain limiting: the pin moves exactly, no node ends inside the table,
    no spring beyond its limit."""
    s = cloth(12, spacing=0.1, mass=0.05, k=2e3, c=0.5, drag=0.01, integrator="projective")
    box = s.add_box((0.2, -0.6, 0.2), (0.9, -0.3, 0.9))
    s.strain_limit = 0.05
    s.v[0] = (0.2, 0.0, 0.0)
    s.step(1.0 / 120.0, 240)
    assert s.x[0, 0] == pytest.approx(0.2 * 2.0, abs=1e-12)
    assert np.array_equal(s.v[0], (0.2, 0.0, 0.0))
    inside = (s.x[:, 0] > 0.2 + 1e-9) & (s.x[:, 0] < 0.9 - 1e-9) & (s.x[:, 2] > 0.2 + 1e-9) \
        & (s.x[:, 2] < 0.9 - 1e-9) & (s.x[:, 1] < -0.3 - 1e-9) & (s.x[:, 1] > -0.6)
    assert not inside.any()
    on_table = np.isclose(s.x[:, 1], -0.3, atol=1e-6)
    assert on_table.sum() > 10
    # strain limiting acts before contact: springs away from the box are within the limit
    touching = box.distance(s.x) < 1e-6
    away = ~touching[s.springs].any(axis=1)
    assert s.strain()[away].max() <= 0.05 + 1e-9
    assert s.ledger().dampers > 0.0 and s.ledger().contact > 0.0


def test_critical_dt_is_the_damping_limit() -> None:
    """Springs are implicit, dampers and drag explicit: the limit is 2 / gamma, gamma the
    highest damping rate; undamped, none."""
    s = stiff_cloth()
    assert s.critical_dt() == math.inf
    s.drag = 0.2
    assert s.critical_dt() == pytest.approx(2.0 * 0.1 / 0.2, rel=1e-6)
    s.c[:] = 0.05
    gamma = s._max_eigenvalues()[1]
    assert gamma > 0.2 / 0.1 and s.critical_dt() == pytest.approx(2.0 / gamma)


def test_dampers_beyond_the_damping_limit_diverge_and_roll_back() -> None:
    """Strong dampers (a balloon's are near critical on 2 g nodes) taken at the start of the
    step: just below 2 / gamma the run is stable, well above it diverges and rolls back."""
    s = msprings.scenes.balloon(integrator="projective")
    limit = s.critical_dt()
    stable = s.copy()
    stable.step(0.9 * limit, 400)
    assert np.isfinite(stable.x).all() and stable.energy().kinetic < 1.0
    with pytest.warns(msprings.StabilityWarning), pytest.raises(msprings.DivergenceError):
        s.step(4.0 * limit, 400)
    assert np.isfinite(s.x).all()


def test_chebyshev_acceleration_converges_faster() -> None:
    """Chebyshev's semi-iterative method (Wang 2015) on the rounds: with rho = 0.995, 40
    accelerated rounds come closer to backward Euler than 160 plain ones, and the
    acceleration off (0) is the plain method bit for bit."""
    reference = cloth(16, spacing=0.1, mass=0.1, k=1e4, c=0.0, integrator="implicit_euler")
    reference.newton_tol, reference.cg_tol = 1e-14, 1e-12
    reference.step(1.0 / 60.0)

    def distance(iterations: int, rho: float) -> float:
        s = cloth(16, spacing=0.1, mass=0.1, k=1e4, c=0.0, integrator="projective")
        s.iterations, s.chebyshev = iterations, rho
        s.step(1.0 / 60.0)
        return float(np.abs(s.x - reference.x).max())

    assert distance(40, 0.995) < 0.5 * distance(160, 0.0)
    plain, off = stiff_cloth(), stiff_cloth()
    off.chebyshev = 0.0
    for system in (plain, off):
        system.step(1.0 / 60.0, 5)
    assert np.array_equal(plain.x, off.x)
    with pytest.raises(ValueError, match="chebyshev"):
        plain.chebyshev = 1.0
