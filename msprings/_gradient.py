"""Gradients through a run: the exact adjoint (reverse mode) and tangent (forward mode) of the
discrete steps the C core takes, for ``System.run(..., differentiable=True)``.

A differentiable run keeps a copy of the system as it started and the state every
``checkpoint_every`` steps (its checkpoints); :meth:`Trajectory.backward` steps each stretch
between checkpoints again in C, checks that it reproduces the next checkpoint bit for bit, and
takes the stretch's steps back.  Memory: the checkpoints and one stretch of states, about
``2 sqrt(steps)`` states by default instead of ``steps``; where the system has two threads or
more, the backward pass holds two stretches, stepping the next one again on a second thread
while it takes one back (one stretch on one thread where two do not fit in memory).

What has a gradient: explicit and symplectic Euler, velocity Verlet, RK4 and implicit Euler,
with springs (k, c, rest), masses, pins, gravity, linear drag (without wind), a constant
external force, the energy loss and contact with colliders.  The gradient is that of the step
the code computes, not of the differential equation: for the explicit integrators exact to
rounding; for implicit Euler, that of the exact backward-Euler step (its linear system solved
to a relative residual of 1e-14), taken at the state Newton's method reached, so it is as exact
as ``newton_tol`` (and ``cg_tol``) make the forward step.  Refused with ValueError: projective
dynamics, xpbd (their fixed iteration counts would need their own adjoints), strain limiting
and self-collision (projections among the nodes, with no derivative here), the air on faces
and wind.

Contact with colliders (:mod:`msprings.colliders`) is a map applied after each step's
integrator, differentiated exactly along the branch the step took:

- a node that does not touch a collider passes unchanged (its derivative is the identity);
- a node that ends inside one is projected onto its surface, ``x' = x - phi(x) n(x)``, whose
  Jacobian ``I - n n^T - phi H`` (H the Hessian of the signed distance) is the projection onto
  the tangent plane with the surface's curvature (a sphere's, a cylinder's, a box's edges and
  corners; none for a plane or a box's faces);
- its velocity relative to the collider, u, then loses its normal part u_n < 0 times 1 + e,
  and friction either lets it slide, taking mu (1 + e) |u_n| off its tangential speed along
  its direction (smooth in u and n while |u_t| > mu (1 + e) |u_n|), or sticks it (the
  tangential velocity and the step's tangential slip relative to the collider undone);
- implicit Euler holds a node resting on a collider at rest inside its solve (its normal
  velocity kept, its other rows solved with the rest): that constraint is differentiated too,
  with the normal's turning through the curvature;
- a node that crosses a thin collider or goes deep within one step is pushed out through its
  entry face: there the derivative holds the entry point and its normal fixed (exact for a
  plane).

Where the branch changes -- the step at which a node starts or stops touching, or switches
between sliding and sticking (or u_n crosses 0) -- the run is not differentiable: it has a
kink or a jump there, and the gradient is the one-sided derivative of the branch the run took.
Central differences across such an event do not converge to it, and a loss that depends on
*when* a contact happens (a landing's step) gets no useful gradient from it.  The colliders'
pose, velocity, restitution, friction and thickness are constants: a moving collider is where
the run moved it, and the gradient is with respect to the model's parameters (k, c, rest,
mass, x, v, external) only, never the collider's own.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from ._system import System
    from .trajectory import Trajectory

__all__ = ["Gradient", "PositionFit", "Tangent"]

#: The parameters a gradient has, in the order of :class:`Gradient`'s fields.
PARAMETERS = ("k", "c", "rest", "mass", "x", "v", "external")


class Gradient(NamedTuple):
    """dL/d(parameter) of a loss L, each shaped like the system's own array.

    ``k`` (m,) in units of L per N/m; ``c`` (m,) per N s/m; ``rest`` (m,) per m; ``mass``
    (n,) per kg; ``x`` (n, 3) per m and ``v`` (n, 3) per m/s of the initial state (zero rows
    for pinned nodes: their motion is given, not a parameter); ``external`` (n, 3) per N, a
    constant external force (zero rows for pinned nodes, which ignore forces).
    """

    k: np.ndarray
    c: np.ndarray
    rest: np.ndarray
    mass: np.ndarray
    x: np.ndarray
    v: np.ndarray
    external: np.ndarray


class Tangent(NamedTuple):
    """The derivative of a run's records along one direction of the parameters:
    ``positions`` (records, n, 3) in m per unit of the direction, ``velocities`` likewise in
    m/s (None unless asked for)."""

    positions: np.ndarray
    velocities: np.ndarray | None


class Tape:
    """What a differentiable run keeps for its backward pass: the system as it started
    (stepped again single-threaded; any thread count gives the same bits), its thread setting
    (the backward pass's workers), the step size, and the state at every checkpoint (steps 0,
    C, 2C, ... and the last)."""

    def __init__(self, system: System, dt: float, steps: int, record_every: int,
                 checkpoint_every: int | None) -> None:
        system._gradient_check()
        if checkpoint_every is None:
            per_record = max(1, round(math.sqrt(steps) / record_every))
            checkpoint_every = min(per_record * record_every, steps)
        elif isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, (int, np.integer)):
            raise TypeError("checkpoint_every must be an integer number of steps, not "
                            f"{type(checkpoint_every).__name__}")
        elif checkpoint_every < 1 or (checkpoint_every % record_every != 0 and checkpoint_every < steps):
            raise ValueError(f"checkpoint_every = {checkpoint_every} must be a positive multiple of record_every = "
                             f"{record_every} (or >= steps = {steps}: one stretch, every state kept by the backward "
                             "pass)")
        self.every = int(min(checkpoint_every, steps))
        self.dt = float(dt)
        self.steps = int(steps)
        self.start = system.copy()
        # the backward pass steps each stretch again on one worker; with more than one it
        # does so beside the adjoint of the next stretch (the same bits)
        self.threads = system.threads
        self.start.threads = 1
        self.start_steps = system.steps
        count = (self.steps + self.every - 1) // self.every + 1
        self.checkpoints = np.empty((count, 2, system.n_nodes, 3))
        self.record_steps = np.zeros(1 + (steps + record_every - 1) // record_every, dtype=np.int64)
        self.records = 0

    def keep(self, system: System) -> None:
        """Called after each record of the run: keeps its step, and the state if it is a checkpoint."""
        step = system.steps - self.start_steps
        self.record_steps[self.records] = step
        self.records += 1
        if step % self.every == 0 or step == self.steps:
            index = -(-step // self.every)
            system._record_state(self.checkpoints[index, 0], self.checkpoints[index, 1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the checkpoints (the copy of the system aside)."""
        return int(self.checkpoints.nbytes)

    def run_arguments(self) -> tuple[Any, ...]:
        """The run as the C passes take it: dt, steps, checkpoint_every, checkpoints, record_steps."""
        return (self.dt, self.steps, self.every, self.checkpoints, self.record_steps)


def _tape_of(trajectory: Trajectory) -> Tape:
    tape = getattr(trajectory, "_tape", None)
    if tape is None:
        raise ValueError("this trajectory has no gradient: record it with system.run(..., differentiable=True)")
    return tape


def _record_values(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """value as a C-contiguous float64 array of the given shape, with every value finite."""
    if isinstance(value, (str, bytes)) or value is None or np.iscomplexobj(value):
        raise TypeError(f"{name} must be an array of real numbers shaped {shape}, not {type(value).__name__}"
                        + (" of complex numbers" if np.iscomplexobj(value) else ""))
    try:
        array = np.ascontiguousarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of real numbers shaped {shape}: {error}") from None
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape} like the trajectory's positions, got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds a NaN or infinite value")
    return array


def backward(trajectory: Trajectory, positions: ArrayLike | None = None,
             velocities: ArrayLike | None = None) -> Gradient:
    """See :meth:`Trajectory.backward`."""
    tape = _tape_of(trajectory)
    shape = trajectory.positions.shape
    if positions is None and velocities is None:
        raise TypeError("backward() needs positions (dL/d positions), velocities (dL/d velocities) or both")
    dx = np.zeros(shape) if positions is None else _record_values(positions, "positions", shape)
    dv = None if velocities is None else _record_values(velocities, "velocities", shape)
    # each pass steps its own copy of the start: the tape stays as recorded, and two threads
    # may take gradients of one trajectory at once
    x, v, k, c, rest, mass, external = tape.start.copy()._gradient_backward(*tape.run_arguments(), dx, dv,
                                                                                   getattr(tape, "threads", 0))
    pinned = tape.start.pinned
    x[pinned] = 0.0
    v[pinned] = 0.0
    return Gradient(k, c, rest, mass, x, v, external)


def _direction_arrays(system: System, directions: Sequence[Mapping[str, ArrayLike]]) -> list[np.ndarray]:
    """The directions as seven stacked arrays (one row per direction) in PARAMETERS order,
    zeros where a direction does not move a parameter; the pinned nodes' x and v rows zeroed."""
    shapes = {"k": (system.n_springs,), "c": (system.n_springs,), "rest": (system.n_springs,),
              "mass": (system.n_nodes,), "x": (system.n_nodes, 3), "v": (system.n_nodes, 3),
              "external": (system.n_nodes, 3)}
    stacked = {name: np.zeros((len(directions),) + shape) for name, shape in shapes.items()}
    for d, direction in enumerate(directions):
        for name, value in direction.items():
            if name not in shapes:
                raise TypeError(f"a direction moves {PARAMETERS}, not {name!r}")
            if value is None:
                continue
            array = np.asarray(value, dtype=np.float64)
            try:
                stacked[name][d] = np.broadcast_to(array, shapes[name])
            except ValueError:
                raise ValueError(f"{name} must have shape {shapes[name]} (or broadcast to it), got {array.shape}") \
                    from None
            if not np.isfinite(stacked[name][d]).all():
                raise ValueError(f"{name} holds a NaN or infinite value")
    pinned = system.pinned
    stacked["x"][:, pinned] = 0.0
    stacked["v"][:, pinned] = 0.0
    return [stacked[name] for name in ("x", "v", "k", "c", "rest", "mass", "external")]


def tangents(trajectory: Trajectory, directions: Sequence[Mapping[str, ArrayLike]],
             velocities: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The records' derivatives along several directions at once, one forward pass:
    (directions, records, n, 3) for positions, and velocities or None."""
    tape = _tape_of(trajectory)
    if len(directions) == 0:
        raise ValueError("directions must hold at least one direction")
    arrays = _direction_arrays(tape.start, directions)
    return tape.start.copy()._gradient_tangent(*tape.run_arguments(), *arrays, bool(velocities))


def tangent(trajectory: Trajectory, velocities: bool = False, **direction: ArrayLike) -> Tangent:
    """See :meth:`Trajectory.tangent`."""
    dx, dv = tangents(trajectory, [direction], velocities)
    return Tangent(dx[0], None if dv is None else dv[0])


class PositionFit:
    """Weighted least squares of a run's recorded positions against measured ones, with the
    Jacobian from tangent (forward-mode) runs: for :func:`scipy.optimize.least_squares`.

    The residuals are ``sqrt(weights) * (positions - measured)``, flattened, where
    ``positions`` (records, n, 3) are the records of ``system.run(dt, steps, record_every)``
    with the parameters set to ``theta``.  The parameters are chosen entries of the system's
    arrays: ``parameters`` maps a name of :data:`PARAMETERS` (``"k"``, ``"c"``, ``"rest"``,
    ``"mass"``, ``"x"``, ``"v"``, ``"external"``) to indices into that array flattened (for
    ``x``, ``v`` and ``external``: ``3 * node + axis``), or to None for all of it (of ``mass``, ``x``, ``v`` and
    ``external``: all of the free nodes', since a pinned node's have no gradient).  The Jacobian
    costs one forward pass carrying one tangent per parameter, so it suits up to some tens
    of parameters.

    Parameters
    ----------
    system : System
        The network, with the run's initial state; it is copied, never stepped or changed.
    dt : float
        Step size (s).
    steps : int
        Steps of the run.
    measured : array_like, shape (records, n, 3)
        The positions to fit (m), with ``records = 1 + ceil(steps / record_every)``.
    parameters : mapping of str to array_like of int or None
        The parameters fitted, in this order (then in index order).
    record_every : int
        Steps between records.
    weights : array_like, optional
        Broadcast to (records, n, 3); >= 0 (per m^2).  Default 1.

    Raises
    ------
    TypeError, ValueError
        A bad argument, named; or a system with no gradient (an integrator or feature that
        :meth:`System.run` refuses with ``differentiable=True``); indices that are not
        integers, repeat, or name a pinned node's ``mass``, ``x``, ``v`` or ``external``
        (which have no gradient: a pinned node's motion is given).

    Examples
    --------
    >>> import numpy as np, msprings
    >>> from scipy.optimize import least_squares
    >>> s = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], k=30.0, c=0.2, pinned=[0])
    >>> measured = s.copy().run(1e-3, 500, record_every=50).positions
    >>> s.k[:] = 20.0                                  # a wrong guess
    >>> fit = msprings.PositionFit(s, 1e-3, 500, measured, {"k": None}, record_every=50)
    >>> result = least_squares(fit.residuals, fit.initial, jac=fit.jacobian)
    >>> round(float(result.x[0]), 6)
    30.0
    """

    def __init__(self, system: System, dt: float, steps: int, measured: ArrayLike,
                 parameters: Mapping[str, ArrayLike | None], *, record_every: int = 1,
                 weights: ArrayLike | None = None) -> None:
        from ._system import System as SystemType

        if not isinstance(system, SystemType):
            raise TypeError(f"system must be a msprings.System, not {type(system).__name__}")
        self._system = system.copy()
        self._system._gradient_check()
        system._check_dt(dt)
        for value, what in ((steps, "steps"), (record_every, "record_every")):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{what} = {value} must be >= 1")
        self.dt, self.steps, self.record_every = float(dt), int(steps), int(record_every)
        records = 1 + (self.steps + self.record_every - 1) // self.record_every
        shape = (records, system.n_nodes, 3)
        self.measured = _record_values(measured, "measured", shape)
        if weights is None:
            self._root_weights = np.ones(shape)
        else:
            w = np.asarray(weights, dtype=np.float64)
            try:
                w = np.broadcast_to(w, shape)
            except ValueError:
                raise ValueError(f"weights must broadcast to {shape}, got {w.shape}") from None
            if not (np.isfinite(w).all() and (w >= 0).all()):
                raise ValueError("weights must be finite and >= 0")
            self._root_weights = np.sqrt(w)
        if not isinstance(parameters, Mapping) or len(parameters) == 0:
            raise TypeError("parameters must be a non-empty mapping of parameter names to indices (or None)")
        self._entries: list[tuple[str, np.ndarray]] = []
        for name, indices in parameters.items():
            if name not in PARAMETERS:
                raise ValueError(f"parameters names one of {PARAMETERS}, not {name!r}")
            size = getattr(self._system, name).size
            if indices is None:  # every entry; of the nodes, the free ones (a pinned node's have no gradient)
                chosen = np.arange(size)
                if name in ("mass", "x", "v", "external"):
                    chosen = chosen[~self._system.pinned[chosen // (1 if name == "mass" else 3)]]
            else:
                given = np.asarray(indices)
                if given.dtype.kind not in "iu" and not (given.dtype == object and all(
                        isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in given.ravel())):
                    raise TypeError(f"parameters[{name!r}] must hold integer indices into {name} flattened, "
                                    f"not {given.dtype} values")
                chosen = given.astype(np.int64).ravel()
            if chosen.size == 0 or chosen.min() < 0 or chosen.max() >= size:
                raise ValueError(f"parameters[{name!r}] must hold indices in [0, {size})")
            if np.unique(chosen).size != chosen.size:
                raise ValueError(f"parameters[{name!r}] repeats an index: each entry can be one parameter only")
            if name in ("mass", "x", "v", "external"):
                per_node = 1 if name == "mass" else 3
                pinned = np.flatnonzero(self._system.pinned[chosen // per_node])
                if pinned.size:
                    node = int(chosen[pinned[0]] // per_node)
                    raise ValueError(f"parameters[{name!r}] names node {node}, which is pinned: a pinned node's "
                                     f"{name} has no gradient (its motion is given), so it cannot be fitted")
            self._entries.append((name, chosen))
        self.initial = np.concatenate([getattr(self._system, name).ravel()[chosen] for name, chosen in self._entries])
        self._theta: np.ndarray | None = None
        self._trajectory: Trajectory | None = None

    def apply(self, theta: ArrayLike, system: System) -> None:
        """Writes the parameters theta into ``system``'s arrays.

        Parameters
        ----------
        theta : array_like, shape (p,)
            The parameters, in the order of :attr:`initial` (units of their arrays).
        system : System
            The system whose arrays receive them.

        Raises
        ------
        ValueError
            If ``theta`` does not have the shape of :attr:`initial`.
        """
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != self.initial.shape:
            raise ValueError(f"theta must have shape {self.initial.shape}, got {theta.shape}")
        at = 0
        for name, chosen in self._entries:
            target = getattr(system, name)
            flat = target.reshape(-1)
            flat[chosen] = theta[at:at + chosen.size]
            at += chosen.size

    def _run(self, theta: ArrayLike) -> Trajectory:
        theta = np.array(theta, dtype=np.float64)
        if self._theta is None or not np.array_equal(theta, self._theta):
            system = self._system.copy()
            self.apply(theta, system)
            self._trajectory = system.run(self.dt, self.steps, self.record_every, differentiable=True,
                                          checkpoint_every=self.steps)
            self._theta = theta
        assert self._trajectory is not None
        return self._trajectory

    def residuals(self, theta: ArrayLike) -> np.ndarray:
        """The weighted residuals of the positions simulated with ``theta``.

        Parameters
        ----------
        theta : array_like, shape (p,)
            The parameters, in the order of :attr:`initial`.

        Returns
        -------
        numpy.ndarray, shape (records * n * 3,)
            Position residuals (m) times sqrt(weight).
        """
        return (self._root_weights * (self._run(theta).positions - self.measured)).ravel()

    def jacobian(self, theta: ArrayLike) -> np.ndarray:
        """d residuals / d theta, by one forward pass carrying a tangent per parameter.

        Parameters
        ----------
        theta : array_like, shape (p,)
            The parameters, in the order of :attr:`initial`.

        Returns
        -------
        numpy.ndarray, shape (records * n * 3, p)
            Derivatives of :meth:`residuals` (m per unit of each parameter, times sqrt(weight)).
        """
        trajectory = self._run(theta)
        directions = []
        for name, chosen in self._entries:
            size = getattr(self._system, name).size
            shape = getattr(self._system, name).shape
            for index in chosen:
                unit = np.zeros(size)
                unit[index] = 1.0
                directions.append({name: unit.reshape(shape)})
        dx, _ = tangents(trajectory, directions)
        return (self._root_weights[None] * dx).reshape(len(directions), -1).T
