"""
Numerical period of an oscillator
=================================

Even a stable integrator does not oscillate at exactly the right frequency: symplectic
Euler's spring rings a little fast, backward Euler's a little slow.  This example plots the
ratio of the numerical period to the true period 2π/ω (ω = √(k/m) in rad/s) against the
step ω h, and checks symplectic Euler against its closed form: its eigenvalues turn by
θ = 2 arcsin(ω h / 2) per step, so the period ratio is ω h / θ.
"""

# %%
# Explicit Euler, backward Euler, projective dynamics and xpbd share one curve on a single
# spring (their eigenvalues turn by the same angle), and so do symplectic Euler and velocity
# Verlet: thinner lines are drawn over thicker ones.
import matplotlib.pyplot as plt
import numpy as np

from msprings import stability

omega_h = np.linspace(0.01, 1.9, 300)
STYLES = ["-", "-", "--", "-", "--", "-.", ":"]
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for index, name in enumerate(stability.INTEGRATORS):
    ratio = stability.numerical_period_ratio(name, omega_h)
    ax.plot(omega_h, ratio, label=name,
            linewidth=4.0 - 0.45 * index, linestyle=STYLES[index])
ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
ax.set_xlabel("ω h (dimensionless)")
ax.set_ylabel("numerical period / true period")
ax.set_ylim(0.5, 1.6)
ax.set_title("Period error of an undamped spring, per integrator")
ax.legend(fontsize="small", ncols=2)
ax.grid(True, alpha=0.3)
plt.show()

# %%
# At 20 steps per period (ω h = 2π/20 ≈ 0.31) the error of each method:
h = 2 * np.pi / 20
for name in stability.INTEGRATORS:
    print(f"{name:17s} period error {100 * (stability.numerical_period_ratio(name, h) - 1):+.3f} %")

closed_form = omega_h / (2 * np.arcsin(omega_h / 2))
assert np.allclose(stability.numerical_period_ratio("symplectic_euler", omega_h), closed_form, rtol=1e-9)
