"""
A tablecloth falling onto a round table
=======================================

A 1.6 m square tablecloth of 30 × 30 nodes (0.5 mm thick, 300 kg/m³, Young's modulus 2 MPa,
damping ratio 0.1) let go 10 cm above a round table of radius 0.5 m whose top is 0.75 m
above the floor.  It falls, drapes over the table and hangs down its sides; contact with
the table and the floor uses friction 0.3.  The table and floor are drawn as solids.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, scenes

table_top, radius = 0.75, 0.5  # m
cloth = scenes.tablecloth(30, size=1.6, height=0.1, table_radius=radius, table_height=table_top,
                          density=300.0, thickness=5e-4, youngs_modulus=2e6, damping_ratio=0.1)
dt = 0.5 * cloth.critical_dt()
run = cloth.run(dt, round(1.2 / dt), record_every=round(0.1 / dt))
print(f"h = {dt * 1e3:.3f} ms, {cloth.steps} steps")

# %%
# Before and after
# ----------------
fig = plt.figure(figsize=(14, 6), layout="constrained")
for index, record in enumerate((0, len(run) - 1)):
    ax = fig.add_subplot(1, 2, index + 1, projection="3d")
    plot.draw(run.frame(record), ax=ax, elev=25, azim=-55)
plt.show()

# %%
# Check: nothing sinks into the table
# -----------------------------------
# Every node above the table's top disc rests on it, not in it (to within the cloth's
# contact thickness).
x = cloth.x
over_table = np.hypot(x[:, 0], x[:, 2]) < radius - 0.02
print(f"lowest node over the table: {x[over_table, 1].min() - table_top:+.4f} m from its top")
assert x[over_table, 1].min() > table_top - 1e-3
