"""Self-contacts in the interactive 3-D view: ``view3d.view(s, contacts=True)`` marks every node
closer than 1.1 self-collision distances to a triangle it is not a corner of, with a segment
to the closest point of the nearest such triangle, and every pair of mesh edges sharing no
node that come as close (closest points inside both edges), with a segment between them.

Checked on two stacked sheets whose gap is known (every node over the lower sheet touches it,
straight down; every crossing of their edges, 2 cm straight down; none when the gap is wider
than the reach), against brute-force references on a folded pile (the distance from each node
to each triangle, found by sampling the triangle densely; every pair of edges solved for its
closest points), on a trajectory's frames, in a real browser's picture, and for bad input.
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


# ---- edge-edge contacts --------------------------------------------------------------------------


def edge_trace(figure):
    found = [t for t in figure.data if t.name == "edge contacts"]
    assert len(found) == 1
    return found[0]


def brute_force_edge_contacts(x: np.ndarray, faces: np.ndarray, reach: float) -> dict[tuple, tuple]:
    """Every pair of mesh edges sharing no node whose lines' closest points lie inside both
    edges (0 < s, t < 1) and closer than ``reach``, by solving the 2 x 2 normal equations of
    every pair of edges (all of them, no grid), inside meaning more than a millionth of the
    edge from either end: {(edge, edge): (point, point, s, t, distance)}."""
    edges = np.unique(np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    i, j = np.triu_indices(len(edges), k=1)
    apart = (edges[i][:, :, None] != edges[j][:, None, :]).all(axis=(1, 2))
    i, j = i[apart], j[apart]
    p1, d1 = x[edges[i, 0]], x[edges[i, 1]] - x[edges[i, 0]]
    p2, d2 = x[edges[j, 0]], x[edges[j, 1]] - x[edges[j, 0]]
    # minimise |p1 + s d1 - p2 - t d2|^2: [[d1.d1, -d1.d2], [d1.d2, -d2.d2]] (s, t) = (-(p1-p2).d1, -(p1-p2).d2)
    r = p1 - p2
    m = np.stack([np.stack([(d1 * d1).sum(1), -(d1 * d2).sum(1)], 1),
                  np.stack([(d1 * d2).sum(1), -(d2 * d2).sum(1)], 1)], 1)
    rhs = -np.stack([(r * d1).sum(1), (r * d2).sum(1)], 1)
    regular = np.abs(np.linalg.det(m)) > 1e-9 * (d1 * d1).sum(1) * (d2 * d2).sum(1)
    st = np.full_like(rhs, -1.0)
    st[regular] = np.linalg.solve(m[regular], rhs[regular][:, :, None])[:, :, 0]
    s, t = st[:, 0], st[:, 1]
    a, b = p1 + s[:, None] * d1, p2 + t[:, None] * d2
    distance = np.linalg.norm(a - b, axis=1)
    hit = regular & (np.minimum(s, 1 - s) > 1e-6) & (np.minimum(t, 1 - t) > 1e-6) & (distance < reach)
    return {(tuple(edges[i[k]]), tuple(edges[j[k]])): (a[k], b[k], s[k], t[k], distance[k])
            for k in np.flatnonzero(hit)}


def same_pairs(one: np.ndarray, other: np.ndarray, at_one: np.ndarray, at_other: np.ndarray, reference: dict,
               reach: float) -> dict:
    """Checks the pairs found (each once) against the reference's, with the same closest
    points; a pair on the border of the definition (s or t within 1e-9 of 1e-6 from an end,
    or a distance within 1e-9 of the reach) may go either way.  Returns the pairs found."""
    found = {(tuple(e), tuple(g)): (a, b) for e, g, a, b in zip(one, other, at_one, at_other)}
    assert len(found) == len(one)
    for pair in set(reference) ^ set(found):
        assert pair in reference, f"{pair} found but not in the reference"
        _, _, s_, t_, distance = reference[pair]
        assert abs(min(s_, 1 - s_, t_, 1 - t_) - 1e-6) < 1e-9 or abs(distance - reach) < 1e-9, pair
    for pair in set(reference) & set(found):
        np.testing.assert_allclose(found[pair][0], reference[pair][0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(found[pair][1], reference[pair][1], rtol=0, atol=1e-9)
    return found


def test_edge_contacts_of_a_folded_pile_match_a_brute_force_reference() -> None:
    """On a folded pile of 16 x 16 nodes, the pairs of edges found through the grid are those
    of the all-pairs reference, with the same closest points (a pair on the border of the
    definition -- s or t within 1e-9 of an end, or a distance within 1e-9 of the reach -- may
    go either way)."""
    from msprings.plot.view3d import _edge_contacts

    s = scenes.folding_cloth(16)
    s.step(1 / 60, 60)
    x, faces = s.x.copy(), np.asarray(s.faces)
    reach = 1.1 * s.self_collision
    one, other, at_one, at_other = _edge_contacts(x, faces, reach)
    assert len(one) > 5
    found = same_pairs(one, other, at_one, at_other, brute_force_edge_contacts(x, faces, reach), reach)
    # the view draws them: an orange segment between the closest points of each pair
    starts, ends = segments(edge_trace(view3d.view(s, contacts=True)))
    assert len(starts) == len(found)
    np.testing.assert_allclose(starts, at_one, atol=FLOAT32)
    np.testing.assert_allclose(ends, at_other, atol=FLOAT32)


def test_stacked_sheets_touch_where_their_edges_cross() -> None:
    """The two stacked sheets 2 cm apart (d = 8 cm): every crossing of an upper edge over a
    lower one, seen from above, is an edge-edge contact 2 cm long, straight down; the
    reference finds the same pairs.  Sheets beyond the reach have none."""
    from msprings.plot.view3d import _edge_contacts

    s = stacked_sheets(gap=0.02)
    reach = 1.1 * 0.08
    one, other, at_one, at_other = _edge_contacts(s.x, np.asarray(s.faces), reach)
    assert len(one) > 0
    np.testing.assert_allclose(at_one[:, 1] - at_other[:, 1], -0.02, atol=1e-12)  # lower sheet's edges first
    np.testing.assert_allclose(at_one[:, [0, 2]], at_other[:, [0, 2]], atol=1e-12)
    reference = brute_force_edge_contacts(s.x, np.asarray(s.faces), reach)
    assert set(same_pairs(one, other, at_one, at_other, reference, reach)) == set(reference)
    far = stacked_sheets(gap=1.2 * 0.08)
    assert len(_edge_contacts(far.x, np.asarray(far.faces), reach)[0]) == 0
    assert len(segments(edge_trace(view3d.view(far, contacts=True)))[0]) == 0


def crossing_strips() -> msprings.System:
    """Two strips of 11 x 3 nodes 10 cm apart, the upper one turned across the lower one and
    3 cm above it, self-collision 4 cm: where they cross, upper nodes lie over the lower
    strip and upper edges pass over lower ones."""
    n, w, h = 11, 3, 0.1
    i, j = np.meshgrid(np.arange(n), np.arange(w), indexing="ij")
    lower = np.column_stack([i.ravel() * h, np.zeros(n * w), j.ravel() * h])
    faces = []
    for i0 in range(n - 1):
        for j0 in range(w - 1):
            a, b, c, d = i0 * w + j0, i0 * w + j0 + 1, (i0 + 1) * w + j0, (i0 + 1) * w + j0 + 1
            faces += [(a, c, b), (b, c, d)]
    faces = np.array(faces)
    upper = lower[:, [2, 1, 0]] + (0.35, 0.03, -0.35)
    s = msprings.System(np.vstack([lower, upper]), np.zeros((0, 2), dtype=np.int64), mass=1.0,
                        faces=np.vstack([faces, faces + len(lower)]), gravity=(0.0, 0.0, 0.0))
    s.self_collision = 0.04
    return s


def test_a_browser_draws_the_edge_contacts_in_orange_beside_the_red_ones(tmp_path) -> None:
    """Headless Chromium draws the crossing strips seen from low at the side: orange segments
    (the edge-edge contacts) and red ones (node-triangle) stand between the strips; without
    contacts=True neither colour is on the picture."""
    from test_view3d import screenshot

    def picture(contacts: bool, name: str) -> np.ndarray:
        figure = view3d.view(crossing_strips(), contacts=contacts, color_by=None)
        figure.update_layout(scene_camera={"eye": {"x": 0.55, "y": 0.45, "z": 0.12}})
        return screenshot(view3d.save_view(figure, tmp_path / f"{name}.html"), tmp_path / f"{name}.png")

    def orange(image: np.ndarray) -> int:  # #f59b00, antialiased
        r, g, b = image[..., 0], image[..., 1], image[..., 2]
        return int(((r > 200) & (g > 110) & (g < 190) & (b < 70)).sum())

    def red(image: np.ndarray) -> int:  # #d1261c
        r, g, b = image[..., 0], image[..., 1], image[..., 2]
        return int(((r > 150) & (g < 90) & (b < 90)).sum())

    marked, plain = picture(True, "marked"), picture(False, "plain")
    assert orange(marked) > 100 and red(marked) > 100
    assert orange(plain) == 0 and red(plain) == 0
