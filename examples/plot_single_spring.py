"""
A single damped spring
======================

A 100 g mass hangs on a spring of 10 N/m from a pinned node and is let go 5 cm below its
equilibrium. The spring's damper (c = 0.05 N s/m) makes the oscillation decay as
exp(-c t / 2m); the period is 2 pi sqrt(m / k) = 0.63 s.
"""
# %%
# The spring and one run: 4 s in steps of 1 ms, a record every 10 ms.
import matplotlib.pyplot as plt
import numpy as np

import msprings

mass, k, c = 0.1, 10.0, 0.05                 # kg, N/m, N s/m
rest = 0.3                                   # m
sag = mass * 9.81 / k                        # m: the equilibrium stretch
spring = msprings.System([[0, 0, 0], [0, -(rest + sag + 0.05), 0]], [[0, 1]],
                         mass=mass, k=k, c=c, rest=rest, pinned=[0])
run = spring.run(1e-3, 4000, record_every=10)   # 4 s, a record every 10 ms

height = run.positions[:, 1, 1] + rest + sag   # m, displacement from equilibrium
# %%
# The displacement from equilibrium against the damped oscillator's envelope.
envelope = 0.05 * np.exp(-c * run.times / (2 * mass))

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(run.times, 100 * height, label="msprings (symplectic Euler, h = 1 ms)")
ax.plot(run.times, 100 * envelope, "k--", lw=1, label="envelope 5 cm exp(-c t / 2m)")
ax.plot(run.times, -100 * envelope, "k--", lw=1)
ax.set_xlabel("time (s)")
ax.set_ylabel("displacement (cm)")
ax.set_title(f"period 2 pi sqrt(m/k) = {2 * np.pi * np.sqrt(mass / k):.3f} s")
ax.legend(loc="upper right")
fig.tight_layout()
plt.show()

# %%
# The period measured from the upward zero crossings agrees with the damped oscillator's
# 2 pi / sqrt(k/m - (c/2m)^2) to within a record's spacing.
up = np.flatnonzero((height[:-1] < 0) & (height[1:] >= 0))
crossings = run.times[up] - height[up] * (run.times[up + 1] - run.times[up]) / (height[up + 1] - height[up])
measured = np.mean(np.diff(crossings))
damped = 2 * np.pi / np.sqrt(k / mass - (c / (2 * mass)) ** 2)
print(f"period: measured {measured:.4f} s, closed form {damped:.4f} s")
assert abs(measured - damped) < 2e-3
