/* Constraints applied after the integrator: strain limiting. */
#include <math.h>

#include "kernels/kernels.h"

void ms_limit_strain(const ms_model* m, const double* MS_RESTRICT inv_mass, double* MS_RESTRICT x,
                     double* MS_RESTRICT v, double h) {
    /* Provot (1995): a spring stretched beyond (1 + tau) L is shortened to exactly that
       length in one pass over the springs, each end moving in proportion to its inverse
       mass (a pinned end does not move; springs between two pinned nodes are left alone).
       The velocities of the moved nodes change by the displacement / h, so the correction
       does not come back as a stretching velocity in the next step. */
    const double limit_factor = 1.0 + m->opt.strain_limit;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const double w_i = inv_mass[i], w_j = inv_mass[j];
        const double w = w_i + w_j;
        const double limit = limit_factor * m->rest[s];
        if (w == 0.0) continue;
        double* xi = x + 3 * i;
        double* xj = x + 3 * j;
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (!(length > limit) || length <= 1e-12) continue;
        const double excess = (length - limit) / (length * w); /* per unit inverse mass, along d */
        for (int a = 0; a < 3; ++a) {
            const double move_i = w_i * excess * d[a], move_j = -w_j * excess * d[a];
            xi[a] += move_i;
            xj[a] += move_j;
            v[3 * i + a] += move_i / h;
            v[3 * j + a] += move_j / h;
        }
    }
}
