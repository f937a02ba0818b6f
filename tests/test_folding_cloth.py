"""The folding cloth scene (:func:`msprings.scenes.folding_cloth`): a light fabric dropped onto
the ground piles up in folds that never pass through each other.

Its defaults are the physical values it documents (mass rho t size^2, self-contact at 0.4 x the
node spacing, implicit Euler); released, it lands and piles up with no mesh edge crossing a
triangle in any frame (the independent counter of ``crossings.py``) and its energy ledger
closes; held by its top edge it hangs and folds onto the ground, again without crossing; bad
values are refused by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from msprings import scenes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossings import count_crossings, mesh_edges  # noqa: E402


def test_folding_cloth_defaults() -> None:
    s = scenes.folding_cloth()
    n, size = 24, 0.8
    spacing = size / (n - 1)
    assert s.n_nodes == n * n
    assert s.integrator == "implicit_euler"
    # 300 kg/m^3 x 1 mm x 0.8 m x 0.8 m = 0.192 kg
    assert s.mass.sum() == pytest.approx(300.0 * 1e-3 * size * size, rel=1e-12)
    assert s.self_collision == pytest.approx(0.4 * spacing)
    assert s.self_friction == pytest.approx(0.3)
    assert s.self_contact_sweep == 1
    assert not s.pinned.any()
    # hung in the x-y plane, lower edge 5 cm above the ground plane y = 0, rippled 1 % of its size
    assert s.x[:, 1].min() == pytest.approx(0.05) and s.x[:, 1].max() == pytest.approx(0.85)
    assert 0.0 < np.abs(s.x[:, 2]).max() <= 0.01 * size + 1e-12
    (ground,) = s.colliders
    assert ground.kind == "plane"
    np.testing.assert_allclose(ground.normal, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("pin", [None, "top"])
def test_folding_cloth_piles_up_without_crossing_itself(pin: str | None) -> None:
    """75 frames of one step of 1/60 s: it falls 0.8 m (0.4 s) and piles up.  No frame has a
    crossing, the ledger closes, and the released cloth ends as a pile under a quarter of its size
    high while the held one hangs from its pinned edge down to the ground."""
    s = scenes.folding_cloth(16, pin=pin)
    faces = np.asarray(s.faces)
    edges = mesh_edges(faces)
    start = s.energy()
    counts = []
    for _ in range(75):
        s.step(1.0 / 60.0)
        counts.append(count_crossings(s.x, faces, edges))
    assert counts == [0] * 75
    assert s.energy().total == pytest.approx(start.total, rel=1e-9, abs=1e-9)
    assert sum(s.ledger()) > 0.0  # it landed: the fall's energy went somewhere, and is booked
    assert np.isfinite(s.x).all()
    assert s.x[:, 1].min() > -1e-9
    if pin is None:
        assert s.x[:, 1].max() < 0.25 * 0.8
    else:
        assert s.x[:, 1].max() == pytest.approx(0.85)
        # the lower part folded down onto the ground: many nodes lie within a few spacings of it
        assert np.count_nonzero(s.x[:, 1] < 0.05) >= 16


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"n": 2}, "n"),
        ({"size": -1.0}, "size"),
        ({"height": float("nan")}, "height"),
        ({"ripple": 0.5}, "ripple"),
        ({"pin": "corners"}, "pin"),
        ({"self_collision": 1.0}, "self_collision"),
        ({"self_collision": 0.0}, "self_collision"),
        ({"density": 0.0}, "density"),
        ({"damping_ratio": -0.1}, "damping_ratio"),
        ({"k": -1.0}, "k"),
    ],
)
def test_folding_cloth_refuses_bad_values(keywords: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        scenes.folding_cloth(**keywords)  # type: ignore[arg-type]
