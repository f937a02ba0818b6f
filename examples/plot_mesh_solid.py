"""
A rubber ball from a surface mesh
=================================

A closed triangle mesh (an icosphere of 320 triangles, radius 10 cm) filled with
tetrahedra becomes a solid: ``mesh.from_mesh(..., fill="tetrahedra")`` puts a node at every
vertex of the filling and a spring on every edge, with masses from the density
(ρ = 1100 kg/m³) and stiffnesses from Young's modulus (E = 2 MPa).  The built-in filling
needs SciPy (``pip install "msprings[solid]"``); without it this example converts the
surface alone, held by spokes to a centre node (``stabilise="center"``).  The ball is dropped
onto the ground (restitution 0.5) and drawn as it lands.
"""

# %%
import importlib.util

import matplotlib.pyplot as plt
import numpy as np

import msprings
from msprings import mesh, plot

surface = mesh.icosphere(2, radius=0.1, center=(0.0, 0.3, 0.0))
filled = importlib.util.find_spec("scipy") is not None
ball = mesh.from_mesh(surface.vertices, surface.faces, fill="tetrahedra" if filled else None,
                      stabilise=None if filled else "center",
                      density=1100.0, youngs_modulus=2e6, damping_ratio=0.1)  # kg/m³, Pa, dimensionless
assert isinstance(ball, msprings.System)
print(ball)
ball.add_plane(restitution=0.5)
dt = 0.5 * ball.critical_dt()
run = ball.run(dt, round(0.4 / dt), record_every=round(0.01 / dt))

# %%
# Falling, landing, bouncing
# --------------------------
lowest = run.positions[:, :, 1].min(axis=1)
landing = int(np.argmax(lowest < 1e-3))
fig = plt.figure(figsize=(14, 6), layout="constrained")
for index, record in enumerate((landing, landing + 2)):
    ax = fig.add_subplot(1, 2, index + 1, projection="3d")
    plot.draw(run.frame(record), ax=ax, elev=15, azim=-60, vmax=0.02)
plt.show()

# %%
# The ball's mass is ρ times the volume its tetrahedra fill: the volume the surface
# encloses (a little less than 4/3 π r³, the icosphere being a polyhedron inside the sphere).
volume = mesh.enclosed_volume(surface.vertices, surface.faces)
print(f"mass {ball.mass.sum() * 1e3:.1f} g, ρ V = {1100.0 * volume * 1e3:.1f} g")
assert abs(ball.mass.sum() - 1100.0 * volume) < 1e-9 * ball.mass.sum()
