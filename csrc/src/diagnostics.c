/* Diagnostics: energy ledger, momentum and per-spring measurements. */
#include <math.h>

#include "internal.h"

ms_energy ms_state_energy(const ms_model* m, const ms_state* s) {
    ms_energy e = {0.0, 0.0, 0.0, s->dissipated};
    const double* g = m->opt.gravity;
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (m->pinned[i]) continue;
        const double* x = s->x + 3 * i;
        const double* v = s->v + 3 * i;
        e.kinetic += 0.5 * m->mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        e.gravity -= m->mass[i] * (g[0] * x[0] + g[1] * x[1] + g[2] * x[2]);
    }
    for (int64_t k = 0; k < m->nspring; ++k) {
        const double* xi = s->x + 3 * m->springs[2 * k];
        const double* xj = s->x + 3 * m->springs[2 * k + 1];
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double stretch = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - m->rest[k];
        e.spring += 0.5 * m->k[k] * stretch * stretch;
    }
    return e;
}

void ms_state_momentum(const ms_model* m, const ms_state* s, double out[3]) {
    out[0] = out[1] = out[2] = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (m->pinned[i]) continue;
        for (int a = 0; a < 3; ++a) out[a] += m->mass[i] * s->v[3 * i + a];
    }
}

void ms_spring_lengths(const ms_model* m, const ms_state* s, double* out) {
    for (int64_t k = 0; k < m->nspring; ++k) {
        const double* xi = s->x + 3 * m->springs[2 * k];
        const double* xj = s->x + 3 * m->springs[2 * k + 1];
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        out[k] = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
}

void ms_spring_strain(const ms_model* m, const ms_state* s, double* out) {
    ms_spring_lengths(m, s, out);
    for (int64_t k = 0; k < m->nspring; ++k) {
        const double rest = m->rest[k];
        if (rest > 0.0)
            out[k] = (out[k] - rest) / rest;
        else
            out[k] = out[k] > 0.0 ? INFINITY : 0.0;
    }
}

void ms_spring_tension(const ms_model* m, const ms_state* s, double* out) {
    /* Same expression as the spring force in forces.c, as a signed magnitude. */
    for (int64_t k = 0; k < m->nspring; ++k) {
        const int64_t i = m->springs[2 * k], j = m->springs[2 * k + 1];
        const double* xi = s->x + 3 * i;
        const double* xj = s->x + 3 * j;
        const double* vi = s->v + 3 * i;
        const double* vj = s->v + 3 * j;
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        const double length = sqrt(length2);
        const double inv_length = length2 > 1e-24 ? 1.0 / length : 0.0;
        const double closing =
            ((vj[0] - vi[0]) * d[0] + (vj[1] - vi[1]) * d[1] + (vj[2] - vi[2]) * d[2]) * inv_length;
        out[k] = inv_length > 0.0 ? m->k[k] * (length - m->rest[k]) + m->c[k] * closing : 0.0;
    }
}
