/* Force accumulation: springs with axial dampers, gravity, linear drag, external forces. */
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "internal.h"

/* Below this squared length (m^2) a spring's direction is lost in rounding, so it exerts
   no force rather than a NaN or an arbitrary one. */
#define MS_MIN_LENGTH_SQUARED 1e-24

/* A damper's power c u^2 is summed only for closing speeds |u| above this (m/s).  Below
   about 1.5e-154 m/s, u^2 is a subnormal number, which x86 processors handle many times
   slower than a normal one, and a cloth starting at rest has most of its springs there for
   its first steps.  What is left out is below c 1e-200 W per spring. */
#define MS_MIN_POWER_SPEED 1e-100

/* The closing speed that counts towards a damper's power. */
static inline double power_speed(double closing) {
    return fabs(closing) > MS_MIN_POWER_SPEED ? closing : 0.0;
}

/* Springs.  With d = x_j - x_i, l = |d|, n = d / l, the force on i is
   [k (l - L) + c (v_j - v_i).n] n and the force on j is its opposite.  The damper removes
   c ((v_j - v_i).n)^2 watts.  The springs are visited in the given order. */
static double spring_loop(const int32_t* restrict pairs, const double* restrict rest, const double* restrict k,
                          const double* restrict c, int64_t nspring, const double* restrict x,
                          const double* restrict v, double* restrict f) {
    double power = 0.0;
    for (int64_t s = 0; s < nspring; ++s) {
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
        const double damping = c[s];
        const double magnitude = (k[s] * (length - rest[s]) + damping * closing) * inv_length;
        const double fx = magnitude * dx, fy = magnitude * dy, fz = magnitude * dz;
        double* fi = f + 3 * i;
        double* fj = f + 3 * j;
        fi[0] += fx;
        fi[1] += fy;
        fi[2] += fz;
        fj[0] -= fx;
        fj[1] -= fy;
        fj[2] -= fz;
        power += damping * power_speed(closing) * power_speed(closing);
    }
    return power;
}

/* The step's loop over the node-sorted copy: pairs[2 s] is the lower node a of spring s and
   the springs of one a are consecutive.  Each group keeps a's position, velocity and force
   in registers and adds to f[a] once (no spring of the group touches a as its other end):
   that saves the store-to-load chain through f[a] between consecutive springs and the
   reloads of a's values.  Where SSE2 is available (every x86-64 processor) the springs of
   a group are taken two at a time, one per lane of a 128-bit register; a group's last odd
   spring, and every spring elsewhere, goes through the scalar body.  Both evaluate the same
   formula; only the order in which a's force is summed differs (by rounding).
   spring_group does springs [s, e) of node a and returns their dampers' power. */
static inline double spring_group(const int32_t* restrict pairs, const double* restrict params, int64_t s,
                                  int64_t e, int64_t a, const double* restrict x, const double* restrict v,
                                  double* restrict f) {
    double power = 0.0;
    const double xa = x[3 * a], ya = x[3 * a + 1], za = x[3 * a + 2];
    const double ua = v[3 * a], va = v[3 * a + 1], wa = v[3 * a + 2];
    double fxa = 0.0, fya = 0.0, fza = 0.0; /* the group's force on a */
#if defined(__SSE2__)
    if (e - s >= 2) {
        const __m128d pxa = _mm_set1_pd(xa), pya = _mm_set1_pd(ya), pza = _mm_set1_pd(za);
        const __m128d pua = _mm_set1_pd(ua), pva = _mm_set1_pd(va), pwa = _mm_set1_pd(wa);
        const __m128d min_length2 = _mm_set1_pd(MS_MIN_LENGTH_SQUARED), one = _mm_set1_pd(1.0);
        const __m128d min_speed = _mm_set1_pd(MS_MIN_POWER_SPEED);
        const __m128d magnitude_bits = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
        __m128d sum_x = _mm_setzero_pd(), sum_y = _mm_setzero_pd(), sum_z = _mm_setzero_pd();
        __m128d sum_power = _mm_setzero_pd();
        for (; s + 1 < e; s += 2) {
            const int64_t b0 = pairs[2 * s + 1], b1 = pairs[2 * s + 3];
            const double *x0 = x + 3 * b0, *x1 = x + 3 * b1, *v0 = v + 3 * b0, *v1 = v + 3 * b1;
            /* lanes: (spring s, spring s + 1) */
            const __m128d xy0 = _mm_loadu_pd(x0), xy1 = _mm_loadu_pd(x1);
            const __m128d dx = _mm_sub_pd(_mm_unpacklo_pd(xy0, xy1), pxa);
            const __m128d dy = _mm_sub_pd(_mm_unpackhi_pd(xy0, xy1), pya);
            const __m128d dz = _mm_sub_pd(_mm_loadh_pd(_mm_load_sd(x0 + 2), x1 + 2), pza);
            const __m128d uv0 = _mm_loadu_pd(v0), uv1 = _mm_loadu_pd(v1);
            const __m128d du = _mm_sub_pd(_mm_unpacklo_pd(uv0, uv1), pua);
            const __m128d dv = _mm_sub_pd(_mm_unpackhi_pd(uv0, uv1), pva);
            const __m128d dw = _mm_sub_pd(_mm_loadh_pd(_mm_load_sd(v0 + 2), v1 + 2), pwa);
            /* (rest, k, c) of both springs: six doubles, three loads */
            const double* p = params + 3 * s;
            const __m128d p01 = _mm_loadu_pd(p), p23 = _mm_loadu_pd(p + 2), p45 = _mm_loadu_pd(p + 4);
            const __m128d rest = _mm_shuffle_pd(p01, p23, 0x2);
            const __m128d stiffness = _mm_shuffle_pd(p01, p45, 0x1);
            const __m128d damping = _mm_shuffle_pd(p23, p45, 0x2);
            const __m128d length2 =
                _mm_add_pd(_mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy)), _mm_mul_pd(dz, dz));
            const __m128d length = _mm_sqrt_pd(length2);
            const __m128d inv_length = _mm_and_pd(_mm_cmpgt_pd(length2, min_length2), _mm_div_pd(one, length));
            const __m128d closing = _mm_mul_pd(
                _mm_add_pd(_mm_add_pd(_mm_mul_pd(du, dx), _mm_mul_pd(dv, dy)), _mm_mul_pd(dw, dz)), inv_length);
            const __m128d magnitude = _mm_mul_pd(
                _mm_add_pd(_mm_mul_pd(stiffness, _mm_sub_pd(length, rest)), _mm_mul_pd(damping, closing)),
                inv_length);
            const __m128d fx = _mm_mul_pd(magnitude, dx), fy = _mm_mul_pd(magnitude, dy);
            const __m128d fz = _mm_mul_pd(magnitude, dz);
            sum_x = _mm_add_pd(sum_x, fx);
            sum_y = _mm_add_pd(sum_y, fy);
            sum_z = _mm_add_pd(sum_z, fz);
            double* f0 = f + 3 * b0;
            double* f1 = f + 3 * b1; /* may be f0 (two springs between the same nodes): in turn */
            _mm_storeu_pd(f0, _mm_sub_pd(_mm_loadu_pd(f0), _mm_unpacklo_pd(fx, fy)));
            f0[2] -= _mm_cvtsd_f64(fz);
            _mm_storeu_pd(f1, _mm_sub_pd(_mm_loadu_pd(f1), _mm_unpackhi_pd(fx, fy)));
            f1[2] -= _mm_cvtsd_f64(_mm_unpackhi_pd(fz, fz));
            const __m128d counted =
                _mm_and_pd(_mm_cmpgt_pd(_mm_and_pd(closing, magnitude_bits), min_speed), closing);
            sum_power = _mm_add_pd(sum_power, _mm_mul_pd(_mm_mul_pd(damping, counted), counted));
        }
        fxa = _mm_cvtsd_f64(sum_x) + _mm_cvtsd_f64(_mm_unpackhi_pd(sum_x, sum_x));
        fya = _mm_cvtsd_f64(sum_y) + _mm_cvtsd_f64(_mm_unpackhi_pd(sum_y, sum_y));
        fza = _mm_cvtsd_f64(sum_z) + _mm_cvtsd_f64(_mm_unpackhi_pd(sum_z, sum_z));
        power = _mm_cvtsd_f64(sum_power) + _mm_cvtsd_f64(_mm_unpackhi_pd(sum_power, sum_power));
    }
#endif
    for (; s < e; ++s) {
        const int64_t b = pairs[2 * s + 1];
        const double* xb = x + 3 * b;
        const double* vb = v + 3 * b;
        const double* p = params + 3 * s;
        const double dx = xb[0] - xa, dy = xb[1] - ya, dz = xb[2] - za;
        const double length2 = dx * dx + dy * dy + dz * dz;
        const double length = sqrt(length2);
        const double inv_length = length2 > MS_MIN_LENGTH_SQUARED ? 1.0 / length : 0.0;
        const double closing = ((vb[0] - ua) * dx + (vb[1] - va) * dy + (vb[2] - wa) * dz) * inv_length;
        const double damping = p[2];
        const double magnitude = (p[1] * (length - p[0]) + damping * closing) * inv_length;
        const double fx = magnitude * dx, fy = magnitude * dy, fz = magnitude * dz;
        double* fb = f + 3 * b;
        fxa += fx;
        fya += fy;
        fza += fz;
        fb[0] -= fx;
        fb[1] -= fy;
        fb[2] -= fz;
        power += damping * power_speed(closing) * power_speed(closing);
    }
    double* fa = f + 3 * a;
    fa[0] += fxa;
    fa[1] += fya;
    fa[2] += fza;
    return power;
}

double ms_spring_forces(const int32_t* restrict pairs, const double* restrict params, int64_t begin, int64_t end,
                        const double* restrict x, const double* restrict v, double* restrict f) {
    double power = 0.0;
    int64_t s = begin;
    while (s < end) {
        const int64_t a = pairs[2 * s];
        int64_t e = s + 1;
        while (e < end && pairs[2 * e] == a) ++e;
        power += spring_group(pairs, params, s, e, a, x, v, f);
        s = e;
    }
    return power;
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
    return power + spring_loop(m->springs, m->rest, m->k, m->c, m->nspring, x, v, f);
}

double ms_step_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                      double* f) {
    const double power = node_forces(m, x, v, external, t, f);
    return power + ms_spring_forces(m->sorted_springs, m->sorted_params, 0, m->nspring, x, v, f);
}

double ms_state_forces(ms_model* m, ms_state* s) {
    ms_model_refresh_sorted(m);
    int active = 0; /* as ms_step decides it: a zero external force is not read */
    for (int64_t q = 0; s->external != NULL && q < 3 * m->nnode && !active; ++q) active = s->external[q] != 0.0;
    return ms_step_forces(m, s->x, s->v, active ? s->external : NULL, s->t, s->f);
}
