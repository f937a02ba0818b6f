"""The user-facing System: input normalisation and convenience on top of the C core."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _core

__all__ = ["Energy", "System"]


class Energy(NamedTuple):
    """Energy ledger of a system (all in J).

    ``mechanical = kinetic + spring + gravity``; ``total = mechanical + dissipated``.  With an
    exact integrator ``total`` stays constant (for fixed pins and no external force); what it
    drifts by is the integrator's error.
    """

    kinetic: float
    spring: float
    gravity: float
    dissipated: float
    mechanical: float
    total: float


def _real_array(value: ArrayLike, name: str) -> np.ndarray:
    """Converts ``value`` to a new float64 array, refusing non-real data with TypeError."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of real numbers: {error}") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must contain real numbers, got dtype {array.dtype}")
    return np.array(array, dtype=np.float64, order="C")


def _per_item(value: ArrayLike, count: int, name: str, what: str) -> np.ndarray:
    """A scalar broadcast to ``count`` items, or an array of exactly ``count`` items."""
    array = _real_array(value, name)
    if array.ndim == 0:
        return np.full(count, float(array))
    if array.shape != (count,):
        raise ValueError(f"{name} must be a scalar or have shape ({count},) (one per {what}), got {array.shape}")
    return array


def _springs_array(springs: ArrayLike, n_nodes: int) -> np.ndarray:
    try:
        array = np.asarray(springs)
    except (TypeError, ValueError) as error:
        raise TypeError(f"springs must be an (m, 2) array of integer node indices: {error}") from None
    if array.size == 0:
        array = np.zeros((0, 2), dtype=np.int64) if array.dtype.kind not in "USO" else array
    if array.dtype.kind not in "iu":
        raise TypeError(f"springs must contain integer node indices, got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"springs must have shape (m, 2), got {array.shape}")
    if array.size and (array.min() < 0 or array.max() >= n_nodes):
        bad = int(np.flatnonzero(((array < 0) | (array >= n_nodes)).any(axis=1))[0])
        raise ValueError(
            f"springs[{bad}] = {tuple(int(i) for i in array[bad])} refers to a node outside 0..{n_nodes - 1}"
        )
    return array.astype(np.int32)


def _pinned_mask(pinned: ArrayLike | None, n_nodes: int) -> np.ndarray:
    mask = np.zeros(n_nodes, dtype=bool)
    if pinned is None:
        return mask
    array = np.asarray(pinned)
    if array.dtype == bool:
        if array.shape != (n_nodes,):
            raise ValueError(f"pinned as a boolean mask must have shape ({n_nodes},), got {array.shape}")
        return array.copy()
    if array.size == 0:
        return mask
    if array.dtype.kind not in "iu":
        raise TypeError(f"pinned must be node indices (integers) or a boolean mask, got dtype {array.dtype}")
    indices = array.reshape(-1)
    if indices.min() < 0 or indices.max() >= n_nodes:
        raise ValueError(f"pinned contains node index {int(indices[(indices < 0) | (indices >= n_nodes)][0])} "
                         f"outside 0..{n_nodes - 1}")
    mask[indices] = True
    return mask


class System(_core.System):
    """A mass-spring network stepped in C, with its state shared as NumPy arrays.

    Parameters
    ----------
    positions : array_like, shape (n, 3)
        Initial node positions (m).  ``n >= 1``.
    springs : array_like of int, shape (m, 2)
        Node index pairs ``(i, j)``; ``m`` may be 0.  A spring may not join a node to itself.
    mass : float or array_like, shape (n,)
        Node masses (kg), > 0 on free nodes (a pinned node may have mass 0).  Default 1.
    k : float or array_like, shape (m,)
        Spring stiffness (N/m), >= 0.  Default 1.
    c : float or array_like, shape (m,)
        Axial damping (N s/m), >= 0, acting on the rate of change of length.  Default 0.
    rest : float or array_like, shape (m,), optional
        Rest lengths (m), >= 0.  Default: the initial lengths, so the network starts unstressed.
    pinned : sequence of int or bool array_like, shape (n,), optional
        Nodes that ignore forces: they move only with their own velocity (default 0) or when
        their position is written, so they can be dragged or shaken.
    velocities : array_like, shape (n, 3), optional
        Initial velocities (m/s).  Default 0.
    gravity : array_like, shape (3,)
        Gravitational acceleration (m/s^2).  Default ``(0, -9.81, 0)``: y is up.
    drag : float
        Linear air drag (N s/m): force ``-drag * v`` on every node.  Default 0.
    energy_loss : float
        Fraction of every free velocity removed after each step, in [0, 1).  Not a physical
        force: its effect depends on the step size.  Default 0.
    integrator : str
        ``"symplectic_euler"`` (default), ``"explicit_euler"``, ``"velocity_verlet"`` or ``"rk4"``.

    Notes
    -----
    Spring (i, j) with ``d = x_j - x_i``, ``l = |d|``, ``n = d / l`` pushes node i with
    ``[k (l - L) + c (v_j - v_i).n] n`` and node j with the opposite force.  Every array
    attribute (``x``, ``v``, ``f``, ``external``, ``mass``, ``pinned``, ``rest``, ``k``, ``c``,
    and the read-only ``springs``) is a view of the C memory: writes are seen by the next
    step, and a view keeps the system alive.  Values written through views are checked at
    the next :meth:`step`.

    Examples
    --------
    >>> import msprings
    >>> s = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], k=20.0, pinned=[0])
    >>> s.step(1e-3, 1000)
    >>> round(s.t, 6)
    1.0
    """

    __slots__ = ()

    def __init__(
        self,
        positions: ArrayLike,
        springs: ArrayLike,
        *,
        mass: ArrayLike = 1.0,
        k: ArrayLike = 1.0,
        c: ArrayLike = 0.0,
        rest: ArrayLike | None = None,
        pinned: ArrayLike | None = None,
        velocities: ArrayLike | None = None,
        gravity: ArrayLike = (0.0, -9.81, 0.0),
        drag: float = 0.0,
        energy_loss: float = 0.0,
        integrator: str = "symplectic_euler",
    ) -> None:
        x = _real_array(positions, "positions")
        if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 1:
            raise ValueError(f"positions must have shape (n, 3) with n >= 1, got {x.shape}")
        n = x.shape[0]
        pairs = _springs_array(springs, n)
        m = pairs.shape[0]
        if velocities is None:
            v = np.zeros_like(x)
        else:
            v = _real_array(velocities, "velocities")
            if v.shape != (n, 3):
                raise ValueError(f"velocities must have shape ({n}, 3) like positions, got {v.shape}")
        if rest is None:
            with np.errstate(invalid="ignore", over="ignore"):
                rest_lengths = np.linalg.norm(x[pairs[:, 1]] - x[pairs[:, 0]], axis=1)
        else:
            rest_lengths = _per_item(rest, m, "rest", "spring")
        super().__init__(
            x,
            pairs,
            _per_item(mass, n, "mass", "node"),
            _per_item(k, m, "k", "spring"),
            _per_item(c, m, "c", "spring"),
            rest_lengths,
            _pinned_mask(pinned, n),
            v,
            gravity=_real_array(gravity, "gravity"),
            drag=drag,
            energy_loss=energy_loss,
            integrator=integrator,
        )

    def energy(self) -> Energy:
        """The energy ledger (J): kinetic and gravitational energy of the free nodes, elastic
        energy of the springs, and the energy dissipated so far by dampers, drag and
        ``energy_loss``.  Gravitational energy is ``-m g.x``, zero at the origin."""
        kinetic, spring, gravity, dissipated = self._energy_components()
        mechanical = kinetic + spring + gravity
        return Energy(kinetic, spring, gravity, dissipated, mechanical, mechanical + dissipated)

    def __deepcopy__(self, memo: dict[int, Any]) -> "System":
        return self.copy()

    def __copy__(self) -> "System":
        return self.copy()

    def __repr__(self) -> str:
        pinned = int(np.count_nonzero(self.pinned))
        return (
            f"<msprings.System: {self.n_nodes} nodes ({pinned} pinned), {self.n_springs} springs, "
            f"{self.integrator}, t={self.t:.6g} s, {self.steps} steps>"
        )
