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

#if defined(MS_AVX2_CODE)
/* The positions (or velocities) of four consecutive nodes, p[0..11] = x0 y0 z0 x1 ..., as
   the vectors of their x, y and z components. */
MS_AVX2 static inline void load_nodes(const double* p, __m256d* x, __m256d* y, __m256d* z) {
    const __m256d a = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p)), _mm_loadu_pd(p + 6), 1);
    const __m256d b = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + 2)), _mm_loadu_pd(p + 8), 1);
    const __m256d c = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + 4)), _mm_loadu_pd(p + 10), 1);
    /* a = x0 y0 x2 y2, b = z0 x1 z2 x3, c = y1 z1 y3 z3 */
    *x = _mm256_shuffle_pd(a, b, 0xA);
    *y = _mm256_shuffle_pd(a, c, 0x5);
    *z = _mm256_shuffle_pd(b, c, 0xA);
}

/* p[0..11] (four consecutive nodes, as load_nodes) plus or minus the vectors x, y, z. */
MS_AVX2 static inline void add_nodes(double* p, __m256d x, __m256d y, __m256d z, int subtract) {
    const __m256d a = _mm256_unpacklo_pd(x, y);     /* x0 y0 x2 y2 */
    const __m256d b = _mm256_shuffle_pd(z, x, 0xA); /* z0 x1 z2 x3 */
    const __m256d c = _mm256_unpackhi_pd(y, z);     /* y1 z1 y3 z3 */
    const __m256d part0 = _mm256_permute2f128_pd(a, b, 0x20); /* x0 y0 z0 x1 */
    const __m256d part1 = _mm256_permute2f128_pd(c, a, 0x30); /* y1 z1 x2 y2 */
    const __m256d part2 = _mm256_permute2f128_pd(b, c, 0x31); /* z2 x3 y3 z3 */
    if (subtract) {
        _mm256_storeu_pd(p, _mm256_sub_pd(_mm256_loadu_pd(p), part0));
        _mm256_storeu_pd(p + 4, _mm256_sub_pd(_mm256_loadu_pd(p + 4), part1));
        _mm256_storeu_pd(p + 8, _mm256_sub_pd(_mm256_loadu_pd(p + 8), part2));
    } else {
        _mm256_storeu_pd(p, _mm256_add_pd(_mm256_loadu_pd(p), part0));
        _mm256_storeu_pd(p + 4, _mm256_add_pd(_mm256_loadu_pd(p + 4), part1));
        _mm256_storeu_pd(p + 8, _mm256_add_pd(_mm256_loadu_pd(p + 8), part2));
    }
}

/* A block (ms_model_sort_springs): nodes a..a+3 with k springs each, sorted springs
   [s, s + 4 k).  Spring j of the four nodes is one vector, one lane per node; each node's
   force is summed over j in a register and added to f once at the end, like a group's.
   The same formula as spring_group, term for term.  Returns the dampers' power. */
MS_AVX2 static double spring_block(const int32_t* restrict pairs, const double* restrict params, int64_t s,
                                   int64_t k, int64_t a, const double* restrict x, const double* restrict v,
                                   double* restrict f) {
    __m256d xa, ya, za, ua, va, wa;
    load_nodes(x + 3 * a, &xa, &ya, &za);
    load_nodes(v + 3 * a, &ua, &va, &wa);
    const __m256d min_length2 = _mm256_set1_pd(MS_MIN_LENGTH_SQUARED), one = _mm256_set1_pd(1.0);
    const __m256d min_speed = _mm256_set1_pd(MS_MIN_POWER_SPEED);
    const __m256d magnitude_bits = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d sum_x = _mm256_setzero_pd(), sum_y = _mm256_setzero_pd(), sum_z = _mm256_setzero_pd();
    __m256d sum_power = _mm256_setzero_pd();
    for (int64_t j = 0; j < k; ++j) {
        const int64_t r = s + MS_BLOCK_NODES * j;
        const int64_t b = pairs[2 * r + 1]; /* the first node's other end; the others follow it */
        __m256d xb, yb, zb, ub, vb, wb;
        load_nodes(x + 3 * b, &xb, &yb, &zb);
        load_nodes(v + 3 * b, &ub, &vb, &wb);
        const __m256d dx = _mm256_sub_pd(xb, xa), dy = _mm256_sub_pd(yb, ya), dz = _mm256_sub_pd(zb, za);
        const __m256d du = _mm256_sub_pd(ub, ua), dv = _mm256_sub_pd(vb, va), dw = _mm256_sub_pd(wb, wa);
        const double* p = params + 3 * r;
        const __m256d rest = _mm256_loadu_pd(p), stiffness = _mm256_loadu_pd(p + 4);
        const __m256d damping = _mm256_loadu_pd(p + 8);
        const __m256d length2 =
            _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)), _mm256_mul_pd(dz, dz));
        const __m256d length = _mm256_sqrt_pd(length2);
        const __m256d inv_length =
            _mm256_and_pd(_mm256_cmp_pd(length2, min_length2, _CMP_GT_OQ), _mm256_div_pd(one, length));
        const __m256d closing = _mm256_mul_pd(
            _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(du, dx), _mm256_mul_pd(dv, dy)), _mm256_mul_pd(dw, dz)),
            inv_length);
        const __m256d magnitude = _mm256_mul_pd(
            _mm256_add_pd(_mm256_mul_pd(stiffness, _mm256_sub_pd(length, rest)), _mm256_mul_pd(damping, closing)),
            inv_length);
        const __m256d fx = _mm256_mul_pd(magnitude, dx), fy = _mm256_mul_pd(magnitude, dy);
        const __m256d fz = _mm256_mul_pd(magnitude, dz);
        sum_x = _mm256_add_pd(sum_x, fx);
        sum_y = _mm256_add_pd(sum_y, fy);
        sum_z = _mm256_add_pd(sum_z, fz);
        add_nodes(f + 3 * b, fx, fy, fz, 1);
        const __m256d counted = _mm256_and_pd(
            _mm256_cmp_pd(_mm256_and_pd(closing, magnitude_bits), min_speed, _CMP_GT_OQ), closing);
        sum_power = _mm256_add_pd(sum_power, _mm256_mul_pd(_mm256_mul_pd(damping, counted), counted));
    }
    add_nodes(f + 3 * a, sum_x, sum_y, sum_z, 0);
    double lanes[4];
    _mm256_storeu_pd(lanes, sum_power);
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
#endif

int ms_avx2_supported(void) {
#if defined(MS_AVX2_CODE)
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

double ms_spring_forces(const ms_model* m, int64_t begin, int64_t end, const double* restrict x,
                        const double* restrict v, double* restrict f) {
    const int32_t* restrict pairs = m->sorted_springs;
    const double* restrict params = m->sorted_params;
    double power = 0.0;
    int64_t s = begin;
    while (s < end) {
        const int64_t a = pairs[2 * s];
#if defined(MS_AVX2_CODE)
        const int64_t k = m->spring_blocks[a];
        if (k > 0) {
            power += spring_block(pairs, params, s, k, a, x, v, f);
            s += MS_BLOCK_NODES * k;
            continue;
        }
#endif
        int64_t e = s + 1;
        while (e < end && pairs[2 * e] == a) ++e;
        power += spring_group(pairs, params, s, e, a, x, v, f);
        s = e;
    }
    return power;
}

void ms_node_forces(const ms_model* m, const double* restrict x, const double* restrict v,
                    const double* restrict external, double t, int64_t begin, int64_t end, double* restrict f,
                    ms_flow* flow) {
    const double* restrict mass = m->mass;
    const uint8_t* restrict pinned = m->pinned;
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

double ms_external_power(const ms_model* m, const double* restrict external, const double* restrict v) {
    double power = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i)
        if (!m->pinned[i])
            power += external[3 * i] * v[3 * i] + external[3 * i + 1] * v[3 * i + 1] + external[3 * i + 2] * v[3 * i + 2];
    return power;
}

double ms_pin_power(const ms_model* m, const double* restrict x, const double* restrict v,
                    const double* restrict external, double t, const double* restrict f, int64_t begin, int64_t end) {
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

/* Every force that is not a spring: the nodes' own forces and the air on the triangles. */
static void node_forces(const ms_model* m, const double* x, const double* v, const double* external, double t,
                        double* f, ms_flow* flow) {
    ms_node_forces(m, x, v, external, t, 0, m->nnode, f, flow);
    if (m->nface > 0) ms_face_forces(m, x, v, t, f, flow);
}

void ms_forces(const ms_model* m, const double* x, const double* v, const double* external, double t, double* f,
               ms_flow* flow) {
    ms_flow flows = {0.0, 0.0, 0.0, 0.0, 0.0};
    node_forces(m, x, v, external, t, f, &flows);
    flows.dampers = spring_loop(m->springs, m->rest, m->k, m->c, m->nspring, x, v, f);
    flows.pins = ms_pin_power(m, x, v, external, t, f, 0, m->nnode);
    if (flow != NULL) *flow = flows;
}

void ms_step_forces(const ms_model* m, const ms_state* s, const double* x, const double* v, double t, double* f,
                    ms_flow* flow) {
    const double* external = ms_active_external(s);
    ms_flow flows = {0.0, 0.0, 0.0, 0.0, 0.0};
    node_forces(m, x, v, external, t, f, &flows);
    flows.dampers = ms_spring_forces(m, 0, m->nspring, x, v, f);
    if (s->moving_pins) flows.pins = ms_pin_power(m, x, v, external, t, f, 0, m->nnode);
    *flow = flows;
}

void ms_state_forces(ms_model* m, ms_state* s, ms_flow* flow) {
    ms_model_refresh_sorted(m);
    ms_state_prepare(m, s); /* as ms_step decides what is active */
    ms_flow flows;
    ms_step_forces(m, s, s->x, s->v, s->t, s->f, &flows);
    if (flow != NULL) *flow = flows;
}
