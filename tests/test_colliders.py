"""Rigid colliders: plane, sphere, axis-aligned box and capped cylinder.

Contact happens after each step: a free node closer than ``thickness`` to a collider is moved
out along the surface normal to distance ``thickness``; its velocity relative to the collider
loses the approaching normal part ``v_n < 0`` (it leaves with ``-e v_n``) and Coulomb friction
shrinks the tangential part by at most ``mu`` times the normal change.  With gravity off and
no springs a particle moves in a straight line, so every contact below has an exact answer;
with gravity on, symplectic Euler on a plane gives closed forms too (sliding at exactly
``mu g``, an energy drift of exactly ``m g^2 h^2 / 2`` per step).
"""

from __future__ import annotations

import copy
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import msprings
from msprings import io as model_io
from msprings.colliders import Collider

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenes import cloth_springs  # noqa: E402

NO_SPRINGS = np.zeros((0, 2), dtype=np.int64)
GRAVITY = 9.81
TIGHT = 1e-12


def particle(position: tuple[float, float, float], velocity: tuple[float, float, float] = (0.0, 0.0, 0.0), *,
             mass: float = 1.0, gravity: tuple[float, float, float] = (0.0, 0.0, 0.0),
             **options: object) -> msprings.System:
    """A single free node (no springs), gravity off unless given."""
    return msprings.System([position], NO_SPRINGS, mass=mass, velocities=[velocity], gravity=gravity, **options)


def unit(vector: tuple[float, float, float]) -> np.ndarray:
    """``vector`` scaled to length 1."""
    array = np.asarray(vector, dtype=np.float64)
    return array / np.linalg.norm(array)


@dataclass(frozen=True)
class Surface:
    """A point on a collider's surface with its outward unit normal and a unit tangent there.

    ``add`` adds the collider to a system with the given keyword options (restitution,
    friction, thickness, velocity)."""

    name: str
    add: Callable[..., Collider]
    point: tuple[float, float, float]
    normal: tuple[float, float, float]
    tangent: tuple[float, float, float]


TILTED = unit((1.0, 2.0, 2.0))
TILTED_TANGENT = unit((2.0, -1.0, 0.0))
DIAGONAL_AXIS = unit((1.0, 1.0, 0.0))

SURFACES = [
    Surface("plane", lambda s, **o: s.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), **o),
            (0.3, 0.0, -0.2), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
    Surface("tilted plane", lambda s, **o: s.add_plane((1.0, 2.0, 3.0), (2.0, 4.0, 4.0), **o),
            tuple(np.array([1.0, 2.0, 3.0]) + 0.7 * TILTED_TANGENT), tuple(TILTED), tuple(TILTED_TANGENT)),
    Surface("sphere", lambda s, **o: s.add_sphere((0.0, 0.0, 0.0), 1.0, **o),
            (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
    Surface("sphere off axis", lambda s, **o: s.add_sphere((1.0, -2.0, 0.5), 0.5, **o),
            tuple(np.array([1.0, -2.0, 0.5]) + 0.5 * TILTED), tuple(TILTED), tuple(TILTED_TANGENT)),
    Surface("box top", lambda s, **o: s.add_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0), **o),
            (0.2, 1.0, 0.1), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    Surface("box side", lambda s, **o: s.add_box((-1.0, -2.0, -3.0), (1.0, 2.0, 3.0), **o),
            (-1.0, 0.5, 0.3), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    Surface("cylinder top cap", lambda s, **o: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, **o),
            (0.3, 0.5, 0.2), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
    Surface("cylinder bottom cap", lambda s, **o: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, **o),
            (0.3, -0.5, 0.2), (0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    Surface("cylinder side", lambda s, **o: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, **o),
            (1.0, 0.1, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    Surface("tilted cylinder side", lambda s, **o: s.add_cylinder((0.0, 0.0, 0.0), 0.5, 2.0, (1.0, 1.0, 0.0), **o),
            (0.0, 0.0, 0.5), (0.0, 0.0, 1.0), tuple(DIAGONAL_AXIS)),
]

SURFACE_IDS = [surface.name for surface in SURFACES]


def head_on(surface: Surface, normal_speed: float, tangential_speed: float, thickness: float,
            dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Start position and velocity of a node that, moving freely for one step of ``dt``, ends
    0.15 m inside the contact layer straight below ``surface.point`` (so the contact normal
    there is ``surface.normal``): velocity ``-normal_speed n + tangential_speed t``."""
    normal, tangent = np.array(surface.normal), np.array(surface.tangent)
    velocity = -normal_speed * normal + tangential_speed * tangent
    end = np.array(surface.point) + (thickness - 0.15) * normal
    return end - dt * velocity, velocity


# ---- contact response, every collider kind ------------------------------------------


@pytest.mark.parametrize("surface", SURFACES, ids=SURFACE_IDS)
@pytest.mark.parametrize("restitution", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("thickness", [0.0, 0.05])
def test_restitution_reverses_normal_speed(surface: Surface, restitution: float, thickness: float) -> None:
    """A node hitting a surface at 2 m/s leaves at exactly 2 e m/s along the normal and rests
    on the contact layer, at distance ``thickness`` from the surface."""
    dt = 0.1
    start, velocity = head_on(surface, 2.0, 0.0, thickness, dt)
    s = particle(tuple(start), tuple(velocity))
    collider = surface.add(s, restitution=restitution, thickness=thickness)
    s.step(dt)
    normal = np.array(surface.normal)
    np.testing.assert_allclose(s.x[0], np.array(surface.point) + thickness * normal, rtol=0, atol=TIGHT)
    np.testing.assert_allclose(s.v[0], 2.0 * restitution * normal, rtol=0, atol=TIGHT)
    assert collider.distance(s.x)[0] == pytest.approx(thickness, abs=TIGHT)


@pytest.mark.parametrize("surface", SURFACES, ids=SURFACE_IDS)
def test_coulomb_friction_on_every_kind(surface: Surface) -> None:
    """mu = 0.3, v_t = 1, v_n = -2, e = 0: the normal change is 2, so friction removes
    0.3 * 2 = 0.6 of the tangential speed: the node leaves with v_t = 0.4 and v_n = 0."""
    dt = 0.1
    start, velocity = head_on(surface, 2.0, 1.0, 0.0, dt)
    s = particle(tuple(start), tuple(velocity))
    surface.add(s, friction=0.3)
    s.step(dt)
    np.testing.assert_allclose(s.v[0], 0.4 * np.array(surface.tangent), rtol=0, atol=TIGHT)
    np.testing.assert_allclose(s.x[0], surface.point, rtol=0, atol=TIGHT)


def test_friction_exact_values_on_the_ground() -> None:
    """The issue's numbers on the default ground plane: v = (1, -2, 0), mu = 0.3, e = 0 gives
    v = (0.4, 0, 0); with mu = 0 the tangential speed is kept; with mu = 1 the tangential
    speed (1 < mu * 2) stops; with e = 0.5 the normal change is 3, so mu = 0.2 leaves 0.4."""
    cases = [
        (dict(friction=0.3), (0.4, 0.0, 0.0)),
        (dict(friction=0.0), (1.0, 0.0, 0.0)),
        (dict(friction=1.0), (0.0, 0.0, 0.0)),
        (dict(friction=0.2, restitution=0.5), (0.4, 1.0, 0.0)),
    ]
    for options, expected in cases:
        s = particle((0.0, 0.05, 0.0), (1.0, -2.0, 0.0))
        s.add_plane(**options)
        s.step(0.1)
        np.testing.assert_allclose(s.v[0], expected, rtol=0, atol=1e-15, err_msg=str(options))
        assert s.x[0, 1] == 0.0


def test_tangential_direction_is_kept() -> None:
    """Friction scales the tangential velocity; it never turns it."""
    s = particle((0.0, 0.05, 0.0), (3.0, -2.0, -4.0))
    s.add_plane(friction=0.5)
    s.step(0.1)
    # |v_t| = 5, the normal change is 2, so friction removes 1 m/s: v_t = 0.8 (3, 0, -4)
    np.testing.assert_allclose(s.v[0], (2.4, 0.0, -3.2), rtol=0, atol=TIGHT)


# ---- sliding under gravity ------------------------------------------------------------

FLAT_GROUNDS = [
    ("plane", lambda s, mu: s.add_plane(friction=mu)),
    ("box top", lambda s, mu: s.add_box((-5.0, -1.0, -5.0), (5.0, 0.0, 5.0), friction=mu)),
    ("cylinder cap", lambda s, mu: s.add_cylinder((0.0, -0.5, 0.0), 5.0, 1.0, friction=mu)),
]


@pytest.mark.parametrize("ground", [g for _, g in FLAT_GROUNDS], ids=[name for name, _ in FLAT_GROUNDS])
def test_sliding_decelerates_at_mu_g_then_stays(ground: Callable[[msprings.System, float], Collider]) -> None:
    """A node sliding on a flat top under gravity: every symplectic Euler step makes it sink by
    g h^2 and arrive with v_n = -g h, so friction takes exactly mu g h off its speed:
    v(t) = v0 - mu g t until it stops, after which it stays put (v = 0, x fixed, on the surface)."""
    mu, v0, dt, n = 0.3, 2.0, 1e-3, 1000
    s = particle((-1.0, 0.0, 0.0), (v0, 0.0, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    ground(s, mu)
    velocities = np.empty(n)
    positions = np.empty(n)
    for step in range(n):
        s.step(dt)
        velocities[step] = s.v[0, 0]
        positions[step] = s.x[0, 0]
        assert abs(s.x[0, 1]) <= 1e-15 and s.v[0, 1] == 0.0 and s.v[0, 2] == 0.0
    t = dt * np.arange(1, n + 1)
    expected = np.maximum(v0 - mu * GRAVITY * t, 0.0)
    np.testing.assert_allclose(velocities, expected, rtol=0, atol=1e-12)
    stop = int(np.argmax(velocities == 0.0))
    assert 0 < stop < n - 100  # it stopped well inside the run ...
    assert np.all(velocities[stop:] == 0.0)  # ... and stayed stopped
    assert np.all(positions[stop:] == positions[stop])
    # distance travelled: v0^2 / (2 mu g) in the limit dt -> 0, within one step's travel
    assert positions[-1] + 1.0 == pytest.approx(v0**2 / (2 * mu * GRAVITY), abs=v0 * dt)


def test_sliding_speed_after_a_batch_of_steps() -> None:
    """The same closed form from one ``step(dt, n)`` call: v(n dt) = v0 - mu g n dt."""
    mu, v0, dt, n = 0.25, 3.0, 5e-4, 1500
    s = particle((0.0, 0.0, 0.0), (0.0, 0.0, -v0), gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane(friction=mu)
    s.step(dt, n)
    assert s.v[0, 2] == pytest.approx(-(v0 - mu * GRAVITY * n * dt), abs=1e-12)
    assert s.v[0, 0] == 0.0 and s.v[0, 1] == 0.0


# ---- thickness, edges and corners -------------------------------------------------------


@pytest.mark.parametrize(
    "add, start, direction",
    [
        # box corner (1, 1, 1): pushed out along the diagonal
        (lambda s: s.add_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0), thickness=0.5), (1.2, 1.2, 1.2), (1.0, 1.0, 1.0)),
        # box edge x = 1, y = 1
        (lambda s: s.add_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0), thickness=0.5), (1.1, 1.2, 0.3), (1.0, 2.0, 0.0)),
        # cylinder rim: radius 1, top cap at y = 0.5
        (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, thickness=0.3), (1.1, 0.6, 0.0), (1.0, 1.0, 0.0)),
        # cylinder rim, bottom cap, in the x-z diagonal
        (lambda s: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, thickness=0.3),
         (1.1 / math.sqrt(2.0), -0.55, 1.1 / math.sqrt(2.0)), (0.1 / math.sqrt(2.0), -0.05, 0.1 / math.sqrt(2.0))),
    ],
    ids=["box corner", "box edge", "cylinder top rim", "cylinder bottom rim"],
)
def test_edges_and_corners_push_along_the_distance_gradient(add: Callable[[msprings.System], Collider],
                                                            start: tuple[float, float, float],
                                                            direction: tuple[float, float, float]) -> None:
    """A resting node within the contact layer of an edge or a corner is moved along the line
    from the nearest surface point through it (the gradient of the distance) until it sits at
    distance ``thickness``; a node at rest keeps zero velocity."""
    s = particle(start)
    collider = add(s)
    before = collider.distance([start])[0]
    assert 0.0 < before < collider.thickness
    s.step(1e-3)
    expected = np.array(start) + (collider.thickness - before) * unit(direction)
    np.testing.assert_allclose(s.x[0], expected, rtol=0, atol=TIGHT)
    assert collider.distance(s.x)[0] == pytest.approx(collider.thickness, abs=TIGHT)
    np.testing.assert_array_equal(s.v[0], 0.0)


@pytest.mark.parametrize("kind", ["plane", "sphere", "box", "cylinder"])
def test_resting_nodes_end_at_exactly_thickness(kind: str) -> None:
    """A cloud of resting nodes in and around a collider: those inside or closer than the
    thickness end at distance exactly ``thickness`` (the exact distance, evaluated in NumPy by
    ``Collider.distance``); the others do not move at all."""
    rng = np.random.default_rng(7)
    points = rng.uniform(-1.6, 1.6, size=(400, 3))
    s = msprings.System(points, NO_SPRINGS, gravity=(0.0, 0.0, 0.0))
    thickness = 0.2
    if kind == "plane":
        collider = s.add_plane((0.1, -0.2, 0.3), (1.0, -2.0, 0.5), thickness=thickness)
    elif kind == "sphere":
        collider = s.add_sphere((0.1, -0.2, 0.3), 0.9, thickness=thickness)
    elif kind == "box":
        collider = s.add_box((-0.9, -0.5, -0.7), (0.8, 0.6, 0.4), thickness=thickness)
    else:
        collider = s.add_cylinder((0.1, -0.2, 0.3), 0.8, 1.2, (1.0, 0.5, -0.5), thickness=thickness)
    before = collider.distance(points)
    touching = before < thickness
    assert 50 < touching.sum() < 350
    s.step(1e-3)
    np.testing.assert_allclose(collider.distance(s.x)[touching], thickness, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(s.x[~touching], points[~touching])
    np.testing.assert_array_equal(s.v, 0.0)


# ---- bouncing leaves the surface ----------------------------------------------------------


@pytest.mark.parametrize("surface", SURFACES, ids=SURFACE_IDS)
def test_a_bounced_node_leaves_the_surface(surface: Surface) -> None:
    """After a bounce with e = 0.5 the node moves away from the surface at 1 m/s: one step
    later it is 1 m/s * dt further out, and its velocity has not changed."""
    dt = 0.1
    start, velocity = head_on(surface, 2.0, 0.0, 0.0, dt)
    s = particle(tuple(start), tuple(velocity))
    collider = surface.add(s, restitution=0.5)
    s.step(dt)
    s.step(dt)
    normal = np.array(surface.normal)
    np.testing.assert_allclose(s.v[0], normal, rtol=0, atol=TIGHT)
    np.testing.assert_allclose(s.x[0], np.array(surface.point) + dt * normal, rtol=0, atol=TIGHT)
    assert collider.distance(s.x)[0] == pytest.approx(dt, abs=TIGHT)


def test_node_on_the_surface_moving_away_is_free() -> None:
    """A node lying exactly on the ground and moving up is not in contact: it moves as if the
    ground were not there."""
    s = particle((0.0, 0.0, 0.0), (0.5, 1.0, 0.0))
    s.add_plane()
    s.step(0.1)
    np.testing.assert_allclose(s.x[0], (0.05, 0.1, 0.0), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(s.v[0], (0.5, 1.0, 0.0))


# ---- moving and kinematic colliders -------------------------------------------------------


def test_moving_sphere_pushes_a_resting_particle() -> None:
    """A sphere moving at (1, 0, 0) m/s reaches a resting particle: after every step the
    particle is outside the sphere and moves away from its centre at least as fast as the
    sphere's surface does (e = 0), and the centre advances by velocity * dt per step."""
    dt, velocity = 0.05, np.array([1.0, 0.0, 0.0])
    s = particle((1.05, 0.3, 0.0))
    sphere = s.add_sphere((0.0, 0.0, 0.0), 1.0, velocity=tuple(velocity))
    contacts = 0
    for step in range(1, 41):
        s.step(dt)
        np.testing.assert_allclose(sphere.center, step * dt * velocity, rtol=0, atol=1e-12)
        gap = sphere.distance(s.x)[0]
        assert gap >= -1e-12
        if gap <= 1e-12:  # in contact this step: leaving at least as fast as the surface
            contacts += 1
            normal = unit(s.x[0] - sphere.center)
            assert s.v[0] @ normal >= velocity @ normal - 1e-12
    assert contacts > 0
    assert s.x[0, 0] > 1.05 + 0.5  # it was carried along


def test_rising_plane_carries_a_particle_exactly() -> None:
    """A ground plane moving up at 0.5 m/s (e = 0) under a particle: every step the particle
    sinks into it, is put back on it and given the plane's velocity, so after each step it
    sits exactly on the plane and moves with it."""
    dt = 1e-3
    s = particle((0.0, 0.0, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    plane = s.add_plane(velocity=(0.0, 0.5, 0.0))
    for step in range(1, 201):
        s.step(dt)
        assert plane.center[1] == pytest.approx(0.5 * dt * step, abs=1e-12)
        assert s.x[0, 1] == pytest.approx(plane.center[1], abs=1e-12)
        assert s.v[0, 1] == pytest.approx(0.5, abs=1e-12)


def test_fast_thin_box_sweeps_up_a_particle() -> None:
    """A box 2 cm thick moving at 10 m/s passes a resting particle in one step of 0.1 s; the
    swept test in the box's frame catches it: it ends on the box's front face, moving with it."""
    s = particle((0.5, 0.0, 0.0))
    box = s.add_box((-0.01, -1.0, -1.0), (0.01, 1.0, 1.0), velocity=(10.0, 0.0, 0.0))
    s.step(0.1)
    np.testing.assert_allclose(box.center, (1.0, 0.0, 0.0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.x[0], (1.01, 0.0, 0.0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(s.v[0], (10.0, 0.0, 0.0), rtol=0, atol=1e-9)


def test_setting_attributes_moves_the_collider_between_steps() -> None:
    """Attributes written between steps are what the next step uses: a node resting at
    (0, 0.5, 0) is pushed to the sphere's surface after the sphere is moved under it, then
    further out when the radius and the thickness grow."""
    s = particle((0.0, 0.5, 0.0))
    sphere = s.add_sphere((5.0, 0.0, 0.0), 1.0)
    s.step(0.01)
    np.testing.assert_array_equal(s.x[0], (0.0, 0.5, 0.0))
    sphere.center = (0.0, 0.0, 0.0)
    np.testing.assert_array_equal(sphere.center, (0.0, 0.0, 0.0))
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 1.0, 0.0), rtol=0, atol=TIGHT)
    sphere.radius = 2.0
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 2.0, 0.0), rtol=0, atol=TIGHT)
    sphere.thickness = 0.25
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 2.25, 0.0), rtol=0, atol=TIGHT)
    assert (sphere.radius, sphere.thickness) == (2.0, 0.25)


def test_other_kinds_attributes_take_effect() -> None:
    """Changing a plane's normal, a box's half extents and a cylinder's height and axis."""
    s = particle((0.0, 0.5, 0.0))
    plane = s.add_plane((0.0, 1.0, 0.0), (0.0, -1.0, 0.0))  # solid above y = 1: no contact
    s.step(0.01)
    np.testing.assert_array_equal(s.x[0], (0.0, 0.5, 0.0))
    plane.normal = (0.0, 2.0, 0.0)  # now solid below y = 1: the node is pushed up to it
    np.testing.assert_array_equal(plane.normal, (0.0, 1.0, 0.0))
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 1.0, 0.0), rtol=0, atol=TIGHT)
    s.remove_collider(plane)

    box = s.add_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0))
    box.half_extents = (1.0, 1.5, 1.0)
    np.testing.assert_array_equal(box.half_extents, (1.0, 1.5, 1.0))
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 1.5, 0.0), rtol=0, atol=TIGHT)
    s.remove_collider(box)

    cylinder = s.add_cylinder((0.0, 0.0, 0.0), 0.5, 3.2)
    cylinder.height = 4.0
    assert cylinder.height == 4.0
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 2.0, 0.0), rtol=0, atol=TIGHT)
    cylinder.axis = (1.0, 0.0, 0.0)  # lying along x: the node at (0, 2, 0) is 1.5 m above its side
    s.x[0] = (0.0, 0.25, 0.0)
    s.step(0.01)
    np.testing.assert_allclose(s.x[0], (0.0, 0.5, 0.0), rtol=0, atol=TIGHT)


def hanging_cloth(n: int, spacing: float) -> msprings.System:
    """A vertical n x n cloth in the z = 0 plane, node (i, j) at (j h, -i h, 0), top row pinned,
    light and soft (10 g nodes, k = 50 N/m, c = 0.05 N s/m), gravity on."""
    rows, columns = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.zeros((n * n, 3))
    positions[:, 0] = columns.ravel() * spacing
    positions[:, 1] = -rows.ravel() * spacing
    return msprings.System(positions, cloth_springs(n), mass=0.01, k=50.0, c=0.05, pinned=list(range(n)))


@pytest.mark.parametrize("driven_by", ["center", "velocity"])
def test_sphere_swept_through_a_hanging_cloth(driven_by: str) -> None:
    """A sphere moved through a hanging cloth (by writing its centre every step, or by giving it
    a velocity) leaves no free node inside it after any step, and it does displace the cloth."""
    s = hanging_cloth(10, 0.1)
    dt = 1e-3
    s.step(dt, 500)
    speed = 2.5
    start = np.array([0.45, -0.5, -0.4])
    if driven_by == "center":
        sphere = s.add_sphere(tuple(start), 0.2)
    else:
        sphere = s.add_sphere(tuple(start), 0.2, velocity=(0.0, 0.0, speed))
    free = ~s.pinned
    for step in range(1, 301):
        if driven_by == "center":
            sphere.center = start + (0.0, 0.0, speed * dt * step)
        s.step(dt)
        assert sphere.distance(s.x[free]).min() >= -1e-12
    assert sphere.center[2] == pytest.approx(start[2] + speed * dt * 300, abs=1e-9)
    assert s.x[:, 2].max() > 0.2  # the sphere carried the cloth with it


@pytest.mark.parametrize("threads", [1, 2])
def test_many_steps_in_one_call_equal_one_step_per_call(threads: int) -> None:
    """Within one step(h, n) call the contact pass carries each node's known gap to each
    collider from step to step and passes over far nodes without evaluating a distance; a
    call of one step starts without that knowledge.  Both must give the same states bit for
    bit: a settling tablecloth (table and ground) with a sphere moving through its hanging
    part, a plane rising under it, and a collider added and one removed between calls."""
    from msprings.scenes import tablecloth

    one = tablecloth(24)  # 1,058 springs: threads only when asked for with enough springs below
    one.threads = threads
    one.step(0.002, 300)
    one.add_sphere((13.0, 5.0, 0.0), 1.5, velocity=(0.0, 0.0, 4.0), friction=0.2)
    one.add_plane((0.0, -3.0, 0.0), (0.0, 1.0, 0.0), velocity=(0.0, 0.5, 0.0))
    each = one.copy()
    for round in range(3):
        for system in (one, each):  # more and fewer colliders: the per-node store follows
            if round == 1:
                system.add_box((-2.0, 9.5, -2.0), (2.0, 10.2, 2.0))
            elif round == 2:
                system.remove_collider(system.colliders[0])
        one.step(0.002, 200)
        for _ in range(200):
            each.step(0.002)
        assert np.array_equal(one.x, each.x) and np.array_equal(one.v, each.v)
        assert one.dissipated == each.dissipated
    free = ~one.pinned
    for collider in one.colliders:
        assert collider.distance(one.x[free]).min() >= -1e-9
    assert one.x[free, 1].min() > -3.0  # the rising plane held the hanging edges


@pytest.mark.parametrize("threads", [1, 2])
def test_a_push_by_a_later_collider_is_seen_by_an_earlier_one(threads: int) -> None:
    """A rising plane with restitution 1 (listed second) kicks a node up towards a fixed
    ceiling (listed first).  The kick moves the node after the ceiling has looked at it in
    the same step; within one call of many steps the ceiling must still stop the node,
    exactly as a call per step does."""

    def kicked() -> msprings.System:
        # the node of interest, and (for threads = 2) a chain of pinned nodes for the springs
        count = 1 if threads == 1 else 10_002
        positions = np.zeros((count, 3))
        positions[1:, 0] = 5.0 + np.arange(count - 1)
        springs = np.stack((np.arange(1, count - 1), np.arange(2, count)), axis=1)
        pinned = np.arange(count) > 0
        system = msprings.System(positions, springs, pinned=pinned, gravity=(0.0, 0.0, 0.0))
        system.threads = threads
        system.add_plane((0.0, 0.0485, 0.0), (0.0, -1.0, 0.0))
        system.add_plane((0.0, -0.001, 0.0), (0.0, 1.0, 0.0), velocity=(0.0, 1.0, 0.0), restitution=1.0)
        return system

    one, each = kicked(), kicked()
    one.step(0.002, 13)
    for _ in range(13):
        each.step(0.002)
    assert np.array_equal(one.x, each.x) and np.array_equal(one.v, each.v)
    assert one.x[0, 1] == pytest.approx(0.0485, abs=1e-12)  # stopped at the ceiling
    assert one.v[0, 1] <= 0.0


# ---- no tunnelling --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "add, face",
    [
        (lambda s, e: s.add_box((-1.0, -0.01, -1.0), (1.0, 0.01, 1.0), restitution=e), 0.01),
        (lambda s, e: s.add_sphere((0.0, 0.0, 0.0), 0.05, restitution=e), 0.05),
        (lambda s, e: s.add_cylinder((0.0, 0.0, 0.0), 0.5, 0.02, restitution=e), 0.01),
    ],
    ids=["thin box", "small sphere", "thin disc"],
)
@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_fast_node_does_not_tunnel(add: Callable[[msprings.System, float], Collider], face: float,
                                   restitution: float) -> None:
    """A node at 10 m/s crosses a 2 cm (or 10 cm) thin collider in one step of 0.1 s: without
    the collider it ends 0.5 m below it; with it, it is stopped on the top face (and bounces
    with -e v_n)."""
    start, velocity = (0.0, 0.5, 0.0), (0.0, -10.0, 0.0)
    free = particle(start, velocity)
    free.step(0.1)
    np.testing.assert_allclose(free.x[0], (0.0, -0.5, 0.0), rtol=0, atol=1e-15)
    s = particle(start, velocity)
    add(s, restitution)
    s.step(0.1)
    np.testing.assert_allclose(s.x[0], (0.0, face, 0.0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(s.v[0], (0.0, 10.0 * restitution, 0.0), rtol=0, atol=1e-9)


def test_fast_nodes_aimed_off_centre_do_not_pass_a_small_sphere() -> None:
    """Nodes at 20 m/s aimed at a 5 cm sphere with random offsets would be 1 m past it after a
    0.1 s step.  With the sphere they end on the side they came from: in the half-space
    outside the tangent plane at the point where their path enters it (from a ray-sphere
    intersection in NumPy), not moving into that plane."""
    rng = np.random.default_rng(12)
    radius, dt, speed = 0.05, 0.1, 20.0
    directions = rng.normal(size=(30, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    sideways = rng.normal(size=(30, 3))
    sideways -= np.einsum("ij,ij->i", sideways, directions)[:, None] * directions
    sideways *= (rng.uniform(0.0, 0.9 * radius, size=30) / np.linalg.norm(sideways, axis=1))[:, None]
    starts = sideways - 1.0 * directions  # 1 m before the sphere, aimed within 0.9 R of its centre
    velocities = speed * directions
    s = msprings.System(starts, NO_SPRINGS, velocities=velocities, gravity=(0.0, 0.0, 0.0))
    sphere = s.add_sphere((0.0, 0.0, 0.0), radius)
    s.step(dt)
    # entry: |start + a d| = R, smaller root
    b = np.einsum("ij,ij->i", starts, directions)
    a = -b - np.sqrt(b * b - (np.einsum("ij,ij->i", starts, starts) - radius**2))
    entry_normal = (starts + a[:, None] * directions) / radius
    assert np.all(np.einsum("ij,ij->i", s.x, entry_normal) >= radius - 1e-9)
    assert np.all(np.einsum("ij,ij->i", s.v, entry_normal) >= -1e-9)
    assert np.all(sphere.distance(s.x) >= -1e-12)
    assert np.all(np.einsum("ij,ij->i", starts + dt * velocities, entry_normal) < 0.0)  # where they would be


# ---- pinned nodes, listing, removal, copies -------------------------------------------------


def test_pinned_nodes_are_never_moved() -> None:
    """A pinned node inside a sphere stays there; a pinned node with its own velocity passes
    through the ground; a free node that starts inside the sphere beside them is pushed out
    and falls to the ground."""
    s = msprings.System([[0.0, 1.2, 0.0], [0.2, 1.0, 0.0], [3.0, 0.1, 0.0]], NO_SPRINGS,
                        velocities=[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, -1.0, 0.0]],
                        pinned=[0, 2], gravity=(0.0, -GRAVITY, 0.0))
    sphere = s.add_sphere((0.0, 1.0, 0.0), 0.5)
    s.add_plane(friction=1.0)
    dt = 0.01
    s.step(dt)
    assert sphere.distance(s.x[1:2])[0] == pytest.approx(0.0, abs=1e-12)
    s.step(dt, 99)
    np.testing.assert_array_equal(s.x[0], (0.0, 1.2, 0.0))
    np.testing.assert_array_equal(s.v[0], 0.0)
    np.testing.assert_allclose(s.x[2], (3.0, 0.1 - 100 * dt, 0.0), rtol=0, atol=1e-14)
    np.testing.assert_array_equal(s.v[2], (0.0, -1.0, 0.0))
    assert abs(s.x[1, 1]) <= 1e-15  # the free node is on the ground


def test_listing_and_removal() -> None:
    """``colliders`` lists handles in order of addition; removal by handle or id; a removed
    handle raises KeyError on use, and so does removing it again or an unknown id."""
    s = particle((0.0, 0.5, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    ground = s.add_plane()
    ball = s.add_sphere((3.0, 0.0, 0.0), 1.0)
    table = s.add_cylinder((-3.0, 0.0, 0.0), 1.0, 0.5)
    box = s.add_box((5.0, 5.0, 5.0), (6.0, 6.0, 6.0))
    assert s.colliders == (ground, ball, table, box)
    assert [c.kind for c in s.colliders] == ["plane", "sphere", "cylinder", "box"]
    assert len({c.id for c in s.colliders}) == 4
    s.remove_collider(ball)
    s.remove_collider(table.id)
    assert s.colliders == (ground, box)
    for removed in (ball, table):
        with pytest.raises(KeyError):
            removed.radius
        with pytest.raises(KeyError):
            removed.restitution = 0.5
        with pytest.raises(KeyError):
            s.remove_collider(removed)
    with pytest.raises(KeyError):
        s.remove_collider(987654)
    other = particle((0.0, 0.0, 0.0))
    with pytest.raises(KeyError):
        other.remove_collider(ground)
    assert s.colliders == (ground, box)
    # the ground still holds the node up; after it is removed, the node falls through
    s.step(1e-2, 50)
    assert s.x[0, 1] == 0.0
    s.remove_collider(ground)
    s.step(1e-2, 50)
    assert s.x[0, 1] < -0.1


def test_handle_id_and_kind_are_read_only() -> None:
    """A handle's ``kind`` and ``id`` cannot be written (the documented exceptions among the
    attributes): rebinding ``id`` would silently point the handle at another collider."""
    s = particle((0.0, 0.0, 0.0))
    box = s.add_box((5.0, 5.0, 5.0), (6.0, 6.0, 6.0))
    sphere = s.add_sphere((0.0, 0.0, 0.0), 1.0)
    with pytest.raises(AttributeError):
        box.kind = "sphere"
    with pytest.raises(AttributeError):
        box.id = sphere.id
    assert box.kind == "box"


def test_new_ids_are_not_reused() -> None:
    """A handle kept after its collider was removed never starts to refer to a new collider."""
    s = particle((0.0, 0.0, 0.0))
    first = s.add_sphere((0.0, 0.0, 0.0), 1.0)
    s.remove_collider(first)
    second = s.add_sphere((0.0, 0.0, 0.0), 2.0)
    assert second.id != first.id
    with pytest.raises(KeyError):
        first.radius


def test_copy_has_independent_colliders() -> None:
    """``copy()`` and ``copy.deepcopy`` copy the colliders: changing, moving or removing them in
    one system leaves the other's alone."""
    s = particle((0.0, 2.0, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane(restitution=0.5)
    sphere = s.add_sphere((0.0, -5.0, 0.0), 1.0, velocity=(1.0, 0.0, 0.0), friction=0.2)
    for duplicate in (s.copy(), copy.deepcopy(s)):
        assert [c.kind for c in duplicate.colliders] == ["plane", "sphere"]
        twin = duplicate.colliders[1]
        np.testing.assert_array_equal(twin.center, sphere.center)
        assert (twin.radius, twin.friction) == (1.0, 0.2)
        twin.radius = 3.0
        duplicate.step(0.1, 5)
        assert sphere.radius == 1.0
        np.testing.assert_array_equal(sphere.center, (0.0, -5.0, 0.0))
        np.testing.assert_allclose(twin.center, (0.5, -5.0, 0.0), rtol=0, atol=1e-12)
        duplicate.remove_collider(duplicate.colliders[0])
        assert len(s.colliders) == 2
    s.step(0.1, 5)
    np.testing.assert_allclose(sphere.center, (0.5, -5.0, 0.0), rtol=0, atol=1e-12)


def test_reset_puts_moving_colliders_back_where_they_started() -> None:
    """A sphere at y = -5 rising at 1 m/s is at y = -4 after one second and back at -5 after
    reset(), with t back at 0: where a collider is belongs to the state."""
    s = particle((0.0, 10.0, 0.0))
    sphere = s.add_sphere((0.0, -5.0, 0.0), 0.5, velocity=(0.0, 1.0, 0.0))
    s.step(0.01, 100)
    np.testing.assert_allclose(sphere.center, (0.0, -4.0, 0.0), rtol=0, atol=1e-12)
    s.reset()
    assert s.t == 0.0 and s.steps == 0
    np.testing.assert_array_equal(sphere.center, (0.0, -5.0, 0.0))
    # the second run retraces the first
    s.step(0.01, 100)
    np.testing.assert_allclose(sphere.center, (0.0, -4.0, 0.0), rtol=0, atol=1e-12)


def test_moving_a_collider_before_the_first_step_sets_where_it_starts() -> None:
    """Set-up (before any step) moves the start too; moving it during a run does not."""
    s = particle((0.0, 10.0, 0.0))
    box = s.add_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0), velocity=(0.0, 0.0, 2.0))
    box.center = (3.0, 0.0, 0.0)  # set-up
    s.step(0.5, 2)
    np.testing.assert_allclose(box.center, (3.0, 0.0, 2.0), rtol=0, atol=1e-12)
    box.center = (7.0, 0.0, 0.0)  # during the run: moves it now
    box.velocity = (0.0, 0.0, 0.0)
    s.step(0.5, 2)
    np.testing.assert_array_equal(box.center, (7.0, 0.0, 0.0))
    s.reset()
    np.testing.assert_array_equal(box.center, (3.0, 0.0, 0.0))


def test_copy_and_model_files_carry_where_colliders_are_and_start(tmp_path: Path) -> None:
    """A copy or a saved and loaded system taken mid-run has its colliders where the
    original has them, steps on identically and resets to the same start."""
    s = particle((0.0, 1.0, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane((0.0, -1.0, 0.0), velocity=(0.0, 0.5, 0.0), restitution=0.5)
    s.add_sphere((2.0, 0.0, 0.0), 0.3, velocity=(-1.0, 0.0, 0.0))
    s.step(0.01, 37)
    path = tmp_path / "mid-run.npz"
    model_io.save(s, path)
    for twin in (s.copy(), model_io.load(path)):
        for mine, theirs in zip(s.colliders, twin.colliders):
            np.testing.assert_array_equal(theirs.center, mine.center)
        twin.step(0.01, 50)
        twin.reset()
        np.testing.assert_array_equal(twin.colliders[0].center, (0.0, -1.0, 0.0))
        np.testing.assert_array_equal(twin.colliders[1].center, (2.0, 0.0, 0.0))
    reference, loaded = s.copy(), model_io.load(path)
    for system in (reference, loaded):
        system.step(0.01, 200)
    assert np.array_equal(reference.x, loaded.x) and np.array_equal(reference.v, loaded.v)
    for mine, theirs in zip(reference.colliders, loaded.colliders):
        np.testing.assert_array_equal(theirs.center, mine.center)


# ---- energy ledger ------------------------------------------------------------------------------


def apex_heights(heights: np.ndarray) -> np.ndarray:
    """Local maxima of a sampled height curve (excluding the first sample)."""
    inner = heights[1:-1]
    return inner[(inner > heights[:-2]) & (inner >= heights[2:])]


def test_bouncing_ball_ledger_velocity_verlet() -> None:
    """A 2 kg ball dropped from 1 m on a plane with e = 0.7.  Verlet integrates free fall
    exactly, and a contact books the kinetic energy it removes less the gravitational energy of
    its push, so mechanical + dissipated stays at its initial value to rounding over several
    bounces; each bounce reaches about e^2 of the previous apex."""
    mass, e, dt = 2.0, 0.7, 1e-4
    s = particle((0.0, 1.0, 0.0), mass=mass, gravity=(0.0, -GRAVITY, 0.0), integrator="velocity_verlet")
    s.add_plane(restitution=e)
    initial = s.energy().total
    assert initial == pytest.approx(mass * GRAVITY * 1.0)
    heights, totals = [], []
    for _ in range(2500):
        s.step(dt, 10)
        heights.append(s.x[0, 1])
        totals.append(s.energy().total)
    np.testing.assert_allclose(totals, initial, rtol=0, atol=1e-9)
    apexes = apex_heights(np.array(heights))
    apexes = apexes[apexes > 1e-3]
    assert len(apexes) >= 4
    np.testing.assert_allclose(apexes[:4], [e ** (2 * k) for k in range(1, 5)], rtol=0.02)
    assert s.energy().dissipated > 0.9 * initial * (1 - e ** 8)


def test_bouncing_ball_ledger_symplectic_euler_closed_form() -> None:
    """Symplectic Euler under constant gravity changes mechanical energy by exactly
    -m g^2 h^2 / 2 per step, whatever the state; contacts conserve mechanical + dissipated.
    So after n steps the total is E0 - n m g^2 h^2 / 2, through every bounce."""
    mass, e, dt = 1.5, 0.6, 2e-4
    s = particle((0.0, 0.8, 0.0), mass=mass, gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane(restitution=e)
    initial = s.energy().total
    bounces = 0
    previous_vy = 0.0
    for chunk in range(1, 151):
        s.step(dt, 50)
        n = 50 * chunk
        assert s.energy().total == pytest.approx(initial - n * mass * GRAVITY**2 * dt**2 / 2, abs=1e-9)
        if previous_vy < 0.0 < s.v[0, 1]:
            bounces += 1
        previous_vy = s.v[0, 1]
    assert bounces >= 3


def test_bounce_step_books_kinetic_loss_less_the_lift_as_contact() -> None:
    """The step in which the ball hits the plane, reproduced in NumPy: symplectic Euler takes
    it below the plane, the contact puts it back and scales v_n by -e.  The plane is at rest,
    so it does no work: the push changes the mechanical energy by the kinetic energy it
    removes less the gravitational energy of lifting the ball back to the surface, and that
    net loss is the contact's dissipation."""
    mass, e, dt = 0.7, 0.4, 0.01
    s = particle((0.3, 0.02, 0.0), (0.5, -3.0, 0.0), mass=mass, gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane(restitution=e, friction=0.1)
    gravity = np.array([0.0, -GRAVITY, 0.0])
    v_integrated = np.array([0.5, -3.0, 0.0]) + dt * gravity
    x_integrated = np.array([0.3, 0.02, 0.0]) + dt * v_integrated
    assert x_integrated[1] < 0.0
    push = np.array([0.0, -x_integrated[1], 0.0])
    normal_change = -(1 + e) * v_integrated[1]
    v_after = np.array([v_integrated[0] * (1 - 0.1 * normal_change / v_integrated[0]), -e * v_integrated[1], 0.0])
    kinetic_loss = 0.5 * mass * (v_integrated @ v_integrated - v_after @ v_after)
    lift = -mass * gravity @ push
    assert kinetic_loss > lift > 0.0
    s.step(dt)
    np.testing.assert_allclose(s.v[0], v_after, rtol=0, atol=1e-14)
    np.testing.assert_allclose(s.x[0], x_integrated + push, rtol=0, atol=1e-14)
    assert s.dissipated == pytest.approx(kinetic_loss - lift, abs=1e-13)
    assert s.ledger().contact == s.dissipated
    assert s.work == s.ledger().colliders == s.ledger().constraints == 0.0
    assert s.energy().total == pytest.approx(mass * GRAVITY * 0.02 + 0.5 * mass * (0.25 + 9.0)
                                             - mass * GRAVITY**2 * dt**2 / 2, abs=1e-12)


# ---- a jelly cube lands on the ground -------------------------------------------------------------


def jelly_cube(n: int = 4, spacing: float = 0.1, *, height: float = 0.3, mass: float = 0.05,
               k: float = 300.0, zeta: float = 0.9) -> msprings.System:
    """An n x n x n lattice of nodes ``spacing`` apart, its lowest corner at (0, height, 0),
    joined by structural (axis neighbours), shear (face and body diagonals) and bend (two apart
    along an axis) springs at rest, each damped at ratio ``zeta`` of the pair."""
    grid = np.stack(np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij"), axis=-1).reshape(-1, 3)
    index = np.arange(n**3).reshape(n, n, n)
    offsets = [(1, 0, 0), (0, 1, 0), (0, 0, 1),
               (1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1),
               (1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1),
               (2, 0, 0), (0, 2, 0), (0, 0, 2)]
    pairs = []
    for node, cell in enumerate(grid):
        for offset in offsets:
            other = cell + offset
            if np.all(other >= 0) and np.all(other < n):
                pairs.append((node, int(index[tuple(other)])))
    c = float(msprings.damping_for_ratio(zeta, k, mass, mass))
    return msprings.System(grid * spacing + (0.0, height, 0.0), pairs, mass=mass, k=k, c=c)


def test_jelly_cube_comes_to_rest_on_the_ground() -> None:
    """A 4 x 4 x 4 jelly cube dropped from 0.3 m lands on a ground plane with friction: no node
    is ever below the ground, and it ends at rest, standing on it, barely deformed."""
    s = jelly_cube()
    s.add_plane(friction=0.5)
    dt = 5e-4
    assert dt < 0.5 * s.critical_dt()
    lowest = math.inf
    for _ in range(4000):
        s.step(dt)
        lowest = min(lowest, float(s.x[:, 1].min()))
    assert lowest >= -1e-12
    assert np.abs(s.v).max() < 1e-2
    assert s.x[:, 1].min() == pytest.approx(0.0, abs=1e-9)  # standing on the ground
    assert np.abs(s.strain()).max() < 0.2
    # its footprint did not drift: friction held it where it landed
    np.testing.assert_allclose(s.x[:, [0, 2]].mean(axis=0), 0.15, atol=1e-3)


# ---- bad input ----------------------------------------------------------------------------------


KIND_ATTRIBUTES = {"plane": ("normal",), "sphere": ("radius",), "box": ("half_extents",),
                   "cylinder": ("radius", "height", "axis")}


def collider_snapshot(s: msprings.System) -> list[tuple[object, ...]]:
    """Every public attribute of every collider of ``s``, in order, as plain comparable values."""
    snapshot = []
    for collider in s.colliders:
        names = ("kind", "center", "velocity", "restitution", "friction", "thickness") + KIND_ATTRIBUTES[collider.kind]
        snapshot.append((collider.id,) + tuple(np.asarray(getattr(collider, name)).tolist() for name in names))
    return snapshot


BAD_ADDS = [
    ("zero normal", lambda s: s.add_plane((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), ValueError),
    ("NaN normal", lambda s: s.add_plane((0.0, 0.0, 0.0), (math.nan, 1.0, 0.0)), ValueError),
    ("inf point", lambda s: s.add_plane((math.inf, 0.0, 0.0)), ValueError),
    ("point shape", lambda s: s.add_plane((0.0, 0.0)), ValueError),
    ("point 2-D", lambda s: s.add_plane([[0.0, 0.0, 0.0]]), ValueError),
    ("restitution > 1", lambda s: s.add_plane(restitution=1.5), ValueError),
    ("restitution < 0", lambda s: s.add_plane(restitution=-0.1), ValueError),
    ("restitution NaN", lambda s: s.add_plane(restitution=math.nan), ValueError),
    ("negative friction", lambda s: s.add_plane(friction=-0.1), ValueError),
    ("NaN friction", lambda s: s.add_plane(friction=math.nan), ValueError),
    ("negative thickness", lambda s: s.add_plane(thickness=-0.01), ValueError),
    ("NaN velocity", lambda s: s.add_plane(velocity=(0.0, math.nan, 0.0)), ValueError),
    ("velocity shape", lambda s: s.add_plane(velocity=(0.0, 1.0)), ValueError),
    ("negative radius", lambda s: s.add_sphere((0.0, 0.0, 0.0), -1.0), ValueError),
    ("zero radius", lambda s: s.add_sphere((0.0, 0.0, 0.0), 0.0), ValueError),
    ("NaN radius", lambda s: s.add_sphere((0.0, 0.0, 0.0), math.nan), ValueError),
    ("NaN center", lambda s: s.add_sphere((0.0, math.nan, 0.0), 1.0), ValueError),
    ("box upside down", lambda s: s.add_box((0.0, 0.0, 0.0), (1.0, -1.0, 1.0)), ValueError),
    ("flat box", lambda s: s.add_box((0.0, 0.0, 0.0), (1.0, 0.0, 1.0)), ValueError),
    ("box corner shape", lambda s: s.add_box((0.0, 0.0, 0.0), (1.0, 1.0)), ValueError),
    ("negative height", lambda s: s.add_cylinder((0.0, 0.0, 0.0), 1.0, -1.0), ValueError),
    ("negative cylinder radius", lambda s: s.add_cylinder((0.0, 0.0, 0.0), -1.0, 1.0), ValueError),
    ("zero axis", lambda s: s.add_cylinder((0.0, 0.0, 0.0), 1.0, 1.0, (0.0, 0.0, 0.0)), ValueError),
    ("string restitution", lambda s: s.add_plane(restitution="0.5"), TypeError),
    ("string point", lambda s: s.add_plane("abc"), TypeError),
    ("complex velocity", lambda s: s.add_plane(velocity=(1j, 0.0, 0.0)), TypeError),
    ("None radius", lambda s: s.add_sphere((0.0, 0.0, 0.0), None), TypeError),
    ("unknown kind", lambda s: s._add_collider("torus", np.zeros(3), np.array([0.0, 1.0, 0.0]), np.ones(3),
                                               np.zeros(3), 0.0, 0.0, 0.0), ValueError),
]


@pytest.mark.parametrize("add, error", [(add, error) for _, add, error in BAD_ADDS],
                         ids=[name for name, _, _ in BAD_ADDS])
def test_bad_collider_is_refused(add: Callable[[msprings.System], Collider], error: type[Exception]) -> None:
    """A bad collider raises ValueError or TypeError and the system is unchanged: same
    colliders with the same values, same state; and the existing colliders still work."""
    s = particle((0.0, 0.5, 0.0), gravity=(0.0, -GRAVITY, 0.0))
    s.add_plane(friction=0.2)
    s.add_sphere((4.0, 0.0, 0.0), 1.0)
    before = collider_snapshot(s)
    with pytest.raises(error):
        add(s)
    assert collider_snapshot(s) == before
    np.testing.assert_array_equal(s.x, [[0.0, 0.5, 0.0]])
    s.step(0.01, 100)
    assert s.x[0, 1] == 0.0


BAD_SETS = [
    ("radius", -1.0, ValueError),
    ("radius", 0.0, ValueError),
    ("radius", math.nan, ValueError),
    ("radius", "big", TypeError),
    ("center", (math.nan, 0.0, 0.0), ValueError),
    ("center", (0.0, 0.0), ValueError),
    ("center", ("a", "b", "c"), TypeError),
    ("velocity", (0.0, math.inf, 0.0), ValueError),
    ("restitution", 2.0, ValueError),
    ("restitution", -0.5, ValueError),
    ("friction", -1.0, ValueError),
    ("friction", math.inf, ValueError),
    ("thickness", -0.1, ValueError),
    ("thickness", math.nan, ValueError),
]


@pytest.mark.parametrize("name, value, error", BAD_SETS)
def test_bad_attribute_is_refused(name: str, value: object, error: type[Exception]) -> None:
    """Writing a bad value to a collider attribute raises and changes nothing."""
    s = particle((0.0, 0.5, 0.0))
    sphere = s.add_sphere((0.0, 0.0, 0.0), 1.0, restitution=0.5, friction=0.1, thickness=0.01)
    before = collider_snapshot(s)
    with pytest.raises(error):
        setattr(sphere, name, value)
    assert collider_snapshot(s) == before


def test_kind_specific_attributes() -> None:
    """Attributes of another kind are refused with AttributeError, for reading and writing, and
    bad shape values for the kinds that have them raise ValueError."""
    s = particle((0.0, 0.5, 0.0))
    plane, sphere = s.add_plane(), s.add_sphere((0.0, 0.0, 0.0), 1.0)
    box = s.add_box((0.0, 0.0, 0.0), (1.0, 2.0, 3.0))
    cylinder = s.add_cylinder((0.0, 0.0, 0.0), 1.0, 2.0)
    for collider, names in [(plane, ("radius", "axis", "half_extents", "height")),
                            (sphere, ("normal", "axis", "half_extents", "height")),
                            (box, ("normal", "radius", "axis", "height")),
                            (cylinder, ("normal", "half_extents"))]:
        for name in names:
            with pytest.raises(AttributeError):
                getattr(collider, name)
            with pytest.raises(AttributeError):
                setattr(collider, name, 1.0)
    np.testing.assert_array_equal(box.half_extents, (0.5, 1.0, 1.5))
    np.testing.assert_array_equal(box.center, (0.5, 1.0, 1.5))
    before = collider_snapshot(s)
    for collider, name, value in [(plane, "normal", (0.0, 0.0, 0.0)), (box, "half_extents", (1.0, -1.0, 1.0)),
                                  (box, "half_extents", (1.0, 1.0)), (cylinder, "height", -2.0),
                                  (cylinder, "axis", (0.0, 0.0, 0.0)), (cylinder, "radius", -1.0)]:
        with pytest.raises(ValueError):
            setattr(collider, name, value)
    assert collider_snapshot(s) == before


def test_static_friction_holds_a_node_on_a_slope_without_creep() -> None:
    """On a 30 degree slope a node with mu > tan(30 deg) stays exactly where it is (friction
    holds it: no creep of g sin(theta) h per step), and with mu < tan(30 deg) it slides with
    the closed-form acceleration g (sin(theta) - mu cos(theta))."""
    theta = np.radians(30.0)
    normal = (-np.sin(theta), np.cos(theta), 0.0)
    held = msprings.System([[0.0, 0.0, 0.0]], NO_SPRINGS)
    held.add_plane(normal=normal, friction=0.7)
    held.step(1e-3, 1000)
    np.testing.assert_allclose(held.x[0], 0.0, atol=1e-15)
    np.testing.assert_allclose(held.v[0], 0.0, atol=1e-15)
    sliding = msprings.System([[0.0, 0.0, 0.0]], NO_SPRINGS)
    sliding.add_plane(normal=normal, friction=0.3)
    sliding.step(1e-3, 1000)
    acceleration = GRAVITY * (np.sin(theta) - 0.3 * np.cos(theta))
    assert np.linalg.norm(sliding.v[0]) == pytest.approx(acceleration * 1.0, rel=1e-9)
