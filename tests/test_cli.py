"""The command line, ``python -m msprings``, run as a user runs it: in a subprocess, in a fresh
working directory, importing the package the tests import (the source
tree's, or an installed wheel's)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import msprings
from msprings import mesh, scenes
from package_path import python_path

# Public functions of msprings.scenes that build spring index pairs rather than scenes.
_NOT_SCENES = {"grid_springs", "lattice_springs"}
SCENES = sorted(set(scenes.__all__) - _NOT_SCENES)


def run_cli(*arguments: str, cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m msprings ARGUMENTS`` in ``cwd``, importing the package the tests import."""
    environment = dict(os.environ, PYTHONPATH=python_path(), MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "msprings", *arguments], cwd=cwd, env=environment, capture_output=True,
        text=True, timeout=timeout, check=False,
    )


def assert_ok(result: subprocess.CompletedProcess[str]) -> None:
    """Exit status 0 and nothing on stderr (no warning, no traceback)."""
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr


def assert_usage_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit status 2, one line naming the problem on stderr, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.endswith("\n"), result.stderr
    assert "error" in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# ---- list and info ------------------------------------------------------------------------


def test_list_names_every_scene(tmp_path: Path) -> None:
    result = run_cli("list", cwd=tmp_path)
    assert_ok(result)
    listed = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert sorted(listed) == SCENES


def test_info_prints_version_and_integrators(tmp_path: Path) -> None:
    result = run_cli("info", cwd=tmp_path)
    assert_ok(result)
    assert msprings.__version__ in result.stdout
    for name in msprings.INTEGRATORS:
        assert name in result.stdout
    assert f"vector path: {msprings._core.vector_path()}" in result.stdout
    assert (msprings._core.vector_path() == "avx2") == msprings._core.avx2()


def test_info_reports_platform_vector_path_and_thread_layer(tmp_path: Path) -> None:
    """``info`` names the operating system, the processor and Python, and the build chose the
    thread layer and the vector path of this platform."""
    result = run_cli("info", cwd=tmp_path)
    assert_ok(result)
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in result.stdout.splitlines()
             if ":" in line}
    assert platform.system() in lines["platform"] and platform.machine() in lines["platform"]
    assert f"{platform.python_implementation()} {platform.python_version()}" in lines["platform"]
    layer = "win32" if sys.platform == "win32" else "posix"
    assert msprings._core.thread_layer() == layer
    assert lines["thread layer"].split()[0] == layer
    expected_paths = {"x86_64": {"avx2", "sse2"}, "amd64": {"avx2", "sse2"}, "aarch64": {"neon"}, "arm64": {"neon"}}
    paths = expected_paths.get(platform.machine().lower(), {"plain"})
    assert lines["vector path"].split()[0] == msprings._core.vector_path()
    assert msprings._core.vector_path() in paths


# ---- run: outputs -------------------------------------------------------------------------


def test_run_chain_writes_trajectory_npz(tmp_path: Path) -> None:
    result = run_cli("run", "chain", "--steps", "200", "-q", "-o", "X.npz", cwd=tmp_path)
    assert_ok(result)
    assert result.stdout == ""
    reference = scenes.chain()
    trajectory = msprings.Trajectory.load(tmp_path / "X.npz")
    times, positions, energy = trajectory.times, trajectory.positions, trajectory.energy
    springs, faces = trajectory.springs, trajectory.faces
    records = len(times)
    assert records >= 2
    assert positions.shape == (records, reference.n_nodes, 3)
    assert energy.shape == (records, len(msprings.Energy._fields))
    assert trajectory.ledger.shape == (records, len(msprings.Ledger._fields))
    # total = mechanical + dissipated - work in every record
    np.testing.assert_allclose(trajectory.total, trajectory.mechanical + trajectory.dissipated - trajectory.work)
    assert np.array_equal(springs, reference.springs)
    assert faces.shape == (0, 3)
    # Records are whole steps apart (default dt 1 ms) from the start to the end of the run, equally
    # spaced but for the last, which may close a shorter final stretch.
    assert times[0] == 0.0 and np.isclose(times[-1], 200 * 1e-3)
    steps = times / 1e-3
    assert np.allclose(steps, np.round(steps))
    spacing = np.diff(steps)
    assert np.allclose(spacing[:-1], spacing[0]) and 0 < spacing[-1] <= spacing[0] + 1e-9
    assert np.array_equal(positions[0], reference.x)
    # The last record is the state after 200 steps, exactly as stepping in this process gives.
    reference.step(1e-3, 200)
    assert np.array_equal(positions[-1], reference.x)
    assert np.allclose(energy[-1], tuple(reference.energy()), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(trajectory.ledger[-1], reference.ledger())


def test_run_prints_the_solvers_numerical_dissipation(tmp_path: Path) -> None:
    """A large-step solver's own damping appears among what was dissipated, and the total
    closes to rounding; an explicit integrator books none and its drift is its error."""
    implicit = run_cli("run", "chain", "--integrator", "implicit_euler", "--dt", "0.01", "--steps", "300",
                       cwd=tmp_path)
    assert_ok(implicit)
    reference = scenes.chain(integrator="implicit_euler")
    reference.step(0.01, 300)
    dissipated = next(line for line in implicit.stdout.splitlines() if "dissipated by" in line)
    assert f"dampers {reference.ledger().dampers:.5g}, numerical {reference.ledger().numerical:.5g}" in dissipated
    assert "(rounding: the solver's own damping is booked as numerical)" in implicit.stdout
    explicit = run_cli("run", "chain", "--dt", "0.001", "--steps", "300", cwd=tmp_path)
    assert_ok(explicit)
    assert "numerical" not in next(line for line in explicit.stdout.splitlines() if "dissipated by" in line)
    assert "(the integrator's error)" in explicit.stdout


@pytest.mark.parametrize("steps, overflow", [("20", False), ("2000", True)],
                         ids=["energies grow a millionfold", "non-finite"])
def test_a_run_that_blows_up_says_so_writes_nothing_and_fails(tmp_path: Path, steps: str, overflow: bool) -> None:
    """At dt = 0.03 s (above the chain's stable step of about 0.013 s) 20 steps leave finite
    energies a millionfold beyond the scene's and 2000 steps overflow: either way one paragraph
    on stderr, no table, no output file, exit status 3."""
    result = run_cli("run", "chain", "--dt", "0.03", "--steps", steps, "-q", "-o", "c.npz", cwd=tmp_path)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    message = result.stderr
    assert message.startswith("msprings: chain: the motion blew up") and "Nothing was written." in message
    assert "stable limit of about 0.013 s" in message
    assert ("non-finite" in message) == overflow
    assert not (tmp_path / "c.npz").exists()


def test_run_cloth_writes_obj_frames(tmp_path: Path) -> None:
    result = run_cli("run", "cloth", "--resolution", "8", "--steps", "50", "-o", "frames_dir", cwd=tmp_path)
    assert_ok(result)
    assert "cloth" in result.stdout and "64 nodes" in result.stdout
    files = sorted((tmp_path / "frames_dir").glob("*.obj"))
    assert len(files) >= 2
    reference = scenes.cloth(8)
    first, last = mesh.load_obj(files[0]), mesh.load_obj(files[-1])
    assert np.array_equal(first.vertices, reference.x)
    assert np.array_equal(first.faces, reference.faces) and np.array_equal(last.faces, reference.faces)
    reference.step(1e-3, 50)
    assert np.array_equal(last.vertices, reference.x)


@pytest.mark.parametrize("suffix", [".pvd", ".xdmf"])
def test_run_cloth_writes_a_paraview_series(tmp_path: Path, suffix: str) -> None:
    meshio = pytest.importorskip("meshio")
    result = run_cli("run", "cloth", "--resolution", "8", "--steps", "50", "-q", "-o", "run" + suffix, cwd=tmp_path)
    assert_ok(result)
    reference = scenes.cloth(8)
    reference.step(1e-3, 50)
    if suffix == ".pvd":
        frames = sorted(tmp_path.glob("run_*.vtu"))
        assert (tmp_path / "run.pvd").exists() and len(frames) >= 2
        last = meshio.read(frames[-1])
        assert np.array_equal(last.points, reference.x)
        assert np.array_equal(last.cells_dict["triangle"], reference.faces)
    else:
        with meshio.xdmf.TimeSeriesReader(tmp_path / "run.xdmf") as reader:
            points, _ = reader.read_points_cells()
            _, data, _ = reader.read_data(reader.num_steps - 1)
        np.testing.assert_allclose(points + data["displacement"], reference.x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("suffix", [".png", ".gif"])
def test_run_cloth_writes_image(tmp_path: Path, suffix: str) -> None:
    name = "out" + suffix
    # Few frames keep the animation quick to render.
    result = run_cli("run", "cloth", "--resolution", "8", "--steps", "50", "--frames", "5", "-q", "-o", name,
                     cwd=tmp_path)
    assert_ok(result)
    with Image.open(tmp_path / name) as image:
        assert image.format == suffix[1:].upper()
        assert image.width > 100 and image.height > 100
        frames = getattr(image, "n_frames", 1)
        image.verify()
    if suffix == ".png":
        assert frames == 1
    else:
        assert frames > 1


def test_demo_writes_animation(tmp_path: Path) -> None:
    result = run_cli("demo", "-o", "demo.gif", "-q", cwd=tmp_path, timeout=300.0)
    assert_ok(result)
    assert result.stdout == ""
    with Image.open(tmp_path / "demo.gif") as image:
        assert image.format == "GIF"
        assert image.n_frames > 1


@pytest.mark.parametrize("scene", SCENES)
def test_every_scene_runs_at_its_default_step(tmp_path: Path, scene: str) -> None:
    """A listed scene must survive its own default time step (no StabilityWarning, no divergence)."""
    result = run_cli("run", scene, "--steps", "300", "--frames", "2", "-q", "-o", "run.npz", cwd=tmp_path)
    assert_ok(result)
    with np.load(tmp_path / "run.npz") as data:
        assert np.all(np.isfinite(data["positions"]))


# ---- bad input ------------------------------------------------------------------------------


def test_unknown_scene_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("run", "no_such_scene", cwd=tmp_path)
    assert_usage_error(result, "no_such_scene", "chain")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (("run", "chain", "--steps", "0"), ("--steps",)),
        (("run", "chain", "--steps", "many"), ("--steps",)),
        (("run", "chain", "--dt", "-0.001"), ("--dt",)),
        (("run", "chain", "--frames", "0"), ("--frames",)),
        (("run", "chain", "--integrator", "leapfrog"), ("--integrator", "leapfrog")),
        (("run", "pyramid", "--resolution", "3"), ("pyramid", "resolution")),
        (("run", "chain", "--steps", "5", "-q", "-o", "out.txt"), (".txt",)),
        (("run", "chain", "--steps", "5", "-q", "-o", "frames"), ("OBJ", "faces")),
        (("frobnicate",), ("frobnicate",)),
        ((), ("command",)),
        # out of each scene's resolution range: refused before building anything
        (("run", "spring_sphere", "--resolution", "40"), ("--resolution 40", "between 1 and 6")),
        (("run", "cloth", "--resolution", "100000"), ("--resolution", "cloth", "400")),
        (("run", "chain", "--resolution", "1"), ("--resolution 1", "between 2")),
        # options that do not apply to the scene or the output
        (("run", "chain", "--wind", "3"), ("--wind", "chain")),
        (("run", "chain", "--fps", "10"), ("--fps", ".gif")),
        (("run", "chain", "--fps", "10", "-o", "run.npz"), ("--fps",)),
        # outputs that cannot be written, refused before simulating
        (("run", "chain", "-o", "no_such_folder/run.npz"), ("no_such_folder", "does not exist")),
        (("run", "chain", "-o", "."), ("OBJ", "faces")),
        (("demo", "-o", "no_such_folder/demo.gif"), ("no_such_folder",)),
        (("demo", "-o", "demo.txt"), (".txt",)),
    ],
)
def test_bad_options_are_usage_errors(tmp_path: Path, arguments: tuple[str, ...], fragments: tuple[str, ...]) -> None:
    result = run_cli(*arguments, cwd=tmp_path)
    assert_usage_error(result, *fragments)
    # Nothing is written when the command is refused.
    assert list(tmp_path.iterdir()) == []


def test_outputs_are_checked_before_simulating(tmp_path: Path) -> None:
    """A long run with an output that cannot be written fails at once, before printing the
    run's header or simulating (a 100-second cloth would take minutes)."""
    (tmp_path / "a_file").write_text("")
    for output in ("a_file/run.npz", "a_file", "run.txt"):
        result = run_cli("run", "cloth", "--steps", "100000", "-o", output, cwd=tmp_path, timeout=60.0)
        assert_usage_error(result, output.split("/")[0] if "/" in output else output.split(".")[-1])
        assert result.stdout == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a_file"]


def test_missing_ffmpeg_is_reported_before_simulating(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    environment = dict(os.environ, PATH=str(empty), MPLBACKEND="Agg",
                       PYTHONPATH=python_path())
    result = subprocess.run([sys.executable, "-m", "msprings", "run", "cloth", "--steps", "100000", "-o", "run.mp4"],
                            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60, check=False)
    assert_usage_error(result, "ffmpeg", ".gif")
    assert result.stdout == ""
    assert not (tmp_path / "run.mp4").exists()


def test_reader_that_stops_early_ends_quietly(tmp_path: Path) -> None:
    """``msprings run chain | head -n 1``: the closed pipe ends the command without a traceback."""
    environment = dict(os.environ, PYTHONPATH=python_path(), MPLBACKEND="Agg")
    process = subprocess.Popen([sys.executable, "-m", "msprings", "run", "chain", "--steps", "3000"], cwd=tmp_path,
                               env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before it has written anything
    with process.stderr:
        stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert stderr == ""
    assert process.returncode == 1
