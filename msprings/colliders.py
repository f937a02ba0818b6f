"""Rigid kinematic colliders: plane, sphere, axis-aligned box and capped cylinder.

A collider lives in its system's C model; a :class:`Collider` is a handle to it.  Reading an
attribute asks C for the current value (a moving collider's centre changes every step);
writing one validates the new value and changes the collider between steps.

Contact: after every step, a free node closer than ``thickness`` to a collider's surface
(or inside it) is moved out along the surface normal to distance ``thickness``.  Its
velocity relative to the collider then loses its normal component ``v_n < 0`` times
``1 + e`` (restitution ``e``: it leaves with ``-e v_n``), and Coulomb friction reduces the
tangential part ``v_t`` by at most ``mu`` times that normal change:
``v_t' = max(0, 1 - mu dv_n / |v_t|) v_t``.  A node fast enough to cross a thin collider in
one step is caught by a swept test along its path.  In the energy ledger
(:meth:`msprings.System.ledger`) the impulse times the collider's velocity,
``m V.(v' - v)``, is the collider's work, ``colliders`` (none for a collider at rest); the
rest of what a step's pushes change -- kinetic energy in the collider's frame, and the
gravitational and spring energy of the position correction -- is dissipated as ``contact``
when it is a loss, and booked as ``constraints`` work when the correction gives back more
than restitution and friction take.

Gradients (``System.run(..., differentiable=True)``): each of these maps is differentiated
exactly where it is smooth -- the projection onto the surface (with its curvature), the
restitution, sliding and sticking friction -- along the branch the step took; at the step a
node starts or stops touching, or switches between sliding and sticking, the gradient is the
one-sided derivative of that branch.  A collider's own pose, velocity and coefficients have
no gradient: they are constants of the run.  See :mod:`msprings._gradient`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ._system import real_scalar

if TYPE_CHECKING:
    from ._system import System

__all__ = ["Collider"]

_FIELDS = ("kind", "center", "axis", "size", "velocity", "restitution", "friction", "thickness")


class Collider:
    """Handle to one collider of a :class:`~msprings.System`.

    Attributes (all settable between steps, except ``kind`` and ``id``):

    - ``center`` (m): a point on a plane, or the centre of a sphere, box or cylinder.
    - ``normal`` (plane, unit, pointing out of the solid side) / ``axis`` (cylinder, unit).
    - ``radius`` (sphere, cylinder), ``half_extents`` (box, (3,)), ``height`` (cylinder,
      the full height between its caps) (m).
    - ``velocity`` (m/s): the collider moves by ``velocity * dt`` every step, and contacts
      use it as the surface velocity (a moving sphere pushes and drags the cloth).
    - ``restitution`` in [0, 1], ``friction`` >= 0, ``thickness`` >= 0 (m).

    Reading or setting an attribute the collider's kind does not have (``normal`` of a
    sphere, say) raises :class:`AttributeError`; using the handle after the collider was
    removed raises :class:`KeyError`.

    Parameters
    ----------
    system : System
        The system that owns the collider.  Handles are made by
        :meth:`~msprings.System.add_plane` and its siblings, not by hand.
    collider_id : int
        The collider's handle number in ``system``.
    """

    __slots__ = ("_id", "_system")

    def __init__(self, system: System, collider_id: int) -> None:
        self._system = system
        self._id = collider_id

    @property
    def id(self) -> int:
        """The collider's handle number, unique within its system."""
        return self._id

    def describe(self) -> dict[str, Any]:
        """The collider as a plain record, as a :class:`~msprings.trajectory.Trajectory` keeps it.

        Returns
        -------
        dict of str to object
            ``kind`` (str), ``center`` (m, 3 floats), ``axis`` (unit, 3 floats: a plane's
            normal or a cylinder's axis), ``size`` (m: radius; half extents; or radius and
            half height), ``velocity`` (m/s, 3 floats), ``restitution`` (1),
            ``friction`` (1) and ``thickness`` (m).

        Raises
        ------
        KeyError
            If the collider was removed from its system.
        """
        return dict(zip(_FIELDS, self._system._get_collider(self.id)))

    def _update(self, **changes: Any) -> None:
        values = self.describe()
        values.update(changes)
        self._system._set_collider(self.id, *(values[name] for name in _FIELDS))

    @property
    def kind(self) -> str:
        """"plane", "sphere", "box" or "cylinder"."""
        return self.describe()["kind"]

    @property
    def center(self) -> np.ndarray:
        return np.array(self.describe()["center"])

    @center.setter
    def center(self, value: ArrayLike) -> None:
        self._update(center=value)

    @property
    def normal(self) -> np.ndarray:
        self._require("plane", "normal")
        return np.array(self.describe()["axis"])

    @normal.setter
    def normal(self, value: ArrayLike) -> None:
        self._require("plane", "normal")
        self._update(axis=value)

    @property
    def axis(self) -> np.ndarray:
        self._require("cylinder", "axis")
        return np.array(self.describe()["axis"])

    @axis.setter
    def axis(self, value: ArrayLike) -> None:
        self._require("cylinder", "axis")
        self._update(axis=value)

    @property
    def radius(self) -> float:
        self._require(("sphere", "cylinder"), "radius")
        return self.describe()["size"][0]

    @radius.setter
    def radius(self, value: float) -> None:
        self._require(("sphere", "cylinder"), "radius")
        size = list(self.describe()["size"])
        size[0] = real_scalar(value, "radius")
        self._update(size=size)

    @property
    def half_extents(self) -> np.ndarray:
        self._require("box", "half_extents")
        return np.array(self.describe()["size"])

    @half_extents.setter
    def half_extents(self, value: ArrayLike) -> None:
        self._require("box", "half_extents")
        self._update(size=value)

    @property
    def height(self) -> float:
        self._require("cylinder", "height")
        return 2.0 * self.describe()["size"][1]

    @height.setter
    def height(self, value: float) -> None:
        self._require("cylinder", "height")
        size = list(self.describe()["size"])
        size[1] = 0.5 * real_scalar(value, "height")
        self._update(size=size)

    @property
    def velocity(self) -> np.ndarray:
        return np.array(self.describe()["velocity"])

    @velocity.setter
    def velocity(self, value: ArrayLike) -> None:
        self._update(velocity=value)

    @property
    def restitution(self) -> float:
        return self.describe()["restitution"]

    @restitution.setter
    def restitution(self, value: float) -> None:
        self._update(restitution=value)

    @property
    def friction(self) -> float:
        return self.describe()["friction"]

    @friction.setter
    def friction(self, value: float) -> None:
        self._update(friction=value)

    @property
    def thickness(self) -> float:
        return self.describe()["thickness"]

    @thickness.setter
    def thickness(self, value: float) -> None:
        self._update(thickness=value)

    def distance(self, points: ArrayLike) -> np.ndarray:
        """Signed distance from points to the collider's surface, negative inside.

        A slow NumPy evaluation of the same formulas the C contact code uses.

        Parameters
        ----------
        points : array_like, shape (..., 3)
            Positions (m).

        Returns
        -------
        numpy.ndarray, shape (...)
            Signed distance of each point (m), float64.

        Raises
        ------
        KeyError
            If the collider was removed from its system.
        """
        values = self.describe()
        p = np.asarray(points, dtype=np.float64) - np.asarray(values["center"])
        axis = np.asarray(values["axis"])
        size = np.asarray(values["size"])
        kind = values["kind"]
        if kind == "plane":
            return p @ axis
        if kind == "sphere":
            return np.linalg.norm(p, axis=-1) - size[0]
        if kind == "box":
            q = np.abs(p) - size
            return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)
        along = p @ axis
        radial = np.linalg.norm(p - along[..., None] * axis, axis=-1)
        d = np.stack([radial - size[0], np.abs(along) - size[1]], axis=-1)
        return np.linalg.norm(np.maximum(d, 0.0), axis=-1) + np.minimum(d.max(axis=-1), 0.0)

    def _require(self, kinds: str | tuple[str, ...], name: str) -> None:
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        kind = self.kind
        if kind not in kinds:
            raise AttributeError(f"a {kind} collider has no {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collider) and other._system is self._system and other.id == self.id

    def __hash__(self) -> int:
        return hash((id(self._system), self.id))

    def __repr__(self) -> str:
        try:
            values = self.describe()
        except KeyError:
            return f"<msprings.Collider {self.id} (removed)>"
        return (
            f"<msprings.Collider {self.id}: {values['kind']} at {tuple(round(c, 6) for c in values['center'])}, "
            f"e={values['restitution']:g}, mu={values['friction']:g}>"
        )
