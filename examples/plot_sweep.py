"""
A parameter sweep: how fast does a damped spring settle?
========================================================

:func:`msprings.sweep` runs one system per point of a grid of parameters (here stiffness k
in N/m × damping ratio ζ) on this machine's cores and returns the results labelled by
parameter as an xarray ``Dataset``.  It needs the ``sweep`` extra
(``pip install "msprings[sweep]"``: Dask, xarray, pandas).  Each member is a 1 kg mass on a
spring, pulled 10 cm and let go without gravity; the measure is its mechanical energy (J)
every 10 ms.  The time for the energy to fall to 1 % of its start is about
ln(100) / (2 ζ ω) for light damping (ω = √(k/m)): shorter for stiffer and more damped springs.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

import msprings
from msprings import scenes

stiffness = [20.0, 40.0, 80.0, 160.0]  # N/m
ratios = [0.05, 0.1, 0.2, 0.4]  # dimensionless


def damped_spring(k: float, zeta: float) -> msprings.System:
    spring = scenes.single_spring(k=k, c=0.0, stretch=0.1, gravity=(0.0, 0.0, 0.0))
    spring.c[:] = spring.damping_for_ratio(zeta)
    return spring


results = msprings.sweep(damped_spring, {"k": stiffness, "zeta": ratios}, 1e-3, 12000, record_every=10,
                         measure=lambda s: {"energy": s.energy().mechanical}, positions=False)
print(results)

# %%
# Energy against time for one stiffness, and the settling time over the grid
# --------------------------------------------------------------------------
fig, (runs, grid) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
for zeta in ratios:
    energy = results.energy.sel(k=20.0, zeta=zeta)
    runs.semilogy(energy.time, energy, label=f"ζ = {zeta:g}")
runs.set_xlabel("time (s)")
runs.set_ylabel("mechanical energy (J)")
runs.set_title("k = 20 N/m")
runs.set_ylim(1e-8, 0.2)
runs.legend()
runs.grid(True, alpha=0.3)

energy = results.energy.values  # (k, zeta, time)
below = energy < 0.01 * energy[:, :, :1]
settling = np.where(below.any(axis=2), results.time.values[np.argmax(below, axis=2)], np.nan)
zeta_line = np.linspace(ratios[0], ratios[-1], 100)
for row, k in enumerate(stiffness):
    line, = grid.plot(ratios, settling[row], "o-", label=f"k = {k:g} N/m")
    grid.plot(zeta_line, np.log(100) / (2 * zeta_line * np.sqrt(k)), "--", color=line.get_color(), linewidth=0.8)
grid.plot([], [], "k--", linewidth=0.8, label="ln(100) / (2 ζ ω)")
grid.set_xlabel("damping ratio ζ")
grid.set_ylabel("time to lose 99 % of the energy (s)")
grid.legend(fontsize="small")
grid.grid(True, alpha=0.3)
plt.show()

# %%
# For light damping the settling time follows ln(100) / (2 ζ ω) within the half period by
# which the energy's ripple can cross the 1 % line early.
t = float(settling[0, 1])  # k = 20 N/m, ζ = 0.1
estimate = np.log(100) / (2 * 0.1 * np.sqrt(20.0))
print(f"k = 20 N/m, ζ = 0.1: {t:.2f} s, estimate {estimate:.2f} s")
assert not bool(results.diverged.any())
assert abs(t - estimate) < 0.5 * 2 * np.pi / np.sqrt(20.0)
