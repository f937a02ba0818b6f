"""Plotting (msprings.plot): what each picture contains, checked against the simulation.

The pictures are drawn with the Agg backend and inspected through their artists: one line
segment per spring at the spring's end points, colours equal to the strain or tension the
system reports, one marker per pinned node, collider surfaces lying on the colliders, equal
scales on the three axes, limits that hold every node and collider, animation frames that
follow the recorded run, and the theoretical stability limits of the integrators.
"""

from __future__ import annotations

import base64
import io
import math
import os
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib import animation as mpl_animation  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection  # noqa: E402
from mpl_toolkits.mplot3d.axes3d import Axes3D  # noqa: E402
from PIL import Image  # noqa: E402

import msprings  # noqa: E402
from msprings import mesh, plot, scenes, stability  # noqa: E402
from msprings.plot import _draw  # noqa: E402
from msprings.trajectory import ENERGY_FIELDS, LEDGER_FIELDS  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    """Every test starts and ends without open figures."""
    plt.close("all")
    yield
    plt.close("all")


def screen(points: np.ndarray) -> np.ndarray:
    """Simulation (x, y, z) as drawn: matplotlib's (x, z, y), y up."""
    return np.asarray(points)[..., [0, 2, 1]]


def labelled(ax: Axes3D, label: str) -> list:
    """Artists (collections and lines) of ``ax`` with the given label."""
    return [artist for artist in [*ax.collections, *ax.lines] if artist.get_label() == label]


def only(ax: Axes3D, label: str):
    found = labelled(ax, label)
    assert len(found) == 1, f"expected one artist labelled {label!r}, found {len(found)}"
    return found[0]


def assert_drawn_at(ax: Axes3D, collection: Line3DCollection, segments: np.ndarray) -> None:
    """``collection`` is drawn exactly where a reference collection of the 3-D ``segments``
    (matplotlib coordinates) is: both are projected by the same view."""
    reference = Line3DCollection(list(segments))
    ax.add_collection3d(reference, autolim=False)
    ax.get_figure().canvas.draw()
    drawn = np.array(collection.get_segments())
    assert drawn.shape == (len(segments), 2, 2)
    np.testing.assert_array_equal(drawn, np.array(reference.get_segments()))
    reference.remove()


def limits(ax: Axes3D) -> np.ndarray:
    """(2, 3) lower and upper limits of the three axes (the reversed one put in order)."""
    bounds = np.array([ax.get_xlim3d(), ax.get_ylim3d(), ax.get_zlim3d()]).T
    return np.sort(bounds, axis=0)


def assert_contains(ax: Axes3D, points: np.ndarray) -> None:
    low, high = limits(ax)
    drawn = screen(points).reshape(-1, 3)
    assert np.all(drawn >= low) and np.all(drawn <= high)


def assert_equal_scale(ax: Axes3D) -> None:
    """One metre is as long on each axis: the box aspect is proportional to the ranges."""
    low, high = limits(ax)
    ratio = np.asarray(ax.get_box_aspect()) / (high - low)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)


def polygon_area(polygon: np.ndarray) -> float:
    """Area of a planar polygon (k, 3) from the cross products of a fan."""
    return 0.5 * float(np.linalg.norm(np.cross(polygon, np.roll(polygon, -1, axis=0)).sum(axis=0)))


def hanging_cloth(n: int = 6, steps: int = 600) -> msprings.System:
    """A small cloth pinned at two corners, fallen for a while so springs are strained."""
    system = scenes.cloth(n, size=2.0, k=500.0, c=0.5)
    system.step(1e-3, steps)
    return system


# ---- packaging -----------------------------------------------------------------------


def test_import_msprings_loads_neither_matplotlib_nor_plot():
    code = "import sys, msprings; print('matplotlib' in sys.modules, 'msprings.plot' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_plot_loads_matplotlib_at_the_first_name_used_and_gives_every_public_name():
    code = ("import sys, msprings.plot as plot; assert 'matplotlib' not in sys.modules; "
            "from msprings.plot import *; assert 'matplotlib' in sys.modules; "
            "assert all(getattr(plot, name) is globals()[name] for name in plot.__all__); "
            "from msprings.plot import _animation, _charts, _draw, view3d; "
            "assert (plot.draw, plot.animate, plot.plot_energy, plot.view) == "
            "(_draw.draw, _animation.animate, _charts.plot_energy, view3d.view); "
            "assert set(plot.__all__) | {'view', 'save_view'} <= set(dir(plot)); "
            "assert not hasattr(plot, 'no_such_name')")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "MPLBACKEND": "Agg"})


# ---- draw ----------------------------------------------------------------------------


def test_draw_system_springs_are_segments_at_the_nodes_coloured_by_strain():
    system = hanging_cloth()
    ax = plot.draw(system)
    assert isinstance(ax, Axes3D)
    springs = only(ax, "springs")
    assert isinstance(springs, Line3DCollection)
    assert_drawn_at(ax, springs, screen(system.x[system.springs]))
    np.testing.assert_array_equal(springs.get_array(), system.strain())
    largest = np.abs(system.strain()).max()
    assert largest > 0
    assert springs.norm.vmin == -largest and springs.norm.vmax == largest
    assert springs.colorbar is not None
    assert springs.colorbar.ax.get_ylabel() == plot.STRAIN_LABEL
    assert "(dimensionless)" in plot.STRAIN_LABEL


def test_draw_maps_y_up_and_labels_axes_with_units():
    ax = plot.draw(hanging_cloth())
    assert ax.get_xlabel() == "x (m)"
    assert ax.get_ylabel() == "z (m)"
    assert ax.get_zlabel().startswith("y (m)")


def test_draw_colours_by_tension_with_newtons():
    system = hanging_cloth()
    ax = plot.draw(system, color_by="tension")
    springs = only(ax, "springs")
    np.testing.assert_array_equal(springs.get_array(), system.tension())
    assert springs.colorbar.ax.get_ylabel() == plot.TENSION_LABEL
    assert "(N)" in plot.TENSION_LABEL


def test_draw_without_colouring_has_no_colour_bar():
    system = hanging_cloth()
    ax = plot.draw(system, color_by=None)
    springs = only(ax, "springs")
    assert springs.get_array() is None
    assert springs.colorbar is None
    assert len(ax.get_figure().axes) == 1


def test_draw_marks_each_pinned_node_with_its_own_marker():
    system = hanging_cloth()
    system.pinned[3] = True  # three pins: both corners and one more
    ax = plot.draw(system)
    pins = only(ax, "pinned nodes")
    nodes = only(ax, "nodes")
    pinned_points = np.column_stack(pins.get_data_3d())
    free_points = np.column_stack(nodes.get_data_3d())
    assert len(pinned_points) == np.count_nonzero(system.pinned) == 3
    np.testing.assert_array_equal(pinned_points, screen(system.x[system.pinned]))
    assert len(free_points) == system.n_nodes - 3
    assert pins.get_marker() != nodes.get_marker()
    assert pins.get_markersize() > nodes.get_markersize()


def test_draw_pins_stay_marked_without_free_nodes():
    system = hanging_cloth()
    ax = plot.draw(system, show_nodes=False)
    assert labelled(ax, "nodes") == []
    assert len(np.column_stack(only(ax, "pinned nodes").get_data_3d())) == 2


def test_draw_faces_as_shaded_triangles():
    system = hanging_cloth()
    ax = plot.draw(system)
    surface = only(ax, "surfaces")
    assert isinstance(surface, Poly3DCollection)
    ax.get_figure().canvas.draw()
    assert len(surface.get_paths()) == system.n_faces
    brightness = surface.get_facecolor()[:, :3].sum(axis=1)
    # Shading from the normals: a hanging, curved cloth has faces of different brightness.
    assert brightness.max() > 1.1 * brightness.min()
    assert labelled(plot.draw(system, surface=False), "surfaces") == []


def test_draw_chain_without_faces_has_no_surface():
    chain = scenes.chain(5)
    ax = plot.draw(chain)
    assert labelled(ax, "surfaces") == []
    assert_drawn_at(ax, only(ax, "springs"), screen(chain.x[chain.springs]))


def test_draw_keeps_one_scale_and_holds_every_node():
    system = hanging_cloth(n=8, steps=400)
    ax = plot.draw(system)
    assert_equal_scale(ax)
    assert_contains(ax, system.x)
    # The limits are the scene's with a margin, not much more: each range is at most the
    # node extent plus 10 % of the largest extent, or a quarter of the largest.
    low, high = limits(ax)
    extent = np.ptp(screen(system.x), axis=0)
    assert np.all(high - low <= np.maximum(extent + 0.1 * extent.max(), 0.26 * extent.max()))


def test_draw_flat_cloth_is_not_squashed_to_zero_height():
    flat = scenes.cloth(5, size=2.0)  # every node at y = 0
    ax = plot.draw(flat)
    assert_equal_scale(ax)
    low, high = limits(ax)
    assert (high - low)[2] >= 0.25 * (high - low).max() - 1e-12
    assert_contains(ax, flat.x)


def test_draw_springs_from_a_single_point_still_has_finite_limits():
    point = msprings.System([[1.0, 2.0, 3.0]], np.zeros((0, 2), dtype=int))
    ax = plot.draw(point)
    low, high = limits(ax)
    assert np.all(np.isfinite(low)) and np.all(high > low)
    assert_contains(ax, point.x)


def test_draw_into_given_axes_and_rejects_flat_axes():
    figure = plt.figure()
    ax = figure.add_subplot(projection="3d")
    assert plot.draw(hanging_cloth(), ax=ax) is ax
    with pytest.raises(TypeError, match="3-D"):
        plot.draw(hanging_cloth(), ax=plt.figure().add_subplot())


def test_draw_rejects_unknown_input():
    with pytest.raises(TypeError, match="System"):
        plot.draw(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="color_by"):
        plot.draw(hanging_cloth(), color_by="speed")
    with pytest.raises(ValueError, match="positions"):
        plot.draw({"springs": [[0, 1]]})


def test_draw_trajectory_shows_its_last_frame_with_the_time():
    system = scenes.cloth(5, size=2.0)
    trajectory = system.run(1e-3, 120, 40)
    ax = plot.draw(trajectory)
    assert_drawn_at(ax, only(ax, "springs"), screen(trajectory.positions[-1][trajectory.springs]))
    assert f"t = {trajectory.times[-1]:.3f} s" in ax.get_title()


def test_draw_frame_tension_needs_the_stiffness():
    system = hanging_cloth()
    trajectory = system.run(1e-3, 10)
    frame = trajectory.frame(len(trajectory) - 1)
    springs = only(plot.draw(frame, color_by="tension"), "springs")
    # A recorded frame has no stiffness: it falls back to strain, and says so.
    assert springs.colorbar.ax.get_ylabel() == plot.STRAIN_LABEL
    lengths = trajectory.lengths(len(trajectory) - 1)
    np.testing.assert_allclose(springs.get_array(), (lengths - system.rest) / system.rest, rtol=1e-12)
    springs = only(plot.draw(dict(frame, k=system.k), color_by="tension"), "springs")
    assert springs.colorbar.ax.get_ylabel() == plot.TENSION_LABEL
    np.testing.assert_allclose(springs.get_array(), system.k * (lengths - system.rest), rtol=1e-12)


def sphere_mesh(subdivisions: int = 3, stretch: float = 1.0) -> msprings.System:
    """A closed icosphere mesh turned into springs (642 nodes, 1,920 springs, 1,280 faces at 3
    subdivisions), its nodes moved out by ``stretch`` so every edge has strain stretch - 1."""
    sphere = mesh.icosphere(subdivisions)
    system = mesh.from_mesh(sphere.vertices, sphere.faces, k=100.0)
    system.x[:] *= stretch
    return system


def test_draw_hides_the_springs_of_a_large_surface_and_colours_its_faces():
    system = sphere_mesh(stretch=1.01)
    assert system.n_springs > 1000
    ax = plot.draw(system)
    assert labelled(ax, "springs") == [] and labelled(ax, "nodes") == []
    surface = only(ax, "surfaces")
    # The colour moved to the faces: each the mean strain of its edges, 0.01 everywhere.
    colorbar = ax.get_figure().axes[1]
    assert colorbar.get_ylabel() == plot.STRAIN_LABEL
    assert colorbar.get_ylim() == pytest.approx((-0.01, 0.01), rel=1e-9)
    ax.get_figure().canvas.draw()
    colors = surface.get_facecolor()[:, :3]
    hue = colors / colors.max(axis=1, keepdims=True)
    red = np.array(matplotlib.colormaps["coolwarm"](1.0)[:3])
    np.testing.assert_allclose(hue, np.broadcast_to(red / red.max(), hue.shape), atol=1e-9)
    # Lit: a sphere's faces range from shadow to full light.
    brightness = colors.max(axis=1)
    assert brightness.max() > 2.0 * brightness.min()
    # Asked for, the springs come back and carry the colour.
    shown = only(plot.draw(system, springs=True), "springs")
    np.testing.assert_allclose(shown.get_array(), system.strain(), rtol=1e-12)


def test_draw_shows_the_springs_of_a_chain_and_a_small_cloth():
    chain = plot.draw(scenes.chain(5))
    assert len(labelled(chain, "springs")) == 1 and len(labelled(chain, "nodes")) == 1
    assert len(labelled(plot.draw(hanging_cloth()), "springs")) == 1
    # A sphere of 642 springs keeps them, but its 163 nodes as dots would hide the surface.
    sphere = plot.draw(scenes.spring_sphere())
    assert len(labelled(sphere, "springs")) == 1 and labelled(sphere, "nodes") == []
    assert labelled(plot.draw(scenes.chain(5), springs=False), "springs") == []
    with pytest.raises(ValueError, match="springs"):
        plot.draw(scenes.chain(5), springs="some")


def test_draw_at_rest_has_no_colour_bar_of_round_off():
    system = sphere_mesh(stretch=1.0 + 1e-14)  # a strain of round-off size
    strain = np.abs(system.strain())
    assert 1e-15 < strain.max() < 1e-13
    ax = plot.draw(system)
    figure = ax.get_figure()
    assert len(figure.axes) == 1  # no colour bar
    notes = [text for text in figure.texts if text.get_gid() == "flat-colour-note"]
    assert len(notes) == 1 and "round-off" in notes[0].get_text() and "1e-09" in notes[0].get_text()
    figure.canvas.draw()
    colors = only(ax, "surfaces").get_facecolor()[:, :3]
    hue = colors / colors.max(axis=1, keepdims=True)
    np.testing.assert_allclose(hue, np.broadcast_to(hue[0], hue.shape), atol=1e-9)  # one neutral colour, shaded
    # Springs drawn at rest get the plain spring colour, no colour array.
    springs = only(plot.draw(system, springs=True, color_by="tension"), "springs")
    assert springs.get_array() is None


def test_draw_takes_a_viewpoint():
    system = hanging_cloth()
    ax = plot.draw(system, elev=40.0, azim=30.0)
    assert (ax.elev, ax.azim) == (40.0, 30.0)
    default = plot.draw(system)
    assert (default.elev, default.azim) == (22.0, -58.0)
    # The light follows the viewpoint: the surface is lit differently.
    for axes in (ax, default):
        axes.get_figure().canvas.draw()
    assert not np.allclose(only(ax, "surfaces").get_facecolor().mean(axis=0),
                           only(default, "surfaces").get_facecolor().mean(axis=0))
    with pytest.raises(ValueError, match="elev"):
        plot.draw(system, elev=float("nan"))
    with pytest.raises(ValueError, match="azim"):
        plot.draw(system, azim="left")


# ---- colliders -----------------------------------------------------------------------


def scene_with_every_collider() -> msprings.System:
    system = scenes.cloth(5, size=2.0)
    system.x[:, 1] += 3.0
    system.add_plane((0.0, -1.0, 0.0))
    system.add_sphere((0.5, 1.0, 0.5), 0.4)
    system.add_box((1.2, 0.0, 1.2), (1.8, 0.6, 1.6))
    system.add_cylinder((1.0, 0.5, -1.0), 0.7, 1.0)
    return system


def test_collider_polygons_lie_on_the_collider_surfaces():
    system = scene_with_every_collider()
    for collider in system.colliders:
        polygons = plot.collider_polygons(collider, around=system.x)
        assert polygons
        vertices = np.concatenate(polygons)
        np.testing.assert_allclose(collider.distance(vertices), 0.0, atol=1e-12)


def test_collider_polygons_cover_the_whole_surface():
    system = scene_with_every_collider()
    _, sphere, box, cylinder = system.colliders
    box_area = sum(polygon_area(p) for p in plot.collider_polygons(box))
    assert box_area == pytest.approx(2 * (0.6 * 0.6 + 0.6 * 0.4 + 0.6 * 0.4), rel=1e-12)
    # Inscribed in a curved surface: a little less than the exact area.
    sphere_area = sum(polygon_area(p) for p in plot.collider_polygons(sphere))
    assert 0.97 * 4 * math.pi * 0.4**2 < sphere_area < 4 * math.pi * 0.4**2
    top = [p for p in plot.collider_polygons(cylinder) if np.allclose(p[:, 1], 1.0)]
    sides = 36
    inscribed = 0.5 * sides * 0.7**2 * math.sin(2 * math.pi / sides)
    assert sum(polygon_area(p) for p in top) == pytest.approx(inscribed, rel=1e-12)


def test_plane_patch_lies_under_every_node():
    system = scene_with_every_collider()
    plane = system.colliders[0]
    polygons = plot.collider_polygons(plane, around=system.x)
    vertices = np.concatenate(polygons)
    # The patch is the square x-z footprint of the nodes with a border.
    assert vertices[:, 0].min() < system.x[:, 0].min() and vertices[:, 0].max() > system.x[:, 0].max()
    assert vertices[:, 2].min() < system.x[:, 2].min() and vertices[:, 2].max() > system.x[:, 2].max()


@pytest.mark.parametrize("kind", ["sphere", "box", "cylinder"])
def test_draw_shows_each_solid_collider_and_fits_it_in(kind):
    system = scene_with_every_collider()
    keep = next(c for c in system.colliders if c.kind == kind)
    for collider in system.colliders:
        if collider != keep:
            system.remove_collider(collider)
    ax = plot.draw(system)
    bare = plot.draw(system, show_colliders=False)
    for axes in (ax, bare):
        axes.get_figure().canvas.draw()
    drawn = len(only(ax, "surfaces").get_paths()) - system.n_faces
    assert len(only(bare, "surfaces").get_paths()) == system.n_faces
    assert drawn >= {"sphere": 100, "box": 6, "cylinder": 3 * 36}[kind]
    corners = {
        "sphere": np.array([keep.center - 0.4, keep.center + 0.4]),
        "box": np.array([[1.2, 0.0, 1.2], [1.8, 0.6, 1.6]]),
        "cylinder": np.array([[0.3, 0.0, -1.7], [1.7, 1.0, -0.3]]),
    }[kind]
    assert_contains(ax, corners)
    assert_contains(ax, system.x)
    assert_equal_scale(ax)


def test_draw_shows_a_plane_as_a_patch_behind_the_scene():
    system = scene_with_every_collider()
    ax = plot.draw(system)
    plane = only(ax, "plane collider")
    assert isinstance(plane, Poly3DCollection)
    # Seen from above, the ground is behind every other artist.
    assert plane.get_zorder() < min(a.get_zorder() for a in [*ax.collections, *ax.lines] if a is not plane)
    assert_contains(ax, np.concatenate(plot.collider_polygons(system.colliders[0], around=system.x)))
    assert labelled(plot.draw(system, show_colliders=False), "plane collider") == []


@pytest.mark.parametrize("elev", [22.0, 60.0])
def test_a_cloth_lying_on_a_box_is_painted_over_its_top(elev):
    # A flat cloth 1 cm above the top of a wider box: wherever the cloth is drawn, the
    # picture must be the same with and without the box under it (mplot3d paints polygons
    # by depth, and cells of the box top are as near as the cloth's triangles).
    system = scenes.cloth(12, size=2.0)
    system.x[:, 1] = 0.01
    system.add_box((-0.5, -1.0, -0.5), (2.5, 0.0, 2.5))
    pictures = []
    for colliders in (True, False):
        figure = plt.figure(figsize=(4.0, 3.2))
        ax = figure.add_subplot(projection="3d")
        plot.draw(system, ax=ax, color_by=None, springs=False, show_nodes=False, show_colliders=colliders,
                  elev=elev)
        ax.set_xlim(-0.6, 2.6), ax.set_ylim(2.6, -0.6), ax.set_zlim(-1.1, 0.5)  # one view for both
        ax.set_box_aspect((3.2, 3.2, 1.6))
        figure.canvas.draw()
        pictures.append(np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(int))
        plt.close(figure)
    with_box, alone = pictures
    cloth = np.any(alone < 250, axis=-1) & (np.ptp(alone, axis=-1) > 20)  # the cloth's warm colour
    for axis in (0, 1):  # leave out its antialiased rim, blended with what lies behind
        cloth &= np.roll(cloth, 2, axis=axis) & np.roll(cloth, -2, axis=axis)
    assert cloth.sum() > 2000
    differs = np.abs(with_box - alone).max(axis=-1) > 40
    # Sorted by their plain mean depth, the box's cells cover a third of the cloth here.
    assert (differs & cloth).sum() < 0.03 * cloth.sum()


def test_tablecloth_draws_a_round_table_under_the_cloth():
    system = scenes.tablecloth(8, size=4.0, table_height=1.0, height=0.2)
    ax = plot.draw(system)
    table = system.colliders[0]
    assert table.kind == "cylinder"
    top = table.center[1] + table.height / 2
    low, high = limits(ax)
    assert low[2] <= 0.0 and high[2] >= system.x[:, 1].max()  # ground to cloth
    assert high[2] >= top


# ---- animation -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def falling_cloth():
    """A small cloth falling past a sphere that moves sideways, recorded 6 times."""
    system = scenes.cloth(5, size=2.0, k=500.0, c=0.5)
    system.add_sphere((1.0, -1.0, 1.0), 0.4, velocity=(0.5, 0.0, 0.0))
    return system.run(2e-3, 250, 50)


def test_animate_has_one_frame_per_record_and_saves_a_gif(falling_cloth, tmp_path):
    anim = plot.animate(falling_cloth, fps=12, figsize=(4.0, 3.2))
    assert isinstance(anim, mpl_animation.FuncAnimation)
    assert anim.frame_count == len(falling_cloth) == 6
    path = plot.save_animation(anim, tmp_path / "cloth.gif", dpi=40)
    with Image.open(path) as image:
        assert image.format == "GIF"
        assert image.n_frames == 6
        assert image.size == (160, 128)
        image.seek(0)
        first = np.asarray(image.convert("RGB")).copy()
        image.seek(5)
        last = np.asarray(image.convert("RGB"))
        assert image.info["duration"] == pytest.approx(1000 / 12, abs=10)  # GIF counts 1/100 s
    assert np.any(first != last)
    # One palette for every frame: the colour bar keeps its colours, and shows a gradient.
    left, _, width, _ = _draw._COLORBAR_RECT
    bar = (slice(int(0.3 * 128), int(0.7 * 128)), int((left + width / 2) * 160))
    np.testing.assert_array_equal(first[bar], last[bar])
    assert len(np.unique(first[bar], axis=0)) > 5

    ax = anim.axes
    ax.get_figure().canvas.draw()  # the first draw of an animation's figure starts it at frame 0
    for frame in (5, 2):
        anim.show_frame(frame)
        assert_drawn_at(ax, only(ax, "springs"), screen(falling_cloth.positions[frame][falling_cloth.springs]))
        assert f"t = {falling_cloth.times[frame]:.3f} s" in ax.get_title()
    with pytest.raises(IndexError):
        anim.show_frame(6)


def test_animate_limits_and_colours_are_fixed_over_the_run(falling_cloth, tmp_path):
    anim = plot.animate(falling_cloth, figsize=(4.0, 3.2))
    ax = anim.axes
    before = limits(ax)
    norm = only(ax, "springs").norm
    strains = [(falling_cloth.lengths(r) - falling_cloth.rest) / falling_cloth.rest for r in range(6)]
    assert norm.vmax == pytest.approx(np.abs(strains).max(), rel=1e-12)
    plot.save_animation(anim, tmp_path / "cloth.gif", dpi=30)
    np.testing.assert_array_equal(limits(ax), before)
    assert_contains(ax, falling_cloth.positions)
    assert_equal_scale(ax)
    # The sphere moves 0.5 m/s for 0.5 s: its whole path is inside.
    centers = falling_cloth.collider_centers[:, 0]
    assert centers[-1, 0] == pytest.approx(1.25)
    assert_contains(ax, np.concatenate([centers - 0.4, centers + 0.4]))


def test_animate_moves_the_same_artists_with_one_colour_scale(falling_cloth):
    anim = plot.animate(falling_cloth, figsize=(4.0, 3.2), elev=35.0, azim=-80.0)
    ax = anim.axes
    assert (ax.elev, ax.azim) == (35.0, -80.0)
    figure = ax.get_figure()
    artists = {label: only(ax, label) for label in ("springs", "surfaces", "nodes", "pinned nodes")}
    colorbars = figure.axes[1:]
    seen = []
    for frame in (0, 3, 5):
        anim.show_frame(frame)
        figure.canvas.draw()
        assert {label: only(ax, label) for label in artists} == artists  # the very same objects
        assert figure.axes[1:] == colorbars
        springs = artists["springs"]
        assert springs.norm is anim.norm
        np.testing.assert_array_equal(springs.get_array(),
                                      (falling_cloth.lengths(frame) - falling_cloth.rest) / falling_cloth.rest)
        seen.append((np.array(springs.get_segments()), artists["surfaces"].get_facecolor().copy(),
                     np.column_stack(artists["nodes"].get_data_3d())))
    strains = [(falling_cloth.lengths(r) - falling_cloth.rest) / falling_cloth.rest for r in range(6)]
    assert (anim.norm.vmin, anim.norm.vmax) == pytest.approx((-np.abs(strains).max(), np.abs(strains).max()))
    for (segments, faces, nodes), (later_segments, later_faces, later_nodes) in zip(seen, seen[1:]):
        assert not np.array_equal(segments, later_segments)
        assert not np.array_equal(faces, later_faces)
        assert not np.array_equal(nodes, later_nodes)


def test_animation_frames_drawn_once_match_a_full_redraw(falling_cloth):
    anim = plot.animate(falling_cloth, figsize=(4.0, 3.2))
    figure = anim.axes.get_figure()
    fast = list(anim.render([4, 1]))
    for frame, picture in zip((4, 1), fast):
        anim.show_frame(frame)
        figure.canvas.draw()
        full = np.asarray(figure.canvas.buffer_rgba())
        assert picture.shape == full.shape == (320, 400, 4)
        differing = np.any(picture != full, axis=-1).mean()
        assert differing < 1e-3
    assert np.any(fast[0] != fast[1])


def test_animate_a_run_at_rest_keeps_the_neutral_colour(tmp_path):
    system = sphere_mesh(subdivisions=2)
    system.gravity = (0.0, 0.0, 0.0)
    trajectory = system.run(1e-3, 20, 10)
    anim = plot.animate(trajectory, figsize=(3.0, 2.5), springs=True)
    assert anim.norm is None
    assert len(anim.axes.get_figure().axes) == 1
    assert only(anim.axes, "springs").get_array() is None
    path = plot.save_animation(anim, tmp_path / "rest.gif")
    with Image.open(path) as image:
        assert image.n_frames == len(trajectory)


def test_animate_every_other_record(falling_cloth):
    anim = plot.animate(falling_cloth, every=2, figsize=(3.0, 2.5))
    assert anim.frame_count == 3
    assert "<script" in plot.to_html(anim)


def player_frames(html: str) -> list[bytes]:
    """The PNG frames of a to_html player (the list its script steps through)."""
    listed = re.search(r"var frames = \[(.*?)\];", html, re.S)
    assert listed is not None
    return [base64.b64decode(item.strip('"')) for item in listed.group(1).split(",")]


def test_to_html_embeds_a_player_and_closes_the_figure(falling_cloth):
    anim = plot.animate(falling_cloth, figsize=(3.0, 2.5), color_by=None)
    number = anim.axes.get_figure().number
    assert number in plt.get_fignums()
    html = plot.to_html(anim)
    # No stray still picture below the player in Jupyter: the figure is closed.
    assert number not in plt.get_fignums()
    assert "<script" in html and 'type="range"' in html
    frames = player_frames(html)
    assert len(frames) == len(falling_cloth)
    pictures = [np.asarray(Image.open(io.BytesIO(frame)).convert("RGB")) for frame in frames]
    assert all(picture.shape == (250, 300, 3) for picture in pictures)
    assert np.any(pictures[0] != pictures[-1])


def test_save_animation_explains_missing_ffmpeg_and_unknown_types(falling_cloth, tmp_path, monkeypatch):
    anim = plot.animate(falling_cloth, figsize=(3.0, 2.5), every=5)
    monkeypatch.setattr(mpl_animation.FFMpegWriter, "isAvailable", classmethod(lambda cls: False))
    with pytest.raises(RuntimeError, match="ffmpeg"):
        plot.save_animation(anim, tmp_path / "cloth.mp4")
    with pytest.raises(ValueError, match=".gif or .mp4"):
        plot.save_animation(anim, tmp_path / "cloth.avi")
    assert not (tmp_path / "cloth.mp4").exists()
    plot.save_animation(anim, tmp_path / "cloth.gif", dpi=20)  # render once: no unrendered-animation warning


def test_animate_rejects_a_system():
    with pytest.raises(TypeError, match="Trajectory"):
        plot.animate(hanging_cloth())


# ---- energy --------------------------------------------------------------------------


def test_plot_energy_has_a_line_per_ledger_field():
    system = scenes.chain(6, c=0.5)
    trajectory = system.run(1e-3, 300, 10)
    ax = plot.plot_energy(trajectory)
    lines = {line.get_gid(): line for line in ax.lines}
    assert list(lines) == list(ENERGY_FIELDS)
    for column, name in enumerate(ENERGY_FIELDS):
        np.testing.assert_array_equal(lines[name].get_xdata(), trajectory.times)
        np.testing.assert_array_equal(lines[name].get_ydata(), trajectory.energy[:, column])
    assert lines["total"].get_linestyle() == "--"
    assert all(lines[name].get_linestyle() == "-" for name in ENERGY_FIELDS[:-1])
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend[: len(ENERGY_FIELDS) - 2] == list(ENERGY_FIELDS[:-2])
    assert legend[-2].startswith("mechanical (") and legend[-1].startswith("total (")
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == "energy (J)"


def test_plot_energy_breakdown_stacks_what_each_mechanism_removed_and_draws_the_work():
    system = scenes.flag(10, 12)
    system.integrator = "rk4"
    trajectory = system.run(5e-4, 1000, 50)
    top, below = plot.plot_energy(trajectory, breakdown=True)
    assert [line.get_gid() for line in top.lines] == list(ENERGY_FIELDS)
    ledger = {name: trajectory.ledger[:, i] for i, name in enumerate(LEDGER_FIELDS)}
    removed = [name for name in ("dampers", "drag", "contact", "energy_loss") if np.any(ledger[name] != 0)]
    assert "drag" in removed  # the flag in the wind
    # One stacked area per mechanism that removed energy: its top is the running sum.
    areas = below.collections
    assert [area.get_label() for area in areas] == [f"removed by {name}" for name in removed]
    stacked = np.cumsum([ledger[name] for name in removed], axis=0)
    for area, upper in zip(areas, stacked):
        vertices = area.get_paths()[0].vertices
        assert vertices[:, 1].max() == pytest.approx(upper.max(), rel=1e-12)
    np.testing.assert_allclose(stacked[-1], trajectory.dissipated, rtol=1e-9, atol=1e-12)
    # The work of each source that did any, as a line of its own.
    work = {line.get_gid(): line for line in below.lines if line.get_gid() is not None}
    assert "wind" in work
    for name, line in work.items():
        np.testing.assert_array_equal(line.get_ydata(), ledger[name])
    assert sum(ledger[name] for name in work) == pytest.approx(trajectory.work, rel=1e-9, abs=1e-12)
    with pytest.raises(TypeError, match="pair of Axes"):
        plot.plot_energy(trajectory, ax=top, breakdown=True)


def test_plot_energy_breakdown_shows_the_solvers_own_damping():
    """implicit Euler's numerical part is stacked on the dampers' (the top of the stack is
    dissipated); where numerical dips below zero (xpbd with one sweep at a large step, handing
    energy back at first) it is a dotted line instead."""
    trajectory = scenes.chain(integrator="implicit_euler").run(0.01, 300, 10)
    _, below = plot.plot_energy(trajectory, breakdown=True)
    assert [area.get_label() for area in below.collections] == ["removed by dampers",
                                                                 "removed by the solver (numerical)"]
    top_of_stack = below.collections[-1].get_paths()[0].vertices[:, 1].max()
    assert top_of_stack == pytest.approx(trajectory.dissipated.max(), rel=1e-12)
    assert trajectory.numerical[-1] > 0.1 * trajectory.dissipated[-1]
    plt.close("all")
    cloth = scenes.cloth(12, size=1.2, mass=0.1, k=1e4, c=0.0, integrator="xpbd")
    handed_back = cloth.run(1 / 60, 40, 1)
    assert handed_back.numerical.min() < 0.0
    _, below = plot.plot_energy(handed_back, breakdown=True)
    assert not below.collections
    line = next(line for line in below.lines if line.get_gid() == "numerical")
    assert line.get_linestyle() == ":" and line.get_label() == "removed by the solver (numerical)"
    np.testing.assert_array_equal(line.get_ydata(), handed_back.numerical)


# ---- stability -----------------------------------------------------------------------


def _limit_lines(ax) -> dict[str, float]:
    found = {}
    for line in ax.lines:
        gid = line.get_gid() or ""
        if gid.startswith("stability-limit:"):
            x = np.unique(line.get_xdata())
            assert len(x) == 1
            found[gid.split(":", 1)[1]] = float(x[0])
    return found


def test_plot_stability_marks_the_undamped_limits():
    ax = plot.plot_stability()
    found = _limit_lines(ax)
    assert set(found) == {"symplectic_euler", "velocity_verlet", "rk4"}
    assert found["symplectic_euler"] == pytest.approx(2.0, rel=1e-9)
    assert found["velocity_verlet"] == pytest.approx(2.0, rel=1e-9)
    assert found["rk4"] == pytest.approx(2.0 * math.sqrt(2.0), rel=1e-9)
    unit = [line for line in ax.lines if line.get_gid() == "radius-one"]
    assert len(unit) == 1 and set(unit[0].get_ydata()) == {1.0}
    assert ax.get_yscale() == "log"
    curves = {line.get_label().split(" ")[0]: line for line in ax.lines if line.get_label()[0] != "_"}
    for name in stability.INTEGRATORS:
        steps = np.asarray(curves[name].get_xdata())
        np.testing.assert_allclose(curves[name].get_ydata(), stability.spectral_radius(name, steps), rtol=1e-12)
    assert "unstable at every" in curves["explicit_euler"].get_label()
    assert "stable at every" in curves["implicit_euler"].get_label()


def test_plot_stability_with_damping_marks_explicit_euler_at_two_zeta():
    ax = plot.plot_stability(["explicit_euler", "symplectic_euler"], zeta=0.25)
    found = _limit_lines(ax)
    assert found["explicit_euler"] == pytest.approx(0.5, rel=1e-9)
    assert found["symplectic_euler"] == pytest.approx(2.0 * (math.sqrt(1 + 0.25**2) - 0.25), rel=1e-9)


def _boundary_points(ax, name: str) -> np.ndarray:
    outlines = [c for c in ax.collections if c.get_gid() == f"stability-boundary:{name}"]
    assert len(outlines) == 1
    return np.concatenate([path.vertices for path in outlines[0].get_paths()])


def _distance_to_curve(points: np.ndarray, curve: np.ndarray) -> np.ndarray:
    return np.min(np.linalg.norm(points[:, None, :] - curve[None, :, :], axis=2), axis=1)


def test_plot_stability_region_follows_the_closed_forms():
    ax = plot.plot_stability(kind="region")
    assert ax.get_xlabel().startswith("ω h") and "ζ" in ax.get_ylabel()
    zeta = np.linspace(0.0, 2.0, 4001)
    explicit = np.where(zeta <= 1.0, 2.0 * zeta, 2.0 * (zeta - np.sqrt(np.maximum(zeta**2 - 1.0, 0.0))))
    symplectic = 2.0 * (np.sqrt(1.0 + zeta**2) - zeta)
    spacing = 4.0 / 300  # of the (omega h) grid
    for name, limit in (("explicit_euler", explicit), ("symplectic_euler", symplectic)):
        points = _boundary_points(ax, name)
        assert len(points) > 50
        distance = _distance_to_curve(points, np.column_stack([limit, zeta]))
        # Interpolated between grid points: close to the curve, except that the contour
        # cuts explicit Euler's corner at (2, 1) by up to about a grid cell and a half.
        smooth = np.abs(points[:, 1] - 1.0) > 0.05
        assert distance[smooth].max() < spacing / 5
        assert distance.max() < 1.5 * spacing
    # Backward Euler is stable everywhere: no boundary, and the legend says so.
    assert not [c for c in ax.collections if c.get_gid() == "stability-boundary:implicit_euler"]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "implicit_euler (stable everywhere)" in legend


def test_plot_stability_rejects_unknown_names():
    with pytest.raises(ValueError, match="integrators"):
        plot.plot_stability(["leapfrog"])
    with pytest.raises(ValueError, match="kind"):
        plot.plot_stability(kind="phase")


# ---- compare_integrators -------------------------------------------------------------


def oscillator() -> msprings.System:
    """One 1 kg mass on a k = 100 N/m spring (omega = 10 rad/s), no gravity, stretched 0.1 m."""
    return scenes.single_spring(mass=1.0, k=100.0, c=0.0, stretch=0.1, gravity=(0.0, 0.0, 0.0))


def curve_of(ax, name: str):
    return next(line for line in ax.lines if line.get_gid() == name)


def test_compare_integrators_keeps_a_sane_shared_scale_when_one_method_blows_up():
    dt, steps = 0.15, 1500  # omega h = 1.5: explicit Euler's energy grows 3.25-fold a step
    names = ("explicit_euler", "symplectic_euler", "rk4", "implicit_euler")
    # the mechanical energy: implicit Euler books its loss as numerical, so its total is flat
    figure = plot.compare_integrators(oscillator, dt, steps, names, quantity="mechanical")
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 4
    panels = dict(zip(names, axes))
    initial = 0.5 * 100.0 * 0.1**2  # J
    # One scale for every panel, set by the runs that stayed bounded: symplectic Euler's
    # energy swings by a factor of a few at this step, nowhere near explicit Euler's 10^200.
    low, high = panels["rk4"].get_ylim()
    assert all(ax.get_ylim() == (low, high) for ax in axes)
    assert low > -initial and high < 10 * initial
    explicit = panels["explicit_euler"]
    assert "diverged" in explicit.get_title()
    curve = curve_of(explicit, "explicit_euler")
    energy = np.asarray(curve.get_ydata())
    times = np.asarray(curve.get_xdata())
    # Drawn up to the edge of the scale, where it left: the held records grow by exactly
    # 1 + (omega h)^2 per step.
    assert energy[-1] == pytest.approx(high)
    assert np.all(energy <= high)
    np.testing.assert_allclose(energy[1:-1] / energy[:-2], 1.0 + 1.5**2, rtol=1e-9)
    left = [line for line in explicit.lines if line.get_label().startswith("left the scale at t =")]
    assert len(left) == 1 and left[0].get_xdata()[0] == times[-1] < 3 * dt
    markers = [line for line in explicit.lines if line.get_label().startswith("diverged at t =")]
    assert len(markers) == 1
    assert dt * 100 < markers[0].get_xdata()[0] < dt * steps / 2
    for name in names[1:]:
        ax = panels[name]
        assert "diverged" not in ax.get_title()
        line = curve_of(ax, name)
        assert line.get_xdata()[-1] == pytest.approx(dt * steps)
        assert np.all(np.isfinite(line.get_ydata()))
        assert not [line for line in ax.lines if line.get_label().startswith(("diverged", "left"))]
    # rk4 and implicit Euler lose energy at this step; neither gains any.
    for name in ("rk4", "implicit_euler"):
        values = curve_of(panels[name], name).get_ydata()
        assert values.max() <= values[0] * (1 + 1e-12)
        assert values[-1] < 0.01 * values[0]


def test_compare_integrators_chain_above_the_critical_step_beside_rk4():
    dt = 1.2 * scenes.chain().critical_dt("symplectic_euler")
    figure = plot.compare_integrators(scenes.chain, dt, 200, ["symplectic_euler", "rk4"])
    symplectic, rk4 = figure.axes[:2]
    values = curve_of(rk4, "rk4").get_ydata()
    low, high = rk4.get_ylim()
    assert symplectic.get_ylim() == (low, high)
    # The scale is RK4's: its whole run with a margin, not symplectic Euler's blow-up.
    span = values.max() - values.min()
    assert low < values.min() and values.max() < high and high - low < 1.3 * span
    assert "left the scale at t =" in symplectic.get_title() or "diverged" in symplectic.get_title()
    assert np.all(curve_of(symplectic, "symplectic_euler").get_ydata() <= high)


def largest_kinetic_energy(integrator: str, dt: float, steps: int) -> float:
    """The largest kinetic energy (J) of the references' soft chain over a run."""
    chain = scenes.chain(11, k=20.0, c=0.3)
    chain.integrator = integrator
    largest = 0.0
    for _ in range(steps):
        chain.step(dt)
        largest = max(largest, chain.energy().kinetic)
    return largest


def test_compare_integrators_total_of_a_chain_from_rest_at_y_0_on_the_energy_scale():
    # The chain starts at rest along y = 0: its total energy starts at 0 J and implicit
    # Euler keeps it there to round-off (it books its loss as numerical).  The scale is the
    # energy in play over the first twentieth of the run (hundreds of J), not that round-off
    # (1e-12 J), so the run is drawn flat.
    figure = plot.compare_integrators(lambda: scenes.chain(11, k=20.0, c=0.3), 0.2, 200, ["implicit_euler"])
    ax = figure.axes[0]
    values = curve_of(ax, "implicit_euler").get_ydata()
    assert np.abs(values).max() < 1e-9
    low, high = ax.get_ylim()
    assert high - low >= 1e-3 * largest_kinetic_energy("implicit_euler", 0.2, 10)
    assert low < values.min() and values.max() < high
    assert "left the scale" not in ax.get_title()


def test_compare_integrators_readme_chain_shows_every_stable_run_whole():
    # The README's call: every integrator on the references' soft 11-node chain at dt = 0.2 s (omega h = 1.9
    # for its fastest mode).  Only explicit Euler, unstable at any step, leaves the scale; the
    # others are drawn whole on one axis that spans the largest of their swings (symplectic
    # Euler's total swings by some 300 J) and not much more.
    dt, steps = 0.2, 200
    figure = plot.compare_integrators(lambda: scenes.chain(11, k=20.0, c=0.3), dt, steps)
    panels = {ax.get_title().split("\n")[0]: ax for ax in figure.axes if ax.get_visible()}
    assert set(panels) == set(stability.INTEGRATORS)
    low, high = panels["rk4"].get_ylim()
    assert "left the scale at t =" in panels["explicit_euler"].get_title()
    stable = [name for name in stability.INTEGRATORS if name != "explicit_euler"]
    ranges = []
    for name in stable:
        ax = panels[name]
        assert ax.get_title() == name
        values = curve_of(ax, name).get_ydata()
        assert len(values) == steps + 1
        assert low < values.min() and values.max() < high
        ranges.append((values.min(), values.max()))
    swing = max(top for _, top in ranges) - min(bottom for bottom, _ in ranges)
    assert high - low < 1.3 * swing
    assert high - low > 0.05 * largest_kinetic_energy("symplectic_euler", dt, 10)


def test_compare_integrators_draws_a_round_off_drift_flat():
    # RK4 at omega h = 0.01 drifts by about 1e-12 of the energy: the scale stays at least a
    # thousandth of the energy tall, so the drift is not stretched into a blow-up, and the
    # legend states it.
    figure = plot.compare_integrators(oscillator, 1e-3, 2000, ["rk4"])
    ax = figure.axes[0]
    values = curve_of(ax, "rk4").get_ydata()
    drift = values[-1] - values[0]
    assert abs(drift) < 1e-9
    low, high = ax.get_ylim()
    assert high - low >= 1e-3 * values[0]
    assert low < values.min() and values.max() < high
    assert f"drift {drift:+.3g} J" in curve_of(ax, "rk4").get_label()


def test_compare_integrators_notes_a_step_above_the_limit_instead_of_warning():
    # Undamped explicit Euler is unstable at any step; five steps do not blow it up.
    figure = plot.compare_integrators(oscillator, 0.01, 5, ["explicit_euler", "symplectic_euler"])
    explicit, symplectic = figure.axes[:2]
    assert "above its stability limit" in explicit.get_title()
    assert "diverged" not in explicit.get_title()
    assert symplectic.get_title() == "symplectic_euler"  # omega h = 0.1 < 2
    curve = curve_of(explicit, "explicit_euler")
    np.testing.assert_allclose(np.diff(np.log(curve.get_ydata())), math.log(1.0 + 0.1**2), rtol=1e-9)


def test_compare_integrators_plots_a_node_height_and_matches_a_direct_run():
    def hanging() -> msprings.System:
        return scenes.chain(4, k=50.0, c=0.2)

    dt, steps = 2e-3, 400
    figure = plot.compare_integrators(hanging, dt, steps, ["velocity_verlet"], quantity="position", node=-1)
    ax = figure.axes[0]
    line = curve_of(ax, "velocity_verlet")
    reference = hanging()
    reference.integrator = "velocity_verlet"
    heights = [reference.x[-1, 1]]
    for _ in range(steps):
        reference.step(dt)
        heights.append(reference.x[-1, 1])
    np.testing.assert_array_equal(line.get_ydata(), heights)
    assert ax.get_ylabel() == "y of node -1 (m)"
    assert ax.get_xlabel() == "time (s)"


def test_compare_integrators_rejects_bad_arguments():
    with pytest.raises(ValueError, match="quantity"):
        plot.compare_integrators(oscillator, 0.01, 10, quantity="speed")
    with pytest.raises(ValueError, match="integrators"):
        plot.compare_integrators(oscillator, 0.01, 10, ["leapfrog"])
    with pytest.raises(TypeError, match="System"):
        plot.compare_integrators(lambda: None, 0.01, 10, ["rk4"])
