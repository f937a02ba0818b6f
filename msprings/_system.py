"""The user-facing System: input normalisation and convenience on top of the C core."""
from __future__ import annotations

import difflib
import functools
import math
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _core

if TYPE_CHECKING:
    from .colliders import Collider
    from .trajectory import Trajectory

__all__ = ["Energy", "Ledger", "SolverWarning", "StabilityWarning", "System", "damping_for_ratio"]


class StabilityWarning(RuntimeWarning):
    """A time step larger than the explicit integrator's stability limit for the system."""


class SolverWarning(RuntimeWarning):
    """The implicit solver's conjugate-gradient iterations hit their cap in a step."""


def damping_for_ratio(zeta: ArrayLike, k: ArrayLike, mass_i: ArrayLike, mass_j: ArrayLike = math.inf) -> np.ndarray:
    """Damping coefficient c (N s/m) that gives a spring the damping ratio ``zeta``.

    ``c = 2 zeta sqrt(k mu)`` with the reduced mass ``mu = m_i m_j / (m_i + m_j)`` of the two
    ends (kg); ``mass_j = inf`` (the default) stands for a pinned other end, so ``mu = m_i``.
    ``zeta = 1`` is critical damping: the fastest return to rest without oscillating.

    Parameters
    ----------
    zeta : array_like of float
        Damping ratio (dimensionless, >= 0).
    k : array_like of float
        Spring stiffness (N/m, >= 0).
    mass_i : array_like of float
        Mass of one end (kg, >= 0).
    mass_j : array_like of float, default inf
        Mass of the other end (kg, >= 0); inf for a pinned end.

    Returns
    -------
    numpy.ndarray
        c (N s/m), float64, of the broadcast shape of the arguments (NumPy broadcasting).

    Raises
    ------
    TypeError
        If an argument is not real numbers.
    ValueError
        If an argument is negative or NaN, or the arguments do not broadcast together.
    """
    zeta_a, k_a, m_i, m_j = (_real_array(value, name) for value, name in
                             ((zeta, "zeta"), (k, "k"), (mass_i, "mass_i"), (mass_j, "mass_j")))
    for name, value in (("zeta", zeta_a), ("k", k_a), ("mass_i", m_i), ("mass_j", m_j)):
        if np.any(np.isnan(value)) or np.any(value < 0):
            raise ValueError(f"{name} must be >= 0 (no NaN)")
    if np.any(m_i == 0) or np.any(m_j == 0):
        raise ValueError("masses must be > 0 (use mass_j=inf for a pinned end)")
    reduced = np.where(np.isinf(m_j), m_i, m_i * m_j / np.where(np.isinf(m_j), 1.0, m_i + m_j))
    return 2.0 * zeta_a * np.sqrt(k_a * reduced)


class Energy(NamedTuple):
    """Energy ledger of a system (all in J).

    ``mechanical = kinetic + spring + gravity``; ``dissipated`` is what dampers, drag, contact
    and ``energy_loss`` removed, and for the large-step solvers (``implicit_euler``,
    ``projective``, ``xpbd``) what the solver itself removed (``numerical``); ``work`` is what
    was done on the system from outside (wind, external force, moving pins and colliders,
    position corrections, your changes between steps); ``total = mechanical + dissipated -
    work``.  With an exact integrator ``total`` stays constant, and with the large-step
    solvers too (to rounding), since their own damping is booked; with the explicit
    integrators what it drifts by is the integrator's error.  :meth:`System.ledger` splits
    ``dissipated`` and ``work`` by mechanism.
    """

    kinetic: float
    spring: float
    gravity: float
    dissipated: float
    work: float
    mechanical: float
    total: float


class Ledger(NamedTuple):
    """Where the energy went since construction or :meth:`System.reset`, by mechanism (J).

    Dissipated (each but ``numerical`` never negative, never decreasing):

    - ``dampers``: the springs' dampers, ``c ((v_j - v_i).n)^2`` integrated over time;
    - ``drag``: the air in its own frame: node drag ``b |v - w|^2`` and the triangles'
      pressure drag ``F.(w - v_mean)`` (lift does no work in the air's frame);
    - ``contact``: what contact with colliders removes in the collider's frame: the kinetic
      energy restitution and friction take, less the gravitational and spring energy the
      push back out of the collider gives back (a step's pushes taken together); and the
      approach velocity that self-collision removes;
    - ``energy_loss``: the per-step velocity factor;
    - ``numerical``: what the large-step solvers (``implicit_euler``, ``projective``,
      ``xpbd``) removed by themselves: each step's mechanical energy before, less after, less
      what every other part booked in the step (so also what the solver's quadrature of the
      forces' power misses).  Backward Euler multiplies an undamped oscillator's energy by
      ``1 / (1 + (omega h)^2)`` per step, and books the rest here.
      A projective or xpbd step short of convergence can hand energy back, so this part
      can decrease (and a single step can book a negative amount).  Always 0 for the
      explicit integrators, whose drift is their error and shows in ``total``.

    Work done on the system (either sign):

    - ``wind``: the wind's part of the air forces, ``-b (v - w).w + F.w``;
    - ``external``: ``external.v`` over the free nodes;
    - ``pins``: pinned nodes moving with their velocity, ``-f_pin.v_pin`` with ``f_pin`` the
      force of their springs (and the air on their triangles) on them;
    - ``colliders``: the work of moving colliders, each push's impulse times the collider's
      velocity ``m V.(v' - v)``; a collider at rest does none;
    - ``constraints``: strain limiting's and self-collision's position corrections, and
      the energy a step's contact pushes add in the colliders' frame (when they add rather
      than remove it: a push that undoes a sinking the step paid for with kinetic energy);
    - ``user``: your changes between steps (writing ``x``, ``v``, ``mass``, ``pinned``,
      ``rest``, ``k`` or ``gravity``), booked at the start of the next step; changes before
      the first step set up the initial state and are not booked.
    """

    dampers: float
    drag: float
    contact: float
    energy_loss: float
    numerical: float
    wind: float
    external: float
    pins: float
    colliders: float
    constraints: float
    user: float

    @property
    def dissipated(self) -> float:
        """Sum of the dissipated parts (J)."""
        return self.dampers + self.drag + self.contact + self.energy_loss + self.numerical

    @property
    def work(self) -> float:
        """Sum of the work parts (J)."""
        return self.wind + self.external + self.pins + self.colliders + self.constraints + self.user


@functools.lru_cache(maxsize=256)
def _stability_limit(integrator: str, zeta: float) -> float:
    """omega h at the stability limit: closed forms where they exist, else the numerical
    limit of :func:`msprings.stability.stability_limit` (cached: it scans a fine grid)."""
    if integrator == "symplectic_euler":
        return 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta)
    if integrator == "explicit_euler":
        return 2.0 * zeta if zeta <= 1.0 else 2.0 * (zeta - math.sqrt(zeta * zeta - 1.0))
    if zeta == 0.0 and integrator in ("velocity_verlet", "rk4"):
        return 2.0 if integrator == "velocity_verlet" else 2.0 * math.sqrt(2.0)
    from . import stability

    return float(stability.stability_limit(integrator, zeta))


def _seconds(value: float) -> str:
    """A time in seconds as a student reads it: 6 significant digits, ``63.0`` for 63."""
    text = f"{value:.6g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def _beyond_range(array: np.ndarray) -> bool:
    """Whether an object array holds only Python numbers, with integers too large for NumPy's
    types among them (NumPy gives such input dtype object)."""
    return array.dtype.kind == "O" and array.size > 0 and all(
        isinstance(item, (int, float)) and not isinstance(item, bool) for item in array.flat)


def _real_array(value: ArrayLike, name: str) -> np.ndarray:
    """Converts ``value`` to a new float64 array, refusing non-real data with TypeError and
    integers beyond a double's range with ValueError."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of real numbers: {error}") from None
    if _beyond_range(array):
        try:
            return np.array(array, dtype=np.float64, order="C")
        except OverflowError:
            raise ValueError(f"{name} holds a number beyond the largest double (1.8e308)") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must contain real numbers, got dtype {array.dtype}")
    return np.array(array, dtype=np.float64, order="C")


def real_scalar(value: Any, name: str) -> float:
    """One real number as a float: TypeError for anything else, ValueError naming ``name``
    for an integer beyond a double's range (never OverflowError)."""
    array = _real_array(value, name)
    if array.ndim != 0:
        raise TypeError(f"{name} must be a single real number, got an array of shape {array.shape}")
    return float(array)


def _vector3(value: Any, name: str) -> np.ndarray:
    """A finite float64 3-vector, with errors that name ``name``."""
    array = _real_array(value, name)
    if array.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} = {tuple(float(a) for a in array)} must be finite")
    return np.array(array, dtype=np.float64)


def _collider_vectors(center: ArrayLike, axis: ArrayLike, size: ArrayLike, velocity: ArrayLike,
                      names: tuple[str, str]) -> tuple[np.ndarray, ...]:
    """The vectors of a new collider, checked under the names the caller's method gives them:
    ``names`` are its position's and axis's (``("point", "normal")`` for a plane)."""
    return (_vector3(center, names[0]), _vector3(axis, names[1]), _real_array(size, "size"),
            _vector3(velocity, "velocity"))


def _positive_length(value: Any, name: str) -> float:
    """A finite length > 0 (m), with errors that name ``name``."""
    length = real_scalar(value, name)
    if not (math.isfinite(length) and length > 0.0):
        raise ValueError(f"{name} = {length} must be a finite length > 0 (m)")
    return length


def _per_item(value: ArrayLike, count: int, name: str, what: str) -> np.ndarray:
    """A scalar broadcast to ``count`` items, or an array of exactly ``count`` items."""
    array = _real_array(value, name)
    if array.ndim == 0:
        return np.full(count, float(array))
    if array.shape != (count,):
        raise ValueError(f"{name} must be a scalar or have shape ({count},) (one per {what}), got {array.shape}")
    return array


def index_array(value: ArrayLike, name: str, width: int, count: int, noun: str = "node") -> np.ndarray:
    """An int64 (rows, ``width``) array of indices into ``count`` items, with errors that name
    the argument and the first bad row (springs: width 2, triangles: width 3)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a (rows, {width}) array of integer {noun} indices: {error}") from None
    if array.size == 0 and array.dtype.kind not in "USO":
        # an empty list, or an empty array of the right width
        if array.shape != (0,) and (array.ndim != 2 or array.shape[1] != width):
            raise ValueError(f"{name} must have shape (rows, {width}), got {array.shape}")
        return np.zeros((0, width), dtype=np.int64)
    if _beyond_range(array):
        raise ValueError(f"{name} holds an index beyond int64: every {noun} index must be in 0..{count - 1}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must contain integer {noun} indices, got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[1] != width:
        raise ValueError(f"{name} must have shape (rows, {width}), got {array.shape}")
    outside = ((array < 0) | (array >= count)).any(axis=1)
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"{name}[{bad}] = {tuple(int(i) for i in array[bad])} refers to a {noun} outside 0..{count - 1}"
        )
    return np.array(array, dtype=np.int64, order="C")


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
    if _beyond_range(array):
        raise ValueError(f"pinned holds a node index beyond int64: indices must be in 0..{n_nodes - 1}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"pinned must be node indices (integers) or a boolean mask, got dtype {array.dtype}")
    indices = array.reshape(-1)
    if indices.min() < 0 or indices.max() >= n_nodes:
        raise ValueError(f"pinned contains node index {int(indices[(indices < 0) | (indices >= n_nodes)][0])} "
                         f"outside 0..{n_nodes - 1}")
    mask[indices] = True
    return mask


# The views of the system's memory that can be written into but not replaced (their units).
_WRITABLE_VIEWS = {"x": "m", "v": "m/s", "f": "N", "external": "N", "mass": "kg", "pinned": "flags", "rest": "m",
                   "k": "N/m", "c": "N s/m"}


def _attribute_hint(system: System, name: str) -> str:
    """Why ``name`` of ``system`` cannot be set and what to do instead, for an AttributeError."""
    if name in _WRITABLE_VIEWS:
        try:
            shape = f", shape {getattr(system, name).shape}"
        except Exception:  # a System not initialised has no views to show
            shape = ""
        return (f": {name} is a view of the system's memory{shape} ({_WRITABLE_VIEWS[name]}), and is "
                f"written into, not replaced: s.{name}[:] = ... (or s.{name}[i] = ... for one "
                f"{'spring' if name in ('rest', 'k', 'c') else 'node'})")
    if name in ("springs", "faces"):
        return (f": {name} is fixed when a system is built (a read-only view); build a new System for another "
                "topology")
    public = [attribute for attribute in dir(type(system)) if not attribute.startswith("_")]
    close = difflib.get_close_matches(name, public, n=1, cutoff=0.7)
    return f"; did you mean {close[0]}?" if close and close[0] != name else ""


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
        ``"symplectic_euler"`` (default), ``"explicit_euler"``, ``"velocity_verlet"``, ``"rk4"``,
        ``"implicit_euler"``, ``"projective"`` or ``"xpbd"`` (:data:`msprings.INTEGRATORS`).
    faces : array_like of int, shape (F, 3), optional
        Triangles (node indices) of a surface: they catch the air (``drag_coefficient``,
        ``lift_coefficient``, ``wind``, ``gust``) and give :meth:`vertex_normals`.  A triangle
        may not repeat a node or have zero area.
    uv : array_like, shape (n, 2), optional
        Texture coordinates of the nodes, kept for rendering and export (``s.uv``, a plain
        NumPy array; None when there are none).

    Raises
    ------
    TypeError
        An argument of the wrong kind, naming it: a float or string array where node indices
        belong (``springs``, ``pinned``, ``faces``), a complex or string array where real numbers
        belong, a non-``str`` integrator.
    ValueError
        A wrong shape, NaN or infinity, or a value out of range, naming the argument and the
        entry: a spring that refers to a node outside ``0..n-1`` or joins a node to itself, a
        negative mass, stiffness, damping or rest length, a free node of zero mass, an
        ``energy_loss`` outside [0, 1), an unknown integrator, a triangle that repeats a node or
        has zero area.

    Notes
    -----
    Scene builders (:mod:`msprings.scenes`) also fill ``s.families``: the indices of the
    springs of each family (``"structural"``, ``"shear"``, ``"bend"``, ...), e.g.
    ``s.k[s.families["shear"]] = 0`` switches the shear springs off.

    Spring (i, j) with ``d = x_j - x_i``, ``l = |d|``, ``n = d / l`` pushes node i with
    ``[k (l - L) + c (v_j - v_i).n] n`` and node j with the opposite force.  Every array
    attribute (``x``, ``v``, ``f``, ``external``, ``mass``, ``pinned``, ``rest``, ``k``, ``c``,
    and the read-only ``springs``) is a view of the C memory: writes are seen by the next
    step, and a view keeps the system alive.  Values written through views are checked at
    the next :meth:`step`.

    A System pickles bit for bit (every protocol; see :meth:`__reduce_ex__`), so process
    pools, joblib and Dask can send it to workers: the unpickled system steps on exactly as
    the original would.  Pickling one while another thread steps it raises RuntimeError;
    unpickling damaged data raises ValueError.

    Examples
    --------
    >>> import msprings
    >>> s = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], k=20.0, pinned=[0])
    >>> s.step(1e-3, 1000)
    >>> round(s.t, 6)
    1.0
    """

    __slots__ = ("_checked_step", "_stability_limits", "_warned", "families", "uv")

    def __setattr__(self, name: str, value: Any) -> None:
        """Sets an option or attribute; the views of the C memory (``x``, ``mass``, ...) are
        written into, never replaced, and an AttributeError says how."""
        try:
            super().__setattr__(name, value)
        except AttributeError as error:
            raise AttributeError(f"{error}{_attribute_hint(self, name)}") from None

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
        faces: ArrayLike | None = None,
        uv: ArrayLike | None = None,
    ) -> None:
        x = _real_array(positions, "positions")
        if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 1:
            raise ValueError(f"positions must have shape (n, 3) with n >= 1, got {x.shape}")
        n = x.shape[0]
        pairs = index_array(springs, "springs", 2, n).astype(np.int32)
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
            faces=None if faces is None else index_array(faces, "faces", 3, n).astype(np.int32),
        )
        self.families: dict[str, np.ndarray] = {}
        if uv is None:
            self.uv = None
        else:
            coordinates = _real_array(uv, "uv")
            if coordinates.shape != (n, 2):
                raise ValueError(f"uv must have shape ({n}, 2) (one (u, v) per node), got {coordinates.shape}")
            if not np.isfinite(coordinates).all():
                bad = int(np.flatnonzero(~np.isfinite(coordinates).all(axis=1))[0])
                raise ValueError(f"uv[{bad}] = {tuple(coordinates[bad])} is not finite")
            self.uv = coordinates

    def step(self, dt: float, n: int = 1) -> None:
        """Advance ``n`` steps of ``dt`` seconds with the current integrator, inside C with the
        GIL released.

        An explicit integrator's ``dt`` is compared with :meth:`critical_dt` (computed the
        first time each integrator steps the system, then kept); above it a
        :class:`StabilityWarning` is issued (once per system).  With ``implicit_euler``, a step whose CG solve hits ``cg_max_iter``
        completes with the best iterate and issues a :class:`SolverWarning` (once per system).

        A call is all or nothing: if it fails, the system is exactly as it was before the call.

        Parameters
        ----------
        dt : float
            Time step (s), finite and > 0.
        n : int, default 1
            Number of steps (>= 1).

        Raises
        ------
        ValueError
            Bad ``dt`` or ``n``, or a bad value written through a view; nothing has changed.
        DivergenceError
            A position or velocity became non-finite.  The call is undone: ``x``, ``v``,
            ``f``, ``t``, ``steps``, the ledger (a change you made before the call is still
            pending for its ``user`` part), the solver's counts and the colliders are as they
            were before it.  The error's ``step`` is the step that blew up (counted as
            ``steps`` counts), ``time`` the time it would have reached (s), ``call_step``
            which step of this call it was (1 is the first), ``dt`` the step size (s) and
            ``critical_dt`` this integrator's stable limit for the system (s, from
            :meth:`critical_dt`; None when it is not estimated); its message says what to change.
        KeyboardInterrupt
            Ctrl-C (or another signal handler's exception) during the call, which checks for
            signals about every 25 ms of its work, even inside one long step (huge
            ``iterations``, ``newton_max_iter``, ``cg_max_iter``); the call is undone as
            for a DivergenceError.
        """
        if isinstance(dt, bool):
            raise TypeError("dt must be a number of seconds, not bool")
        integrator = self.integrator
        key = (dt, integrator)
        if getattr(self, "_checked_step", None) != key:
            # the stability pre-check reads the parameters: a bad value written through a
            # view is the C check's ValueError, before the pre-check can trip over it
            self._check_values()
            self._check_step(dt, integrator)
            self._checked_step = key
        try:
            if integrator != "implicit_euler":
                super().step(dt, n)
                return
            failures = self.solver_stats["cg_failures"]
            super().step(dt, n)
        except _core.DivergenceError as error:
            self._explain_divergence(error, float(dt), integrator)
            raise
        if self.solver_stats["cg_failures"] > failures:
            self._warn_once(
                "solver",
                SolverWarning(
                    f"implicit_euler: a conjugate-gradient solve did not meet cg_tol = {self.cg_tol:g} within "
                    f"cg_max_iter = {self.cg_max_iter} iterations; the step used the best iterate (see solver_stats). "
                    "Raise cg_max_iter or cg_tol, or use a smaller dt"
                ),
            )

    def run(self, dt: float, steps: int, record_every: int = 1, *, velocities: bool = False,
            progress: bool | None = None, out: Trajectory | None = None, differentiable: bool = False,
            checkpoint_every: int | None = None) -> Trajectory:
        """Step ``steps`` times with ``dt`` (s) and record every ``record_every``-th state.

        Stepping happens in C, ``record_every`` steps per call; Python only copies each
        record into preallocated arrays.  Returns a :class:`~msprings.trajectory.Trajectory`
        with the initial state and every record: times, positions (and velocities if
        ``velocities``), the energy ledger, and what is needed to draw or animate it.
        ``progress`` shows a progress bar on stderr; by default only for long runs in a
        terminal or Jupyter.

        ``out`` records into an earlier run's trajectory instead of new arrays, as NumPy's
        ``out=`` does, and returns it: repeated runs (a sweep, an animation run again) then
        reuse memory the operating system has already mapped, which a large recording
        otherwise pays for at every record (on cloth-256, 1.5 MB per record).  It must hold
        ``1 + ceil(steps / record_every)`` records of as many nodes, and velocities if
        ``velocities``; everything in it is replaced by this run's (with ``velocities=False``
        its velocities become None).  A bad ``out`` (or ``dt``) raises TypeError or
        ValueError before any step, with ``out`` unchanged.

        The run is one call, all or nothing: if stepping raises (a :class:`DivergenceError`,
        whose step counts from the run's start, or Ctrl-C), the system is as it was before the
        run, and ``out`` holds the records made until then and NaN in the others (step count -1).

        ``differentiable=True`` keeps what :meth:`Trajectory.backward` (gradients of a loss of
        the records) and :meth:`Trajectory.tangent` need: a copy of the system as the run starts
        and the state every ``checkpoint_every`` steps (a multiple of ``record_every``; default
        about ``sqrt(steps)``; ``>= steps`` keeps none, and the backward pass then holds every
        state at once).  A system whose steps have no gradient (projective, xpbd, strain
        limiting, self-collision, the air on faces, wind) raises ValueError before any step.
        Contact with colliders has one where it is smooth: see :mod:`msprings._gradient`.

        Parameters
        ----------
        dt : float
            Time step (s), finite and > 0.
        steps : int
            Number of steps (>= 1).
        record_every : int, default 1
            Steps between records (>= 1).
        velocities : bool, default False
            Record the velocities too.
        progress : bool, optional
            Show a progress bar on stderr; default only for long runs in a terminal or Jupyter.
        out : Trajectory, optional
            An earlier run's trajectory to record into instead of new arrays.
        differentiable : bool, default False
            Keep what :meth:`Trajectory.backward` and :meth:`Trajectory.tangent` need.
        checkpoint_every : int, optional
            Steps between kept states of a differentiable run (a multiple of
            ``record_every``); default about ``sqrt(steps)``.

        Returns
        -------
        Trajectory
            The initial state and every record (``out`` when given).

        Raises
        ------
        TypeError
            If an argument has the wrong type, ``out`` included.
        ValueError
            If ``dt``, a count or ``out`` is bad (before any step), or the system's steps
            have no gradient and ``differentiable`` is set.
        DivergenceError
            If a position or velocity becomes non-finite; the system is as before the run.
        """
        from .trajectory import record

        return record(self, dt, steps, record_every, velocities, progress, out, differentiable, checkpoint_every)

    def _divergence_limit(self, integrator: str) -> float | None:
        """The integrator's stable step (s) for a divergence message: the one the stability
        check keeps, else :meth:`critical_dt` when it is cheap (a closed form, or the Lanczos
        estimate on networks of up to a million springs), else None."""
        kept = getattr(self, "_stability_limits", None) or {}
        if integrator in kept:
            return kept[integrator]
        if integrator in ("implicit_euler", "xpbd") or self.n_springs <= 1_000_000:
            try:
                return self.critical_dt(integrator)
            except (ValueError, ArithmeticError, MemoryError):
                return None
        return None

    def _explain_divergence(self, error: BaseException, dt: float, integrator: str, call: str = "call") -> None:
        """Completes a DivergenceError from a step ``call`` ("call", or "run" for a recording) of
        ``dt`` (s), with the system back at its start: its ``dt`` and ``critical_dt`` attributes
        and a message that says when it blew up, where the system is and what to change."""
        limit = error.critical_dt if hasattr(error, "critical_dt") else self._divergence_limit(integrator)
        error.dt = dt
        error.critical_dt = limit
        what = (f"the motion blew up at t = {_seconds(error.time)} s (step {error.call_step} of this {call}, "
                f"dt = {_seconds(dt)} s): a position or velocity became non-finite. The system is as it was "
                f"before the {call} (t = {_seconds(self.t)} s). ")
        if limit is None:
            advice = "Use a smaller dt, more damping or a more stable integrator (implicit_euler)."
        elif limit == 0.0 and integrator == "explicit_euler":
            advice = ("explicit_euler is unstable at any dt for this system (some motion has no damping): use "
                      "symplectic_euler, velocity_verlet, rk4 or implicit_euler.")
        elif limit == 0.0:
            advice = (f"No dt is stable for {integrator} here: the stiffness or damping is beyond what a double "
                      "can hold. Check k, c, the masses and drag.")
        elif dt > limit:
            advice = (f"dt is above {integrator}'s stable limit of about {limit:.2g} s for this system: use a "
                      "smaller dt, more damping or a more stable integrator.")
        else:
            bound = "any dt" if math.isinf(limit) else f"dt up to about {limit:.2g} s"
            advice = (f"{integrator} is stable at {bound} for this system, so the numbers themselves overflowed: "
                      "positions, velocities, forces or parameters too large for a double (beyond about 1e150). "
                      "Check the values written into the system.")
        error.args = (what + advice,)

    def _warn_once(self, kind: str, warning: Warning) -> None:
        warned = getattr(self, "_warned", frozenset())
        if kind not in warned:
            self._warned = warned | {kind}
            warnings.warn(warning, stacklevel=3)

    def _check_step(self, dt: Any, integrator: str) -> None:
        # a dt that the C check refuses (not a number, <= 0, beyond a double) is not pre-checked
        if integrator == "implicit_euler" or not isinstance(dt, (int, float)):
            return
        try:
            dt = float(dt)
        except OverflowError:
            return
        if not 0 < dt < math.inf:
            return
        if "stability" in getattr(self, "_warned", frozenset()):
            return
        if integrator != "explicit_euler":
            # Symplectic Euler has the smallest limit of the three, and its limit
            # 2 / (sqrt(omega^2 + gamma^2 / 4) + gamma / 2) falls as omega and gamma grow, so
            # upper bounds on both give a step that is surely stable: no Lanczos needed.
            omega2_bound, gamma_bound = self._eigenvalue_bounds()
            # hypot: no overflow for the huge rates of very strong drag or dampers
            if dt * (math.hypot(math.sqrt(omega2_bound), 0.5 * gamma_bound) + 0.5 * gamma_bound) < 2.0:
                return
        limits = getattr(self, "_stability_limits", None)
        if limits is None:
            limits = self._stability_limits = {}
        if integrator not in limits:
            limits[integrator] = self.critical_dt(integrator)
        limit = limits[integrator]
        if dt > limit:
            if limit == 0.0:
                detail = f"{integrator} is unstable at any dt for this system (it has no damping)"
            else:
                detail = f"dt = {dt:g} s exceeds the stability limit {limit:.4g} s of {integrator}"
            self._warn_once(
                "stability",
                StabilityWarning(
                    f"{detail}: the simulation will blow up. Use dt < critical_dt(), more damping, or "
                    "integrator='implicit_euler'"
                ),
            )

    def critical_dt(self, integrator: str | None = None) -> float:
        """The largest stable time step (s) for the system in its current state.

        The highest angular frequency ``omega = sqrt(lambda_max(M^-1 K))`` and damping rate
        ``gamma = lambda_max(M^-1 C)`` come from Lanczos iterations in C on the springs'
        tangent stiffness and damping (pinned nodes removed).  The step is
        ``a*(zeta) / omega`` with ``zeta = gamma / (2 omega)`` and ``a*`` the integrator's
        limit on the damped oscillator (:func:`msprings.stability.stability_limit`): 2 for
        undamped symplectic Euler and velocity Verlet, ``2 sqrt 2`` for RK4, ``2 zeta`` for
        explicit Euler (0 without damping: unstable at any step), infinite for implicit
        Euler.  ``xpbd`` treats springs and dampers as compliant constraints, stable at any
        step but for its explicit kick by the node drag ``b``, which limits it to ``2 m / b``
        (infinite without drag).  ``projective`` solves the springs implicitly and takes
        the dampers and drag at the start of the step: ``2 / gamma`` (infinite without
        damping).  Pairing the highest frequency with the highest damping rate is exact for
        uniform networks with the same ``c/k`` on every spring and otherwise an estimate.
        Explicit Euler needs damping in *every* mode: axial dampers do not reach the
        swinging (transverse) modes of a hanging chain or cloth, so there it is unstable at
        any step whatever this estimate says.

        Parameters
        ----------
        integrator : str, optional
            One of :data:`msprings.INTEGRATORS`; default the system's current integrator.

        Returns
        -------
        float
            The largest stable time step (s); ``inf`` when any step is stable.

        Raises
        ------
        TypeError
            If ``integrator`` is not a string.
        ValueError
            If ``integrator`` is not a known name.
        """
        name = self.integrator if integrator is None else integrator
        if not isinstance(name, str):
            raise TypeError(f"integrator must be a name (str), not {type(name).__name__}")
        if name not in _core.INTEGRATORS:
            raise ValueError(f"integrator {name!r} is unknown; choose one of {', '.join(_core.INTEGRATORS)}")
        if name == "implicit_euler":
            return math.inf
        if name == "xpbd":
            # springs and their dampers are implicit (compliant constraints); the node drag
            # kicks explicitly, stable while h b / m < 2 on every free node
            free = ~np.asarray(self.pinned, dtype=bool)
            if self.drag == 0.0 or not free.any():
                return math.inf
            return 2.0 * float(np.min(np.asarray(self.mass)[free])) / self.drag
        if name == "projective":
            # the springs are implicit; the dampers and the drag act at the start of the
            # step, stable while h gamma < 2 for the highest damping rate gamma
            gamma = self._max_eigenvalues()[1]
            if not math.isfinite(gamma):
                gamma = self._eigenvalue_bounds()[1]
            return math.inf if gamma == 0.0 else 2.0 / gamma if math.isfinite(gamma) else 0.0
        omega2, gamma = self._max_eigenvalues()
        if not (math.isfinite(omega2) and math.isfinite(gamma)):
            # The Lanczos estimate squares its rates and overflows beyond about 1e154 1/s
            # (drag or dampers that strong); the Gershgorin upper bounds stay finite and give
            # a smaller, still safe limit.
            bound_omega2, bound_gamma = self._eigenvalue_bounds()
            omega2 = omega2 if math.isfinite(omega2) else bound_omega2
            gamma = gamma if math.isfinite(gamma) else bound_gamma
            if not (math.isfinite(omega2) and math.isfinite(gamma)):
                return 0.0  # no step a double can hold is stable
        omega = math.sqrt(max(omega2, 0.0))
        if omega == 0.0 and gamma == 0.0:
            return math.inf
        if omega < gamma / 200.0:
            # Damping dominates (or there is no stiffness at all, only drag): the limit of a
            # mode with zeta = 100 is within 1e-4 of the pure-decay limit and just below it.
            omega = gamma / 200.0
        return _stability_limit(name, gamma / (2.0 * omega)) / omega

    def _reduced_masses(self) -> np.ndarray:
        """Reduced mass (kg) of each spring's ends: ``m_i m_j / (m_i + m_j)``, the free end's
        mass when the other is pinned, NaN when both are pinned."""
        pairs = self.springs
        mass = np.where(self.pinned, np.inf, self.mass)
        m_i, m_j = mass[pairs[:, 0]], mass[pairs[:, 1]]
        with np.errstate(invalid="ignore"):
            reduced = np.where(np.isinf(m_j), m_i, np.where(np.isinf(m_i), m_j, m_i * m_j / (m_i + m_j)))
        return np.where(np.isinf(reduced), np.nan, reduced)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the system shares with Python: ``x``, ``v``, ``f``,
        ``external``, ``mass``, ``pinned``, ``springs``, ``rest``, ``k``, ``c``, ``faces`` and
        ``uv``.

        A lower bound on its memory: the core also keeps the initial state for :meth:`reset` and, from
        the first step on, work buffers of its own (node-sorted copies of the parameters, the solvers'
        storage, from the first call of several steps a copy of x, v and f as the call began, which a
        failed call is undone to, and for a network whose numbering does not keep the ends of its
        springs close, a copy of the model and state renumbered so that they are, which its steps run
        on). On a converted 82k-triangle sphere (41k nodes, 123k springs) this is 9.2 MB, and the core
        had allocated 11.5 MB in all after construction and 25 MB after its first step (``python -m
        msprings bench mesh`` measures both on a 250k-triangle mesh).
        """
        arrays = [self.x, self.v, self.f, self.external, self.mass, self.pinned, self.springs, self.rest,
                  self.k, self.c, self.faces, self.uv]
        return int(sum(array.nbytes for array in arrays if array is not None))

    def damping_ratio(self) -> np.ndarray:
        """Damping ratio ``zeta = c / (2 sqrt(k mu))`` of every spring, shape (m,).

        ``mu`` is the reduced mass of the two ends, or the free end's mass when the other is
        pinned; NaN for a spring between two pinned nodes or with k = c = 0, inf for k = 0 < c.

        Returns
        -------
        numpy.ndarray, shape (m,)
            Damping ratio of each spring (dimensionless).
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.c / (2.0 * np.sqrt(self.k * self._reduced_masses()))

    def damping_for_ratio(self, zeta: ArrayLike) -> np.ndarray:
        """Damping coefficients c (N s/m), shape (m,), that give each spring the damping ratio
        ``zeta`` (scalar or per spring) with the system's masses, stiffnesses and pins; e.g.
        ``s.c[:] = s.damping_for_ratio(1.0)`` damps every spring critically.  Springs between
        two pinned nodes get c = 0.

        Parameters
        ----------
        zeta : float or array_like, shape (m,)
            Damping ratio (dimensionless), one for all springs or one per spring.

        Returns
        -------
        numpy.ndarray, shape (m,)
            Damping coefficients (N s/m).

        Raises
        ------
        TypeError
            If ``zeta`` is not real numbers.
        ValueError
            If ``zeta`` does not broadcast to one value per spring.
        """
        reduced = self._reduced_masses()
        both_pinned = np.isnan(reduced)
        zeta_a = np.broadcast_to(_real_array(zeta, "zeta"), reduced.shape)
        c = damping_for_ratio(zeta_a, self.k, np.where(both_pinned, 1.0, reduced))
        return np.where(both_pinned, 0.0, c)

    # ---- air -------------------------------------------------------------------------

    def wind_at(self, points: ArrayLike, t: float | None = None) -> np.ndarray:
        """Wind velocity (m/s) at ``points`` (..., 3) and time ``t`` (s; default the system's
        time): ``wind + gust * (1.5 |sin(k x + w t) + cos(k y + w t)|, 0, 0.5 sin(w t))`` with
        ``k = gust_wavenumber`` and ``w = gust_frequency``, evaluated by the C code the step
        uses.

        Parameters
        ----------
        points : array_like, shape (..., 3)
            Positions (m).
        t : float, optional
            Time (s); default the system's time.

        Returns
        -------
        numpy.ndarray, shape (..., 3)
            Wind velocity at each point (m/s).

        Raises
        ------
        TypeError
            If ``points`` or ``t`` is not real numbers.
        ValueError
            If ``points`` does not have shape (..., 3).
        """
        p = _real_array(points, "points")
        if p.shape[-1:] != (3,):
            raise ValueError(f"points must have shape (..., 3), got {p.shape}")
        time = self.t if t is None else real_scalar(t, "t")
        return self._wind_at(p.reshape(-1, 3), time).reshape(p.shape)

    # ---- colliders -----------------------------------------------------------------

    def _add(self, kind: str, center: ArrayLike, axis: ArrayLike, size: ArrayLike, velocity: ArrayLike,
             restitution: float, friction: float, thickness: float,
             names: tuple[str, str] = ("center", "axis")) -> Collider:
        from .colliders import Collider

        collider_id = self._add_collider(kind, *_collider_vectors(center, axis, size, velocity, names),
                                         restitution, friction, thickness)
        return Collider(self, collider_id)

    def add_plane(self, point: ArrayLike = (0.0, 0.0, 0.0), normal: ArrayLike = (0.0, 1.0, 0.0), *,
                  restitution: float = 0.0, friction: float = 0.0, thickness: float = 0.0,
                  velocity: ArrayLike = (0.0, 0.0, 0.0)) -> Collider:
        """Adds a plane through ``point`` with ``normal``; everything on the side opposite the
        normal is solid (the ground by default).  See :mod:`msprings.colliders`.

        Parameters
        ----------
        point : array_like, shape (3,), default (0, 0, 0)
            A point on the plane (m).
        normal : array_like, shape (3,), default (0, 1, 0)
            Normal pointing out of the solid side (normalised; non-zero).
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance kept from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the moving collider (m/s).

        Returns
        -------
        msprings.colliders.Collider
            A handle to the new collider.

        Raises
        ------
        TypeError
            If a value is not a real number (or an array of them).
        ValueError
            If a vector does not have shape (3,) or is not finite, ``restitution`` is
            outside [0, 1], ``friction`` or ``thickness`` is negative, or ``normal`` is zero.
        """
        return self._add("plane", point, normal, (0.0, 0.0, 0.0), velocity, restitution, friction, thickness,
                         ("point", "normal"))

    def add_sphere(self, center: ArrayLike, radius: float, *, restitution: float = 0.0, friction: float = 0.0,
                   thickness: float = 0.0, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> Collider:
        """Adds a solid sphere of ``radius`` at ``center``.

        Parameters
        ----------
        center : array_like, shape (3,)
            Centre (m).
        radius : float
            Radius (m), > 0.
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance kept from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the moving collider (m/s).

        Returns
        -------
        msprings.colliders.Collider
            A handle to the new collider.

        Raises
        ------
        TypeError
            If a value is not a real number (or an array of them).
        ValueError
            If a vector does not have shape (3,) or is not finite, ``restitution`` is
            outside [0, 1], ``friction`` or ``thickness`` is negative, or ``radius`` is not finite and > 0.
        """
        return self._add("sphere", center, (0.0, 1.0, 0.0), (_positive_length(radius, "radius"), 0.0, 0.0),
                         velocity, restitution, friction, thickness)

    def add_box(self, lower: ArrayLike, upper: ArrayLike, *, restitution: float = 0.0, friction: float = 0.0,
                thickness: float = 0.0, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> Collider:
        """Adds a solid axis-aligned box between the corners ``lower`` and ``upper``.

        Parameters
        ----------
        lower, upper : array_like, shape (3,)
            Lowest and highest corner (m); lower < upper on every axis.
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance kept from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the moving collider (m/s).

        Returns
        -------
        msprings.colliders.Collider
            A handle to the new collider.

        Raises
        ------
        TypeError
            If a value is not a real number (or an array of them).
        ValueError
            If a vector does not have shape (3,) or is not finite, ``restitution`` is
            outside [0, 1], ``friction`` or ``thickness`` is negative, or ``lower`` is not below ``upper`` on every axis.
        """
        low, high = _real_array(lower, "lower"), _real_array(upper, "upper")
        if low.shape != (3,) or high.shape != (3,):
            raise ValueError(f"lower and upper must have shape (3,), got {low.shape} and {high.shape}")
        for name, corner in (("lower", low), ("upper", high)):
            if not np.all(np.isfinite(corner)):
                raise ValueError(f"{name} = {tuple(corner)} must be finite (m)")
        if not np.all(low < high):
            raise ValueError(f"lower = {tuple(low)} must be below upper = {tuple(high)} on every axis (m)")
        # halves first: the same doubles (halving is exact), and no overflow for corners near the
        # largest double; non-finite corners give a non-finite box, which the C check refuses
        with np.errstate(invalid="ignore"):
            center, half = low / 2.0 + high / 2.0, high / 2.0 - low / 2.0
        return self._add("box", center, (0.0, 1.0, 0.0), half, velocity, restitution, friction, thickness)

    def add_cylinder(self, center: ArrayLike, radius: float, height: float, axis: ArrayLike = (0.0, 1.0, 0.0), *,
                     restitution: float = 0.0, friction: float = 0.0, thickness: float = 0.0,
                     velocity: ArrayLike = (0.0, 0.0, 0.0)) -> Collider:
        """Adds a solid capped cylinder of ``radius`` and full ``height`` centred at ``center``
        along ``axis`` -- a round table is one.

        Parameters
        ----------
        center : array_like, shape (3,)
            Centre (m).
        radius : float
            Radius (m), > 0.
        height : float
            Full height between the caps (m), > 0.
        axis : array_like, shape (3,), default (0, 1, 0)
            Direction of the axis (normalised; non-zero).
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance kept from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the moving collider (m/s).

        Returns
        -------
        msprings.colliders.Collider
            A handle to the new collider.

        Raises
        ------
        TypeError
            If a value is not a real number (or an array of them).
        ValueError
            If a vector does not have shape (3,) or is not finite, ``restitution`` is
            outside [0, 1], ``friction`` or ``thickness`` is negative, ``radius`` or ``height`` is not finite and > 0, or ``axis`` is zero.
        """
        size = (_positive_length(radius, "radius"), 0.5 * _positive_length(height, "height"), 0.0)
        return self._add("cylinder", center, axis, size, velocity, restitution, friction, thickness)

    @property
    def colliders(self) -> tuple[Collider, ...]:
        """Handles to the system's colliders, in the order they act."""
        from .colliders import Collider

        return tuple(Collider(self, collider_id) for collider_id in self._collider_ids())

    def remove_collider(self, collider: Collider | int) -> None:
        """Removes a collider.

        Parameters
        ----------
        collider : Collider or int
            The collider's handle or its id.

        Raises
        ------
        KeyError
            If the collider is not in this system (or its handle belongs to another one).
        """
        from .colliders import Collider

        if isinstance(collider, Collider):
            if collider._system is not self:
                raise KeyError("that collider belongs to another system")
            collider = collider.id
        self._remove_collider(collider)

    def energy(self) -> Energy:
        """The energy ledger (J): kinetic and gravitational energy of the free nodes, elastic
        energy of the springs, the energy dissipated so far and the work done on the system
        (see :class:`Energy`).  Gravitational energy is ``-m g.x``, zero at the origin.

        Returns
        -------
        Energy
            The energies (J).
        """
        return self._energy_and_ledger()[0]

    def _energy_and_ledger(self) -> tuple[Energy, Ledger]:
        """:meth:`energy` and :meth:`ledger` from one pass over the nodes and springs."""
        (kinetic, spring, gravity, dissipated, work), parts = self._accounts()
        mechanical = kinetic + spring + gravity
        return (Energy(kinetic, spring, gravity, dissipated, work, mechanical, mechanical + dissipated - work),
                Ledger(*parts))

    def ledger(self) -> Ledger:
        """The dissipated energy and the work done since construction or :meth:`reset`, by
        mechanism (J); see :class:`Ledger`.

        Returns
        -------
        Ledger
            The energies by mechanism (J).
        """
        return Ledger(*self._ledger())

    def copy(self) -> "System":
        """An independent deep copy: parameters, options, colliders, state, initial state and
        texture coordinates.

        Returns
        -------
        System
            The copy.
        """
        duplicate = super().copy()
        uv = getattr(self, "uv", None)
        duplicate.uv = None if uv is None else uv.copy()
        duplicate.families = {name: indices.copy() for name, indices in getattr(self, "families", {}).items()}
        return duplicate

    def __deepcopy__(self, memo: dict[int, Any]) -> "System":
        return self.copy()

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickling, every protocol (with protocol 5 the arrays may travel out of band).

        Carried bit for bit: the topology, the parameters, every option (``msprings.OPTIONS``),
        the initial state, the colliders (their ids, where they start and where they are),
        x, v, f, the external force, t, steps, the ledger with a change of yours still
        pending for its ``user`` part, the solver's statistics, the energy the last step
        call started from, and the attributes kept in Python (``families``, ``uv``, the
        warnings already issued, the stability limits found, a subclass's own).  The
        caches a step makes are rebuilt by the next step, which gives the same bits.  The
        data carries the version :data:`PICKLE_VERSION`.

        Raises
        ------
        RuntimeError
            Another thread is stepping the system: pickle it once that step is over.
        """
        core = self._pickle_state()  # first: a snapshot no step can be part-way through
        options = {option.name: getattr(self, option.name) for option in _core.OPTIONS}
        attributes = {name: getattr(self, name) for name in _slot_names(type(self)) if hasattr(self, name)}
        extra = getattr(self, "__dict__", None)  # a subclass's own attributes
        if extra:
            attributes["__dict__"] = dict(extra)
        return _unpickle_system, (type(self), PICKLE_VERSION, core, options, attributes)

    def __copy__(self) -> "System":
        return self.copy()

    def __repr__(self) -> str:
        pinned = int(np.count_nonzero(self.pinned))
        return (
            f"<msprings.System: {self.n_nodes} nodes ({pinned} pinned), {self.n_springs} springs, "
            f"{self.integrator}, t={self.t:.6g} s, {self.steps} steps>"
        )


#: The version of the data that a pickled :class:`System` carries; unpickling refuses any other.
PICKLE_VERSION = 1


def _slot_names(cls: type) -> list[str]:
    """The attributes that the ``__slots__`` of ``cls`` and its bases hold."""
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def _check_attributes(system: System, attributes: dict[str, Any]) -> None:
    """ValueError unless the pickled Python attributes are the ones a System keeps, with
    values of their kind (``uv`` one finite (u, v) per node, ``families`` spring indices)."""
    allowed = set(_slot_names(type(system)))
    if hasattr(system, "__dict__"):  # not a subclass that keeps its attributes in slots only
        allowed.add("__dict__")
    unknown = sorted(str(name) for name in attributes if name not in allowed)
    if unknown:
        raise ValueError(f"it holds attributes a {type(system).__name__} does not have: {', '.join(unknown)}")
    uv = attributes.get("uv")
    if uv is not None and not (isinstance(uv, np.ndarray) and uv.dtype == np.float64 and
                               uv.shape == (system.n_nodes, 2) and np.isfinite(uv).all()):
        raise ValueError(f"uv must be None or a finite float64 array of shape ({system.n_nodes}, 2)")
    families = attributes.get("families", {})
    if not isinstance(families, dict) or not all(
            isinstance(name, str) and isinstance(indices, np.ndarray) and indices.dtype.kind in "iu"
            and (indices.size == 0 or (indices.min() >= 0 and indices.max() < system.n_springs))
            for name, indices in families.items()):
        raise ValueError(f"families must map names to arrays of spring indices in 0..{system.n_springs - 1}")
    warned = attributes.get("_warned", frozenset())
    if not isinstance(warned, frozenset) or not all(isinstance(kind, str) for kind in warned):
        raise ValueError("_warned must be a frozenset of warning kinds")
    limits = attributes.get("_stability_limits", {})
    if not isinstance(limits, dict) or not all(isinstance(name, str) and isinstance(limit, float)
                                               for name, limit in limits.items()):
        raise ValueError("_stability_limits must map integrator names to time steps (s)")
    if "__dict__" in attributes and not isinstance(attributes["__dict__"], dict):
        raise ValueError("__dict__ must be a dict")


def _check_pickle_version(what: str, version: Any, current: int) -> None:
    """ValueError, starting with ``what``, unless ``version`` is the pickled data version
    ``current`` that this msprings reads."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"{what}: its version tag {version!r} is not a version number")
    if version > current:
        raise ValueError(f"{what}: it was pickled with data version {version}, newer than this msprings reads "
                         f"({current}): upgrade msprings")
    if version != current:
        raise ValueError(f"{what}: data version {version} is not one this msprings reads ({current})")


def _unpickle_system(cls: Any, version: Any, core: Any, options: Any, attributes: Any) -> System:
    """Rebuilds a System pickled by :meth:`System.__reduce_ex__`.

    Raises
    ------
    ValueError
        The data is damaged (wrong shapes or types, NaN or infinite positions, values a
        System refuses), or its version is not :data:`PICKLE_VERSION`.  (A truncated
        pickle never gets here: ``pickle`` refuses it with UnpicklingError or EOFError.)
    """
    what = "cannot unpickle an msprings.System"
    _check_pickle_version(what, version, PICKLE_VERSION)
    if not (isinstance(cls, type) and issubclass(cls, System)):
        raise ValueError(f"{what}: {cls!r} is not a System class")
    if not (isinstance(core, dict) and isinstance(options, dict) and isinstance(attributes, dict)):
        raise ValueError(f"{what}: the data is damaged (its state, options and attributes must be dicts)")
    system = cls.__new__(cls)
    try:
        system._unpickle_state(core, options)
        _check_attributes(system, attributes)
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueError(f"{what}: the data is damaged: {error}") from None
    attributes = {"families": {}, "uv": None, **attributes}
    extra = attributes.pop("__dict__", None)
    for name, value in attributes.items():
        object.__setattr__(system, name, value)
    if extra:
        system.__dict__.update(extra)
    return system
