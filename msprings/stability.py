"""Numerical stability of the integrators on the damped harmonic oscillator.

The model problem is one mass on one spring with an axial damper::

    m x'' = -k x - c x',      omega = sqrt(k / m) (rad/s),   zeta = c / (2 sqrt(k m)),

stepped with time step h (s).  Measuring time in units of 1/omega and velocity as
``w = v / omega`` (so ``x`` and ``w`` share a unit) turns it into::

    x'' = -x - 2 zeta x',      step a = omega h (dimensionless),

so everything below depends on the pair (a, zeta) only.  Every integrator is linear on a
linear problem, so one step is a 2x2 *amplification matrix* G(a, zeta)::

    (x_{n+1}, w_{n+1}) = G (x_n, w_n),

and its eigenvalues say everything about long runs: the method is stable when the spectral
radius max abs(lambda) is at most 1, the energy changes by abs(lambda)^2 per step, and the phase
arg(lambda) per step gives the numerical frequency.  What the energy loses per step under
backward Euler, projective dynamics and xpbd is their own numerical damping, which the
energy ledger books as ``numerical`` (:class:`msprings.Ledger`): on this model problem it is
exactly the energy that G says a step removes, less what the damper's power books.

The integrators are exactly those of the C core (see DESIGN.md), plus backward Euler::

    explicit_euler          x' = x + h v;  v' = v + h a(x, v)
    symplectic_euler        v' = v + h a(x, v);  x' = x + h v'
    velocity_verlet         v½ = v + h/2 a(x, v);  x' = x + h v½;
                            v~ = v½ + h/2 a(x', v½);  v' = v½ + h/2 a(x', v~)
    rk4                     classical Runge-Kutta on (x, v) with slopes (v, a)
    implicit_euler          M (v' - v) = h f(x + h v', v');  x' = x + h v'
    projective              v^ = v + h a_ext (the damper, taken at the start); y = x + h v^;
                            local/global iterations (Liu et al. 2013) towards M (x' - y) / h^2 = -k x';
                            on one spring along a line the first one is exact;  v' = (x' - x) / h.
                            (On one spring the implicit spring keeps the damper stable at any step;
                            on a network a node's dampers add up beyond its springs' reach, and
                            System.critical_dt asks h gamma < 2 of the highest damping rate.)
    xpbd                    x^ = x + h v (the forces other than the spring's kick first; none here);
                            one projection of the spring as a compliant constraint (compliance 1/k,
                            damping c) moves x^ to x';  v' = (x' - x) / h.  On one spring that single
                            projection solves the constraint exactly, so on this model problem xpbd
                            steps as backward Euler (on a network, Gauss-Seidel sweeps approach it)

Here a(x, v) = f / m = -omega^2 x - 2 zeta omega v.  :func:`amplification_matrix` builds G
by applying these update formulas to the two basis states, so it mirrors the definitions
rather than a closed form derived by hand; the closed forms are what the tests check it
against.  The module is pure NumPy and never touches the C core.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _core

__all__ = [
    "INTEGRATORS",
    "RADIUS_TOLERANCE",
    "amplification_matrix",
    "energy_ratio_per_step",
    "numerical_frequency",
    "numerical_period_ratio",
    "region_grid",
    "spectral_radius",
    "stability_limit",
    "stability_region",
]

#: Every integrator this module knows: the C core's (explicit, symplectic and backward Euler,
#: velocity Verlet, RK4, projective dynamics, xpbd).
INTEGRATORS = _core.INTEGRATORS

#: A spectral radius up to ``1 + RADIUS_TOLERANCE`` counts as stable: the eigenvalues of a
#: conservative method lie on the unit circle and round-off puts them a few ulps either side.
RADIUS_TOLERANCE = 1e-12

# Methods whose undamped amplification matrix has determinant exactly 1 (a composition of
# shears): their oscillatory eigenvalues lie on the unit circle, not just near it.
_SYMPLECTIC = ("symplectic_euler", "velocity_verlet")

# Methods with a stability function R(z) for the first-order test equation y' = lambda y.
_FIRST_ORDER = ("explicit_euler", "rk4", "implicit_euler")

# Steps scanned by stability_limit, in units of the fastest mode (r = omega h when
# zeta <= 1): geometric near 0 (where first-order methods cross the tolerance), then a fine
# uniform grid over the range where explicit methods lose stability (every explicit limit
# is below r = 3), then geometric far out.
_SCAN_STEPS = np.unique(
    np.concatenate(
        [
            np.geomspace(1e-7, 1e-2, 400),
            np.arange(1e-2, 8.0, 1e-4),
            np.geomspace(8.0, 1e6, 4000),
        ]
    )
)

# A limit below this r is not resolvable: near 0 a first-order method's spectral radius is
# 1 + O(r^2), which only exceeds 1 + RADIUS_TOLERANCE once r is about sqrt(2e-12) = 1.4e-6.
# Such methods are reported as unstable for every step (limit 0).
_SMALLEST_RESOLVED_LIMIT = 1e-5

# Relative width of the bisection bracket at which stability_limit stops.
_BISECTION_RELATIVE_WIDTH = 1e-13


def _check_integrator(integrator: str) -> str:
    """Returns ``integrator`` if it names a known method, else raises ValueError."""
    if not isinstance(integrator, str) or integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {', '.join(INTEGRATORS)}; got {integrator!r}")
    return integrator


def _non_negative(value: ArrayLike, name: str) -> np.ndarray:
    """``value`` as a float64 array, refusing negative, NaN or non-real entries with ValueError."""
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be real and >= 0, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if np.isnan(array).any() or (array < 0.0).any():
        raise ValueError(f"{name} must be >= 0 (and not NaN), got {value!r}")
    return array


def _finite_non_negative(value: ArrayLike, name: str) -> np.ndarray:
    """Like :func:`_non_negative`, also refusing infinities."""
    array = _non_negative(value, name)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


# ---------------------------------------------------------------------------------------
# One step of each integrator on x'' = -x - 2 zeta x' (time unit 1/omega, step a)

_State = tuple[np.ndarray, np.ndarray]


def _acceleration(x: np.ndarray, w: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """Scaled acceleration f / (m omega^2) = -x - 2 zeta w of the unit oscillator."""
    return -x - 2.0 * zeta * w


def _explicit_euler(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """x' = x + h v;  v' = v + h a(x, v)."""
    return x + a * w, w + a * _acceleration(x, w, zeta)


def _symplectic_euler(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """v' = v + h a(x, v);  x' = x + h v'."""
    w_next = w + a * _acceleration(x, w, zeta)
    return x + a * w_next, w_next


def _velocity_verlet(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """Velocity Verlet with the predicted end velocity v~ for the damper."""
    half = 0.5 * a
    w_half = w + half * _acceleration(x, w, zeta)
    x_next = x + a * w_half
    w_predicted = w_half + half * _acceleration(x_next, w_half, zeta)
    return x_next, w_half + half * _acceleration(x_next, w_predicted, zeta)


def _rk4(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """Classical RK4 on (x, v): slopes at c = 0, 1/2, 1/2, 1, weights (1, 2, 2, 1) / 6."""
    slope_x1, slope_w1 = w, _acceleration(x, w, zeta)
    x2, w2 = x + 0.5 * a * slope_x1, w + 0.5 * a * slope_w1
    slope_x2, slope_w2 = w2, _acceleration(x2, w2, zeta)
    x3, w3 = x + 0.5 * a * slope_x2, w + 0.5 * a * slope_w2
    slope_x3, slope_w3 = w3, _acceleration(x3, w3, zeta)
    x4, w4 = x + a * slope_x3, w + a * slope_w3
    slope_x4, slope_w4 = w4, _acceleration(x4, w4, zeta)
    sixth = a / 6.0
    return (
        x + sixth * (slope_x1 + 2.0 * slope_x2 + 2.0 * slope_x3 + slope_x4),
        w + sixth * (slope_w1 + 2.0 * slope_w2 + 2.0 * slope_w3 + slope_w4),
    )


def _implicit_euler(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """Backward Euler: w' - w = a (-(x + a w') - 2 zeta w'), x' = x + a w'.

    The problem is linear, so Newton's method converges in one iteration, which is this
    single exact solve:  (1 + 2 zeta a + a^2) w' = w - a x.
    """
    w_next = (w - a * x) / (1.0 + 2.0 * zeta * a + a * a)
    return x + a * w_next, w_next


def _projective(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """Projective dynamics on one spring: the damper kicks explicitly, w^ = w - 2 zeta a w,
    y = x + a w^; the global step (1 / a^2 + 1) x' = y / a^2 is exact for a spring along a
    line; the velocity is the displacement over the step, w^ + (x' - y) / a."""
    kicked = w - 2.0 * zeta * a * w
    target = x + a * kicked
    return target / (1.0 + a * a), kicked - target * a / (1.0 + a * a)


def _xpbd(x: np.ndarray, w: np.ndarray, a: np.ndarray, zeta: np.ndarray) -> _State:
    """One xpbd step with one projection: predict x^ = x + a w, then the spring constraint
    C = x (rest length 0 in these units) with compliance alpha~ = 1 / a^2 and damping
    gamma = 2 zeta / a moves it by  d = (-C(x^) - gamma (x^ - x)) / (1 + gamma + alpha~)
    (mass 1), here multiplied through by a^2; the velocity is the displacement over the step,
    w + d / a."""
    predicted = x + a * w
    shift = a * (-predicted - 2.0 * zeta * w) / (1.0 + 2.0 * zeta * a + a * a)  # d / a
    return predicted + a * shift, w + shift


_STEPS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], _State]] = {
    "explicit_euler": _explicit_euler,
    "symplectic_euler": _symplectic_euler,
    "velocity_verlet": _velocity_verlet,
    "rk4": _rk4,
    "implicit_euler": _implicit_euler,
    "projective": _projective,
    "xpbd": _xpbd,
}


# ---------------------------------------------------------------------------------------
# Amplification matrix and its eigenvalues


def amplification_matrix(integrator: str, omega_h: ArrayLike, zeta: ArrayLike = 0.0) -> np.ndarray:
    """One step of ``integrator`` on the damped oscillator, as a matrix.

    Returns G with ``(x', v'/omega) = G (x, v/omega)`` for the oscillator
    ``m x'' = -k x - c x'`` stepped with step h, where ``omega_h = omega h`` (dimensionless,
    omega = sqrt(k/m) in rad/s, h in s) and ``zeta = c / (2 sqrt(k m))`` (dimensionless).
    Column j of G is the integrator's update formula applied to basis state j, so G is
    exactly what the method does (up to round-off), not a closed form.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h : array_like of float
        ``omega h``, the step in units of the undamped period over 2 pi (dimensionless,
        >= 0, finite); any shape broadcasting with ``zeta``.
    zeta : array_like of float, default 0.0
        Damping ratio ``c / (2 sqrt(k m))`` (dimensionless, >= 0, finite).

    Returns
    -------
    numpy.ndarray, shape broadcast_shape + (2, 2)
        G (dimensionless), float64, for each broadcast pair of ``omega_h`` and ``zeta``.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``omega_h`` or ``zeta`` is
        negative, NaN, infinite or not real, or they do not broadcast together.
    """
    step = _STEPS[_check_integrator(integrator)]
    a, z = np.broadcast_arrays(
        _finite_non_negative(omega_h, "omega_h"), _finite_non_negative(zeta, "zeta")
    )
    one, zero = np.ones(a.shape), np.zeros(a.shape)
    columns = [np.stack(step(x, w, a, z), axis=-1) for x, w in ((one, zero), (zero, one))]
    return np.stack(columns, axis=-1)


class _Spectrum(NamedTuple):
    """Eigenvalues of a stack of 2x2 matrices, lambda = half_trace +- sqrt(disc)."""

    half_trace: np.ndarray  # T / 2
    disc: np.ndarray  # T^2/4 - D; < 0 for a complex pair, exactly 0 at a double eigenvalue
    determinant: np.ndarray  # D = lambda_1 lambda_2


def _spectrum(matrix: np.ndarray) -> _Spectrum:
    """Trace, discriminant and determinant of G, computed to keep the eigenvalues accurate.

    disc is formed as ((G00 - G11)/2)^2 + G01 G10 rather than T^2/4 - D: for small steps
    both eigenvalues are close to 1 and T^2/4 - D would cancel catastrophically, leaving the
    gap between them (hence the spectral radius) wrong by ~1e-9.  At a double eigenvalue
    (critical damping, or a symplectic method at omega h = 2) the rounding of G's entries
    alone leaves disc a few ulps from 0, and its square root would move the eigenvalues by
    ~1e-8; a disc within round-off of 0 is therefore set to exactly 0.
    """
    g00, g01 = matrix[..., 0, 0], matrix[..., 0, 1]
    g10, g11 = matrix[..., 1, 0], matrix[..., 1, 1]
    half_difference_squared = (0.5 * (g00 - g11)) ** 2
    off_diagonal = g01 * g10
    disc = half_difference_squared + off_diagonal
    round_off = 8.0 * np.finfo(np.float64).eps * np.maximum(half_difference_squared, np.abs(off_diagonal))
    return _Spectrum(
        half_trace=0.5 * (g00 + g11),
        disc=np.where(np.abs(disc) <= round_off, 0.0, disc),
        determinant=g00 * g11 - g01 * g10,
    )


def _radius(spectrum: _Spectrum) -> np.ndarray:
    """Spectral radius: sqrt(D) for a complex pair, |T|/2 + sqrt(disc) for real roots."""
    complex_pair = spectrum.disc < 0.0
    return np.where(
        complex_pair,
        np.sqrt(np.where(complex_pair, spectrum.determinant, 0.0)),
        np.abs(spectrum.half_trace) + np.sqrt(np.where(complex_pair, 0.0, spectrum.disc)),
    )


def _scalar_if_0d(array: np.ndarray) -> np.ndarray | float:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(array) if array.ndim == 0 else array


def spectral_radius(integrator: str, omega_h: ArrayLike, zeta: ArrayLike = 0.0) -> np.ndarray | float:
    """Largest absolute value of an eigenvalue of the amplification matrix G(omega h, zeta) (dimensionless).

    The method is stable for this step when it is at most 1 (up to
    :data:`RADIUS_TOLERANCE`): then every solution stays bounded (a double eigenvalue of
    modulus exactly 1 excepted).

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h : array_like of float
        ``omega h``, the step in units of the undamped period over 2 pi (dimensionless,
        >= 0, finite); any shape broadcasting with ``zeta``.
    zeta : array_like of float, default 0.0
        Damping ratio ``c / (2 sqrt(k m))`` (dimensionless, >= 0, finite).

    Returns
    -------
    float or numpy.ndarray
        The spectral radius (dimensionless): a float for scalar inputs, else an array of the
        broadcast shape of ``omega_h`` and ``zeta``.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``omega_h`` or ``zeta`` is
        negative, NaN, infinite or not real, or they do not broadcast together.
    """
    return _scalar_if_0d(_radius(_spectrum(amplification_matrix(integrator, omega_h, zeta))))


def energy_ratio_per_step(integrator: str, omega_h: ArrayLike) -> np.ndarray | float:
    """Factor by which the undamped oscillator's energy changes per step, on average.

    With ``E = (x^2 + (v/omega)^2) / 2`` (E / k in m^2) the energy after n steps grows like
    ``rho^(2 n)`` with rho the spectral radius (zeta = 0), so this returns ``rho^2``:
    ``1 + (omega h)^2`` for explicit Euler, ``1 / (1 + (omega h)^2)`` for backward Euler,
    ``|R(i omega h)|^2`` for RK4.  E itself oscillates within a step-to-step band around
    that trend.  Symplectic Euler and velocity Verlet conserve a modified energy exactly
    (det G = 1), so whenever their eigenvalues are a complex pair on the unit circle
    (omega h < 2) this is exactly 1.0; beyond, it is the real eigenvalue's square.  For
    ``implicit_euler``, ``projective`` and ``xpbd`` the fraction ``1 - ratio`` that a step
    removes is what :meth:`msprings.System.ledger` books as ``numerical``.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h : array_like of float
        ``omega h`` (dimensionless, >= 0, finite), any shape.

    Returns
    -------
    float or numpy.ndarray
        ``rho^2`` (dimensionless): a float for a scalar ``omega_h``, else an array of its
        shape.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``omega_h`` is negative, NaN,
        infinite or not real.
    """
    _check_integrator(integrator)
    spectrum = _spectrum(amplification_matrix(integrator, omega_h))
    ratio = _radius(spectrum) ** 2
    if integrator in _SYMPLECTIC:
        ratio = np.where(spectrum.disc < 0.0, 1.0, ratio)
    return _scalar_if_0d(np.asarray(ratio))


def numerical_frequency(integrator: str, omega_h: ArrayLike, zeta: ArrayLike = 0.0) -> np.ndarray | float:
    """Numerical angular frequency over the undamped one, omega_numerical / omega.

    The numerical solution rotates by arg(lambda) per step, lambda the eigenvalue of G
    with positive imaginary part, so ``omega_numerical h = arg(lambda)`` and the ratio is
    ``arg(lambda) / (omega h)`` (dimensionless).  Compare with the exact damped value
    ``sqrt(1 - zeta^2)``; for symplectic Euler and Verlet (undamped) it is
    ``2 arcsin(omega h / 2) / (omega h)``.  NaN where the eigenvalues are real (no
    oscillation: overdamped, or beyond a symplectic method's limit) and at omega h = 0.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h : array_like of float
        ``omega h``, the step in units of the undamped period over 2 pi (dimensionless,
        >= 0, finite); any shape broadcasting with ``zeta``.
    zeta : array_like of float, default 0.0
        Damping ratio ``c / (2 sqrt(k m))`` (dimensionless, >= 0, finite).

    Returns
    -------
    float or numpy.ndarray
        ``omega_numerical / omega`` (dimensionless; NaN where there is no oscillation): a
        float for scalar inputs, else an array of the broadcast shape of ``omega_h`` and
        ``zeta``.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``omega_h`` or ``zeta`` is
        negative, NaN, infinite or not real, or they do not broadcast together.
    """
    a = _finite_non_negative(omega_h, "omega_h")
    spectrum = _spectrum(amplification_matrix(integrator, a, zeta))
    complex_pair = spectrum.disc < 0.0
    phase = np.arctan2(np.sqrt(np.where(complex_pair, -spectrum.disc, 0.0)), spectrum.half_trace)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(complex_pair & (a > 0.0), phase / np.where(a > 0.0, a, 1.0), np.nan)
    return _scalar_if_0d(np.asarray(ratio))


def numerical_period_ratio(integrator: str, omega_h: ArrayLike, zeta: ArrayLike = 0.0) -> np.ndarray | float:
    """Numerical oscillation period over the undamped period 2 pi / omega.

    The reciprocal of :func:`numerical_frequency`: for symplectic Euler the numerical
    period is ``pi h / arcsin(omega h / 2)``, i.e. this ratio is
    ``(omega h / 2) / arcsin(omega h / 2)``.  NaN where the eigenvalues are real.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h : array_like of float
        ``omega h``, the step in units of the undamped period over 2 pi (dimensionless,
        >= 0, finite); any shape broadcasting with ``zeta``.
    zeta : array_like of float, default 0.0
        Damping ratio ``c / (2 sqrt(k m))`` (dimensionless, >= 0, finite).

    Returns
    -------
    float or numpy.ndarray
        The numerical period over ``2 pi / omega`` (dimensionless; NaN where there is no
        oscillation): a float for scalar inputs, else an array of the broadcast shape of
        ``omega_h`` and ``zeta``.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``omega_h`` or ``zeta`` is
        negative, NaN, infinite or not real, or they do not broadcast together.
    """
    return _scalar_if_0d(1.0 / np.asarray(numerical_frequency(integrator, omega_h, zeta)))


# ---------------------------------------------------------------------------------------
# Stability limit and regions


def _limit_for(integrator: str, zeta: float) -> float:
    """Largest a with spectral radius <= 1 + tolerance on all of (0, a]: scan, then bisect.

    The scan is in units of the fastest mode's rate |s| = zeta + sqrt(zeta^2 - 1) (1 when
    zeta <= 1), so a heavily overdamped oscillator, whose limits shrink like 1/zeta, is
    resolved as finely as an undamped one.
    """
    fastest_rate = zeta + math.sqrt(zeta * zeta - 1.0) if zeta > 1.0 else 1.0
    scan_steps = _SCAN_STEPS / fastest_rate

    def unstable(a: ArrayLike) -> np.ndarray:
        radius = _radius(_spectrum(amplification_matrix(integrator, a, zeta)))
        return radius > 1.0 + RADIUS_TOLERANCE

    flags = unstable(scan_steps)
    if not flags.any():
        return math.inf
    first = int(np.argmax(flags))
    stable_step = float(scan_steps[first - 1]) if first > 0 else 0.0
    unstable_step = float(scan_steps[first])
    while unstable_step - stable_step > _BISECTION_RELATIVE_WIDTH * unstable_step:
        middle = 0.5 * (stable_step + unstable_step)
        if unstable(middle):
            unstable_step = middle
        else:
            stable_step = middle
    return stable_step if stable_step * fastest_rate >= _SMALLEST_RESOLVED_LIMIT else 0.0


def stability_limit(integrator: str, zeta: ArrayLike = 0.0) -> np.ndarray | float:
    """Critical step: the largest a* = omega h* with the method stable for all 0 < omega h <= a*.

    Stable means spectral radius <= 1 + :data:`RADIUS_TOLERANCE`.  Found numerically: the
    radius is scanned from small steps upwards on a fine grid and the first unstable grid
    point is bisected against the stable one before it to a relative width of 1e-13.
    Taking the *first* crossing matters because a stable set need not be an interval
    starting at 0.  The grid is in units of r = abs(fastest mode) * h, r = omega h (zeta <= 1)
    or omega h (zeta + sqrt(zeta^2 - 1)) (overdamped): geometric from r = 1e-7 to 1e-2,
    spacing 1e-4 up to r = 8, geometric beyond, up to r = 1e6.

    Returns 0.0 when the method is unstable for every step (explicit Euler undamped: its
    radius is sqrt(1 + (omega h)^2) > 1), and inf when no scanned step is unstable
    (backward Euler).  A limit below r = 1e-5 cannot be told apart from 0 with this
    tolerance (a first-order method's radius is 1 + O(r^2)) and is reported as 0.0; near a
    slow crossing the tolerance shifts the limit by about
    ``RADIUS_TOLERANCE / (d rho / d(omega h))``.

    Closed forms: explicit Euler ``2 zeta`` (zeta <= 1) and ``2 (zeta - sqrt(zeta^2 - 1))``
    (zeta > 1); symplectic Euler ``2 (sqrt(1 + zeta^2) - zeta)``; velocity Verlet 2 and
    RK4 ``2 sqrt(2)`` when undamped.  Divide by omega for the critical time step in s.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    zeta : array_like of float, default 0.0
        Damping ratio (dimensionless, >= 0, finite), any shape.

    Returns
    -------
    float or numpy.ndarray
        The critical ``omega h*`` (dimensionless; 0.0 or inf as above): a float for a scalar
        ``zeta``, else an array of its shape.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, or ``zeta`` is negative, NaN,
        infinite or not real.
    """
    _check_integrator(integrator)
    zetas = _finite_non_negative(zeta, "zeta")
    limits = np.array([_limit_for(integrator, float(z)) for z in zetas.ravel()]).reshape(zetas.shape)
    return _scalar_if_0d(limits)


def stability_region(integrator: str, re: ArrayLike, im: ArrayLike) -> np.ndarray:
    """abs(R(z)) for the first-order test equation y' = lambda y, with z = h lambda = re + i im.

    R is the method's stability function, y_{n+1} = R(z) y_n: ``1 + z`` for explicit
    Euler, ``1 + z + z^2/2 + z^3/6 + z^4/24`` for RK4, ``1 / (1 - z)`` for backward Euler.
    The method is stable where abs(R(z)) <= 1.  On the oscillator the eigenvalues are
    ``z = omega h (-zeta +- i sqrt(1 - zeta^2))``, and the eigenvalues of
    :func:`amplification_matrix` are R at those points.

    Symplectic Euler and velocity Verlet update x and v differently, so they have no
    stability function of one complex variable: they are defined on the second-order
    oscillator only, and for them this raises ValueError (use :func:`region_grid`).

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    re, im : array_like of float
        Real and imaginary parts of ``z = h lambda`` (dimensionless); they broadcast together
        (use ``np.meshgrid`` for a grid).

    Returns
    -------
    numpy.ndarray
        ``abs(R(z))`` (dimensionless), float64, of the broadcast shape of ``re`` and ``im``.

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS` or has no stability function
        (``symplectic_euler``, ``velocity_verlet``, ``projective``, ``xpbd``), if ``re`` or
        ``im`` is not real, or if they do not broadcast together.
    """
    _check_integrator(integrator)
    if integrator not in _FIRST_ORDER:
        raise ValueError(
            f"{integrator} treats positions and velocities differently, so it has no stability "
            "function R(z) for y' = lambda y; it is defined on the oscillator only: use "
            "region_grid or spectral_radius"
        )
    real, imaginary = np.asarray(re), np.asarray(im)
    for name, array in (("re", real), ("im", imaginary)):
        if array.dtype.kind not in "iuf":
            raise ValueError(f"{name} must be real, got dtype {array.dtype}")
    z = real.astype(np.float64) + 1j * imaginary.astype(np.float64)
    if integrator == "explicit_euler":
        factor = 1.0 + z
    elif integrator == "rk4":
        factor = 1.0 + z * (1.0 + z / 2.0 * (1.0 + z / 3.0 * (1.0 + z / 4.0)))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = 1.0 / (1.0 - z)
    return np.abs(factor)


def region_grid(
    integrator: str, omega_h_max: float = 4.0, zeta_max: float = 2.0, n: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Data for a stability plot in the (omega h, zeta) plane.

    The grids come from ``np.meshgrid`` of ``linspace(0, omega_h_max, n)`` (varying along
    axis 1) and ``linspace(0, zeta_max, n)`` (along axis 0), ready for
    ``contourf(omega_h, zeta, radius)`` with the stable set ``radius <= 1``.

    Parameters
    ----------
    integrator : str
        One of :data:`INTEGRATORS`.
    omega_h_max : float, default 4.0
        Largest ``omega h`` (dimensionless, > 0, finite).
    zeta_max : float, default 2.0
        Largest damping ratio (dimensionless, >= 0, finite).
    n : int, default 200
        Grid points per axis (>= 2).

    Returns
    -------
    omega_h : numpy.ndarray, shape (n, n)
        Step ``omega h`` at each grid point (dimensionless).
    zeta : numpy.ndarray, shape (n, n)
        Damping ratio at each grid point (dimensionless).
    radius : numpy.ndarray, shape (n, n)
        Spectral radius there (dimensionless).

    Raises
    ------
    ValueError
        If ``integrator`` is not in :data:`INTEGRATORS`, ``omega_h_max`` is not > 0 and
        finite, ``zeta_max`` is negative, NaN or infinite, or ``n`` is not an integer >= 2.
    """
    _check_integrator(integrator)
    steps_max = float(_finite_non_negative(omega_h_max, "omega_h_max"))
    zetas_max = float(_finite_non_negative(zeta_max, "zeta_max"))
    if steps_max <= 0.0:
        raise ValueError(f"omega_h_max must be > 0, got {omega_h_max!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2 (grid points per axis), got {n!r}")
    steps, zetas = np.meshgrid(np.linspace(0.0, steps_max, n), np.linspace(0.0, zetas_max, n))
    return steps, zetas, np.asarray(spectral_radius(integrator, steps, zetas))
