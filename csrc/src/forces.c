/* Force accumulation: springs with axial dampers, gravity, linear drag, external forces. */
#include <math.h>

#include "internal.h"

/* Below this squared length (m^2) a spring's direction is lost in rounding, so it exerts
   no force rather than a NaN or an arbitrary one. */
#define MS_MIN_LENGTH_SQUARED 1e-24

/* Springs.  With d = x_j - x_i, l = |d|, n = d / l, the force on i is
   [k (l - L) + c (v_j - v_i).n] n and the force on j is its opposite.  The damper removes
   c ((v_j - v_i).n)^2 watts.  rest, k and c are read with the given stride so the same
   loop serves the user's separate arrays and the step's interleaved sorted copy. */
static inline double spring_loop(const int32_t* restrict pairs, const double* restrict rest,
                                 const double* restrict k, const double* restrict c, int64_t stride, int64_t begin,
                                 int64_t end, const double* restrict x, const double* restrict v, double* restrict f) {
    double power = 0.0;
    for (int64_t s = begin; s < end; ++s) {
        const int64_t i = pairs[2 * s], j = pairs[2 * s + 1];
        const double* xi = x + 3 * i;
        const double* xj = x + 3 * j;
        const double* vi = v + 3 * i;
        const double* vj = v + 3 * j;
        const double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
        const double length2 = dx * dx + dy * dy + dz * dz;
        const double length = sqrt(length2);
        const double inv_length = length2 > MS_MIN_LENGTH_SQUARED ? 1.0 / length : 0.0;
        const double closing = ((vj[0] - vi[0]) * dx + (vj[1] - vi[1]) * dy + (vj[2] - vi[2]) * dz) * inv_length;
        const double damping = c[stride * s];
        const double magnitude = (k[stride * s] * (length - rest[stride * s]) + damping * closing) * inv_length;
        const double fx = magnitude * dx, fy = magnitude * dy, fz = magnitude * dz;
        double* fi = f + 3 * i;
        double* fj = f + 3 * j;
        fi[0] += fx;
        fi[1] += fy;
        fi[2] += fz;
        fj[0] -= fx;
        fj[1] -= fy;
        fj[2] -= fz;
        power += damping * closing * closing;
    }
    return power;
}

double ms_spring_forces(const int32_t* pairs, const double* params, int64_t begin, int64_t end, const double* x,
                        const double* v, double* f) {
    return spring_loop(pairs, params, params + 1, params + 2, 3, begin, end, x, v, f);
}

double ms_node_forces(const ms_model* m, const double* restrict x, const double* restrict v,
                      const double* restrict external, double t, int64_t begin, int64_t end, double* restrict f) {
    const double* restrict mass = m->mass;
    const uint8_t* restrict pinned = m->pinned;
    const double gx = m->opt.gravity[0], gy = m->opt.gravity[1], gz = m->opt.gravity[2];
    const double drag = m->opt.drag;
    double power = 0.0;
    /* f = m g + external - drag (v - wind).  Drag on a pinned node does no work (the node
       ignores forces), so only free nodes count towards the power.  Terms that are off are
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
        return 0.0;
    }
    for (int64_t i = begin; i < end; ++i) {
        const double* vi = v + 3 * i;
        double* fi = f + 3 * i;
        double relative[3] = {vi[0], vi[1], vi[2]};
        if (windy) {
            double wind[3];
            ms_wind(air, x + 3 * i, t, wind);
            relative[0] -= wind[0], relative[1] -= wind[1], relative[2] -= wind[2];
        }
        fi[0] = mass[i] * gx - drag * relative[0];
        fi[1] = mass[i] * gy - drag * relative[1];
        fi[2] = mass[i] * gz - drag * relative[2];
        if (external != NULL) {
            const double* ei = external + 3 * i;
            fi[0] += ei[0];
            fi[1] += ei[1];
            fi[2] += ei[2];
        }
        /* power taken out by drag: drag (v - wind).v */
        if (drag != 0.0 && !pinned[i])
            power += drag * (relative[0] * vi[0] + relative[1] * vi[1] + relative[2] * vi[2]);
    }
    return power;
}

/* Every force that is not a spring: the nodes' own forces and the air on the triangles. */
static double node_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                          double* f) {
    double power = ms_node_forces(m, x, v, external, t, 0, m->nnode, f);
    if (m->nface > 0) power += ms_face_forces(m, x, v, t, f);
    return power;
}

double ms_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                 double* f) {
    const double power = node_forces(m, x, v, external, t, f);
    return power + spring_loop(m->springs, m->rest, m->k, m->c, 1, 0, m->nspring, x, v, f);
}

double ms_step_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                      double* f) {
    const double power = node_forces(m, x, v, external, t, f);
    return power + ms_spring_forces(m->sorted_springs, m->sorted_params, 0, m->nspring, x, v, f);
}
