"""
Measuring a spring's stiffness from its period
==============================================

The school experiment: hang masses from 50 g to 400 g on a lab spring (k = 10 N/m, 30 cm,
lightly damped, c = 0.01 N s/m), let each bounce and time its period.  Theory says
T = 2π √(m/k), so T² against m is a straight line of slope 4π²/k: fitting it gives back
the stiffness.  The mass bounces about its equilibrium m g / k below the rest length.
"""

# %%
# Bounce each mass for 5 s
# ------------------------
import matplotlib.pyplot as plt
import numpy as np

from msprings import scenes

masses = np.array([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4])  # kg
dt, steps = 1e-3, 5000  # s
periods = []
fig, (trace, line) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
for mass in masses:
    spring = scenes.lab_spring(mass=mass, integrator="rk4")
    run = spring.run(dt, steps)
    height = run.positions[:, 1, 1]  # m, the mass's height below the stand
    offset = height - height.mean()
    up = np.flatnonzero((offset[:-1] < 0) & (offset[1:] >= 0))
    crossings = run.times[up] + dt * -offset[up] / (offset[up + 1] - offset[up])  # interpolated (s)
    periods.append(np.diff(crossings).mean())
    if mass in (0.1, 0.4):
        trace.plot(run.times, 100 * height, label=f"m = {1000 * mass:.0f} g")
periods = np.array(periods)
trace.set_xlabel("time (s)")
trace.set_ylabel("height of the mass (cm)")
trace.set_title("bouncing on a 10 N/m spring")
trace.legend()
trace.grid(True, alpha=0.3)

# %%
# T² against m: a straight line
# -----------------------------
slope, intercept = np.polyfit(masses, periods**2, 1)
k_measured = 4 * np.pi**2 / slope
line.plot(1000 * masses, periods**2, "o", label="measured")
line.plot(1000 * masses, slope * masses + intercept, "-", label=f"fit: k = 4π² / slope = {k_measured:.3f} N/m")
line.set_xlabel("mass (g)")
line.set_ylabel("period² (s²)")
line.set_title("T² = (4π² / k) m")
line.legend()
line.grid(True, alpha=0.3)
plt.show()

# %%
# The fitted stiffness is the spring's, and the line goes through the origin (the spring is
# massless and its damping ratio, at most 0.005, changes the period by a few parts in 10⁵).
print(f"k from the periods: {k_measured:.4f} N/m, intercept {intercept:.2e} s²")
assert abs(k_measured - 10.0) < 1e-3 * 10.0 and abs(intercept) < 1e-3
