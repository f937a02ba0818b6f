"""
Growth per step and numerical damping
=====================================

How much does one step of each integrator amplify or shrink an oscillation?  For an
undamped spring (ζ = 0) an exact method would keep the energy: the spectral radius of its
amplification matrix would be exactly 1 for every step ω h.  This example plots the radius
against ω h (ω = √(k/m) in rad/s, h in s) and the energy factor per step, and checks
backward Euler's factor against its closed form 1 / (1 + ω²h²).
"""

# %%
# Spectral radius, undamped and damped
# ------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, stability

fig, (undamped, damped) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
plot.plot_stability(zeta=0.0, ax=undamped)
plot.plot_stability(zeta=0.5, ax=damped)
plt.show()

# %%
# Energy kept by one step
# -----------------------
# :func:`msprings.stability.energy_ratio_per_step` is the factor by which one step multiplies an
# undamped oscillator's energy.  Explicit Euler gains 1 + ω²h² every step; backward Euler
# loses what the energy ledger books as ``numerical`` dissipation.  Several curves coincide:
# symplectic Euler and velocity Verlet keep the energy factor at 1 (their radius is 1), and
# projective dynamics and xpbd on one spring step exactly as backward Euler does, so thinner
# lines are drawn over thicker ones.
STYLES = ["-", "-", "--", "-", "-", "--", ":"]
omega_h = np.linspace(0.0, 1.5, 301)
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for index, name in enumerate(stability.INTEGRATORS):
    ax.plot(omega_h, stability.energy_ratio_per_step(name, omega_h), label=name,
            linewidth=4.0 - 0.45 * index, linestyle=STYLES[index])
ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
ax.set_xlabel("ω h (dimensionless)")
ax.set_ylabel("energy after / before one step")
ax.set_ylim(0.3, 2.5)
ax.set_title("Energy factor per step of an undamped spring")
ax.legend(fontsize="small", ncols=2)
ax.grid(True, alpha=0.3)
plt.show()

# %%
# Check against the closed forms
# ------------------------------
implicit = stability.energy_ratio_per_step("implicit_euler", omega_h)
explicit = stability.energy_ratio_per_step("explicit_euler", omega_h)
assert np.allclose(implicit, 1.0 / (1.0 + omega_h**2), rtol=1e-12)
assert np.allclose(explicit, 1.0 + omega_h**2, rtol=1e-12)
