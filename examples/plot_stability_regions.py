"""
Where each integrator is stable
===============================

Every integrator of msprings, applied to one mass on a damped spring (m x″ = −k x − c x′),
multiplies the state by a 2 × 2 *amplification matrix* each step.  It depends only on the
dimensionless step ω h (ω = √(k/m) in rad/s, h the time step in s) and the damping ratio
ζ = c / (2√(k m)).  A step is stable where the matrix's spectral radius is at most 1.
This example draws the stable set of every integrator in the (ω h, ζ) plane, from
:mod:`msprings.stability`.
"""

# %%
# All integrators on one chart
# ----------------------------
# :func:`msprings.plot.plot_stability` with ``kind="region"`` shades the stable side of each
# method's boundary.  Symplectic Euler and velocity Verlet are stable up to ω h = 2 without
# damping, RK4 up to 2√2 ≈ 2.83; explicit Euler needs damping to be stable at all, and the
# large-step solvers (backward Euler, projective dynamics, xpbd) are stable everywhere.
import math

import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, stability

plot.plot_stability(kind="region", zeta=0.1)
plt.show()

# %%
# One panel per integrator
# ------------------------
# :func:`msprings.stability.region_grid` gives the spectral radius on a grid; here it is shown
# in colour with the boundary radius = 1 in black.
fig, axes = plt.subplots(2, 4, figsize=(12, 6), sharex=True, sharey=True, layout="constrained")
for ax, name in zip(axes.flat, stability.INTEGRATORS):
    steps, zetas, radius = stability.region_grid(name, omega_h_max=4.0, zeta_max=2.0, n=121)
    image = ax.pcolormesh(steps, zetas, np.minimum(radius, 2.0), vmin=0.0, vmax=2.0, cmap="RdYlGn_r",
                          shading="auto")
    if radius.min() < 1.0 + 1e-9 < radius.max():
        ax.contour(steps, zetas, radius, levels=[1.0 + 1e-9], colors="black", linewidths=1.5)
    ax.set_title(name, fontsize="medium")
for ax in axes[-1]:
    ax.set_xlabel("ω h")
for ax in axes[:, 0]:
    ax.set_ylabel("damping ratio ζ")
axes.flat[-1].axis("off")
fig.colorbar(image, ax=axes, label="spectral radius of one step (clipped at 2)")
fig.suptitle("Stable where the radius is at most 1 (green); black: the boundary")
plt.show()

# %%
# The limits in numbers
# ---------------------
# :func:`msprings.stability.stability_limit` gives the largest stable ω h at a damping ratio.
for name in stability.INTEGRATORS:
    print(f"{name:17s} ζ = 0: ω h < {stability.stability_limit(name, 0.0):.4f}   "
          f"ζ = 0.5: ω h < {stability.stability_limit(name, 0.5):.4f}")

assert math.isclose(stability.stability_limit("symplectic_euler"), 2.0, rel_tol=1e-9)
assert math.isclose(stability.stability_limit("rk4"), 2.0 * math.sqrt(2.0), rel_tol=1e-9)
assert stability.stability_limit("implicit_euler") == math.inf
