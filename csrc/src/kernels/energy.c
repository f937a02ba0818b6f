/* Energies of a state, the caller's changes between steps (ms_state_watch), momentum and
   the springs' lengths, strains and tensions. */
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels.h"

void ms_node_energy(const ms_model* m, const double* x, const double* v, int64_t begin, int64_t end, double* kinetic,
                    double* gravity) {
    const double* g = m->opt.gravity;
    double moving = 0.0, height = 0.0;
    for (int64_t i = begin; i < end; ++i) {
        if (m->pinned[i]) continue;
        const double* xi = x + 3 * i;
        const double* vi = v + 3 * i;
        moving += 0.5 * m->mass[i] * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        height -= m->mass[i] * (g[0] * xi[0] + g[1] * xi[1] + g[2] * xi[2]);
    }
    *kinetic = moving;
    *gravity = height;
}

/* The three mechanical energies of (x, v). */
static ms_energy mechanical(const ms_model* m, const double* x, const double* v) {
    ms_energy e = {0.0, 0.0, 0.0, 0.0, 0.0};
    ms_node_energy(m, x, v, 0, m->nnode, &e.kinetic, &e.gravity);
    for (int64_t k = 0; k < m->nspring; ++k) {
        const double* xi = x + 3 * m->springs[2 * k];
        const double* xj = x + 3 * m->springs[2 * k + 1];
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double stretch = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - m->rest[k];
        e.spring += 0.5 * m->k[k] * stretch * stretch;
    }
    return e;
}

double ms_mechanical_energy(const ms_model* m, const double* x, const double* v) {
    const ms_energy e = mechanical(m, x, v);
    return e.kinetic + e.spring + e.gravity;
}

void ms_state_accounts(const ms_model* m, const ms_state* s, ms_energy* energy, ms_ledger* ledger) {
    ms_energy e = mechanical(m, s->x, s->v);
    ms_ledger l = s->ledger;
    /* the caller's change since the state was watched, which the next step books */
    if (s->watched && s->steps > 0) l.user += (e.kinetic + e.spring + e.gravity) - s->watched_energy;
    e.dissipated = ms_ledger_dissipated(&l);
    e.work = ms_ledger_work(&l);
    if (energy != NULL) *energy = e;
    if (ledger != NULL) *ledger = l;
}

ms_energy ms_state_energy(const ms_model* m, const ms_state* s) {
    ms_energy e;
    ms_state_accounts(m, s, &e, NULL);
    return e;
}

ms_ledger ms_state_ledger(const ms_model* m, const ms_state* s) {
    ms_ledger l;
    ms_state_accounts(m, s, NULL, &l);
    return l;
}

void ms_state_watch(const ms_model* m, ms_state* s) {
    if (s->watched) return; /* the energy before the first change is the one to compare with */
    s->watched_energy = ms_mechanical_energy(m, s->x, s->v);
    s->watched = 1;
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
    /* The kernel's force on end i, projected on the unit vector from i to j. */
    for (int64_t k = 0; k < m->nspring; ++k) {
        const int64_t i = m->springs[2 * k], j = m->springs[2 * k + 1];
        const double* xi = s->x + 3 * i;
        const double* xj = s->x + 3 * j;
        double force[3];
        ms_spring_force(xi, xj, s->v + 3 * i, s->v + 3 * j, m->rest[k], m->k[k], m->c[k], force);
        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        out[k] = length > 1e-12 ? (force[0] * d[0] + force[1] * d[1] + force[2] * d[2]) / length : 0.0;
    }
}
