"""
Every integrator on one chain
=============================

The references' soft chain: eleven 1 kg beads on 20 N/m springs (c = 0.3 N s/m), pinned at
one end and let go level, stepped by every integrator at the same large step h = 0.2 s for
40 s.  :func:`msprings.plot.compare_integrators` draws the total energy
(mechanical + dissipated − work, J) of each run on one scale: for an exact integrator it
would stay constant.
"""

# %%
import warnings

import matplotlib.pyplot as plt

import msprings
from msprings import plot, scenes


def soft_chain() -> msprings.System:
    return scenes.chain(11, k=20.0, c=0.3)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", msprings.StabilityWarning)  # h = 0.2 s is beyond the explicit limits
    plot.compare_integrators(soft_chain, 0.2, 200)
plt.show()

# %%
# Implicit Euler, projective dynamics and xpbd stay flat: what they remove by themselves is
# booked in the energy ledger as ``numerical`` dissipation, so the total stays constant to
# rounding even at this step.  Symplectic Euler swings, velocity Verlet and RK4 lose
# energy, and explicit Euler leaves the scale within a second.
chain = soft_chain()
chain.integrator = "implicit_euler"
chain.step(0.2, 200)
energy = chain.energy()
print(f"implicit Euler after 40 s: total {energy.total:.2e} J, numerical dissipation "
      f"{chain.ledger().numerical:.1f} J")
assert abs(energy.total) < 1e-6 * chain.ledger().numerical
