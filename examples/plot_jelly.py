"""
A jelly cube dropped on the floor
=================================

A 30 cm cube of jelly (8 × 8 × 8 nodes, ρ = 1000 kg/m³, so 27 kg; Young's modulus
E = 50 kPa; damping ratio 0.5) dropped from 0.3 m onto the floor (restitution 0,
friction 0.5).  It squashes on impact, bounces a little and wobbles to rest.  The lattice
has structural and shear springs chosen so that it is an isotropic solid of Poisson's
ratio 1/4.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, scenes

jelly = scenes.jelly_cube(8, size=0.3, height=0.3, density=1000.0, youngs_modulus=5e4, damping_ratio=0.5,
                          families=("structural", "shear"))
dt = 0.5 * jelly.critical_dt()
run = jelly.run(dt, round(2.0 / dt), record_every=round(0.02 / dt))

# %%
# A film strip
# ------------
# The height of its lowest node tells when it lands; four frames around then.
lowest = run.positions[:, :, 1].min(axis=1)
landing = int(np.argmax(lowest < 1e-3))
fig = plt.figure(figsize=(13, 10), layout="constrained")
for index, record in enumerate((0, landing, landing + 3, len(run) - 1)):
    ax = fig.add_subplot(2, 2, index + 1, projection="3d")
    plot.draw(run.frame(record), ax=ax, elev=10, azim=-60, show_colliders=False, vmax=0.15)
plt.show()

# %%
# Height of the cube's centre of mass
# -----------------------------------
centre = (run.positions[:, :, 1] * jelly.mass).sum(axis=1) / jelly.mass.sum()
fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
ax.plot(run.times, 100 * centre)
ax.axhline(15.0, color="black", linestyle="--", linewidth=0.8, label="half the cube's height")
ax.set_xlabel("time (s)")
ax.set_ylabel("centre of mass height (cm)")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

# %%
# It comes to rest on the floor with its centre of mass a little below half its height: its
# own weight squeezes it.  A column of height H under its own weight, free to widen, has its
# centre of mass lowered by ρ g H² / (3 E) = 5.9 mm (its base, clamped by friction, widens less).
sag = 0.15 - centre[-1]
expected = 1000.0 * 9.81 * 0.3**2 / (3 * 5e4)
print(f"centre of mass lowered by {1e3 * sag:.2f} mm; ρ g H² / (3 E) = {1e3 * expected:.2f} mm")
assert abs(sag - expected) < 0.15 * expected
