"""A slow, plainly written NumPy reference for the msprings physics.

Everything here follows DESIGN.md line by line, with explicit loops over springs and
nodes, and works on plain arrays only (it never imports msprings).  The test suite
steps a network with the C core and with this module and requires them to agree to
round-off (to the solver tolerance for implicit Euler, which the reference solves with
dense matrices and ``np.linalg.solve`` where the core uses matrix-free conjugate gradients).

Conventions (SI units): positions ``x`` and velocities ``v`` are ``(n, 3)`` arrays;
spring ``s`` joins nodes ``i = springs[s, 0]`` and ``j = springs[s, 1]``; with
``d = x_j - x_i``, ``l = |d|`` and ``n = d / l`` the force on ``i`` is
``[k (l - L) + c (v_j - v_i).n] n`` and the force on ``j`` is its opposite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Spring lengths at or below this (m) count as zero: such a spring exerts no force.
ZERO_LENGTH = 1e-14

INTEGRATORS = ("explicit_euler", "symplectic_euler", "velocity_verlet", "rk4", "implicit_euler")

#: Newton settings of the reference implicit Euler step: iterate until the residual is at
#: round-off level (or the cap is reached).
NEWTON_MAX_ITER = 100
NEWTON_TOL = 1e-12


@dataclass
class Network:
    """The parameters of a mass-spring network (everything except the state x, v)."""

    springs: np.ndarray  # (m, 2) node indices
    mass: np.ndarray  # (n,) kg
    pinned: np.ndarray  # (n,) bool
    k: np.ndarray  # (m,) N/m
    c: np.ndarray  # (m,) N s/m
    rest: np.ndarray  # (m,) m
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81, 0.0]))
    drag: float = 0.0
    energy_loss: float = 0.0
    external: np.ndarray | None = None  # (n, 3) N, None means zero

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.mass)

    @property
    def n_springs(self) -> int:
        """Number of springs."""
        return len(self.springs)


def spring_geometry(x: np.ndarray, i: int, j: int) -> tuple[float, np.ndarray]:
    """Length of the spring from node i to node j and its unit direction (zero if l ~ 0)."""
    d = x[j] - x[i]
    length = float(np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]))
    if length <= ZERO_LENGTH:
        return length, np.zeros(3)
    return length, d / length


def forces(net: Network, x: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, float]:
    """Total force on every node at (x, v) and the power dissipated by dampers and drag.

    The force is springs + dampers + gravity m g + drag -drag v + external, computed for
    every node (pinned ones too; the integrators ignore it there).  The dissipated power
    is sum over springs of c ((v_j - v_i).n)^2 plus drag |v|^2 over free nodes.
    """
    f = np.zeros((net.n_nodes, 3))
    power = 0.0
    for s in range(net.n_springs):
        i, j = int(net.springs[s, 0]), int(net.springs[s, 1])
        length, unit = spring_geometry(x, i, j)
        if length <= ZERO_LENGTH:
            continue
        closing_speed = float(np.dot(v[j] - v[i], unit))
        axial = net.k[s] * (length - net.rest[s]) + net.c[s] * closing_speed
        f[i] += axial * unit
        f[j] -= axial * unit
        power += net.c[s] * closing_speed * closing_speed
    for node in range(net.n_nodes):
        f[node] += net.mass[node] * net.gravity
        f[node] -= net.drag * v[node]
        if net.external is not None:
            f[node] += net.external[node]
        if not net.pinned[node]:
            power += net.drag * float(np.dot(v[node], v[node]))
    return f, power


def acceleration(net: Network, x: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, float]:
    """Acceleration f/m on free nodes, zero on pinned nodes; and the dissipated power."""
    f, power = forces(net, x, v)
    a = np.zeros_like(f)
    for node in range(net.n_nodes):
        if not net.pinned[node]:
            a[node] = f[node] / net.mass[node]
    return a, power


@dataclass
class StepResult:
    """What one reference step produces."""

    x: np.ndarray  # positions at the end of the step
    v: np.ndarray  # velocities at the end of the step
    dissipated: float  # energy removed during the step (J)
    force: np.ndarray  # total force at the start of the step


def _explicit_euler(net: Network, x: np.ndarray, v: np.ndarray, h: float) -> tuple:
    """x' = x + h v;  v' = v + h a(x, v); dissipation by the rectangle rule at the start."""
    a, power = acceleration(net, x, v)
    return x + h * v, v + h * a, h * power


def _symplectic_euler(net: Network, x: np.ndarray, v: np.ndarray, h: float) -> tuple:
    """v' = v + h a(x, v);  x' = x + h v'; dissipation by the rectangle rule at the start."""
    a, power = acceleration(net, x, v)
    v_new = v + h * a
    return x + h * v_new, v_new, h * power


def _velocity_verlet(net: Network, x: np.ndarray, v: np.ndarray, h: float) -> tuple:
    """Kick-drift-kick with a predicted end velocity for the velocity-dependent forces.

    v_half = v + h/2 a(x, v);  x' = x + h v_half;
    v_pred = v_half + h/2 a(x', v_half);  v' = v_half + h/2 a(x', v_pred).
    Dissipation by the trapezoid rule: h/2 (P(x, v) + P(x', v_pred)).
    """
    a_start, power_start = acceleration(net, x, v)
    v_half = v + 0.5 * h * a_start
    x_new = x + h * v_half
    a_predict, _ = acceleration(net, x_new, v_half)
    v_predicted = v_half + 0.5 * h * a_predict
    a_end, power_end = acceleration(net, x_new, v_predicted)
    v_new = v_half + 0.5 * h * a_end
    return x_new, v_new, 0.5 * h * (power_start + power_end)


def _rk4(net: Network, x: np.ndarray, v: np.ndarray, h: float) -> tuple:
    """Classical RK4 on (x, v); dissipation with the same weights 1/6, 1/3, 1/3, 1/6."""
    k1x = v
    k1v, p1 = acceleration(net, x, v)
    k2x = v + 0.5 * h * k1v
    k2v, p2 = acceleration(net, x + 0.5 * h * k1x, k2x)
    k3x = v + 0.5 * h * k2v
    k3v, p3 = acceleration(net, x + 0.5 * h * k2x, k3x)
    k4x = v + h * k3v
    k4v, p4 = acceleration(net, x + h * k3x, k4x)
    x_new = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
    v_new = v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return x_new, v_new, h / 6.0 * (p1 + 2.0 * p2 + 2.0 * p3 + p4)


def spring_blocks(net: Network, x: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The 3x3 stiffness and damping blocks of spring s at positions x.

    With n the spring's direction, K_s = k n n^T + k_t (I - n n^T) is -d(force on j)/d(x_j):
    axial stiffness k and transverse stiffness k_t = k (1 - L / l), clamped at 0 when the
    spring is compressed (l < L) so the matrix stays positive semi-definite.  The damper
    gives C_s = c n n^T (its dependence on the direction is left out, as in the core).  A
    spring of length ~0 has no direction and contributes nothing.
    """
    i, j = int(net.springs[s, 0]), int(net.springs[s, 1])
    length, unit = spring_geometry(x, i, j)
    if length <= ZERO_LENGTH:
        return np.zeros((3, 3)), np.zeros((3, 3))
    axial = np.outer(unit, unit)
    transverse_stiffness = max(net.k[s] * (1.0 - net.rest[s] / length), 0.0)
    stiffness = net.k[s] * axial + transverse_stiffness * (np.eye(3) - axial)
    damping = net.c[s] * axial
    return stiffness, damping


def jacobians(net: Network, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense K = -df/dx and C = -df/dv, each (3n, 3n), assembled from the springs' blocks.

    Spring (i, j) adds its block B to the (i, i) and (j, j) blocks and subtracts it from
    (i, j) and (j, i); drag adds drag * I to every node's diagonal block of C.  Rows and
    columns of pinned nodes are included (the caller removes them).
    """
    size = 3 * net.n_nodes
    stiffness = np.zeros((size, size))
    damping = net.drag * np.eye(size)
    for s in range(net.n_springs):
        i, j = int(net.springs[s, 0]), int(net.springs[s, 1])
        stiffness_block, damping_block = spring_blocks(net, x, s)
        for matrix, block in ((stiffness, stiffness_block), (damping, damping_block)):
            matrix[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] += block
            matrix[3 * j : 3 * j + 3, 3 * j : 3 * j + 3] += block
            matrix[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] -= block
            matrix[3 * j : 3 * j + 3, 3 * i : 3 * i + 3] -= block
    return stiffness, damping


def implicit_euler_step(
    net: Network,
    x: np.ndarray,
    v: np.ndarray,
    h: float,
    newton_max_iter: int = NEWTON_MAX_ITER,
    newton_tol: float = NEWTON_TOL,
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Backward Euler M (v' - v) = h f(x + h v', v'), x' = x + h v', by Newton's method.

    Unknown: dv = v' - v on the free nodes (a pinned node keeps v' = v).  Each iteration
    solves A delta = rhs with the dense A = M + h C + h^2 K (free rows and columns only):

    * the first linearises the force about the start, f(x + h v', v') ~ f0 - K0 h v' - C0 dv,
      which gives rhs = h (f0 - h K0 v) (Baraff & Witkin's linearised step; K0 v includes the
      pinned nodes' velocities, which move them);
    * later ones linearise about the iterate (x_k, v_k) = (x + h v_k, v_k) with A built
      there: rhs = h f(x_k, v_k) - M dv_k, the negated residual.

    Stops when |M dv - h f(x', v')| <= newton_tol * max(|M dv|, |h f|) over the free nodes,
    or after newton_max_iter solves.  Returns x', v', the energy dissipated (the rectangle
    rule at the end of the step, h P(x', v')) and the number of solves.
    """
    free_rows = np.repeat(~np.asarray(net.pinned, dtype=bool), 3)
    mass_rows = np.repeat(np.asarray(net.mass, dtype=float), 3)

    def free_block(matrix: np.ndarray) -> np.ndarray:
        return matrix[np.ix_(free_rows, free_rows)]

    force_start, _ = forces(net, x, v)
    stiffness, damping = jacobians(net, x)
    system = np.diag(mass_rows) + h * damping + h * h * stiffness
    rhs = h * (force_start.ravel() - h * (stiffness @ v.ravel()))
    dv = np.zeros(3 * net.n_nodes)
    iterations = 0
    while True:
        dv[free_rows] += np.linalg.solve(free_block(system), rhs[free_rows])
        iterations += 1
        v_new = v + dv.reshape(v.shape)
        x_new = x + h * v_new
        force, power = forces(net, x_new, v_new)
        momentum_change = mass_rows[free_rows] * dv[free_rows]
        impulse = h * force.ravel()[free_rows]
        residual = float(np.linalg.norm(momentum_change - impulse))
        scale = max(float(np.linalg.norm(momentum_change)), float(np.linalg.norm(impulse)))
        if residual <= newton_tol * scale or iterations >= newton_max_iter:
            return x_new, v_new, h * power, iterations
        stiffness, damping = jacobians(net, x_new)
        system = np.diag(mass_rows) + h * damping + h * h * stiffness
        rhs = np.zeros(3 * net.n_nodes)
        rhs[free_rows] = impulse - momentum_change


_STEPPERS = {
    "explicit_euler": _explicit_euler,
    "symplectic_euler": _symplectic_euler,
    "velocity_verlet": _velocity_verlet,
    "rk4": _rk4,
}


def step(
    net: Network,
    x: np.ndarray,
    v: np.ndarray,
    h: float,
    integrator: str,
    *,
    newton_max_iter: int = NEWTON_MAX_ITER,
) -> StepResult:
    """One step of size h with the named integrator, then energy_loss on free nodes.

    Pinned nodes move with their own velocity (x += h v, v unchanged) whatever the forces.
    energy_loss multiplies free velocities by (1 - energy_loss) after the step; the kinetic
    energy that removes is added to the dissipated energy of the step.  ``newton_max_iter``
    caps implicit Euler's Newton iterations (1: the linearised step); other methods ignore it.
    """
    x = np.asarray(x, dtype=float)
    v = np.asarray(v, dtype=float)
    force_start, _ = forces(net, x, v)
    if integrator == "implicit_euler":
        x_new, v_new, dissipated, _ = implicit_euler_step(net, x, v, h, newton_max_iter)
    else:
        x_new, v_new, dissipated = _STEPPERS[integrator](net, x, v, h)
    for node in range(net.n_nodes):
        if net.pinned[node]:
            x_new[node] = x[node] + h * v[node]
            v_new[node] = v[node]
    if net.energy_loss != 0.0:
        kinetic_before = kinetic_energy(net, v_new)
        for node in range(net.n_nodes):
            if not net.pinned[node]:
                v_new[node] = v_new[node] * (1.0 - net.energy_loss)
        dissipated += kinetic_before - kinetic_energy(net, v_new)
    return StepResult(x_new, v_new, dissipated, force_start)


def kinetic_energy(net: Network, v: np.ndarray) -> float:
    """1/2 sum m |v|^2 over free nodes (J)."""
    total = 0.0
    for node in range(net.n_nodes):
        if not net.pinned[node]:
            total += 0.5 * net.mass[node] * float(np.dot(v[node], v[node]))
    return total


def spring_energy(net: Network, x: np.ndarray) -> float:
    """1/2 sum k (l - L)^2 over all springs (J)."""
    total = 0.0
    for s, length in enumerate(lengths(net, x)):
        total += 0.5 * net.k[s] * (length - net.rest[s]) ** 2
    return total


def gravity_energy(net: Network, x: np.ndarray) -> float:
    """-sum m g.x over free nodes (J)."""
    total = 0.0
    for node in range(net.n_nodes):
        if not net.pinned[node]:
            total -= net.mass[node] * float(np.dot(net.gravity, x[node]))
    return total


def momentum(net: Network, v: np.ndarray) -> np.ndarray:
    """sum m v over free nodes (kg m/s)."""
    total = np.zeros(3)
    for node in range(net.n_nodes):
        if not net.pinned[node]:
            total += net.mass[node] * v[node]
    return total


def lengths(net: Network, x: np.ndarray) -> np.ndarray:
    """Current length of every spring (m)."""
    return np.array([spring_geometry(x, int(i), int(j))[0] for i, j in net.springs], dtype=float)


def strain(net: Network, x: np.ndarray) -> np.ndarray:
    """(l - L) / L per spring; +inf when L = 0 < l, and 0 when both are 0."""
    out = np.empty(net.n_springs)
    for s, length in enumerate(lengths(net, x)):
        rest = net.rest[s]
        if rest > 0.0:
            out[s] = (length - rest) / rest
        else:
            out[s] = np.inf if length > 0.0 else 0.0
    return out


def tension(net: Network, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Axial force k (l - L) + c (v_j - v_i).n per spring, positive when pulling (N)."""
    out = np.empty(net.n_springs)
    for s in range(net.n_springs):
        i, j = int(net.springs[s, 0]), int(net.springs[s, 1])
        length, unit = spring_geometry(x, i, j)
        out[s] = net.k[s] * (length - net.rest[s]) + net.c[s] * float(np.dot(v[j] - v[i], unit))
    return out
