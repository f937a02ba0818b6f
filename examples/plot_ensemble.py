"""
A hundred springs in one call
=============================

:class:`msprings.Ensemble` steps many systems of one topology together in C, each with its
own parameters.  Here 100 copies of a 1 kg mass hanging on a spring, each with its own
stiffness from 10 to 100 N/m, are let go at the spring's rest length and stepped for 4 s at
h = 1 ms.  Their measured periods follow T = 2π √(m/k).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

import msprings

spring = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], mass=1.0, k=10.0, pinned=[0])
ensemble = msprings.Ensemble.replicate(spring, 100)
stiffness = np.linspace(10.0, 100.0, 100)  # N/m
ensemble.k[:, 0] = stiffness

dt, steps = 1e-3, 4000
heights = np.empty((steps, 100))
for step in range(steps):  # one call per step to record the heights (each call steps all 100)
    ensemble.step(dt)
    heights[step] = ensemble.x[:, 1, 1]
times = dt * np.arange(1, steps + 1)

# %%
# Heights of a few members
# ------------------------
fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
for member in (0, 33, 99):
    ax.plot(times, heights[:, member], label=f"k = {stiffness[member]:.0f} N/m")
ax.set_xlabel("time (s)")
ax.set_ylabel("height of the mass (m)")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

# %%
# Period against stiffness
# ------------------------
# Each member's period is measured between its first and last upward crossings of its
# equilibrium height, −1 m − m g / k.
periods = np.empty(100)
for member in range(100):
    offset = heights[:, member] - (-1.0 - 9.81 / stiffness[member])
    up = np.flatnonzero((offset[:-1] < 0) & (offset[1:] >= 0))
    crossing = times[up] + dt * -offset[up] / (offset[up + 1] - offset[up])  # interpolated (s)
    periods[member] = (crossing[-1] - crossing[0]) / (len(crossing) - 1)
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
ax.plot(stiffness, periods, "o", markersize=3, label="measured (100 members)")
ax.plot(stiffness, 2 * np.pi * np.sqrt(1.0 / stiffness), label="2π √(m/k)")
ax.set_xlabel("stiffness k (N/m)")
ax.set_ylabel("period (s)")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

assert np.allclose(periods, 2 * np.pi * np.sqrt(1.0 / stiffness), rtol=1e-3)
