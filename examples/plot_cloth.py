"""
A cloth hanging from two corners
================================

A square cloth of 20 × 20 nodes 5 cm apart (0.95 m a side) made of a membrane 0.5 mm
thick, of density 300 kg/m³ (so 0.135 kg in all) and Young's modulus 2 MPa, damping ratio 0.2, pinned at two
corners and let go level.  Material values instead of per-node masses and per-spring
stiffnesses make the cloth behave alike at any resolution.  It is stepped with symplectic
Euler at half its critical step and drawn at two moments.
"""

# %%
import matplotlib.pyplot as plt

from msprings import plot, scenes

cloth = scenes.cloth(20, size=1.0, density=300.0, thickness=5e-4, youngs_modulus=2e6, damping_ratio=0.2,
                     families=("structural", "shear"), pin="corners")
dt = 0.5 * cloth.critical_dt()
print(f"{cloth.n_nodes} nodes, {cloth.n_springs} springs, {cloth.mass.sum():.3f} kg, h = {dt * 1e3:.3f} ms")
run = cloth.run(dt, round(1.5 / dt), record_every=round(0.05 / dt))

# %%
# Two moments of the fall, coloured by strain on one scale
# ----------------------------------------------------------
fig = plt.figure(figsize=(15, 6), layout="constrained")
for index, seconds in enumerate((0.3, 1.5)):
    record = round(seconds / (run.times[1] - run.times[0]))
    ax = fig.add_subplot(1, 2, index + 1, projection="3d")
    plot.draw(run.frame(min(record, len(run) - 1)), ax=ax, elev=20, azim=-60, vmax=0.03)
plt.show()

# %%
# The cloth weighs ρ t A = 300 kg/m³ × 0.5 mm × (0.95 m)² = 0.135 kg, whatever its
# resolution.
side = run.positions[0, :, 0].max() - run.positions[0, :, 0].min()
assert abs(cloth.mass.sum() - 300.0 * 5e-4 * side**2) < 1e-12
