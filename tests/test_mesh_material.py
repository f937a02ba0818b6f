"""Material values for meshes: lumped masses from a density or a total mass, spring
stiffnesses from a Young's modulus (k = E t A / L^2 on a surface, E V / L^2 in a solid) and
damping from a ratio, checked against closed forms (a stretched strip's F L / (E A), a ball's
dilation p / (2 E) under pressure) and for resolution independence: the same membrane and the
same ball at three resolutions sag and ring alike, where per-node values do not.  The scenes
that take material values (cloth, flag, tablecloth, jelly cube) are checked the same way.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import msprings
from msprings import mesh, scenes


def sheet(cells_x: int, cells_z: int, length: float, width: float) -> tuple[np.ndarray, np.ndarray]:
    """A flat rectangle in the x-z plane, ``cells_x`` by ``cells_z`` cells, each cut by the
    same diagonal into two triangles."""
    i, j = np.meshgrid(np.arange(cells_x + 1), np.arange(cells_z + 1), indexing="ij")
    vertices = np.stack([i.ravel() * length / cells_x, np.zeros(i.size), j.ravel() * width / cells_z], axis=1)
    index = np.arange(i.size).reshape(i.shape)
    p, q = index[:-1, :-1].ravel(), index[1:, :-1].ravel()
    r, s = index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    return vertices, np.concatenate([np.stack([p, s, r], axis=1), np.stack([p, r, q], axis=1)])


def equilateral_strip(cells_x: int, rows: int, side: float) -> tuple[np.ndarray, np.ndarray]:
    """A strip of equilateral triangles of side ``side``: ``rows`` rows of ``cells_x`` cells,
    every other row shifted by half a side, its ends cut straight at x = 0 and x = cells_x side."""
    height = side * math.sqrt(3.0) / 2.0
    vertices, index = [], {}
    for row in range(rows + 1):
        shift = 0.5 * side if row % 2 else 0.0
        xs = [0.0] + [shift + k * side for k in range(cells_x + 1) if 0 < shift + k * side < cells_x * side] \
            + [cells_x * side]
        for x in xs:
            index[(row, round(x / side * 2))] = len(vertices)
            vertices.append((x, 0.0, row * height))
    points = np.array(vertices)
    faces = []
    for row in range(rows):
        low = sorted((key[1], value) for key, value in index.items() if key[0] == row)
        high = sorted((key[1], value) for key, value in index.items() if key[0] == row + 1)
        a = b = 0
        # Zip the two rows together into triangles, always advancing the one that lags.
        while a < len(low) - 1 or b < len(high) - 1:
            if b == len(high) - 1 or (a < len(low) - 1 and low[a + 1][0] <= high[b + 1][0]):
                faces.append((low[a][1], high[b][1], low[a + 1][1]))
                a += 1
            else:
                faces.append((low[a][1], high[b][1], high[b + 1][1]))
                b += 1
    faces = np.array(faces)
    normals = mesh.face_normals(points, faces)
    faces[normals[:, 1] < 0] = faces[normals[:, 1] < 0][:, ::-1]
    return points, faces


def period(times: np.ndarray, signal: np.ndarray) -> float:
    """The period (s) of an oscillating signal from its interpolated crossings of its mean."""
    y = signal - signal.mean()
    cross = np.flatnonzero(np.diff(np.sign(y)) != 0)
    at = times[cross] - y[cross] * (times[cross + 1] - times[cross]) / (y[cross + 1] - y[cross])
    assert len(at) >= 5
    return 2.0 * float(np.mean(np.diff(at)))


def settle(system: msprings.System, dt: float, steps: int, *, free: bool = False) -> None:
    """Steps until at rest (backward Euler with critically damped springs).

    free: the body is held by nothing but balanced dead loads, under which a rigid rotation is
    unstable (a squeezed free body turned by theta feels a couple that turns it further, so a
    rotation seeded by rounding grows about tenfold every 0.25 s); after each step the rigid-body
    part of the velocity is taken out, which holds the body still without loading it."""
    system.integrator = "implicit_euler"
    system.newton_tol = 1e-9  # a static solve: each step to well below the default's 1e-6 of the load
    if not free:
        system.step(dt, steps)
    for _ in range(steps if free else 0):
        system.step(dt)
        arm = system.x - np.average(system.x, axis=0, weights=system.mass)
        rigid = np.zeros((system.n_nodes, 3, 6))
        rigid[:, :, :3] = np.eye(3)
        rigid[:, :, 3:] = -np.cross(arm[:, :, None], np.eye(3)[None, :, :], axis=1)  # omega x arm
        rigid = rigid.reshape(-1, 6)
        system.v[:] -= (rigid @ np.linalg.lstsq(rigid, system.v.ravel(), rcond=None)[0]).reshape(-1, 3)
    assert np.abs(system.v).max() < 1e-9


# ---- masses ------------------------------------------------------------------------------


def test_lumped_masses_give_each_corner_a_third_of_its_triangles_and_a_quarter_of_its_tetrahedra() -> None:
    rng = np.random.default_rng(2)
    sphere = mesh.icosphere(2, radius=0.3)
    vertices = sphere.vertices * rng.uniform(0.9, 1.1, size=(sphere.n_vertices, 1))
    faces = sphere.faces
    areas = 0.5 * np.linalg.norm(mesh.face_normals(vertices, faces), axis=1)
    surface = mesh.from_mesh(vertices, faces, density=1200.0, thickness=2e-3)
    expected = np.zeros(len(vertices))
    for face, area in zip(faces.tolist(), areas):
        for corner in face:
            expected[corner] += 1200.0 * 2e-3 * area / 3.0
    np.testing.assert_allclose(surface.mass, expected, rtol=1e-12)
    assert surface.mass.sum() == pytest.approx(1200.0 * 2e-3 * areas.sum(), rel=1e-12)

    solid = mesh.from_mesh(vertices, faces, density=1200.0, stabilise="center")
    centre = vertices.mean(axis=0)
    volumes = np.abs(np.einsum("ij,ij->i", vertices[faces[:, 0]] - centre,
                               np.cross(vertices[faces[:, 1]] - centre, vertices[faces[:, 2]] - centre))) / 6.0
    # The surface is star-shaped from its centre: the tetrahedra fill exactly its volume.
    assert volumes.sum() == pytest.approx(mesh.enclosed_volume(vertices, faces), rel=1e-12)
    assert solid.mass.sum() == pytest.approx(1200.0 * volumes.sum(), rel=1e-12)
    assert solid.mass[-1] == pytest.approx(solid.mass.sum() / 4.0, rel=1e-12)
    per_vertex = np.zeros(len(vertices))
    for face, volume in zip(faces.tolist(), volumes):
        for corner in face:
            per_vertex[corner] += 1200.0 * volume / 4.0
    np.testing.assert_allclose(solid.mass[:-1], per_vertex, rtol=1e-12)
    # A total mass is shared in the same proportions.
    given = mesh.from_mesh(vertices, faces, total_mass=2.0, stabilise="center")
    np.testing.assert_allclose(given.mass, solid.mass * 2.0 / solid.mass.sum(), rtol=1e-12)


# ---- stiffness ---------------------------------------------------------------------------


def test_membrane_stiffness_is_e_t_area_over_length_squared() -> None:
    rng = np.random.default_rng(4)
    vertices, faces = sheet(3, 2, 1.5, 1.0)
    vertices = vertices + rng.normal(scale=0.05, size=vertices.shape) * [1, 0, 1]
    system = mesh.from_mesh(vertices, faces, youngs_modulus=2e6, thickness=1e-3)
    areas = 0.5 * np.linalg.norm(mesh.face_normals(vertices, faces), axis=1)
    for spring, (i, j) in enumerate(system.springs.tolist()):
        area = sum(a for face, a in zip(faces.tolist(), areas) if i in face and j in face)
        length2 = float(np.sum((vertices[i] - vertices[j]) ** 2))
        assert system.k[spring] == pytest.approx(2e6 * 1e-3 * area / length2, rel=1e-12)


@pytest.mark.parametrize("kind", ["grid", "equilateral"])
def test_a_stretched_strip_extends_by_f_l_over_e_a(kind: str) -> None:
    # A 1 m strip, 0.1 m wide and 1 mm thick, of E = 10 MPa, clamped at x = 0 and pulled at
    # x = 1 m by F = 1 N: F L / (E w t) = 1 mm.  A grid of squares cut by one diagonal is,
    # pulled along its lines, exactly a membrane of modulus E (and Poisson's ratio 0); an
    # equilateral mesh is an isotropic one with Poisson's ratio 1/3, which its clamped end
    # keeps from narrowing there: a little stiffer.
    length, width, thickness, modulus, force = 1.0, 0.1, 1e-3, 1e7, 1.0
    if kind == "grid":
        vertices, faces = sheet(40, 4, length, width)
    else:
        vertices, faces = equilateral_strip(40, 4, length / 40)
        width = vertices[:, 2].max()
    near, far = vertices[:, 0] < 1e-12, vertices[:, 0] > length - 1e-12
    strip = mesh.from_mesh(vertices, faces, density=1000.0, thickness=thickness, youngs_modulus=modulus,
                           damping_ratio=1.0, pinned=near, gravity=(0.0, 0.0, 0.0))
    # The pull, shared by the far end's nodes in proportion to the edge length each carries.
    ends = np.flatnonzero(far)
    z = vertices[ends, 2]
    order = np.argsort(z)
    share = np.zeros(len(ends))
    gaps = np.diff(z[order])
    share[order[:-1]] += gaps / 2.0
    share[order[1:]] += gaps / 2.0
    strip.external[ends, 0] = force * share / share.sum()
    settle(strip, 0.1, 100)
    extension = float(np.mean(strip.x[ends, 0] - vertices[ends, 0]))
    expected = force * length / (modulus * width * thickness)
    if kind == "grid":
        assert extension == pytest.approx(expected, rel=2e-3)
    else:
        assert 0.99 * expected < extension < expected


BALL_RADIUS, BALL_MODULUS, BALL_PRESSURE = 0.1, 1e6, 1e3  # m, Pa, Pa


def pressurised_ball(subdivisions: int, integrator: str = "symplectic_euler") -> msprings.System:
    """A rubber ball (1000 kg/m^3, E = 1 MPa, zeta = 1) converted from an icosphere with a centre
    node, without gravity, under a pressure: p A u on each triangle (area A, unit normal u),
    shared by its corners."""
    sphere = mesh.icosphere(subdivisions, radius=BALL_RADIUS)
    ball = mesh.from_mesh(sphere.vertices, sphere.faces, density=1000.0, youngs_modulus=BALL_MODULUS,
                          damping_ratio=1.0, stabilise="center", gravity=(0.0, 0.0, 0.0), integrator=integrator)
    push = mesh.face_normals(sphere.vertices, sphere.faces) * BALL_PRESSURE / 6.0
    for corner in range(3):
        np.add.at(ball.external, sphere.faces[:, corner], push)
    return ball


def radial_strain(ball: msprings.System) -> float:
    """The mean distance of the surface nodes from the centre node (the last) over the radius, less 1."""
    surface, centre = ball.x[:-1], ball.x[-1]
    return float(np.linalg.norm(surface - centre, axis=1).mean() / BALL_RADIUS - 1.0)


def test_a_ball_under_pressure_dilates_by_p_over_2e_at_every_resolution() -> None:
    # Every spring of a uniformly dilated solid stretches by the same strain e, storing
    # sum k (e L)^2 / 2 = 3 E V e^2 (each tetrahedron's volume counts on its six edges): the
    # bulk modulus of a solid of modulus E and Poisson's ratio 1/4, K = 2 E / 3.  A pressure p
    # then gives dV / V = p / K, a radial strain of p / (2 E).
    for subdivisions in (1, 2, 3):
        ball = pressurised_ball(subdivisions)
        ball.step(0.9 * ball.critical_dt(), 1500)
        assert np.abs(ball.v).max() < 1e-9
        assert radial_strain(ball) == pytest.approx(BALL_PRESSURE / (2.0 * BALL_MODULUS), rel=5e-3)


def test_implicit_euler_converges_on_a_ball_held_by_pressure_at_large_steps() -> None:
    # At rest the external push and the tensions cancel, so Newton's residual must be judged
    # against the load it holds, not the vanishing net force: every step converges, and
    # the ball settles at the same radial strain p / (2E).
    for subdivisions in (1, 2, 3):
        ball = pressurised_ball(subdivisions, "implicit_euler")
        assert 0.1 > 100 * ball.critical_dt("symplectic_euler")  # far beyond the explicit limit
        for _ in range(20):
            ball.step(0.1)
            stats = ball.solver_stats
            assert stats["newton_converged"], stats
            assert stats["newton_iterations"] <= 10
        assert radial_strain(ball) == pytest.approx(BALL_PRESSURE / (2.0 * BALL_MODULUS), rel=5e-3)


# ---- the same object at three resolutions ------------------------------------------------


def membrane_sag_and_period(cells: int, material: bool) -> tuple[float, float]:
    """A 1 m square sheet (1 mm thick, 1000 kg/m^3: 1 kg; E = 100 MPa) pinned on its four
    edges sags under gravity; then gravity grows by 10 % and it rings about its new shape.
    Returns the sag at the centre (m) and the period of the mean height (s).  Without
    ``material``: per-node values, 1/49 kg a node and k = E t for every spring (what the
    material values give the 6 x 6 sheet, on average)."""
    vertices, faces = sheet(cells, cells, 1.0, 1.0)
    rim = (vertices[:, 0] % 1.0 == 0.0) | (vertices[:, 2] % 1.0 == 0.0)
    if material:
        membrane = mesh.from_mesh(vertices, faces, density=1000.0, thickness=1e-3, youngs_modulus=1e8,
                                  damping_ratio=1.0, pinned=rim)
    else:
        membrane = mesh.from_mesh(vertices, faces, mass=1.0 / 49, k=1e5, pinned=rim)
        membrane.c[:] = membrane.damping_for_ratio(1.0)
    settle(membrane, 0.01, 300)
    centre = int(np.argmin(np.linalg.norm(vertices - (0.5, 0.0, 0.5), axis=1)))
    sag = -float(membrane.x[centre, 1])
    membrane.integrator = "symplectic_euler"
    membrane.c[:] = 0.0
    membrane.gravity = (0.0, -9.81 * 1.1, 0.0)
    dt = 0.5 * membrane.critical_dt()
    every = max(1, int(2e-4 / dt))
    run = membrane.run(dt, every * int(0.35 / (every * dt)), record_every=every)
    return sag, period(run.times, run.positions[:, ~membrane.pinned, 1].mean(axis=1))


def test_a_membrane_sags_and_rings_alike_at_three_resolutions() -> None:
    results = np.array([membrane_sag_and_period(cells, True) for cells in (6, 12, 24)])
    sags, periods = results[:, 0], results[:, 1]
    assert np.ptp(sags) / sags.mean() < 0.02
    assert np.ptp(periods) / periods.mean() < 0.03
    # It is a real sag and a real ring (about 13 mm and 0.11 s), converging as the mesh is refined.
    assert 0.01 < sags.mean() < 0.02 and 0.08 < periods.mean() < 0.15
    assert abs(sags[2] - sags[1]) < abs(sags[1] - sags[0])
    # Per-node values: the finer sheet has more nodes of the same mass, so it is heavier and
    # sags and rings as another sheet.
    plain = np.array([membrane_sag_and_period(cells, False) for cells in (6, 12)])
    assert plain[1, 0] / plain[0, 0] > 1.3 and plain[1, 1] / plain[0, 1] > 1.2


def test_a_ball_rings_alike_at_three_resolutions() -> None:
    # Let go from a uniform 1 % dilation, the ball breathes; the period of its mean radius is
    # the same at 162, 642 and 2562 vertices.  (A little damping, which the mesh-sized
    # motions feel most, keeps them from blurring the breathing.)
    periods = []
    for subdivisions in (2, 3, 4):
        sphere = mesh.icosphere(subdivisions, radius=0.1)
        n = sphere.n_vertices
        ball = mesh.from_mesh(sphere.vertices, sphere.faces, density=1000.0, youngs_modulus=1e6,
                              damping_ratio=0.1, stabilise="center", gravity=(0.0, 0.0, 0.0), threads=1)
        ball.x[:] = ball.x[n] + 1.01 * (ball.x - ball.x[n])
        dt = 0.5 * ball.critical_dt()
        run = ball.run(dt, int(0.03 / dt), record_every=1)
        radius = np.linalg.norm(run.positions[:, :n] - run.positions[:, n:], axis=2).mean(axis=1)
        periods.append(period(run.times, radius))
    assert np.ptp(periods) / np.mean(periods) < 0.02
    assert 6e-3 < np.mean(periods) < 8e-3


# ---- damping -----------------------------------------------------------------------------


def test_damping_ratio_gives_every_spring_c_from_its_k_and_reduced_mass() -> None:
    vertices, faces = sheet(3, 3, 1.0, 1.0)
    pinned = np.zeros(len(vertices), dtype=bool)
    pinned[[0, 1, 4]] = True
    system = mesh.from_mesh(vertices, faces, density=500.0, thickness=2e-3, youngs_modulus=1e6,
                            damping_ratio=0.3, bend_k=5.0, pinned=pinned)
    m = system.mass
    for spring, (i, j) in enumerate(system.springs.tolist()):
        if pinned[i] and pinned[j]:
            expected = 0.0
        elif pinned[i] or pinned[j]:
            expected = 2 * 0.3 * math.sqrt(system.k[spring] * (m[j] if pinned[i] else m[i]))
        else:
            expected = 2 * 0.3 * math.sqrt(system.k[spring] * m[i] * m[j] / (m[i] + m[j]))
        assert system.c[spring] == pytest.approx(expected, rel=1e-12, abs=0.0)
    both = [s for s, (i, j) in enumerate(system.springs.tolist()) if pinned[i] and pinned[j]]
    assert both and np.all(system.c[both] == 0.0)
    free = [s for s in range(system.n_springs) if s not in both]
    np.testing.assert_allclose(system.damping_ratio()[free], 0.3, rtol=1e-12)


def test_spring_sphere_takes_material_values() -> None:
    coarse = scenes.spring_sphere(2, radius=0.2, density=1000.0, youngs_modulus=1e5, damping_ratio=0.5)
    fine = scenes.spring_sphere(3, radius=0.2, density=1000.0, youngs_modulus=1e5, damping_ratio=0.5)
    for ball in (coarse, fine):
        sphere = mesh.icosphere(2 if ball is coarse else 3, radius=0.2)
        assert ball.mass.sum() == pytest.approx(1000.0 * mesh.enclosed_volume(sphere.vertices, sphere.faces), rel=1e-12)
        assert set(ball.families) == {"structural", "stabilise"}
        np.testing.assert_allclose(ball.damping_ratio(), 0.5, rtol=1e-12)
    # Without a damping ratio, material values get 90 % of critical on every spring.
    np.testing.assert_allclose(scenes.spring_sphere(2, density=1000.0, youngs_modulus=1e5).damping_ratio(), 0.9,
                               rtol=1e-12)
    # The defaults are still the per-node ones.
    plain = scenes.spring_sphere(2)
    np.testing.assert_allclose(plain.mass, 0.05, rtol=1e-15)
    assert np.all(plain.k == 500.0)


# ---- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"mass": 1.0, "density": 10.0, "thickness": 1e-3}, "one of mass, density and total_mass"),
    ({"density": 10.0, "total_mass": 1.0, "thickness": 1e-3}, "one of mass, density and total_mass"),
    ({"k": 1.0, "youngs_modulus": 1e6, "thickness": 1e-3}, "k or youngs_modulus"),
    ({"c": 1.0, "damping_ratio": 0.1}, "c or damping_ratio"),
    ({"density": 10.0}, "need its thickness"),
    ({"youngs_modulus": 1e6}, "need its thickness"),
    ({"thickness": 1e-3, "stabilise": "center"}, "thickness applies to a surface"),
    ({"density": -1.0, "thickness": 1e-3}, "density must be finite and > 0"),
    ({"total_mass": 0.0}, "total_mass must be finite and > 0"),
    ({"youngs_modulus": math.inf, "thickness": 1e-3}, "youngs_modulus must be finite"),
    ({"youngs_modulus": 1e6, "thickness": math.nan}, "thickness must be finite"),
    ({"damping_ratio": -0.1}, "damping_ratio must be finite and >= 0"),
])
def test_conflicting_or_bad_material_values_are_refused(options: dict, message: str) -> None:
    vertices, faces = sheet(2, 2, 1.0, 1.0)
    with pytest.raises(ValueError, match=message):
        mesh.from_mesh(vertices, faces, **options)
    with pytest.raises(TypeError, match="density"):
        mesh.from_mesh(vertices, faces, density="heavy", thickness=1e-3)


def test_a_vertex_in_no_triangle_gets_no_mass_from_a_density_and_is_refused_unless_pinned() -> None:
    vertices, faces = sheet(2, 2, 1.0, 1.0)
    stray = np.concatenate([vertices, [[5.0, 5.0, 5.0]]])
    with pytest.raises(ValueError, match=r"vertex 9 is in no triangle.*mesh.repair"):
        mesh.from_mesh(stray, faces, total_mass=1.0)
    pinned = mesh.from_mesh(stray, faces, total_mass=1.0, pinned=[9])
    assert pinned.mass[9] == 0.0 and pinned.mass.sum() == pytest.approx(1.0, rel=1e-12)


# ---- a cloth of material values ----------------------------------------------------------


def test_a_material_cloth_is_an_isotropic_membrane() -> None:
    # Stretched uniformly by a small strain e in any direction with no strain across it, an
    # isotropic membrane stores (1/2) E t / (1 - nu^2) e^2 per unit area: 9/16 E t e^2 for
    # nu = 1/3.  The grid's energy (every cell stretched alike) is exactly that, at any angle.
    modulus, thickness, strain = 1e6, 1e-3, 1e-7
    cloth = scenes.cloth(9, size=1.0, families=("structural", "shear"), density=1000.0, thickness=thickness,
                         youngs_modulus=modulus, gravity=(0.0, 0.0, 0.0))
    area = (1.0 * 8 / 9) ** 2
    start = cloth.x.copy()
    for angle in np.linspace(0.0, np.pi / 2, 7):
        direction = np.array([math.cos(angle), 0.0, math.sin(angle)])
        cloth.x[:] = start + strain * np.outer(start @ direction, direction)
        energy = 0.5 * float(np.sum(cloth.k * (cloth.lengths() - cloth.rest) ** 2))
        assert energy / area == pytest.approx(9.0 / 16.0 * modulus * thickness * strain**2, rel=1e-5)


def test_a_material_cloth_strip_extends_by_f_l_over_e_a() -> None:
    # A 1 m strip, 0.1 m wide, pulled along its length or across (the same strip turned 90
    # degrees) extends by F L / (E w t), a little less since its clamped end cannot narrow.
    modulus, thickness, force = 1e7, 1e-3, 1.0
    expected = force * 1.0 / (modulus * 0.1 * thickness)
    for rows, columns in ((5, 41), (41, 5)):
        along_x = columns > rows
        strip = scenes.cloth(rows, columns, size=0.025 * rows, families=("structural", "shear"), pin=None,
                             density=1000.0, thickness=thickness, youngs_modulus=modulus, damping_ratio=1.0,
                             gravity=(0.0, 0.0, 0.0))
        index = np.arange(rows * columns).reshape(rows, columns)
        clamped, pulled = (index[:, 0], index[:, -1]) if along_x else (index[0], index[-1])
        strip.pinned[clamped] = True
        share = np.full(len(pulled), 1.0)
        share[[0, -1]] = 0.5
        axis = 0 if along_x else 2
        strip.external[pulled, axis] = force * share / share.sum()
        start = strip.x[pulled, axis].copy()
        settle(strip, 0.1, 100)
        extension = float(np.mean(strip.x[pulled, axis] - start))
        assert 0.97 * expected < extension < expected


def test_a_material_cloth_sags_and_rings_alike_at_three_resolutions() -> None:
    sags, periods = [], []
    for n in (7, 13, 25):
        sheet_ = scenes.cloth(n, size=1.0 * n / (n - 1), families=("structural", "shear"), pin=None,
                              density=1000.0, thickness=1e-3, youngs_modulus=1e8, damping_ratio=1.0)
        index = np.arange(n * n).reshape(n, n)
        sheet_.pinned[np.concatenate([index[0], index[-1], index[:, 0], index[:, -1]])] = True
        assert sheet_.mass.sum() == pytest.approx(1.0, rel=1e-12)
        settle(sheet_, 0.01, 300)
        centre = index[n // 2, n // 2]
        sags.append(-float(sheet_.x[centre, 1]))
        sheet_.integrator, sheet_.gravity = "symplectic_euler", (0.0, -9.81 * 1.1, 0.0)
        sheet_.c[:] = 0.0
        dt = 0.5 * sheet_.critical_dt()
        every = max(1, int(2e-4 / dt))
        run = sheet_.run(dt, every * int(0.35 / (every * dt)), record_every=every)
        periods.append(period(run.times, run.positions[:, ~sheet_.pinned, 1].mean(axis=1)))
    assert np.ptp(sags) / np.mean(sags) < 0.03
    assert np.ptp(periods) / np.mean(periods) < 0.03


def test_cloth_material_values_are_checked() -> None:
    for options, message in (({"density": 10.0}, "thickness"), ({"density": 10.0, "thickness": 1e-3, "mass": 1.0},
                                                                   "mass or density"),
                             ({"damping_ratio": 0.1, "c": 1.0}, "c or damping_ratio"),
                             ({"youngs_modulus": -1.0, "thickness": 1e-3}, "youngs_modulus"),
                             ({"damping_ratio": math.nan}, "damping_ratio")):
        with pytest.raises(ValueError, match=message):
            scenes.cloth(4, **options)
    # Without material values the references' cloth is unchanged.
    plain = scenes.cloth(4)
    assert np.all(plain.mass == 1.0) and np.all(plain.k == 2500.0) and np.all(plain.c == 1.0)


# ---- the flag, the tablecloth and the jelly cube of material values ----------------------


@pytest.mark.parametrize("builder", ["flag", "tablecloth"])
def test_a_material_flag_and_tablecloth_are_the_cloths_isotropic_membrane(builder: str) -> None:
    # The same membrane as the cloth: rho t per unit area, and under a uniform small strain e
    # with none across it an energy of 9/16 E t e^2 per unit area at any angle (nu = 1/3).
    density, modulus, thickness, strain = 300.0, 1e6, 1e-3, 1e-7
    material = {"density": density, "thickness": thickness, "youngs_modulus": modulus,
                "families": ("structural", "shear"), "gravity": (0.0, 0.0, 0.0)}
    if builder == "flag":
        system = scenes.flag(7, 10, width=1.5, **material)
        area = 1.5 * 1.5 * 6 / 9
    else:
        system = scenes.tablecloth(9, size=2.0, **material)
        area = 2.0**2
    assert system.mass.sum() == pytest.approx(density * thickness * area, rel=1e-12)
    start = system.x.copy()
    columns = 10 if builder == "flag" else 9
    # The grid's two directions: along its rows and down its columns.
    along = (start[1] - start[0]) / np.linalg.norm(start[1] - start[0])
    down = (start[columns] - start[0]) / np.linalg.norm(start[columns] - start[0])
    for angle in np.linspace(0.0, np.pi / 2, 7):
        direction = math.cos(angle) * along + math.sin(angle) * down
        system.x[:] = start + strain * np.outer((start - start[0]) @ direction, direction)
        energy = 0.5 * float(np.sum(system.k * (system.lengths() - system.rest) ** 2))
        assert energy / area == pytest.approx(9.0 / 16.0 * modulus * thickness * strain**2, rel=1e-5)


def test_a_material_flag_strip_extends_by_f_l_over_e_a() -> None:
    # A 1 m flag, 0.1 m high and 1 mm thick, of E = 10 MPa, held by its pole and pulled at its
    # free edge by 1 N with no air and no gravity: F L / (E w t) = 1 mm, a little less since
    # its clamped edge cannot narrow (as the cloth's strip).
    modulus, thickness, force = 1e7, 1e-3, 1.0
    flag = scenes.flag(5, 41, width=1.0, families=("structural", "shear"), density=1000.0, thickness=thickness,
                       youngs_modulus=modulus, damping_ratio=1.0, wind=(0.0, 0.0, 0.0), gust=0.0,
                       gravity=(0.0, 0.0, 0.0))
    assert flag.mass.sum() == pytest.approx(1000.0 * thickness * 1.0 * 0.1, rel=1e-12)
    pulled = np.arange(5) * 41 + 40
    share = np.full(5, 1.0)
    share[[0, -1]] = 0.5
    flag.external[pulled, 0] = force * share / share.sum()
    start = flag.x[pulled, 0].copy()
    settle(flag, 0.1, 100)
    extension = float(np.mean(flag.x[pulled, 0] - start))
    expected = force * 1.0 / (modulus * 0.1 * thickness)
    assert 0.97 * expected < extension < expected


JELLY = {"size": 0.1, "density": 1000.0, "youngs_modulus": 1e5, "damping_ratio": 1.0,
         "families": ("structural", "shear"), "ground": False, "gravity": (0.0, 0.0, 0.0)}


def jelly_load(n: int, stress: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A jelly cube's bottom and top nodes (masks) and, for a stress (Pa) on its top or bottom
    face, each face node's share of it (N): a quarter of every cell face it is a corner of."""
    index = np.indices((n, n, n)).reshape(3, -1).T
    cells = (index > 0).astype(int) + (index < n - 1)
    spacing = JELLY["size"] / (n - 1)
    return index[:, 1] == 0, index[:, 1] == n - 1, stress * cells[:, 0] * cells[:, 2] * spacing**2 / 4.0


def test_a_material_jelly_cube_is_an_isotropic_solid_of_poissons_ratio_a_quarter() -> None:
    # Squeezed between its top and bottom faces by 100 Pa (and nothing else holding it), the
    # cube shortens by sigma / E = 1e-3 and widens by a quarter of that, at every resolution:
    # a uniform strain is exact for the lattice.  (Its weight is rho size^3 = 1 kg.)
    stress = 100.0
    for n in (3, 5, 9):
        cube = scenes.jelly_cube(n, **JELLY)
        assert cube.mass.sum() == pytest.approx(1000.0 * 0.1**3, rel=1e-12)
        bottom, top, share = jelly_load(n, stress)
        cube.external[top, 1] = -share[top]
        cube.external[bottom, 1] = share[bottom]
        settle(cube, 0.05, 40, free=True)
        index = np.indices((n, n, n)).reshape(3, -1).T
        height = cube.x[top, 1].mean() - cube.x[bottom, 1].mean()
        width = cube.x[index[:, 0] == n - 1, 0].mean() - cube.x[index[:, 0] == 0, 0].mean()
        axial, lateral = height / 0.1 - 1.0, width / 0.1 - 1.0
        # The springs turn as they shorten: the response is linear to about the strain, 1e-3.
        assert -axial == pytest.approx(stress / 1e5, rel=2e-3)
        assert -lateral / axial == pytest.approx(0.25, rel=1e-3)
    # Isotropic to its boundary: stretched by a small strain e along any direction with none
    # across it, the whole cube stores (1/2) C11 e^2 per unit volume, C11 = 6/5 E for nu = 1/4.
    cube = scenes.jelly_cube(5, **JELLY)
    start, strain = cube.x.copy(), 1e-7
    rng = np.random.default_rng(7)
    for direction in [(0, 1, 0), (1, 1, 0), (1, 1, 1), *rng.normal(size=(4, 3))]:
        direction = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
        cube.x[:] = start + strain * np.outer(start @ direction, direction)
        energy = 0.5 * float(np.sum(cube.k * (cube.lengths() - cube.rest) ** 2))
        assert energy / 0.1**3 == pytest.approx(0.5 * 1.2e5 * strain**2, rel=1e-5)


def test_a_material_jelly_cube_squashes_and_sways_alike_at_three_resolutions() -> None:
    # Standing clamped on its bottom face with 100 Pa on its top, the cube shortens by a little
    # less than sigma / E (its clamped base cannot widen); pushed sideways and let go, it sways
    # in its lowest mode.  At 3^3, 5^3 and 9^3 nodes: 0.963, 0.974, 0.978 of sigma / E and
    # periods of 88.6, 91.3 and 93.0 ms (the coarsest lattice, two cells a side, is stiffest;
    # a modal analysis of the same lattices gives 88.8, 91.2, 92.9 and, at 13^3 nodes, 93.3 ms).
    stress = 100.0
    squash, periods = [], []
    for n in (3, 5, 9):
        bottom, top, share = jelly_load(n, stress)
        cube = scenes.jelly_cube(n, pinned=bottom, **JELLY)
        start = cube.x.copy()
        cube.external[top, 1] = -share[top]
        settle(cube, 0.05, 40)
        squash.append(-float(np.mean(cube.x[top, 1] - start[top, 1])) / 0.1 / (stress / 1e5))
        cube.external[:] = 0.0
        cube.external[top, 0] = share[top]
        settle(cube, 0.05, 40)
        cube.external[:] = 0.0
        cube.integrator = "symplectic_euler"
        cube.c[:] = 0.0
        dt = 0.5 * cube.critical_dt()
        every = max(1, int(2e-4 / dt))
        run = cube.run(dt, every * int(0.5 / (every * dt)), record_every=every)
        periods.append(period(run.times, run.positions[:, top, 0].mean(axis=1)))
    assert np.ptp(squash) / np.mean(squash) < 0.03
    assert all(0.95 < value < 1.0 for value in squash)
    assert abs(squash[2] - squash[1]) < abs(squash[1] - squash[0])
    assert np.ptp(periods) / np.mean(periods) < 0.06
    assert periods[0] < periods[1] < periods[2]
    # A shear beam as tall as the cube would sway with 4 L / sqrt(G / rho) = 63 ms (G = 2/5 E);
    # bending makes the squat cube slower.
    assert 0.08 < np.mean(periods) < 0.1


@pytest.mark.parametrize("builder", ["cloth", "flag", "tablecloth", "jelly_cube"])
def test_builder_material_values_are_checked_and_the_defaults_kept(builder: str) -> None:
    build = {"cloth": lambda **options: scenes.cloth(5, **options),
             "flag": lambda **options: scenes.flag(4, 5, **options),
             "tablecloth": lambda **options: scenes.tablecloth(4, **options),
             "jelly_cube": lambda **options: scenes.jelly_cube(3, **options)}[builder]
    sheet_ = {} if builder == "jelly_cube" else {"thickness": 1e-3}
    for options, message in (({"density": 10.0, "mass": 1.0, **sheet_}, "mass or density"),
                             ({"damping_ratio": 0.1, "c": 1.0}, "c or damping_ratio"),
                             ({"youngs_modulus": -1.0, **sheet_}, "youngs_modulus = -1.0 must be finite and > 0"),
                             ({"density": math.inf, **sheet_}, "density = inf must be finite and > 0"),
                             ({"damping_ratio": math.nan}, "damping_ratio = nan must be finite and >= 0")):
        with pytest.raises(ValueError, match=message):
            build(**options)
    if builder != "jelly_cube":
        with pytest.raises(ValueError, match="thickness"):
            build(density=10.0)
    # Without material values the references' scenes are unchanged.
    plain = build()
    mass, k, c = {"cloth": (1.0, 2500.0, 1.0), "flag": (0.02, 2500.0, 0.7), "tablecloth": (3.0, 3000.0, 8.0),
                  "jelly_cube": (0.5, 150.0, 0.9 * 2.0 * math.sqrt(0.5 * 150.0))}[builder]
    assert np.all(plain.mass == mass) and np.all(plain.k == k) and np.all(plain.c == c)
    # A damping ratio damps every spring with a free end by it (for the cube, 0.9 with
    # material values alone).
    damped = build(damping_ratio=0.3, pinned=None)
    np.testing.assert_allclose(damped.damping_ratio(), 0.3, rtol=1e-12)
    if builder == "jelly_cube":
        np.testing.assert_allclose(build(density=1000.0, youngs_modulus=1e5).damping_ratio(), 0.9, rtol=1e-12)
    else:
        # Material values alone damp a membrane as the reference scene's springs between two
        # free nodes are damped, whether the fabric is light or heavy (fixed dampers would
        # overdamp a light one by orders of magnitude).
        free = ~np.asarray(plain.pinned)[plain.springs].any(axis=1)
        reference = plain.damping_ratio()[free]
        assert np.ptp(reference) < 1e-12 and 0.0 < reference[0] < 0.1
        for density in (1.0, 1000.0):
            fabric = build(density=density, youngs_modulus=1e6, thickness=1e-3, pinned=None)
            np.testing.assert_allclose(fabric.damping_ratio(), reference[0], rtol=1e-12)
    if builder == "tablecloth":
        # A thickness for contacts alone may still be 0.
        assert np.all(build(thickness=0.0).k == k)
