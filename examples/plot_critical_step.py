"""
The critical time step
======================

An explicit integrator is stable only below a critical step.  ``System.critical_dt()``
estimates it from the stiffest mode of the network (the largest ω = √λ_max(M⁻¹K), by Lanczos
iterations) and the integrator's limit on ω h.  Here a 20 × 20 cloth (25 m, k = 2500 N/m,
pinned at two corners) is stepped with symplectic Euler at 0.9 and 1.1 times that step:
the first swings calmly, while in the second the stiffest mode grows from round-off by a
constant factor every step (a straight line on the log scale): its kinetic energy passes
10¹² J within half a second, and near 3 s the numbers overflow and the step raises
:class:`msprings.DivergenceError`.
"""

# %%
# Run just below and just above the limit
# ---------------------------------------
# A run that blows up raises :class:`msprings.DivergenceError` and leaves the system as it was
# before that call, so the run is made of short calls and stops at the first one that fails.
import warnings

import matplotlib.pyplot as plt
import numpy as np
import msprings
from msprings import scenes

limit = scenes.cloth(20).critical_dt()
print(f"critical step of symplectic Euler: {limit * 1e3:.3f} ms")

fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
reached = {}
for factor in (0.9, 1.1):
    cloth = scenes.cloth(20)
    dt = factor * limit
    times, energies = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msprings.StabilityWarning)  # 1.1 × is over the limit on purpose
        try:
            while cloth.t < 4.0:
                cloth.step(dt, 4)
                times.append(cloth.t)
                energies.append(cloth.energy().kinetic)
        except msprings.DivergenceError:
            pass
    reached[factor] = cloth.t
    shown = np.where(np.array(energies) < 1e13, energies, np.nan)  # above 10¹³ J: off the chart
    line, = ax.plot(times, shown, label=f"h = {factor} × critical ({dt * 1e3:.2f} ms)")
    if cloth.t < 4.0:
        ax.axvline(cloth.t, color=line.get_color(), linestyle=":")
        ax.annotate(f"DivergenceError\nat t = {cloth.t:.2f} s", (cloth.t, 1e8), xytext=(-8, 0),
                    textcoords="offset points", ha="right", color=line.get_color())
ax.set_yscale("log")
ax.set_xlabel("time (s)")
ax.set_ylabel("kinetic energy (J)")
ax.set_ylim(1e0, 1e12)
ax.set_title("Symplectic Euler on a 20 × 20 cloth")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

# %%
# The run below the limit reaches 4 s; the one above it diverges before.
print(reached)
assert reached[0.9] >= 4.0 and reached[1.1] < 4.0
