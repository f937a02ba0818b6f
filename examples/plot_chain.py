"""
A chain hanging between two posts
=================================

Eleven 1 kg beads, 1 m apart, joined by stiff springs (k = 5000 N/m, c = 5 N s/m) and pinned
at both ends, sag under gravity (g = 9.81 m/s²) until the springs hold them.  At rest the two
end springs must carry the weight of the nine free beads between them, 9 × 1 kg × 9.81 m/s²
= 88.3 N, and the sag follows a catenary.
"""

# %%
# Build and settle the chain
# --------------------------
# ``scenes.chain(anchor="both")`` lays the beads along x and pins the first and the last.
# Backward Euler at a large step (50 ms) removes the swinging quickly, so the chain settles
# in a few hundred steps.
import matplotlib.pyplot as plt
import numpy as np

from msprings import plot, scenes

chain = scenes.chain(11, anchor="both")
chain.integrator = "implicit_euler"
chain.step(0.05, 400)  # 20 s of simulated time
print(f"sag at the middle: {-chain.x[5, 1]:.3f} m")

# %%
# The chain at rest, springs coloured by tension
# ----------------------------------------------
plot.draw(chain, color_by="tension", elev=5, azim=-90, title="chain at rest (tension in N)")
plt.show()

# %%
# Tension along the chain
# -----------------------
# Each spring's axial force k (l − L) + c (v_j − v_i)·n (N).  It is largest at the posts,
# where the chain is steepest, and smallest at the bottom.
tension = chain.tension()
middle = 0.5 * (chain.x[chain.springs[:, 0]] + chain.x[chain.springs[:, 1]])
fig, (shape, force) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
shape.plot(chain.x[:, 0], chain.x[:, 1], "o-", color="tab:blue")
shape.set_ylabel("height y (m)")
shape.set_title("shape of the chain")
shape.grid(True, alpha=0.3)
force.bar(middle[:, 0], tension, width=0.6, color="tab:orange")
force.set_xlabel("position along the chain x (m)")
force.set_ylabel("spring tension (N)")
force.set_title("tension of each spring")
force.set_ylim(100, 135)
plt.show()

# %%
# Check: the posts carry the weight
# ---------------------------------
# The vertical components of the two end springs' tensions add up to the weight of the free
# beads.
weight = chain.mass[~chain.pinned].sum() * 9.81
direction = chain.x[chain.springs[:, 1]] - chain.x[chain.springs[:, 0]]
direction /= np.linalg.norm(direction, axis=1)[:, None]
lifted = tension[0] * -direction[0, 1] + tension[-1] * direction[-1, 1]
print(f"weight {weight:.3f} N, carried by the posts {lifted:.3f} N")
assert abs(lifted - weight) < 1e-3 * weight
