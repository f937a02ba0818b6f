"""The interactive 3-D view (msprings.view3d): what each figure contains, checked against the
simulation, and what a real browser shows of a saved page.

Figures are inspected through their traces: the surface is the system's triangles at its
positions with colours equal to its strain, tension or speed, springs and pins are where
the system has them, colliders lie on the colliders, y is up, a trajectory's frames are its
records.  The browser test renders saved pages in headless Chromium (WebGL through
SwiftShader) and checks that the model is drawn and that a changed state draws differently.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import msprings
from msprings import scenes, view3d
from package_path import PACKAGE_PARENT

# Positions travel as float32: equal to round-off of float32 relative to the scene's size.
FLOAT32 = 2e-7


def trace(figure, name: str):
    found = [t for t in figure.data if t.name == name]
    assert len(found) == 1, f"expected one trace named {name!r}, found {len(found)}"
    return found[0]


def names(figure) -> list[str]:
    return [t.name for t in figure.data]


def simulation_points(data) -> np.ndarray:
    """Simulation (x, y, z) of a trace's points: plotly's (x, y, z) is the simulation's (z, x, y)."""
    return np.column_stack([np.asarray(data.y, dtype=float), np.asarray(data.z, dtype=float),
                            np.asarray(data.x, dtype=float)])


def node_means(values: np.ndarray, springs: np.ndarray, n: int) -> np.ndarray:
    """Mean of per-spring values over the springs at each node, written out plainly."""
    total = np.zeros(n)
    count = np.zeros(n)
    for (i, j), value in zip(springs, values):
        for node in (i, j):
            total[node] += value
            count[node] += 1
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def assert_close(actual, expected, scale: float) -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, rtol=0, atol=FLOAT32 * scale)


@pytest.fixture(scope="module")
def hanging_cloth() -> msprings.System:
    system = scenes.cloth(8, size=4.0, k=800.0, mass=0.1)
    system.step(1e-3, 700)
    return system


# ---- figure contents -------------------------------------------------------------------


def test_surface_is_the_systems_triangles_at_its_positions_with_y_up(hanging_cloth):
    figure = view3d.view(hanging_cloth)
    surface = trace(figure, "surface")
    assert surface.type == "mesh3d"
    np.testing.assert_array_equal(np.column_stack([surface.i, surface.j, surface.k]), hanging_cloth.faces)
    assert_close(simulation_points(surface), hanging_cloth.x, 4.0)
    # y is up: plotly's vertical axis (z, the camera's up) carries the simulation's y, so
    # the pinned corners of the hanging cloth are the highest points drawn.
    camera = figure.layout.scene.camera
    assert (camera.up.x, camera.up.y, camera.up.z) == (0, 0, 1)
    assert figure.layout.scene.zaxis.title.text.startswith("y")
    height = np.asarray(surface.z)
    assert height[hanging_cloth.pinned].min() == pytest.approx(height.max())
    assert height.min() < height.max() - 1.0
    assert figure.layout.title.text == f"t = {hanging_cloth.t:.3f} s"


def test_creased_surfaces_are_shaded_flat_and_smooth_ones_smoothly(hanging_cloth):
    assert trace(view3d.view(scenes.jelly_cube(4)), "surface").flatshading is True  # a cube's edges stay sharp
    assert trace(view3d.view(hanging_cloth), "surface").flatshading is False


def test_hover_speaks_the_simulations_coordinates(hanging_cloth):
    figure = view3d.view(hanging_cloth, color_by="tension")
    # plotly's (x, y, z) is the simulation's (z, x, y): hover names them back.
    for name in ("surface", "pinned nodes"):
        text = trace(figure, name).hovertemplate
        assert "x = %{y" in text and "y = %{z" in text and "z = %{x" in text
    assert "tension = %{intensity" in trace(figure, "surface").hovertemplate


def test_axes_have_equal_scales_and_hold_everything():
    system = scenes.tablecloth(6, size=4.0, table_height=2.0)
    figure = view3d.view(system)
    scene = figure.layout.scene
    ranges = np.array([scene.xaxis.range, scene.yaxis.range, scene.zaxis.range])
    spans = ranges[:, 1] - ranges[:, 0]
    ratio = np.array([scene.aspectratio.x, scene.aspectratio.y, scene.aspectratio.z])
    np.testing.assert_allclose(ratio, spans / spans.max())  # one metre is as long on every axis
    for data in figure.data:
        points = np.column_stack([data.x, data.y, data.z]).astype(float)
        points = points[np.isfinite(points).all(axis=1)]
        assert (points >= ranges[:, 0]).all() and (points <= ranges[:, 1]).all(), data.name


def test_surface_colours_are_the_vertex_mean_strain(hanging_cloth):
    figure = view3d.view(hanging_cloth, color_by="strain")
    strain = hanging_cloth.strain()
    expected = node_means(strain, hanging_cloth.springs, hanging_cloth.n_nodes)
    surface = trace(figure, "surface")
    assert_close(surface.intensity, expected, np.abs(strain).max() * 10)
    assert surface.coloraxis == "coloraxis"
    axis = figure.layout.coloraxis
    # Symmetric, covering 98 % of the values, rounded up to 1, 2, 2.5 or 5 times a power of ten.
    assert axis.cmin == -axis.cmax
    values = np.abs(np.concatenate([strain, expected]))
    assert np.percentile(values, 98) <= axis.cmax <= 2.0 * np.percentile(values, 98)
    mantissa = axis.cmax / 10 ** math.floor(math.log10(axis.cmax))
    assert min(abs(mantissa - m) for m in (1, 2, 2.5, 5)) < 1e-9
    assert "strain" in axis.colorbar.title.text


def test_tension_and_speed_colours(hanging_cloth):
    n = hanging_cloth.n_nodes
    tension = hanging_cloth.tension()
    surface = trace(view3d.view(hanging_cloth, color_by="tension"), "surface")
    assert_close(surface.intensity, node_means(tension, hanging_cloth.springs, n), np.abs(tension).max() * 10)
    speed_figure = view3d.view(hanging_cloth, color_by="speed")
    speed = np.linalg.norm(hanging_cloth.v, axis=1)
    assert_close(trace(speed_figure, "surface").intensity, speed, speed.max() * 10)
    assert speed_figure.layout.coloraxis.cmin == 0
    plain = trace(view3d.view(hanging_cloth, color_by=None), "surface")
    assert plain.intensity is None and plain.color is not None


def test_a_system_at_rest_has_a_calm_scale_not_one_of_round_off():
    system = scenes.cloth(6, size=3.0, k=500.0)
    system.x[:] += 1e-14 * np.random.default_rng(1).standard_normal(system.x.shape)
    assert 0 < np.abs(system.strain()).max() < 1e-12
    strain_axis = view3d.view(system).layout.coloraxis
    assert strain_axis.cmax == pytest.approx(1e-3)
    tension_axis = view3d.view(system, color_by="tension").layout.coloraxis
    typical = np.median(system.k * system.rest)
    assert 1e-3 * typical <= tension_axis.cmax <= 5e-3 * typical
    assert view3d.view(system, color_by="speed").layout.coloraxis.cmax == pytest.approx(0.01)
    assert view3d.view(system, cmax=0.2).layout.coloraxis.cmax == 0.2


def test_springs_are_drawn_per_option_at_their_ends():
    chain = scenes.chain(5)
    chain.step(1e-3, 300)
    figure = view3d.view(chain)
    assert {"springs", "nodes", "pinned nodes"} <= set(names(figure))
    lines = trace(figure, "springs")
    points = simulation_points(lines).reshape(-1, 3, 3)  # (m, start / end / gap, 3)
    assert_close(points[:, :2].reshape(-1, 3), chain.x[chain.springs].reshape(-1, 3), 5.0)
    assert np.isnan(points[:, 2]).all()
    colors = np.asarray(lines.line.color, dtype=float).reshape(-1, 3)
    assert_close(colors[:, 0], chain.strain(), np.abs(chain.strain()).max() * 10)
    free = simulation_points(trace(figure, "nodes"))
    assert_close(free, chain.x[~chain.pinned], 5.0)

    small = scenes.cloth(5)  # faces and few springs: drawn
    large = scenes.cloth(20)  # faces and 2,000 springs: left out unless asked for
    assert "springs" in names(view3d.view(small))
    assert "springs" not in names(view3d.view(large))
    assert "nodes" not in names(view3d.view(large))
    assert len(trace(view3d.view(large, springs=True), "springs").x) == 3 * large.n_springs
    assert "springs" not in names(view3d.view(chain, springs=False))


def test_pinned_nodes_are_marked_where_they_are(hanging_cloth):
    pins = trace(view3d.view(hanging_cloth), "pinned nodes")
    assert_close(simulation_points(pins), hanging_cloth.x[hanging_cloth.pinned], 4.0)
    assert "pinned nodes" not in names(view3d.view(hanging_cloth, show_pins=False))


def test_colliders_are_drawn_on_the_colliders():
    system = scenes.tablecloth(8, size=4.0, table_height=2.0)
    sphere = system.add_sphere((3.0, 1.0, 0.0), 0.5)
    box = system.add_box((-3.5, 0.0, -0.5), (-2.5, 0.8, 0.5))
    figure = view3d.view(system)
    table = system.colliders[0]
    side = simulation_points(trace(figure, "cylinder collider")) - table.center
    radial = np.hypot(side[:, 0], side[:, 2])
    assert np.all((np.abs(radial - table.radius) < 1e-5) | (np.abs(np.abs(side[:, 1]) - table.height / 2) < 1e-5))
    assert np.abs(side[:, 1]).max() == pytest.approx(table.height / 2, abs=1e-5)
    plane = simulation_points(trace(figure, "plane collider"))
    np.testing.assert_allclose(plane[:, 1], 0.0, atol=1e-6)  # the ground, under everything drawn
    for axis in (0, 2):
        assert plane[:, axis].min() < system.x[:, axis].min() and plane[:, axis].max() > system.x[:, axis].max()
        assert plane[:, axis].min() < -3.5 and plane[:, axis].max() > 3.5
    ball = simulation_points(trace(figure, "sphere collider"))
    np.testing.assert_allclose(np.linalg.norm(ball - sphere.center, axis=1), 0.5, rtol=1e-6)
    corners = simulation_points(trace(figure, "box collider"))
    np.testing.assert_allclose(corners.min(axis=0), (-3.5, 0.0, -0.5), atol=1e-6)
    np.testing.assert_allclose(corners.max(axis=0), (-2.5, 0.8, 0.5), atol=1e-6)
    assert not any(name.endswith("collider") for name in names(view3d.view(system, colliders=False)))
    del box


def test_trajectory_frames_are_its_records_with_moving_colliders():
    system = scenes.cloth(6, size=3.0, k=500.0, mass=0.1, pin="top")
    sphere = system.add_sphere((1.5, -1.5, 0.8), 0.4, velocity=(0.0, 0.0, -1.0))
    trajectory = system.run(2e-3, 500, 50, velocities=True)
    figure = view3d.view(trajectory, color_by="speed")
    assert len(figure.frames) == len(trajectory) == 11
    data_names = names(figure)
    surface_index = data_names.index("surface")
    sphere_index = data_names.index("sphere collider")
    radius = sphere.radius
    for r, frame in enumerate(figure.frames):
        updates = dict(zip(frame.traces, frame.data))
        assert_close(simulation_points(updates[surface_index]), trajectory.positions[r], 3.0)
        speed = np.linalg.norm(trajectory.velocities[r], axis=1)
        assert_close(updates[surface_index].intensity, speed, 10 * max(speed.max(), 1.0))
        ball = simulation_points(updates[sphere_index])
        np.testing.assert_allclose(np.linalg.norm(ball - trajectory.collider_centers[r, 0], axis=1), radius,
                                   rtol=1e-5)
    # One colour scale for every frame, one slider step per frame labelled with its time.
    speeds = np.linalg.norm(trajectory.velocities, axis=2)
    assert figure.layout.coloraxis.cmax >= np.percentile(speeds, 98)
    steps = figure.layout.sliders[0].steps
    assert [float(step.label) for step in steps] == pytest.approx(trajectory.times, abs=5e-4)
    assert [button.label.split()[-1] for button in figure.layout.updatemenus[0].buttons] == ["play", "pause"]

    few = view3d.view(trajectory, max_frames=4)
    assert len(few.frames) == 4
    kept = [0, 3, 7, 10]  # evenly spaced, first and last included
    for frame, r in zip(few.frames, kept):
        updates = dict(zip(frame.traces, frame.data))
        assert_close(simulation_points(updates[surface_index]), trajectory.positions[r], 3.0)
    # One recorded frame (a dict) is drawn like a system in that state.
    single = view3d.view(trajectory.frame(5), color_by="strain")
    assert not single.frames
    assert_close(simulation_points(trace(single, "surface")), trajectory.positions[5], 3.0)
    assert_close(simulation_points(trace(single, "sphere collider")).mean(axis=0),
                 trajectory.collider_centers[5, 0], 3.0)


def test_bad_input_raises_clearly(hanging_cloth):
    with pytest.raises(TypeError, match="System, a Trajectory or a frame dict"):
        view3d.view(42)
    with pytest.raises(TypeError, match="System, a Trajectory or a frame dict"):
        view3d.view([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="color_by"):
        view3d.view(hanging_cloth, color_by="stress")
    with pytest.raises(TypeError, match="springs"):
        view3d.view(hanging_cloth, springs="yes")
    with pytest.raises(TypeError, match="max_frames"):
        view3d.view(hanging_cloth, max_frames=2.5)
    with pytest.raises(ValueError, match="max_frames"):
        view3d.view(hanging_cloth, max_frames=0)
    with pytest.raises(ValueError, match="fps"):
        view3d.view(hanging_cloth, fps=0)
    with pytest.raises(ValueError, match="cmax"):
        view3d.view(hanging_cloth, cmax=-1.0)
    with pytest.raises(ValueError, match="positions"):
        view3d.view({"springs": [[0, 1]]})
    with pytest.raises(ValueError, match="springs"):
        view3d.view({"positions": np.zeros((2, 3)), "springs": [[0, 2]]})
    trajectory = scenes.chain(3).run(1e-3, 10, 5)
    with pytest.raises(ValueError, match="velocities=True"):
        view3d.view(trajectory, color_by="speed")
    with pytest.raises(ValueError, match="tension"):
        view3d.view(trajectory, color_by="tension")
    figure = view3d.view(trajectory)
    with pytest.raises(TypeError, match="options"):
        view3d.save_view(figure, "unused.html", color_by=None)


def test_save_view_writes_a_standalone_page(tmp_path, hanging_cloth):
    path = view3d.save_view(hanging_cloth, tmp_path / "cloth.html")
    assert path == tmp_path / "cloth.html"
    page = path.read_text()
    # plotly.js is embedded (no network needed) and arrays are base64 typed arrays.
    assert "<script src=" not in page and "Plotly.newPlot" in page and '"bdata"' in page
    with pytest.raises(ValueError, match="path"):
        view3d.save_view(hanging_cloth, tmp_path / "missing" / "cloth.html")


def test_msprings_view3d_is_the_module_msprings_plot_view3d_and_loads_no_matplotlib():
    code = ("import sys, msprings.view3d, msprings.plot.view3d; "
            "assert msprings.view3d is msprings.plot.view3d is sys.modules['msprings.view3d']; "
            "from msprings.view3d import *; from msprings.view3d import __all__; "
            "assert all(globals()[name] is getattr(msprings.plot.view3d, name) for name in __all__); "
            "assert not {'matplotlib', 'plotly'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE_PARENT)


def test_plotly_is_loaded_only_when_a_view_is_made():
    code = ("import sys, msprings, msprings.view3d; assert 'plotly' not in sys.modules; "
            "import msprings.plot as plot, msprings.view3d as view3d; "
            "assert plot.view is view3d.view and plot.save_view is view3d.save_view")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE_PARENT,
                   env={**os.environ, "MPLBACKEND": "Agg"})


# ---- a real browser ---------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium; missing, the test is skipped, except on CI (which installs it)."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is needed for the browser test on CI (.ci/run installs it)")
        pytest.skip("chromium is not installed")
    return path


def screenshot(page: Path, out: Path) -> np.ndarray:
    """The page as headless Chromium draws it (WebGL through SwiftShader), 900 x 700 pixels."""
    command = [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--use-gl=swiftshader",
               "--enable-unsafe-swiftshader", "--hide-scrollbars", f"--user-data-dir={out.parent / 'profile'}",
               "--window-size=900,700", "--virtual-time-budget=15000", f"--screenshot={out}", page.as_uri()]
    subprocess.run(command, check=True, capture_output=True, timeout=240)
    return np.asarray(Image.open(out).convert("RGB")).astype(int)


def model_pixels(image: np.ndarray) -> np.ndarray:
    """Pixels of the plot area (left of the colour bar, above the bottom) in the warm colours
    of the cloth (its colour scale runs from cream at rest to red when stretched); the
    background, grid, axes and text are grey or blue."""
    area = image[40:600, :760]
    red, green, blue = area[..., 0], area[..., 1], area[..., 2]
    return (red - blue > 20) & (red >= green)


def test_a_browser_draws_the_saved_view_and_its_changes(tmp_path):
    chromium()
    system = scenes.cloth(16, size=10.0, k=1500.0, mass=0.2)
    system.step(1e-3, 300)
    first = screenshot(view3d.save_view(system, tmp_path / "first.html"), tmp_path / "first.png")
    system.step(1e-3, 2000)  # 2 s later the cloth has fallen and swings from its corners
    second = screenshot(view3d.save_view(system, tmp_path / "second.html"), tmp_path / "second.png")

    for image in (first, second):
        assert image.shape == (700, 900, 3)
        # Not blank: a large part of the plot area shows the cloth in its colours.
        assert model_pixels(image).mean() > 0.02
        # Shaded, not flat: the cloth's pixels span a range of brightness.
        cloth = image[40:600, :760][model_pixels(image)].sum(axis=1)
        assert np.percentile(cloth, 95) - np.percentile(cloth, 5) > 40
    # The cloth moved: a good part of the picture changed, and the cloth covers other pixels.
    changed = np.abs(first - second).max(axis=2) > 30
    assert changed.mean() > 0.02
    assert (model_pixels(first) != model_pixels(second)).mean() > 0.02


def test_a_browser_plays_the_saved_trajectory(tmp_path):
    chromium()
    system = scenes.cloth(12, size=8.0, k=1500.0, mass=0.2, drag=0.5)
    trajectory = system.run(2e-3, 1000, 100)
    figure = view3d.view(trajectory)
    start = screenshot(view3d.save_view(figure, tmp_path / "start.html"), tmp_path / "start.png")
    # The same page, moved to its last frame as the slider would move it.
    figure.write_html(tmp_path / "end.html", include_plotlyjs=True, auto_play=False,
                      post_script="Plotly.animate('{plot_id}', ['%d'], {frame: {duration: 0, redraw: true}, "
                                  "transition: {duration: 0}, mode: 'immediate'});" % (len(figure.frames) - 1))
    end = screenshot(tmp_path / "end.html", tmp_path / "end.png")
    for image in (start, end):
        assert model_pixels(image).mean() > 0.02
    # At the start the cloth lies flat; 2 s later it hangs from its corners: it reaches
    # much further down the picture.
    start_rows = np.flatnonzero(model_pixels(start).sum(axis=1) > 5)
    end_rows = np.flatnonzero(model_pixels(end).sum(axis=1) > 5)
    assert end_rows.max() - end_rows.min() > 1.3 * (start_rows.max() - start_rows.min())
