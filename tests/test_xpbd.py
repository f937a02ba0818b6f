"""Extended position-based dynamics (``integrator="xpbd"``).

Each spring is a compliant distance constraint with compliance 1/k and damping c; a step
kicks the velocities with the other forces, predicts the positions, projects the springs
``iterations`` times (Gauss-Seidel over spring colours) and takes the velocity from the
displacement.  On one spring a single projection solves the constraint exactly, so the
method is backward Euler there; the checks below hold it to the closed-form damped
oscillator, to its first order, to convergence in the iterations, and to stability at
steps far beyond the explicit limit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import msprings
from scenes import cloth

MASS, STIFFNESS, REST = 2.0, 50.0, 1.0
OMEGA = math.sqrt(STIFFNESS / MASS)


def oscillator(zeta: float, amplitude: float, integrator: str = "xpbd") -> msprings.System:
    """Node 0 pinned at the origin, node 1 stretched by ``amplitude`` along x, at rest."""
    return msprings.System([[0.0, 0.0, 0.0], [REST + amplitude, 0.0, 0.0]], [[0, 1]], mass=MASS,
                           k=STIFFNESS, c=2.0 * zeta * math.sqrt(STIFFNESS * MASS), rest=REST, pinned=[0],
                           gravity=(0.0, 0.0, 0.0), integrator=integrator)


def closed_form(zeta: float, amplitude: float, t: float) -> float:
    """Displacement of the under-damped oscillator released from rest at ``amplitude``."""
    damped = OMEGA * math.sqrt(1.0 - zeta * zeta)
    return amplitude * math.exp(-zeta * OMEGA * t) * (math.cos(damped * t)
                                                      + zeta / math.sqrt(1.0 - zeta * zeta) * math.sin(damped * t))


def error_after(zeta: float, h: float, t: float = 2.0) -> float:
    s = oscillator(zeta, 0.1)
    steps = round(t / h)
    s.step(h, steps)
    return abs(s.x[1, 0] - REST - closed_form(zeta, 0.1, steps * h))


@pytest.mark.parametrize("zeta", [0.05, 0.3])
def test_damped_spring_matches_the_closed_form_to_first_order(zeta: float) -> None:
    """The damping c maps to the constraint's damping so that the oscillator with k and c
    is recovered as h -> 0: the error halves with h and is within A (w h) (w t)."""
    coarse, fine = error_after(zeta, 2e-3), error_after(zeta, 1e-3)
    assert fine <= 0.1 * (OMEGA * 1e-3) * (OMEGA * 2.0)
    assert math.log2(coarse / fine) == pytest.approx(1.0, abs=0.15)


def test_one_spring_steps_as_backward_euler() -> None:
    """One projection solves one spring's constraint exactly: the step equals implicit Euler's."""
    for zeta in (0.0, 0.2, 1.5):
        a, b = oscillator(zeta, 0.13), oscillator(zeta, 0.13, "implicit_euler")
        for system in (a, b):
            system.v[1] = (-0.4, 0.0, 0.0)
            system.step(0.05, 40)
        np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-11)


def test_more_iterations_satisfy_the_springs_better() -> None:
    """A stiff hanging chain at a large step: the constraints' residual (the strain beyond what
    the weight stretches) falls as the iterations per step grow."""
    n = 30
    positions = np.zeros((n, 3))
    positions[:, 0] = np.arange(n) * 0.1
    springs = np.column_stack([np.arange(n - 1), np.arange(1, n)])
    strains = []
    for iterations in (1, 4, 16, 64):
        s = msprings.System(positions, springs, mass=0.1, k=1e5, c=0.0, pinned=[0], integrator="xpbd")
        s.iterations = iterations
        s.step(1.0 / 60.0, 30)
        strains.append(float(np.abs(s.strain()).max()))
    assert all(later < earlier for earlier, later in zip(strains, strains[1:])), strains
    assert strains[-1] < 0.2 * strains[0]


@pytest.mark.parametrize("substeps, strain_ratio", [(1, 4.0), (10, 1.3)])
def test_stiff_cloth_at_a_frame_step_stays_bounded_and_loses_energy(substeps: int, strain_ratio: float) -> None:
    """k = 1e5 N/m, 1 kg nodes, 1/60 s frames of 1 or 10 substeps with 10 iterations each: a
    frame is 8 times symplectic Euler's limit, yet the cloth stays bounded, and with 10
    substeps never gains energy.  (With one substep the springs, far from converged, stretch
    more than k allows, and their energy measured with the true k overshoots the start for
    a while: small steps beat many iterations.)  Gauss-Seidel leaves the springs softer than the converged implicit solution:
    with 10 substeps the largest strain is within 30 % of backward Euler's, with one
    (small steps beat many iterations) within 4 times."""
    s = cloth(16, spacing=0.1, mass=1.0, k=1e5, c=0.0, integrator="xpbd")
    s.iterations = 10
    h = 1.0 / 60.0 / substeps
    assert 1.0 / 60.0 > 8 * s.critical_dt("symplectic_euler")
    assert s.critical_dt() == math.inf
    start = s.energy().mechanical
    previous = start
    for _ in range(40):
        s.step(h, 3 * substeps)
        energy = s.energy().mechanical
        if substeps > 1:
            assert energy <= previous + 1e-9 * abs(start)
        previous = energy
    assert np.isfinite(s.x).all()
    reference = cloth(16, spacing=0.1, mass=1.0, k=1e5, c=0.0, integrator="implicit_euler")
    reference.step(1.0 / 60.0, 120)
    assert np.abs(s.strain()).max() < strain_ratio * np.abs(reference.strain()).max()


def test_pins_keep_their_velocity_and_k_zero_springs_do_nothing() -> None:
    s = msprings.System([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]], [[0, 1], [1, 2]], mass=1.0,
                        k=[100.0, 0.0], c=[0.0, 3.0], rest=[1.0, 0.5], pinned=[0], integrator="xpbd",
                        gravity=(0.0, -9.81, 0.0))
    s.v[0] = (0.3, 0.0, 0.0)
    s.step(0.01, 100)
    assert np.array_equal(s.v[0], (0.3, 0.0, 0.0))
    assert s.x[0, 0] == pytest.approx(0.3, abs=1e-12)
    # node 2 is tied by a spring of k = 0 (and a damper alone, which constrains nothing):
    # it falls freely
    assert s.x[2, 1] == pytest.approx(-0.5 * 9.81 * 1.0**2 - 0.5 * 9.81 * 0.01 * 1.0, rel=1e-9)


def test_critical_dt_is_the_drag_limit() -> None:
    s = oscillator(0.1, 0.1)
    assert s.critical_dt() == math.inf
    s.drag = 0.5
    assert s.critical_dt() == pytest.approx(2.0 * MASS / 0.5)


def test_iterations_option() -> None:
    s = oscillator(0.0, 0.1)
    assert s.iterations == 0  # the integrator's default: 1
    reference = s.copy()
    s.iterations = 1
    s.step(0.01, 10)
    reference.step(0.01, 10)
    assert np.array_equal(s.x, reference.x)
    for bad, error in ((-1, ValueError), (1.5, TypeError), ("2", TypeError)):
        with pytest.raises(error, match="iterations"):
            s.iterations = bad
    assert s.iterations == 1
