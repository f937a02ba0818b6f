/* The springs' tangent stiffness and the matrix products built from it (implicit Euler's
   matrix, the diagnostics' eigenvalues). */
#include <math.h>

#include "kernels/tangent.h"

void ms_spring_block(const ms_model* m, int64_t s, const double* xi, const double* xj, double* b, int clamp) {
    const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
    const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (length2 <= 1e-24) {
        b[0] = b[1] = b[2] = b[3] = b[4] = 0.0;
        return;
    }
    const double length = sqrt(length2);
    const double transverse_factor = 1.0 - m->rest[s] / length;
    const double k_transverse = transverse_factor > 0.0 || !clamp ? m->k[s] * transverse_factor : 0.0;
    b[0] = d[0] / length;
    b[1] = d[1] / length;
    b[2] = d[2] / length;
    b[3] = k_transverse;
    b[4] = m->k[s] - k_transverse;
}

void ms_spring_blocks(const ms_model* m, const double* MS_RESTRICT x, double* MS_RESTRICT blocks) {
    for (int64_t s = 0; s < m->nspring; ++s)
        ms_spring_block(m, s, x + 3 * (int64_t)m->springs[2 * s], x + 3 * (int64_t)m->springs[2 * s + 1],
                        blocks + MS_SPRING_BLOCK_DOUBLES * s, 1);
}

void ms_system_product(const ms_model* m, const double* MS_RESTRICT inv_mass, const double* MS_RESTRICT blocks,
                       double mass_scale, double damping_scale, double stiffness_scale, const double* MS_RESTRICT p,
                       double* MS_RESTRICT y) {
    const double node_scale = damping_scale * m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double diagonal = mass_scale * m->mass[i] + node_scale;
        for (int a = 0; a < 3; ++a) y[3 * i + a] = diagonal * p[3 * i + a];
    }
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        double value[3];
        ms_spring_product(m, blocks, s, damping_scale, stiffness_scale, p + 3 * i, p + 3 * j, value);
        for (int a = 0; a < 3; ++a) {
            y[3 * i + a] += value[a];
            y[3 * j + a] -= value[a];
        }
    }
    for (int64_t i = 0; i < m->nnode; ++i)
        if (inv_mass[i] == 0.0) y[3 * i] = y[3 * i + 1] = y[3 * i + 2] = 0.0;
}
