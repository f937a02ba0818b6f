"""
Fitting stiffnesses to a measured motion
========================================

Three beads hang on two springs from a pin; their motion over 0.6 s is "measured" (here
simulated with k = 30 and 45 N/m, c = 0.2 N s/m).  Starting from a wrong guess
(25 and 50 N/m), :class:`msprings.PositionFit` gives SciPy's ``least_squares`` the residuals
(simulated minus measured positions, m) and their exact Jacobian from forward-mode
derivatives of the run, and the fit recovers both stiffnesses.  Needs SciPy
(``pip install "msprings[solid]"``, or ``pip install scipy``).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import least_squares

import msprings

hanging = msprings.System([[0.0, 0.0, 0.0], [0.8, -0.5, 0.0], [1.5, -1.0, 0.2]], [[0, 1], [1, 2]],
                          k=[30.0, 45.0], c=0.2, pinned=[0], drag=0.05)
dt, steps, every = 1e-3, 600, 20  # s
measured = hanging.copy().run(dt, steps, record_every=every).positions

guess = hanging.copy()
guess.k[:] = [25.0, 50.0]
before = guess.copy().run(dt, steps, record_every=every).positions
fit = msprings.PositionFit(guess, dt, steps, measured, {"k": None}, record_every=every)
result = least_squares(fit.residuals, fit.initial, jac=fit.jacobian, bounds=(0.0, np.inf))
print(f"fitted k = {result.x.round(6)} N/m after {result.nfev} runs")

# %%
# The last bead's path, measured, guessed and fitted
# --------------------------------------------------
fitted_system = hanging.copy()
fitted_system.k[:] = result.x
after = fitted_system.run(dt, steps, record_every=every).positions
fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
ax.plot(measured[:, 2, 0], measured[:, 2, 1], "o", label="measured (k = 30, 45 N/m)")
ax.plot(before[:, 2, 0], before[:, 2, 1], "--", label="first guess (k = 25, 50 N/m)")
ax.plot(after[:, 2, 0], after[:, 2, 1], "-", label=f"fitted (k = {result.x[0]:.2f}, {result.x[1]:.2f} N/m)")
ax.set_xlabel("x (m)")
ax.set_ylabel("y (m)")
ax.set_title("Path of the lowest bead over 0.6 s")
ax.legend()
ax.grid(True, alpha=0.3)
plt.show()

assert np.allclose(result.x, [30.0, 45.0], rtol=1e-6)
