"""
Recording a run and writing it out
==================================

``System.run`` records positions (and, if asked, velocities) into preallocated arrays, with
the energy and ledger columns at every record.  A :class:`msprings.Trajectory` saves to a
compressed ``.npz`` file and loads back bit for bit; with pandas it becomes a table, and with
meshio (``pip install "msprings[export]"``) ParaView's VTU series.  Here a 5 m chain of 11
beads (1 kg, 5000 N/m) swings down from level for 3 s.
"""

# %%
import importlib.util
import pathlib
import shutil
import tempfile

import matplotlib.pyplot as plt
import numpy as np

import msprings
from msprings import mesh, scenes

chain = scenes.chain(11, spacing=0.5)
run = chain.run(2e-4, 15000, record_every=100, velocities=True)  # 3 s, a record every 20 ms
folder = pathlib.Path(tempfile.mkdtemp())
path = run.save(folder / "chain.npz")
again = msprings.Trajectory.load(path)
print(f"{len(again)} records, {path.stat().st_size / 1024:.0f} KiB on disk")
if importlib.util.find_spec("pandas") is not None:
    print(again.to_dataframe()[["time", "kinetic", "spring", "gravity", "total"]].head())
if importlib.util.find_spec("meshio") is not None:
    mesh.export_vtu_series(folder / "paraview", again)
    print(sorted(p.name for p in (folder / "paraview").iterdir())[:3], "...")

# %%
# The loaded run: the free end's path and the speed of every bead
# ---------------------------------------------------------------
fig, (path_ax, speed_ax) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
path_ax.plot(again.positions[:, -1, 0], again.positions[:, -1, 1], color="tab:blue")
path_ax.plot(again.positions[-1, :, 0], again.positions[-1, :, 1], "o-", color="gray", label="chain at 3 s")
path_ax.set_xlabel("x (m)")
path_ax.set_ylabel("y (m)")
path_ax.set_title("path of the free end")
path_ax.set_aspect("equal")
path_ax.legend()
assert again.velocities is not None  # recorded with velocities=True
speed = np.linalg.norm(again.velocities, axis=2)
image = speed_ax.pcolormesh(again.times, np.arange(chain.n_nodes), speed.T, shading="auto", cmap="viridis")
fig.colorbar(image, ax=speed_ax, label="speed (m/s)")
speed_ax.set_xlabel("time (s)")
speed_ax.set_ylabel("bead (0 = pinned)")
speed_ax.set_title("speed of every bead")
plt.show()

# %%
# The file holds exactly what was recorded.
assert np.array_equal(again.positions, run.positions) and np.array_equal(again.total, run.total)
shutil.rmtree(folder)  # the files were for this example only
