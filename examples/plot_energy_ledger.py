"""
The energy ledger of a bouncing jelly
=====================================

A 20 cm jelly cube of 5 × 5 × 5 nodes (ρ = 1000 kg/m³, so 8 kg; Young's modulus
E = 20 kPa; damping ratio 0.1) let go with its bottom 0.5 m above the ground (restitution 0,
friction 0.5).
:func:`msprings.plot.plot_energy` draws the ledger: kinetic, spring and gravitational
energy, what was dissipated and what work was done from outside, and their total
mechanical + dissipated − work (J), which RK4 at h = 0.5 ms keeps constant to a small
fraction of the energies involved.  The lower panel splits the dissipated energy and the
work by mechanism: the dampers, the contact with the ground, and the position corrections
of the contact (``constraints``).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, scenes

jelly = scenes.jelly_cube(5, size=0.2, density=1000.0, youngs_modulus=2e4, damping_ratio=0.1,
                          families=("structural", "shear"), integrator="rk4")
print(f"{jelly.n_nodes} nodes, {jelly.mass.sum():.1f} kg")
run = jelly.run(5e-4, 3000, record_every=20)  # 1.5 s
plot.plot_energy(run, breakdown=True)
plt.show()

# %%
# How well the ledger closes
# --------------------------
# The drift of the total, against the energy of the cube's fall, m g h with h = 0.5 m:
scale = jelly.mass.sum() * 9.81 * 0.5
drift = np.abs(run.total - run.total[0]).max()
print(f"drift of the total: {drift:.2e} J, {drift / scale:.1e} of m g h = {scale:.2f} J")
print("dissipated by mechanism (J):", {name: round(value, 3) for name, value in jelly.ledger()._asdict().items()
                                      if value != 0.0})
assert drift < 1e-3 * scale
