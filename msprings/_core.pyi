"""Type stubs of msprings._core, the C extension (csrc/binding/*.c).

Units are SI.  Array attributes are zero-copy views of the C memory: writable views may be
written in place (``s.x[:] = ...``) but not replaced (``s.x = ...`` raises AttributeError).
Options (integrator, gravity, drag, ...) are settable between steps; each setter checks its
value and raises TypeError or ValueError naming it, leaving the system unchanged.
"""
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

_Float = NDArray[np.float64]
_Int32 = NDArray[np.int32]
_Int64 = NDArray[np.int64]
_Bool = NDArray[np.bool_]
_IntegratorName = Literal[
    "explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler", "projective", "xpbd"
]

INTEGRATORS: Final[tuple[str, ...]]
"""The integrator names, in the core's order."""
OPTIONS: Final[tuple[Option, ...]]
"""One :class:`Option` per settable option of :class:`System`."""

class DivergenceError(FloatingPointError):
    """A step made a position or velocity non-finite; the call was undone."""

class Option(tuple[Any, ...]):
    """One option of System, as the binding describes it (a named tuple)."""

    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    @property
    def name(self) -> str:
        """Attribute of System, and the model file's entry ``option_<name>``."""
    @property
    def kind(self) -> Literal["real", "real_or_none", "optional_real", "integer", "vector3", "integrator"]:
        """How it reads and writes."""
    @property
    def low(self) -> float | None:
        """Lowest valid value (of each component of a vector); None for an integrator."""
    @property
    def high(self) -> float | None:
        """Highest valid value (of each component of a vector); None for an integrator."""
    @property
    def low_open(self) -> bool | None:
        """True if low itself is refused (an infinite end always is)."""
    @property
    def high_open(self) -> bool | None:
        """True if high itself is refused (an infinite end always is)."""
    @property
    def doc(self) -> str:
        """What it does, its units and default."""

class System:
    """Core mass-spring system with exact-shape inputs; use :class:`msprings.System`, which
    accepts scalars, index lists and defaults."""

    def __init__(
        self,
        positions: ArrayLike,
        springs: ArrayLike,
        mass: ArrayLike,
        k: ArrayLike,
        c: ArrayLike,
        rest: ArrayLike,
        pinned: ArrayLike,
        velocities: ArrayLike,
        gravity: ArrayLike = ...,
        drag: float = ...,
        energy_loss: float = ...,
        integrator: str = ...,
        faces: ArrayLike | None = ...,
    ) -> None: ...

    # ---- state and parameters: views of C memory ------------------------------------------
    @property
    def x(self) -> _Float:
        """Positions (m), (n, 3) float64 view of C memory; writable."""
    @property
    def v(self) -> _Float:
        """Velocities (m/s), (n, 3) float64 view; writable.  A pinned node moves with its own v."""
    @property
    def f(self) -> _Float:
        """Total force on each node (N) at the start of the last step, (n, 3) float64 view."""
    @property
    def external(self) -> _Float:
        """External force added every step (N), (n, 3) float64 view; writable."""
    @property
    def mass(self) -> _Float:
        """Node masses (kg), (n,) float64 view; writable (> 0 on free nodes)."""
    @property
    def pinned(self) -> _Bool:
        """Pinned flags, (n,) bool view; writable.  Pinned nodes ignore forces."""
    @property
    def springs(self) -> _Int32:
        """Node index pairs (i, j), (m, 2) int32 read-only view."""
    @property
    def rest(self) -> _Float:
        """Rest lengths L (m), (m,) float64 view; writable (>= 0)."""
    @property
    def k(self) -> _Float:
        """Spring stiffnesses (N/m), (m,) float64 view; writable (>= 0)."""
    @property
    def c(self) -> _Float:
        """Axial damping coefficients (N s/m), (m,) float64 view; writable (>= 0)."""
    @property
    def faces(self) -> _Int32:
        """Node indices of each triangle, (F, 3) int32 read-only view."""
    @property
    def n_nodes(self) -> int:
        """Number of nodes (fixed)."""
    @property
    def n_springs(self) -> int:
        """Number of springs (fixed)."""
    @property
    def n_faces(self) -> int:
        """Number of triangles (fixed)."""
    @property
    def t(self) -> float:
        """Simulated time (s)."""
    @property
    def steps(self) -> int:
        """Steps taken since construction or reset()."""
    @property
    def workers(self) -> int:
        """Worker threads the last step() ran on (0 before the first)."""
    @property
    def dissipated(self) -> float:
        """Energy removed since construction or reset() (J)."""
    @property
    def work(self) -> float:
        """Work done on the system from outside since construction or reset() (J)."""
    @property
    def solver_stats(self) -> dict[str, int | float | bool]:
        """implicit_euler: what the solver did in the last step (a new dict): newton_iterations,
        cg_iterations, newton_residual, cg_residual, newton_converged, cg_converged, cg_failures."""

    # ---- options: settable between steps ----------------------------------------------------
    integrator: str
    """Integrator name, one of :data:`INTEGRATORS`.  Default 'symplectic_euler'."""
    chebyshev: float
    """projective: Chebyshev acceleration rho in [0, 1); 0 (default) = off."""
    iterations: int
    """projective and xpbd: solver iterations per step (>= 0); 0 = the integrator's own."""
    @property
    def gravity(self) -> _Float:
        """Gravitational acceleration g (m/s^2), shape (3,) (a copy).  Default (0, -9.81, 0)."""
    @gravity.setter
    def gravity(self, value: ArrayLike) -> None: ...
    drag: float
    """Linear drag coefficient b (N s/m, >= 0): force -b (v - wind) on every node."""
    energy_loss: float
    """Fraction of every free velocity removed after each step, in [0, 1)."""
    @property
    def strain_limit(self) -> float | None:
        """Strain limiting (Provot 1995): None (off) or tau >= 0 (dimensionless)."""
    @strain_limit.setter
    def strain_limit(self, value: float | None) -> None: ...
    threads: int
    """Worker threads for networks of 10,000+ springs, in [0, 1024]; 0 = the process-wide setting."""
    @property
    def self_collision(self) -> float:
        """Self-collision distance (m, in [0, 1e6]); 0 = off (None writes 0)."""
    @self_collision.setter
    def self_collision(self, value: float | None) -> None: ...
    self_friction: float
    """Coulomb friction coefficient mu between touching layers (dimensionless, >= 0).  Default 0."""
    self_contact_sweep: int
    """1 (default): sweep point-triangle and edge-edge pairs over the step so the surface never passes
    through itself; 0: the end-of-step proximity pass only."""
    newton_max_iter: int
    """implicit_euler: Newton iterations per step at most (>= 1).  Default 50."""
    newton_tol: float
    """implicit_euler: relative Newton tolerance (dimensionless, > 0).  Default 1e-6."""
    cg_max_iter: int
    """implicit_euler: conjugate-gradient iterations per linear solve at most (>= 1).  Default 1000."""
    cg_tol: float
    """implicit_euler: relative CG residual tolerance of each linear solve (> 0).  Default 1e-2."""
    air_density: float
    """Air density rho (kg/m^3, >= 0).  Default 1.2."""
    drag_coefficient: float
    """Pressure-drag coefficient C_d of the triangles (dimensionless, >= 0).  Default 0 (off)."""
    lift_coefficient: float
    """Lift coefficient C_l of the triangles (dimensionless, >= 0).  Default 0."""
    @property
    def wind(self) -> _Float:
        """Uniform wind velocity W (m/s), shape (3,) (a copy).  Default (0, 0, 0)."""
    @wind.setter
    def wind(self, value: ArrayLike) -> None: ...
    gust: float
    """Gust amplitude A (m/s, >= 0).  Default 0."""
    gust_frequency: float
    """Gust angular frequency omega (rad/s).  Default 5."""
    gust_wavenumber: float
    """Gust wavenumber kappa (rad/m).  Default 1."""

    # ---- methods --------------------------------------------------------------------------
    def step(self, dt: float, n: int = 1) -> None:
        """Advance n steps of dt seconds with the current integrator, inside C with the GIL released.

        Raises ValueError or TypeError (nothing changed) for a bad dt or n or a bad value written
        through a view, and DivergenceError if the state becomes non-finite (the call undone)."""
    def momentum(self) -> _Float:
        """Total linear momentum sum(m v) of the free nodes (kg m/s), shape (3,)."""
    def lengths(self) -> _Float:
        """Current length l of every spring (m), shape (m,)."""
    def strain(self) -> _Float:
        """(l - L) / L of every spring (dimensionless), shape (m,)."""
    def tension(self) -> _Float:
        """Axial force k (l - L) + c (v_j - v_i).n of every spring (N), shape (m,); > 0 pulling."""
    def update_forces(self) -> _Float:
        """Evaluate the total force on every node into f and return the f view (N), (n, 3)."""
    def vertex_normals(self) -> _Float:
        """Area-weighted unit normals of the triangles at every node, (n, 3)."""
    def reset(self) -> None:
        """Return to the initial positions and velocities with t = 0, steps = 0 and an empty ledger."""
    def copy(self) -> System:
        """An independent deep copy: parameters, options, state and initial state."""

    # ---- internal: used by the msprings package ---------------------------------------------
    def _accounts(self) -> tuple[tuple[float, float, float, float, float], tuple[float, ...]]: ...
    def _ledger(self, pending: bool = True) -> tuple[float, ...]: ...
    def _add_collider(self, *args: Any) -> int: ...
    def _set_collider(self, *args: Any) -> None: ...
    def _get_collider(self, id: int) -> tuple[Any, ...]: ...
    def _remove_collider(self, id: int) -> None: ...
    def _collider_ids(self) -> tuple[int, ...]: ...
    def _collider_start(self, id: int) -> _Float: ...
    def _check_dt(self, dt: float) -> None: ...
    def _check_values(self) -> None: ...
    def _continue_calls(self, flag: bool) -> None: ...
    def _roll_back(self) -> bool: ...
    def _keep_start_energy(self, flag: bool) -> None: ...
    def _leave_forces(self, flag: bool) -> None: ...
    def _start_energy(self) -> tuple[float, float, float] | None: ...
    def _watched_energy(self) -> float: ...
    def _eigenvalue_bounds(self) -> tuple[float, float]: ...
    def _max_eigenvalues(self) -> tuple[float, float]: ...
    def _initial_state(self) -> tuple[_Float, _Float]: ...
    def _restore_clock(self, *args: Any) -> None: ...
    def _record_state(self, positions: _Float, velocities: _Float | None = None) -> None: ...
    def _shares_state(self, array: Any) -> bool: ...
    def _wind_at(self, points: ArrayLike, t: float) -> _Float: ...
    def _pickle_state(self) -> dict[str, Any]: ...
    def _unpickle_state(self, state: dict[str, Any], options: dict[str, Any]) -> None: ...
    def _gradient_check(self) -> None: ...
    def _gradient_backward(self, *args: Any) -> tuple[_Float, ...]: ...
    def _gradient_tangent(self, *args: Any) -> tuple[_Float, _Float | None]: ...

class Ensemble:
    """Core ensemble of Systems of one topology; use :class:`msprings.Ensemble`."""

    def __init__(self, systems: Any) -> None: ...
    @property
    def x(self) -> _Float:
        """Positions (m), (B, n, 3) float64 view; writable."""
    @property
    def v(self) -> _Float:
        """Velocities (m/s), (B, n, 3) float64 view; writable."""
    @property
    def mass(self) -> _Float:
        """Node masses (kg), (B, n) float64 view; writable."""
    @property
    def rest(self) -> _Float:
        """Rest lengths (m), (B, m) float64 view; writable."""
    @property
    def k(self) -> _Float:
        """Stiffnesses (N/m), (B, m) float64 view; writable."""
    @property
    def c(self) -> _Float:
        """Axial damping (N s/m), (B, m) float64 view; writable."""
    @property
    def gravity(self) -> _Float:
        """Gravitational acceleration (m/s^2), (B, 3) float64 view; writable."""
    @property
    def t(self) -> _Float:
        """Simulated time of each member (s), (B,) float64 read-only view."""
    @property
    def steps(self) -> _Int64:
        """Steps each member has taken, (B,) int64 read-only view."""
    @property
    def diverged(self) -> _Bool:
        """(B,) bool view: members whose step diverged; write False to step one again."""
    @property
    def divergence_time(self) -> _Float:
        """(B,) float64 read-only view: the time (s) the step that blew up would have reached, NaN if none."""
    @property
    def divergence_step(self) -> _Int64:
        """(B,) int64 read-only view: the step that blew up, -1 if none."""
    @property
    def springs(self) -> _Int32:
        """Node index pairs, (m, 2) int32 read-only view (shared)."""
    @property
    def pinned(self) -> _Bool:
        """Pinned flags, (n,) bool read-only view (shared)."""
    @property
    def faces(self) -> _Int32:
        """Triangles, (F, 3) int32 read-only view (shared)."""
    @property
    def n_members(self) -> int:
        """Number of members B."""
    @property
    def n_nodes(self) -> int:
        """Nodes of each member."""
    @property
    def n_springs(self) -> int:
        """Springs of each member."""
    @property
    def batched(self) -> int:
        """Members the last step() stepped in vector lanes."""
    threads: int
    """Worker threads of step() (0: msprings.set_num_threads' setting)."""
    def step(self, dt: float, n: int = 1) -> None:
        """Advance every member that has not diverged by n steps of dt seconds."""
    def _member(self, index: int, type: type[System]) -> System: ...
    def _accounts(self) -> tuple[_Float, _Float]: ...
    def _integrators(self) -> tuple[str, ...]: ...
    def _set_option(self, name: str, value: Any) -> None: ...
    def _set_divergence(self, *args: Any) -> None: ...
    def _add_collider(self, *args: Any) -> None: ...

def set_num_threads(n: int) -> None:
    """Worker threads of every system whose threads is 0 (0: all online cores)."""

def get_num_threads() -> int:
    """Worker threads that a system whose threads is 0 uses."""

def version() -> str:
    """Version of the C core."""

def vector_path() -> Literal["avx2", "sse2", "neon", "plain"]:
    """The vector path steps use (all give the same bits)."""

def batch_path() -> Literal["avx512", "avx2", "sse2", "neon", "plain"]:
    """The vector path of the batched ensemble kernel (all give the same bits); the environment
    variable MSPRINGS_BATCH_PATH, read when an ensemble's step call begins, caps it."""

def thread_layer() -> Literal["posix", "win32"]:
    """The threads the core was built on."""

def avx2() -> bool:
    """True if steps use the AVX2 vector path on this processor."""

def _after_fork() -> None: ...
