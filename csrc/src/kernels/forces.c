/* The forces other than the springs' (gravity, linear drag relative to the wind, external
   forces, the pins' power) and ms_forces, the plain evaluation of every force. */
#include <math.h>

#include "kernels/kernels.h"

void ms_node_forces(const ms_model* m, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                    const double* MS_RESTRICT external, double t, int64_t begin, int64_t end, double* MS_RESTRICT f,
                    ms_flow* flow) {
    const double* MS_RESTRICT mass = m->mass;
    const uint8_t* MS_RESTRICT pinned = m->pinned;
    const double gx = m->opt.gravity[0], gy = m->opt.gravity[1], gz = m->opt.gravity[2];
    const double drag = m->opt.drag;
    /* f = m g + external - drag (v - wind).  Forces on a pinned node do no work (the node
       ignores them), so only free nodes count towards the flows.  Terms that are off are
       not read at all: this loop is a good part of a step's memory traffic on a large
       system. */
    const ms_air* air = &m->opt.air;
    const int windy = drag != 0.0 && ms_air_has_wind(air);
    if (external == NULL && drag == 0.0) {
        for (int64_t i = begin; i < end; ++i) {
            double* fi = f + 3 * i;
            fi[0] = mass[i] * gx;
            fi[1] = mass[i] * gy;
            fi[2] = mass[i] * gz;
        }
        return;
    }
    double dissipated = 0.0, wind_power = 0.0, external_power = 0.0;
    for (int64_t i = begin; i < end; ++i) {
        const double* vi = v + 3 * i;
        double* fi = f + 3 * i;
        double wind[3] = {0.0, 0.0, 0.0};
        if (windy) ms_wind(air, x + 3 * i, t, wind);
        const double relative[3] = {vi[0] - wind[0], vi[1] - wind[1], vi[2] - wind[2]};
        fi[0] = mass[i] * gx - drag * relative[0];
        fi[1] = mass[i] * gy - drag * relative[1];
        fi[2] = mass[i] * gz - drag * relative[2];
        if (external != NULL) {
            const double* ei = external + 3 * i;
            fi[0] += ei[0];
            fi[1] += ei[1];
            fi[2] += ei[2];
            if (!pinned[i]) external_power += ei[0] * vi[0] + ei[1] * vi[1] + ei[2] * vi[2];
        }
        /* The drag's power on the node, -b (v - w).v, splits as
             -b |v - w|^2        (dissipated: the node moving through the air, >= 0 removed)
             -b (v - w).w        (the wind's work: the air carrying the node along). */
        if (drag != 0.0 && !pinned[i]) {
            dissipated += drag * (relative[0] * relative[0] + relative[1] * relative[1] + relative[2] * relative[2]);
            if (windy) wind_power -= drag * (relative[0] * wind[0] + relative[1] * wind[1] + relative[2] * wind[2]);
        }
    }
    if (flow != NULL) {
        flow->drag += dissipated;
        flow->wind += wind_power;
        flow->external += external_power;
    }
}

double ms_external_power(const ms_model* m, const double* MS_RESTRICT external, const double* MS_RESTRICT v,
                         int64_t begin, int64_t end) {
    double power = 0.0;
    for (int64_t i = begin; i < end; ++i)
        if (!m->pinned[i])
            power += external[3 * i] * v[3 * i] + external[3 * i + 1] * v[3 * i + 1] + external[3 * i + 2] * v[3 * i + 2];
    return power;
}

double ms_pin_power(const ms_model* m, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                    const double* MS_RESTRICT external, double t, const double* MS_RESTRICT f, int64_t begin,
                    int64_t end) {
    /* A pinned node p moving with v_p stretches its springs: they gain -f_p.v_p from it,
       where f_p is the force of its springs (and its share of the air on its triangles)
       on it.  That is f minus the node's own forces, which the node ignores. */
    const double* g = m->opt.gravity;
    const double drag = m->opt.drag;
    const int windy = drag != 0.0 && ms_air_has_wind(&m->opt.air);
    double power = 0.0;
    for (int64_t i = begin; i < end; ++i) {
        if (!m->pinned[i]) continue;
        const double* vi = v + 3 * i;
        if (vi[0] == 0.0 && vi[1] == 0.0 && vi[2] == 0.0) continue;
        double wind[3] = {0.0, 0.0, 0.0};
        if (windy) ms_wind(&m->opt.air, x + 3 * i, t, wind);
        for (int a = 0; a < 3; ++a) {
            double own = m->mass[i] * g[a];
            if (drag != 0.0) own -= drag * (vi[a] - wind[a]);
            if (external != NULL) own += external[3 * i + a];
            power -= (f[3 * i + a] - own) * vi[a];
        }
    }
    return power;
}

void ms_forces(const ms_model* m, const double* x, const double* v, const double* external, double t, double* f,
               ms_flow* flow) {
    ms_flow flows = {0.0, 0.0, 0.0, 0.0, 0.0};
    ms_node_forces(m, x, v, external, t, 0, m->nnode, f, &flows);
    if (m->nface > 0) ms_face_forces(m, x, v, t, f, &flows);
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        double force[3];
        flows.dampers += ms_spring_force(x + 3 * i, x + 3 * j, v + 3 * i, v + 3 * j, m->rest[s], m->k[s], m->c[s], force);
        for (int a = 0; a < 3; ++a) {
            f[3 * i + a] += force[a];
            f[3 * j + a] -= force[a];
        }
    }
    flows.pins = ms_pin_power(m, x, v, external, t, f, 0, m->nnode);
    if (flow != NULL) *flow = flows;
}
