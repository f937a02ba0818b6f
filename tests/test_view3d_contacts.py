"""Self-contacts in the interactive 3-D view: ``view3d.view(s, contacts=True)`` marks every node
closer than 1.1 self-collision distances to a triangle it is not a corner of, with a segment
to the closest point of the nearest such triangle.

Checked on two stacked sheets whose gap is known (every node over the lower sheet touches it,
straight down; none when the gap is wider than the reach), against a brute-force reference on
a folded pile (the distance from each node to each triangle, found by sampling the triangle
densely), on a trajectory's frames, and for bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

import msprings
from msprings import scenes, view3d
from package_path import PACKAGE_PARENT  # noqa: F401  (the test imports the package under test)

pytest.importorskip("plotly")

FLOAT32 = 2e-7


def contact_trace(figure):
    found = [t for t in figure.data if t.name == "self-contacts"]
    assert len(found) == 1
    return found[0]


def segments(data) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) (p, 3) of a line trace's NaN-separated segments, in simulation (x, y, z)."""
    points = np.column_stack([np.asarray(data.y, dtype=float), np.asarray(data.z, dtype=float),
                              np.asarray(data.x, dtype=float)]).reshape(-1, 3, 3)
    assert np.isnan(points[:, 2]).all()
    return points[:, 0], points[:, 1]


def stacked_sheets(gap: float, n: int = 6, size: float = 1.0) -> msprings.System:
    """Two n x n sheets in horizontal planes, the upper one ``gap`` m above the lower one and
    shifted by half a cell, gravity off, self-collision 0.4 x the node spacing."""
    h = size / (n - 1)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    lower = np.column_stack([j.ravel() * h, np.zeros(n * n), i.ravel() * h])
    upper = lower + (0.5 * h, gap, 0.5 * h)
    faces = []
    for i0 in range(n - 1):
        for j0 in range(n - 1):
            a, b, c, d = i0 * n + j0, i0 * n + j0 + 1, (i0 + 1) * n + j0, (i0 + 1) * n + j0 + 1
            faces += [(a, c, b), (b, c, d)]
    faces = np.array(faces)
    s = msprings.System(np.concatenate([lower, upper]), np.zeros((0, 2), dtype=np.int64), mass=1.0,
                        faces=np.concatenate([faces, faces + n * n]), gravity=(0.0, 0.0, 0.0))
    s.self_collision = 0.4 * h
    return s


def square_distance(points: np.ndarray, low: float, high: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    """Distance (m) from points to the horizontal square [low, high]^2 at height y, and the
    square's closest points."""
    closest = np.column_stack([np.clip(points[:, 0], low, high), np.full(len(points), y),
                               np.clip(points[:, 2], low, high)])
    return np.linalg.norm(points - closest, axis=1), closest


def test_stacked_sheets_touch_where_they_overlap() -> None:
    """The upper sheet (gap 2 cm, d = 8 cm) touches the lower one at every node within 1.1 d
    of the lower square, at the square's closest point; so does the lower sheet the upper."""
    s = stacked_sheets(gap=0.02)
    n, h, reach = 6, 0.2, 1.1 * 0.08
    starts, ends = segments(contact_trace(view3d.view(s, contacts=True, color_by=None)))
    for sheet, (low, high, y) in ((s.x[n * n:], (0.0, 1.0, 0.0)), (s.x[: n * n], (0.5 * h, 1.0 + 0.5 * h, 0.02))):
        distance, closest = square_distance(sheet, low, high, y)
        touching = distance < reach
        assert 0 < touching.sum() < len(sheet)
        mine = np.isclose(starts[:, 1], sheet[0, 1])
        order = np.lexsort(starts[mine].T)
        expected = np.lexsort(sheet[touching].T)
        np.testing.assert_allclose(starts[mine][order], sheet[touching][expected], atol=FLOAT32)
        np.testing.assert_allclose(ends[mine][order], closest[touching][expected], atol=FLOAT32)


def test_sheets_farther_apart_than_the_reach_do_not_touch() -> None:
    s = stacked_sheets(gap=1.2 * 0.08)  # beyond 1.1 x d
    starts, _ = segments(contact_trace(view3d.view(s, contacts=True)))
    assert len(starts) == 0
    # a larger distance given by hand finds them again
    starts, _ = segments(contact_trace(view3d.view(s, contacts=0.1)))
    assert len(starts) > 0


def sampled_distances(x: np.ndarray, faces: np.ndarray, nodes: np.ndarray, samples: int = 40) -> np.ndarray:
    """Distance (m) from each of ``nodes`` to each triangle it is not a corner of (inf for its
    own), by brute force over a barycentric grid of points on every triangle."""
    u, v = np.meshgrid(np.linspace(0, 1, samples + 1), np.linspace(0, 1, samples + 1), indexing="ij")
    keep = u + v <= 1.0 + 1e-12
    u, v = u[keep], v[keep]
    a, b, c = x[faces[:, 0]], x[faces[:, 1]], x[faces[:, 2]]
    points = a[:, None] + u[None, :, None] * (b - a)[:, None] + v[None, :, None] * (c - a)[:, None]  # (F, S, 3)
    out = np.empty((len(nodes), len(faces)))
    for row, node in enumerate(nodes):
        out[row] = np.linalg.norm(points - x[node], axis=2).min(axis=1)
        out[row, (faces == node).any(axis=1)] = np.inf
    return out


def test_a_folded_pile_matches_a_brute_force_reference() -> None:
    s = scenes.folding_cloth(16)
    s.step(1 / 60, 60)
    x, faces = s.x.copy(), np.asarray(s.faces)
    reach = 1.1 * s.self_collision
    starts, ends = segments(contact_trace(view3d.view(s, contacts=True)))
    assert len(starts) > 0
    # the nodes reported, by position: each once
    reported = np.argmin(np.linalg.norm(x[None, :, :] - starts[:, None, :], axis=2), axis=1)
    np.testing.assert_allclose(starts, x[reported], atol=FLOAT32 * 1.0)
    assert len(set(reported.tolist())) == len(reported)
    distances = sampled_distances(x, faces, np.arange(len(x)))
    nearest = distances.min(axis=1)
    # sampling overestimates a distance by at most the sample spacing
    slack = 1.5 * np.linalg.norm(x[faces[:, 1]] - x[faces[:, 0]], axis=1).max() / 40
    sure = np.flatnonzero(nearest < reach - slack)
    assert set(sure) <= set(reported.tolist())
    lengths = np.linalg.norm(ends - starts, axis=1)
    assert np.all(lengths < reach + 1e-6)
    for node, length in zip(reported, lengths):
        # the nearest triangle's closest point: as near as the reference's, to its sampling
        assert nearest[node] - slack <= length <= nearest[node] + 1e-9


def test_a_trajectorys_frames_carry_their_own_contacts() -> None:
    s = scenes.folding_cloth(16)
    run = s.run(1 / 60, 60, record_every=20)
    figure = view3d.view(run, contacts=s.self_collision)
    index = [t.name for t in figure.data].index("self-contacts")
    counts = []
    for frame in figure.frames:
        (data,) = [d for d, t in zip(frame.data, frame.traces) if t == index]
        counts.append(len(np.asarray(data.x)) // 3)
    assert len(counts) == len(run)
    assert counts[0] == 0 and counts[-1] > 0  # a hanging sheet touches nothing; the pile does


@pytest.mark.parametrize("contacts", ["yes", -0.1, 0.0, float("nan")])
def test_bad_contacts_are_refused(contacts: object) -> None:
    with pytest.raises(ValueError, match="contacts"):
        view3d.view(scenes.folding_cloth(4), contacts=contacts)  # type: ignore[arg-type]


def test_contacts_need_a_distance_and_triangles() -> None:
    with pytest.raises(ValueError, match="contacts=True"):
        view3d.view(scenes.cloth(4), contacts=True)  # no self-collision set
    with pytest.raises(ValueError, match="contacts.*faces"):
        view3d.view(scenes.chain(5), contacts=0.1)
    assert "self-contacts" not in [t.name for t in view3d.view(scenes.folding_cloth(4)).data]
