"""Air: triangle drag and lift, the wind and gust field, per-node drag relative to the wind.

Per triangle, with u = wind(centroid, t) minus the mean velocity of its three nodes, n its unit
normal turned towards u and cos(theta) = n.u / |u|, the air pushes with
    drag  1/2 rho C_d A |u|^2 cos(theta)           along n,
    lift  1/2 rho C_l A |u|^2 cos(theta) sin(theta) perpendicular to u, in the plane of n and u,
shared equally by the three nodes.  The wind is W + A (1.5 |sin(k x + w t) + cos(k y + w t)|,
0, 0.5 sin(w t)).  The checks below use exact cases (30 N on a half-square-metre triangle in a
10 m/s wind), a NumPy reference written from those formulas by angle rather than by the C
code's algebra, the closed form of a node relaxing to the wind speed, and the energy ledger.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import msprings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

NO_SPRINGS = np.zeros((0, 2), dtype=np.int64)
NO_GRAVITY = (0.0, 0.0, 0.0)
HALF_SQUARE_METRE = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def triangle(positions: object = HALF_SQUARE_METRE, faces: object = ((0, 1, 2),), **options: object) -> msprings.System:
    """Three free nodes forming one triangle, no springs, gravity off unless given."""
    options.setdefault("gravity", NO_GRAVITY)
    return msprings.System(positions, NO_SPRINGS, faces=faces, **options)


def grid_positions(n: int, spacing: float) -> np.ndarray:
    """Positions (n*n, 3) of a flat grid in the z = 0 plane, node (i, j) = i n + j at (j h, i h, 0)."""
    rows, columns = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([columns.ravel() * spacing, rows.ravel() * spacing, np.zeros(n * n)], axis=1)


def grid_faces(n: int) -> np.ndarray:
    """Two triangles per cell of an n x n grid, wound (i, j) -> (i, j+1) -> (i+1, j+1) and
    (i, j) -> (i+1, j+1) -> (i+1, j): counter-clockwise seen from +z for ``grid_positions``."""
    faces = []
    for i in range(n - 1):
        for j in range(n - 1):
            a = i * n + j
            faces += [(a, a + 1, a + n + 1), (a, a + n + 1, a + n)]
    return np.array(faces, dtype=np.int64)


def rotation(seed: int) -> np.ndarray:
    """A random proper rotation matrix (3, 3)."""
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


# ---- NumPy reference ---------------------------------------------------------------------------


def wind_reference(points: np.ndarray, t: float, wind: np.ndarray, gust: float, frequency: float,
                   wavenumber: float) -> np.ndarray:
    """W + A (1.5 |sin(k x + w t) + cos(k y + w t)|, 0, 0.5 sin(w t)) at points (..., 3)."""
    points = np.asarray(points, dtype=np.float64)
    out = np.broadcast_to(np.asarray(wind, dtype=np.float64), points.shape).copy()
    phase = frequency * t
    out[..., 0] += gust * 1.5 * np.abs(np.sin(wavenumber * points[..., 0] + phase)
                                       + np.cos(wavenumber * points[..., 1] + phase))
    out[..., 2] += gust * 0.5 * math.sin(phase)
    return out


def face_forces_reference(x: np.ndarray, v: np.ndarray, faces: np.ndarray, wind: Callable[[np.ndarray], np.ndarray],
                          density: float, drag_coefficient: float, lift_coefficient: float) -> np.ndarray:
    """Air forces (n, 3) on the nodes of a triangle mesh, from the angle of attack: drag of
    magnitude q C_d A cos(theta) along the normal facing the flow, lift of magnitude
    q C_l A cos(theta) sin(theta) along the unit vector perpendicular to the flow in the plane
    of the normal and the flow (towards the normal), with q = 1/2 rho |u|^2."""
    forces = np.zeros_like(x)
    for face in faces:
        corners = x[face]
        cross = np.cross(corners[1] - corners[0], corners[2] - corners[0])
        area = 0.5 * np.linalg.norm(cross)
        normal = cross / np.linalg.norm(cross)
        flow = wind(corners.mean(axis=0)) - v[face].mean(axis=0)
        speed = np.linalg.norm(flow)
        if speed == 0.0:
            continue
        direction = flow / speed
        theta = math.acos(min(1.0, abs(float(normal @ direction))))
        facing = normal if normal @ direction >= 0.0 else -normal
        q = 0.5 * density * speed**2
        total = q * drag_coefficient * area * math.cos(theta) * facing
        across = facing - (facing @ direction) * direction
        if np.linalg.norm(across) > 0.0:
            lift_direction = across / np.linalg.norm(across)
            total = total + q * lift_coefficient * area * math.cos(theta) * math.sin(theta) * lift_direction
        forces[face] += total / 3.0
    return forces


def total_force_reference(s: msprings.System) -> np.ndarray:
    """Every force on every node of a spring-free system at its current state and time:
    gravity, per-node drag against the local wind, and the air on its triangles."""
    x, v, t = np.array(s.x), np.array(s.v), s.t

    def wind(points: np.ndarray) -> np.ndarray:
        return wind_reference(points, t, s.wind, s.gust, s.gust_frequency, s.gust_wavenumber)

    forces = np.outer(s.mass, s.gravity) - s.drag * (v - wind(x))
    return forces + face_forces_reference(x, v, np.array(s.faces), wind, s.air_density, s.drag_coefficient,
                                          s.lift_coefficient)


# ---- one triangle, exact -----------------------------------------------------------------------


def test_face_on_wind_pushes_30_newtons() -> None:
    """Area 0.5 m^2, wind 10 m/s along the normal, rho = 1.2, C_d = 1: 1/2 * 1.2 * 0.5 * 100 = 30 N,
    10 N on each node, along the wind."""
    s = triangle()
    s.drag_coefficient = 1.0
    s.wind = (0.0, 0.0, 10.0)
    f = np.array(s.update_forces())
    np.testing.assert_allclose(f, [[0.0, 0.0, 10.0]] * 3, rtol=0, atol=1e-12)
    np.testing.assert_allclose(f.sum(axis=0), (0.0, 0.0, 30.0), rtol=0, atol=1e-12)
    s.wind = (0.0, 0.0, -10.0)  # from the other side: the same push, the other way
    np.testing.assert_allclose(np.array(s.update_forces()), [[0.0, 0.0, -10.0]] * 3, rtol=0, atol=1e-12)


def test_face_on_force_scales_with_density_coefficient_and_speed_squared() -> None:
    """F = 1/2 rho C_d A |u|^2: doubling the speed quadruples it; rho and C_d scale it."""
    s = triangle()
    s.air_density, s.drag_coefficient, s.wind = 0.8, 1.5, (0.0, 0.0, 20.0)
    np.testing.assert_allclose(np.array(s.update_forces()).sum(axis=0), (0.0, 0.0, 0.5 * 0.8 * 1.5 * 0.5 * 400.0),
                               rtol=1e-14)


def test_rotated_triangle_feels_the_rotated_force() -> None:
    """The same triangle and wind turned by a random rotation (and moved) feel the rotated 30 N."""
    turn = rotation(3)
    s = triangle(np.array(HALF_SQUARE_METRE) @ turn.T + (1.0, -2.0, 0.5))
    s.drag_coefficient = 1.0
    s.wind = turn @ (0.0, 0.0, 10.0)
    np.testing.assert_allclose(np.array(s.update_forces()), np.tile(turn @ (0.0, 0.0, 10.0), (3, 1)),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("wind", [(10.0, 0.0, 0.0), (0.0, -7.0, 0.0), (3.0, 4.0, 0.0)])
def test_edge_on_wind_exerts_nothing(wind: tuple[float, float, float]) -> None:
    """A wind in the triangle's plane (cos(theta) = 0) exerts neither drag nor lift."""
    s = triangle()
    s.drag_coefficient, s.lift_coefficient, s.wind = 1.0, 0.7, wind
    np.testing.assert_array_equal(np.array(s.update_forces()), 0.0)


def test_reversed_winding_gives_the_same_force() -> None:
    """The normal is turned towards the flow, so the order of the corners does not matter."""
    forces = []
    for face in [(0, 1, 2), (0, 2, 1), (2, 1, 0)]:
        s = triangle(faces=[face])
        s.drag_coefficient, s.lift_coefficient, s.wind = 1.2, 0.4, (2.0, -1.0, 6.0)
        forces.append(np.array(s.update_forces()))
    np.testing.assert_allclose(forces[1], forces[0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(forces[2], forces[0], rtol=0, atol=1e-13)


def test_nodes_moving_with_the_wind_feel_no_air() -> None:
    """A cloth whose every node moves with the wind has no relative flow: no face force and no
    per-node drag; the forces equal those with the air switched off."""
    n = 5
    wind = (1.5, -0.5, 2.0)
    s = msprings.System(grid_positions(n, 0.25), scenes.cloth_springs(n), k=30.0, c=0.1, faces=grid_faces(n),
                        velocities=np.tile(wind, (n * n, 1)), drag=0.3)
    s.drag_coefficient, s.lift_coefficient, s.wind = 1.0, 0.5, wind
    with_air = np.array(s.update_forces())
    s.drag_coefficient, s.lift_coefficient, s.drag = 0.0, 0.0, 0.0
    np.testing.assert_allclose(with_air, np.array(s.update_forces()), rtol=0, atol=1e-13)
    np.testing.assert_allclose(with_air, np.outer(s.mass, s.gravity), rtol=0, atol=1e-9)


@pytest.mark.parametrize("theta_degrees", [0.0, 15.0, 30.0, 45.0, 60.0, 80.0, 120.0, 170.0])
def test_oblique_wind_drag_and_lift(theta_degrees: float) -> None:
    """The triangle's normal is z; the wind makes angle theta with it in the x-z plane.
    Drag: 1/2 rho C_d A |u|^2 |cos(theta)| along +-z (towards the flow).  Lift: magnitude
    1/2 rho C_l A |u|^2 |cos(theta)| sin(theta), perpendicular to the wind, in the x-z plane,
    on the side of the normal that faces the flow."""
    theta = math.radians(theta_degrees)
    speed, rho, area = 8.0, 1.2, 0.5
    wind = speed * np.array([math.sin(theta), 0.0, math.cos(theta)])
    q = 0.5 * rho * speed**2
    facing = np.array([0.0, 0.0, math.copysign(1.0, math.cos(theta))])

    s = triangle()
    s.drag_coefficient, s.wind = 0.9, wind
    drag = np.array(s.update_forces()).sum(axis=0)
    np.testing.assert_allclose(drag, q * 0.9 * area * abs(math.cos(theta)) * facing, rtol=0, atol=1e-12)

    s.drag_coefficient, s.lift_coefficient = 0.0, 0.6
    lift = np.array(s.update_forces()).sum(axis=0)
    magnitude = q * 0.6 * area * abs(math.cos(theta)) * math.sin(theta)
    assert np.linalg.norm(lift) == pytest.approx(magnitude, abs=1e-12)
    assert lift @ wind == pytest.approx(0.0, abs=1e-12)
    assert lift[1] == pytest.approx(0.0, abs=1e-15)
    if magnitude > 1e-9:
        assert lift @ facing > 0.0


@pytest.mark.parametrize("seed", range(5))
def test_random_triangle_against_reference(seed: int) -> None:
    """A random triangle with random node velocities in a random uniform wind: drag, lift and
    both together agree with the angle-based NumPy reference."""
    rng = np.random.default_rng(seed)
    positions = rng.normal(size=(3, 3))
    velocities = rng.normal(size=(3, 3))
    wind = rng.normal(scale=5.0, size=3)
    for cd, cl in [(1.1, 0.0), (0.0, 0.8), (1.3, 0.45)]:
        s = triangle(positions, velocities=velocities)
        s.air_density, s.drag_coefficient, s.lift_coefficient, s.wind = 1.25, cd, cl, wind
        expected = face_forces_reference(positions, velocities, np.array([[0, 1, 2]]), lambda p: wind, 1.25, cd, cl)
        np.testing.assert_allclose(np.array(s.update_forces()), expected, rtol=0, atol=1e-12)


# ---- wind field and per-node drag ------------------------------------------------------------------


def test_gust_field_matches_its_formula() -> None:
    """``wind_at`` evaluates W + A (1.5 |sin(k x + w t) + cos(k y + w t)|, 0, 0.5 sin(w t)) at any
    points and time (default: the system's time), keeping the points' leading shape."""
    s = triangle()
    s.wind, s.gust, s.gust_frequency, s.gust_wavenumber = (2.0, -1.0, 0.5), 1.7, 3.0, 0.8
    rng = np.random.default_rng(11)
    points = rng.uniform(-5.0, 5.0, size=(4, 6, 3))
    for t in (0.0, 0.37, 2.5):
        expected = wind_reference(points, t, np.array([2.0, -1.0, 0.5]), 1.7, 3.0, 0.8)
        np.testing.assert_allclose(s.wind_at(points, t), expected, rtol=1e-14, atol=1e-14)
    s.step(0.01, 7)
    np.testing.assert_allclose(s.wind_at(points), wind_reference(points, s.t, s.wind, 1.7, 3.0, 0.8),
                               rtol=1e-14, atol=1e-14)
    assert s.wind_at(points).shape == (4, 6, 3)
    s.gust = 0.0
    np.testing.assert_array_equal(s.wind_at(points, 1.0), np.broadcast_to((2.0, -1.0, 0.5), points.shape))


def test_node_drag_relaxes_to_the_wind_speed() -> None:
    """A free 2 kg node with linear drag b = 3 N s/m in a uniform wind W, starting at rest:
    m v' = -b (v - W), so v(t) = W (1 - exp(-b t / m)) and
    x(t) = W (t - m / b (1 - exp(-b t / m))).  RK4 with h = 0.01 s matches to 1e-9."""
    mass, b, wind, h, steps = 2.0, 3.0, np.array([4.0, -1.0, 2.5]), 0.01, 150
    s = msprings.System([[0.0, 0.0, 0.0]], NO_SPRINGS, mass=mass, drag=b, gravity=NO_GRAVITY, integrator="rk4")
    s.wind = wind
    s.step(h, steps)
    t = h * steps
    decay = math.exp(-b * t / mass)
    np.testing.assert_allclose(s.v[0], wind * (1.0 - decay), rtol=0, atol=1e-9)
    np.testing.assert_allclose(s.x[0], wind * (t - mass / b * (1.0 - decay)), rtol=0, atol=1e-9)


def test_node_drag_uses_the_local_gusting_wind() -> None:
    """With gusts, a node's drag is -b (v - wind(x_i, t)) at its own position and the current
    time; at rest in the wind, with gravity off, that is all the force there is."""
    rng = np.random.default_rng(5)
    positions = rng.uniform(-2.0, 2.0, size=(6, 3))
    velocities = rng.normal(size=(6, 3))
    s = msprings.System(positions, NO_SPRINGS, velocities=velocities, drag=0.7, gravity=NO_GRAVITY)
    s.wind, s.gust, s.gust_frequency, s.gust_wavenumber = (1.0, 0.0, -2.0), 2.0, 4.0, 1.3
    s.step(1e-3, 13)
    expected = -0.7 * (np.array(s.v) - wind_reference(s.x, s.t, s.wind, 2.0, 4.0, 1.3))
    np.testing.assert_allclose(np.array(s.update_forces()), expected, rtol=0, atol=1e-12)


def test_mesh_forces_against_reference_with_wind_gust_and_lift() -> None:
    """A random crumpled 4 x 4 mesh, random velocities, uniform wind plus gusts, drag and lift on
    the faces, linear drag on the nodes and gravity: ``update_forces`` after some steps (so the
    gusts are evaluated at s.t > 0) equals the NumPy reference to 1e-12."""
    n = 4
    rng = np.random.default_rng(21)
    positions = grid_positions(n, 0.3) + rng.normal(scale=0.08, size=(n * n, 3))
    s = msprings.System(positions, NO_SPRINGS, mass=rng.uniform(0.05, 0.2, size=n * n),
                        velocities=rng.normal(size=(n * n, 3)), faces=grid_faces(n), drag=0.05)
    s.wind, s.gust, s.gust_frequency, s.gust_wavenumber = (3.0, -1.0, 4.0), 1.2, 6.0, 2.0
    s.drag_coefficient, s.lift_coefficient, s.air_density = 1.1, 0.35, 1.3
    s.step(1e-3, 25)
    assert s.t == pytest.approx(0.025)
    np.testing.assert_allclose(np.array(s.update_forces()), total_force_reference(s), rtol=0, atol=1e-12)
    # the forces seen at the start of a step are the same (s.f holds them after a step)
    x, v, t = np.array(s.x), np.array(s.v), s.t
    s.step(1e-3)
    s.x[:], s.v[:] = x, v
    np.testing.assert_allclose(np.array(s.f), total_force_reference_at(s, t), rtol=0, atol=1e-12)


def total_force_reference_at(s: msprings.System, t: float) -> np.ndarray:
    """``total_force_reference`` of the system's current x and v, with the wind taken at ``t``."""

    def wind(points: np.ndarray) -> np.ndarray:
        return wind_reference(points, t, s.wind, s.gust, s.gust_frequency, s.gust_wavenumber)

    x, v = np.array(s.x), np.array(s.v)
    forces = np.outer(s.mass, s.gravity) - s.drag * (v - wind(x))
    return forces + face_forces_reference(x, v, np.array(s.faces), wind, s.air_density, s.drag_coefficient,
                                          s.lift_coefficient)


# ---- energy ledger and integrator order with air -------------------------------------------------


def windy_cloth(integrator: str, *, gravity: tuple[float, float, float] = (0.0, -9.81, 0.0),
                c: float = 0.02, drag: float = 0.01) -> msprings.System:
    """A 5 x 5 cloth (0.2 m spacing, 50 g nodes, k = 20 N/m) pinned at two corners, with faces,
    drag and lift in a rising, gusting wind."""
    n = 5
    s = scenes.cloth(n, 0.2, mass=0.05, k=20.0, c=c, faces=grid_faces(n), integrator=integrator, drag=drag,
                     gravity=gravity)
    s.drag_coefficient, s.lift_coefficient = 1.0, 0.3
    s.wind, s.gust = (1.0, 8.0, 2.0), 0.5
    return s


def ledger_drift(h: float, duration: float = 1.0) -> tuple[float, float, float]:
    """(largest |total - initial total|, lowest dissipated, work done at the end) of the
    windy cloth under RK4."""
    s = windy_cloth("rk4")
    initial = s.energy().total
    drift, lowest = 0.0, 0.0
    for _ in range(int(round(duration / h / 10))):
        s.step(h, 10)
        energy = s.energy()
        drift = max(drift, abs(energy.total - initial))
        lowest = min(lowest, energy.dissipated)
    return drift, lowest, s.work


def test_ledger_with_wind_is_conserved_to_rk4_accuracy() -> None:
    """RK4 integrates the air's power with its own weights, so mechanical + dissipated - work
    drifts only by the method's O(h^4) error: small, and many times smaller at half the step.
    The rising wind drives the cloth: that is work done on it, and the air's dissipation in
    its own frame stays positive."""
    coarse, lowest, work = ledger_drift(2e-3)
    fine, _, _ = ledger_drift(1e-3)
    assert coarse < 1e-6  # of a ledger whose terms are several joules
    assert fine < coarse / 8.0  # fourth order: 16 in the limit
    assert lowest >= 0.0
    assert work > 1.0


def test_velocity_verlet_stays_second_order_with_air() -> None:
    """The air's force depends on the node velocities, so Verlet must use its predicted end
    velocity for it (as for dampers and drag) to stay second order: halving h cuts the
    position error about four-fold.  The cloth has no dampers and no node drag, so the air is
    the only velocity-dependent force."""
    duration = 0.5

    def end_positions(integrator: str, h: float) -> np.ndarray:
        s = windy_cloth(integrator, c=0.0, drag=0.0)
        s.step(h, int(round(duration / h)))
        return np.array(s.x)

    reference = end_positions("rk4", 2.5e-4)
    errors = [np.abs(end_positions("velocity_verlet", h) - reference).max() for h in (4e-3, 2e-3)]
    assert math.log2(errors[0] / errors[1]) > 1.7


# ---- vertex normals ----------------------------------------------------------------------------------


def test_vertex_normals_of_a_flat_grid() -> None:
    """A flat grid wound counter-clockwise seen from +z has +z unit normals at every node; wound
    the other way, -z; a node in no triangle gets the zero vector."""
    n = 4
    positions = np.vstack([grid_positions(n, 0.5), [[9.0, 9.0, 9.0]]])
    s = msprings.System(positions, NO_SPRINGS, faces=grid_faces(n))
    normals = s.vertex_normals()
    assert normals.shape == (n * n + 1, 3)
    np.testing.assert_allclose(normals[:-1], np.tile((0.0, 0.0, 1.0), (n * n, 1)), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(normals[-1], 0.0)
    flipped = msprings.System(positions, NO_SPRINGS, faces=grid_faces(n)[:, ::-1])
    np.testing.assert_allclose(flipped.vertex_normals()[:-1], np.tile((0.0, 0.0, -1.0), (n * n, 1)),
                               rtol=0, atol=1e-15)


def test_vertex_normals_follow_the_state() -> None:
    """Normals are computed from the current positions: rotating the grid rotates them."""
    n = 3
    turn = rotation(8)
    s = msprings.System(grid_positions(n, 1.0), NO_SPRINGS, faces=grid_faces(n))
    s.x[:] = grid_positions(n, 1.0) @ turn.T
    np.testing.assert_allclose(s.vertex_normals(), np.tile(turn @ (0.0, 0.0, 1.0), (n * n, 1)), rtol=0, atol=1e-14)


def test_vertex_normals_of_a_tetrahedron_point_outwards() -> None:
    """A closed tetrahedron with faces wound counter-clockwise seen from outside: each vertex
    normal is a unit vector pointing away from the centroid; for a regular tetrahedron it is
    exactly the direction from the centroid to the vertex."""
    corners = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
    faces = []
    for omitted in range(4):
        face = [k for k in range(4) if k != omitted]
        a, b, c = corners[face]
        if np.cross(b - a, c - a) @ (a - corners[omitted]) < 0:  # wind it to face outwards
            face = [face[0], face[2], face[1]]
        faces.append(face)
    turn = rotation(4)
    for positions in (corners, corners @ turn.T + (3.0, -1.0, 2.0)):
        s = msprings.System(positions, NO_SPRINGS, faces=faces)
        normals = s.vertex_normals()
        outwards = positions - positions.mean(axis=0)
        np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, rtol=0, atol=1e-14)
        np.testing.assert_allclose(normals, outwards / np.linalg.norm(outwards, axis=1, keepdims=True),
                                   rtol=0, atol=1e-14)
    stretched = corners * (1.0, 2.0, 0.5)  # irregular: not radial any more, but still outwards
    normals = msprings.System(stretched, NO_SPRINGS, faces=faces).vertex_normals()
    assert np.all(np.einsum("ij,ij->i", normals, stretched - stretched.mean(axis=0)) > 0.0)


def test_faces_view_is_read_only() -> None:
    """``faces`` is the (F, 3) int32 index array, read-only; ``n_faces`` counts it; no faces
    means an empty (0, 3) array."""
    n = 3
    s = msprings.System(grid_positions(n, 1.0), NO_SPRINGS, faces=grid_faces(n))
    assert s.n_faces == 2 * (n - 1) ** 2
    np.testing.assert_array_equal(s.faces, grid_faces(n))
    assert s.faces.dtype == np.int32
    with pytest.raises(ValueError):
        s.faces[0, 0] = 1
    plain = msprings.System(grid_positions(n, 1.0), NO_SPRINGS)
    assert plain.n_faces == 0 and plain.faces.shape == (0, 3)


# ---- bad input --------------------------------------------------------------------------------------

BAD_FACES = [
    ("repeated node", [[0, 1, 1]], ValueError),
    ("repeated first and last", [[2, 0, 2]], ValueError),
    ("zero area", [[0, 1, 3]], ValueError),
    ("out of range", [[0, 1, 4]], ValueError),
    ("negative index", [[0, 1, -1]], ValueError),
    ("four corners", [[0, 1, 2, 3]], ValueError),
    ("flat list", [0, 1, 2], ValueError),
    ("float indices", [[0.0, 1.0, 2.0]], TypeError),
    ("strings", [["a", "b", "c"]], TypeError),
]


@pytest.mark.parametrize("faces, error", [(f, e) for _, f, e in BAD_FACES], ids=[name for name, _, _ in BAD_FACES])
def test_bad_faces_are_refused(faces: object, error: type[Exception]) -> None:
    """Node 3 lies on the line through nodes 0 and 1, so (0, 1, 3) has zero area."""
    positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [2.0, 0.0, 0.0]]
    with pytest.raises(error, match="faces"):
        msprings.System(positions, NO_SPRINGS, faces=faces)


BAD_AIR = [
    ("air_density", -1.0, ValueError),
    ("air_density", math.nan, ValueError),
    ("air_density", math.inf, ValueError),
    ("drag_coefficient", -0.5, ValueError),
    ("drag_coefficient", math.nan, ValueError),
    ("lift_coefficient", -0.1, ValueError),
    ("lift_coefficient", math.inf, ValueError),
    ("gust", -2.0, ValueError),
    ("gust", math.nan, ValueError),
    ("gust_frequency", math.nan, ValueError),
    ("gust_wavenumber", math.inf, ValueError),
    ("wind", (math.nan, 0.0, 0.0), ValueError),
    ("wind", (0.0, math.inf, 0.0), ValueError),
    ("wind", (1.0, 2.0), ValueError),
    ("wind", "east", TypeError),
    ("air_density", "thick", TypeError),
    ("drag_coefficient", None, TypeError),
]


@pytest.mark.parametrize("name, value, error", BAD_AIR)
def test_bad_air_settings_are_refused(name: str, value: object, error: type[Exception]) -> None:
    """A bad air setting raises, and every setting and the forces stay as they were."""
    s = triangle()
    s.drag_coefficient, s.lift_coefficient, s.wind, s.gust = 1.0, 0.2, (1.0, 2.0, 3.0), 0.5
    settings = ("air_density", "drag_coefficient", "lift_coefficient", "gust", "gust_frequency", "gust_wavenumber")
    before = [getattr(s, key) for key in settings] + [np.array(s.wind)]
    forces = np.array(s.update_forces())
    with pytest.raises(error):
        setattr(s, name, value)
    after = [getattr(s, key) for key in settings] + [np.array(s.wind)]
    assert after[:-1] == before[:-1]
    np.testing.assert_array_equal(after[-1], before[-1])
    np.testing.assert_array_equal(np.array(s.update_forces()), forces)


def test_bad_wind_at_points() -> None:
    """``wind_at`` needs (..., 3) real points."""
    s = triangle()
    with pytest.raises(ValueError):
        s.wind_at(np.zeros((4, 2)))
    with pytest.raises(TypeError):
        s.wind_at([["a", "b", "c"]])
