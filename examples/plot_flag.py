"""
A flag in gusty wind
====================

A 3 m × 2 m flag of 20 × 30 nodes pinned to a pole along one edge, in a 2 m/s wind with
gusts of 6 m/s amplitude.  The air pushes on every triangle with pressure drag
(½ ρ C_d A ‖u‖², C_d = 1) and lift (C_l = 0.2), ρ = 1.2 kg/m³ the air's density and u the
wind relative to the triangle.  The energy ledger says how much work the wind did on the
flag and how much its dampers and the air's drag took back.
"""

# %%
import matplotlib.pyplot as plt

from msprings import plot, scenes

flag = scenes.flag()
dt = 0.5 * flag.critical_dt()  # s
run = flag.run(dt, round(3.0 / dt), record_every=round(0.05 / dt))  # 3 s
plot.draw(flag, elev=15, azim=-70, title="flag after 3 s (springs coloured by strain)")
plt.show()

# %%
# Work by the wind and where it went
# ----------------------------------
fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
ax.plot(run.times, run.column("wind"), label="work done by the wind")
ax.plot(run.times, run.column("dampers"), label="dissipated by the dampers")
ax.plot(run.times, run.column("drag"), label="dissipated by the air's drag")
ax.plot(run.times, run.kinetic + run.spring, label="kinetic + spring energy")
ax.set_xlabel("time (s)")
ax.set_ylabel("energy (J)")
ax.set_title("Energy the flag took from the wind")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

# %%
# The wind does positive work on the flag.
print(f"work by the wind over 3 s: {flag.ledger().wind:.1f} J")
assert flag.ledger().wind > 0.0
