"""A flat mesh (every vertex in one plane, e.g. a triangulated 2-D outline) given material
values as a solid (``stabilise="center"``) has no volume: from_mesh says so and what to do,
and the sheet it points to has the membrane's mass and stiffness."""

from __future__ import annotations

import numpy as np
import pytest

from msprings import mesh


def hexagon(radius: float = 0.5, tilt: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A regular hexagon of side ``radius`` (m) cut into six triangles around its centre,
    in the z = 0 plane or (``tilt``) in a plane through the origin at an angle to every axis."""
    angles = np.linspace(0.0, 2.0 * np.pi, 7)[:-1]
    vertices = np.column_stack([radius * np.cos(angles), radius * np.sin(angles), np.zeros(6)])
    vertices = np.vstack([vertices, np.zeros(3)])
    if tilt:
        rotation, _ = np.linalg.qr(np.array([[1.0, 0.3, 0.2], [0.1, 1.0, 0.4], [0.5, 0.2, 1.0]]))
        vertices = vertices @ rotation.T + np.array([2.0, 1.0, -3.0])
    faces = np.array([[6, i, (i + 1) % 6] for i in range(6)])
    return vertices, faces


@pytest.mark.parametrize("tilt", [False, True], ids=["z=0", "tilted"])
@pytest.mark.parametrize("material", [dict(density=100.0, youngs_modulus=1e5), dict(density=100.0),
                                      dict(total_mass=0.2, k=50.0), dict(youngs_modulus=1e5)],
                         ids=["density+E", "density", "total_mass", "E"])
def test_flat_mesh_as_a_solid_says_it_is_flat_and_what_to_do(tilt: bool, material: dict[str, float]) -> None:
    vertices, faces = hexagon(tilt=tilt)
    with pytest.raises(ValueError, match=r"the mesh is flat.*no volume.*convert it as a sheet.*thickness") as caught:
        mesh.from_mesh(vertices, faces, stabilise="center", **material)
    assert "NaN" not in str(caught.value)


def test_the_sheet_it_points_to_has_the_membranes_mass_and_stiffness() -> None:
    density, thickness, modulus, side = 100.0, 1e-3, 1e5, 0.5
    vertices, faces = hexagon(side, tilt=True)
    sheet = mesh.from_mesh(vertices, faces, density=density, thickness=thickness, youngs_modulus=modulus,
                           damping_ratio=0.1)
    area = 3.0 * np.sqrt(3.0) / 2.0 * side**2
    assert sheet.mass.sum() == pytest.approx(density * area * thickness, rel=1e-12)
    # six equilateral triangles: the centre vertex has a third of all six, each rim vertex of two
    assert sheet.mass[6] == pytest.approx(density * thickness * area / 3.0, rel=1e-12)
    # k = E t A_e / L^2: summed with L^2 every triangle is counted once per side, 3 E t A in all
    lengths = np.linalg.norm(sheet.x[sheet.springs[:, 1]] - sheet.x[sheet.springs[:, 0]], axis=1)
    assert float(np.sum(sheet.k * lengths**2)) == pytest.approx(3.0 * modulus * thickness * area, rel=1e-12)
    sheet.pinned[:6] = True  # the rim held, the middle sags under gravity and stays finite
    sheet.step(1e-4, 2000)
    assert np.isfinite(sheet.x).all() and np.ptp(sheet.x @ np.cross(vertices[1] - vertices[6],
                                                                    vertices[2] - vertices[6])) > 0.0


def test_a_flat_mesh_with_per_node_values_still_converts_with_a_centre() -> None:
    vertices, faces = hexagon()
    with pytest.warns(mesh.OpenMeshWarning):
        wheel = mesh.from_mesh(vertices, faces, stabilise="center", mass=0.1, k=50.0)
    assert wheel.n_nodes == 8 and np.isfinite(wheel.mass).all()


def test_a_body_with_volume_is_still_a_solid() -> None:
    ball = mesh.icosphere(1, radius=0.2)
    solid = mesh.from_mesh(ball.vertices, ball.faces, stabilise="center", density=1000.0, youngs_modulus=1e5)
    volume = float(mesh.element_sizes(ball.vertices, ball.faces, solid=True).sum())
    assert solid.mass.sum() == pytest.approx(1000.0 * volume, rel=1e-12)
