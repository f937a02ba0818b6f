"""
Underdamped, critically damped, overdamped
==========================================

A 1 kg mass on a 20 N/m spring (ω₀ = √(k/m) = 4.47 rad/s, period 1.40 s), pulled 10 cm
and let go, for four damping ratios ζ = c / (2√(k m)).  Below ζ = 1 it rings with a
decaying amplitude, at ζ = 1 it returns fastest without overshoot, above it creeps back.
The runs use RK4 at h = 1 ms and agree with the closed-form solutions to a few nanometres.
"""

# %%
# Four springs, one damping ratio each
# ------------------------------------
# ``System.damping_for_ratio`` turns a damping ratio into the damper coefficient c (N s/m)
# of each spring.  Gravity is off: the spring lies along x.
import matplotlib.pyplot as plt
import numpy as np

from msprings import scenes

k, m, stretch = 20.0, 1.0, 0.1  # N/m, kg, m
omega = np.sqrt(k / m)
ratios = [0.05, 0.25, 1.0, 2.0]
dt, steps, every = 1e-3, 5000, 10  # s, 5 s of motion, a record every 10 ms


def closed_form(t: np.ndarray, zeta: float) -> np.ndarray:
    """Displacement (m) of the damped oscillator let go at rest from ``stretch``."""
    if zeta < 1.0:
        wd = omega * np.sqrt(1.0 - zeta**2)
        return stretch * np.exp(-zeta * omega * t) * (np.cos(wd * t) + zeta * omega / wd * np.sin(wd * t))
    if zeta == 1.0:
        return stretch * (1.0 + omega * t) * np.exp(-omega * t)
    root = omega * np.sqrt(zeta**2 - 1.0)
    fast, slow = -zeta * omega - root, -zeta * omega + root
    return stretch * (fast * np.exp(slow * t) - slow * np.exp(fast * t)) / (fast - slow)


fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
largest_error = 0.0
for zeta in ratios:
    spring = scenes.single_spring(k=k, mass=m, c=0.0, stretch=stretch, gravity=(0.0, 0.0, 0.0),
                                  integrator="rk4")
    spring.c[:] = spring.damping_for_ratio(zeta)
    run = spring.run(dt, steps, record_every=every)
    displacement = run.positions[:, 1, 0] - 1.0  # m, from the rest length of 1 m
    ax.plot(run.times, 100 * displacement, label=f"ζ = {zeta:g} (c = {spring.c[0]:.2f} N s/m)")
    largest_error = max(largest_error, float(np.abs(displacement - closed_form(run.times, zeta)).max()))
ax.axhline(0.0, color="black", linewidth=0.8)
ax.set_xlabel("time (s)")
ax.set_ylabel("displacement (cm)")
ax.set_title("A 1 kg mass on 20 N/m let go 10 cm from rest")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

# %%
# Agreement with the closed forms
# -------------------------------
print(f"largest difference from the closed forms: {largest_error * 1e9:.2f} nm")
assert largest_error < 1e-5
