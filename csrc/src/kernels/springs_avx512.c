/* The batched ensemble kernel (batch.h) on AVX-512 F (x86-64 processors that have it, with an
 * operating system that saves its registers; chosen at run time, see ms_batch_path).
 *
 * A group's eight lanes fill one 512-bit vector, so every row of a group (batch.h) is one
 * vector.  Two groups of one integrator are stepped together, each operation done on the
 * one and then the other: two independent chains of operations (a square root, a division,
 * the update, the next step's forces) that the processor overlaps, as the four-lane
 * kernel overlaps a group's two vectors.  Every value gets the operations batch_kernel.h
 * gives it, in its order, each one IEEE operation per lane (the spring's force is
 * spring_formula.h's, shared with every path), so a lane gives its member's bits.
 */
#include "kernels/batch.h"
#if defined(MS_AVX512_PATH)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx512f")
#endif /* MSVC: setup.py compiles this file alone with /arch:AVX512 */
#include <immintrin.h>
#include <stddef.h>

#include "kernels/spring_formula.h"

_Static_assert(MS_BATCH_WIDTH == 8, "a group is one vector of eight lanes");

typedef __m512d v8;
static inline v8 v8_set(double a) { return _mm512_set1_pd(a); }
static inline v8 v8_load(const double* p) { return _mm512_loadu_pd(p); }
static inline void v8_store(double* p, v8 a) { _mm512_storeu_pd(p, a); }
static inline v8 v8_add(v8 a, v8 b) { return _mm512_add_pd(a, b); }
static inline v8 v8_sub(v8 a, v8 b) { return _mm512_sub_pd(a, b); }
static inline v8 v8_mul(v8 a, v8 b) { return _mm512_mul_pd(a, b); }
static inline v8 v8_div(v8 a, v8 b) { return _mm512_div_pd(a, b); }
static inline v8 v8_sqrt(v8 a) { return _mm512_sqrt_pd(a); }
/* a > b ? c : +0, lane by lane (as the other paths' and with the comparison's mask) */
static inline v8 v8_if_greater(v8 a, v8 b, v8 c) {
    return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(a, b, _CMP_GT_OQ), c);
}
static inline v8 v8_abs(v8 a) { return _mm512_abs_pd(a); }

enum { W = MS_BATCH_WIDTH };

/* The groups stepped together: G of them (1 or 2, a constant once inlined), group u's arrays
   at group 0's plus u * stride doubles (the groups lie one after the other in one block). */
typedef struct pack {
    ms_batch_lanes* lanes; /* groups[0 .. G) */
    ptrdiff_t stride;
} pack;

/* A spring's length and inverse length into the first two rows of its force buffer (o: its
   place in the program). */
MS_ALWAYS_INLINE void lengths8(const ms_batch_spring* sp, const double* MS_RESTRICT x, double* force, ptrdiff_t stride,
                               int G, int64_t o) {
    for (int u = 0; u < G; ++u) {
        const double* xa = x + u * stride + sp->row_a;
        const double* xb = x + u * stride + sp->row_b;
        const v8 dx = v8_sub(v8_load(xb), v8_load(xa));
        const v8 dy = v8_sub(v8_load(xb + W), v8_load(xa + W));
        const v8 dz = v8_sub(v8_load(xb + 2 * W), v8_load(xa + 2 * W));
        v8 length, inv_length;
        SPRING_LENGTH(v8, dx, dy, dz, length, inv_length);
        double* into = force + u * stride + 3 * W * o;
        v8_store(into, length);
        v8_store(into + W, inv_length);
    }
}

/* The rest of its force, from them, into the buffer; its damper power to its accumulator
   (power[2 slot + u]). */
MS_ALWAYS_INLINE void force8(const ms_batch_spring* sp, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                             const double* MS_RESTRICT params, double* force, ptrdiff_t stride, int G, int64_t o,
                             v8* power) {
    for (int u = 0; u < G; ++u) {
        const ptrdiff_t at = u * stride;
        const double* xa = x + at + sp->row_a;
        const double* xb = x + at + sp->row_b;
        const double* va = v + at + sp->row_a;
        const double* vb = v + at + sp->row_b;
        const double* p = params + at + sp->row_params;
        double* into = force + at + 3 * W * o;
        /* the accumulator taken into a register and put back by a switch on its slot: the
           accumulators stay in registers, where power[2 slot + u] would keep them in memory */
        v8 fx, fy, fz, pw;
        switch (sp->slot) {
        case 0: pw = power[u]; break;
        case 1: pw = power[2 + u]; break;
        case 2: pw = power[4 + u]; break;
        case 3: pw = power[6 + u]; break;
        default: pw = power[8 + u]; break;
        }
        const v8 dx = v8_sub(v8_load(xb), v8_load(xa));
        const v8 dy = v8_sub(v8_load(xb + W), v8_load(xa + W));
        const v8 dz = v8_sub(v8_load(xb + 2 * W), v8_load(xa + 2 * W));
        const v8 du = v8_sub(v8_load(vb), v8_load(va));
        const v8 dv = v8_sub(v8_load(vb + W), v8_load(va + W));
        const v8 dw = v8_sub(v8_load(vb + 2 * W), v8_load(va + 2 * W));
        const v8 length = v8_load(into), inv_length = v8_load(into + W);
        SPRING_FORCE_AT(v8, dx, dy, dz, du, dv, dw, length, inv_length, v8_load(p), v8_load(p + W), v8_load(p + 2 * W),
                        fx, fy, fz, pw, (v8*)NULL);
        switch (sp->slot) {
        case 0: power[u] = pw; break;
        case 1: power[2 + u] = pw; break;
        case 2: power[4 + u] = pw; break;
        case 3: power[6 + u] = pw; break;
        default: power[8 + u] = pw; break;
        }
        v8_store(into, fx);
        v8_store(into + W, fy);
        v8_store(into + 2 * W, fz);
    }
}

/* Node i of each group: its force from m g and the spring forces its shape names (or its
   terms first .. last), and its update; checked[u] receives (x' - x') + ... of group u. */
MS_ALWAYS_INLINE void node8(const ms_batch_shape* shape, const ms_batch_term* first, const ms_batch_term* last,
                            const pack* k, int G, int64_t i, v8 step, int explicit_euler, v8 checked[2]) {
    const ms_batch_lanes* lanes = k->lanes;
    const ptrdiff_t stride = k->stride;
    const v8 zero = v8_set(0.0);
    double* MS_RESTRICT x = lanes->x;
    double* MS_RESTRICT v = lanes->v;
    double* MS_RESTRICT f = lanes->f;
    const double* MS_RESTRICT spring_force = lanes->spring_force;
    v8 force[3][2], sum[3][2];
    for (int c = 0; c < 3; ++c)
        for (int u = 0; u < G; ++u) {
            force[c][u] = v8_load(lanes->weight + u * stride + W * (3 * i + c));
            sum[c][u] = zero;
        }
    const double* less = spring_force + 3 * W * (int64_t)shape->subtracted;
    const double* more = spring_force + 3 * W * (int64_t)shape->added;
    switch (shape->kind) {
    case MS_BATCH_ALONE:
        break;
    case MS_BATCH_LESS:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < G; ++u) force[c][u] = v8_sub(force[c][u], v8_load(less + u * stride + W * c));
        break;
    case MS_BATCH_MORE:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < G; ++u)
                force[c][u] = v8_add(force[c][u], v8_add(zero, v8_load(more + u * stride + W * c)));
        break;
    case MS_BATCH_LESS_MORE:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < G; ++u)
                force[c][u] = v8_add(v8_sub(force[c][u], v8_load(less + u * stride + W * c)),
                                     v8_add(zero, v8_load(more + u * stride + W * c)));
        break;
    default: /* MS_BATCH_LISTED */
        for (const ms_batch_term* t = first; t < last; ++t) {
            const double* MS_RESTRICT by = spring_force + 3 * W * (int64_t)t->spring;
            switch (t->kind) {
            case MS_BATCH_SUBTRACT:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < G; ++u) force[c][u] = v8_sub(force[c][u], v8_load(by + u * stride + W * c));
                break;
            case MS_BATCH_FIRST:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < G; ++u) sum[c][u] = v8_add(zero, v8_load(by + u * stride + W * c));
                break;
            case MS_BATCH_NEXT:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < G; ++u) sum[c][u] = v8_add(sum[c][u], v8_load(by + u * stride + W * c));
                break;
            case MS_BATCH_ADD:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < G; ++u) force[c][u] = v8_add(force[c][u], sum[c][u]);
                break;
            default: /* MS_BATCH_CLEAR */
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < G; ++u) sum[c][u] = zero;
                break;
            }
        }
        break;
    }
    for (int u = 0; u < G; ++u) {
        const v8 weight = v8_mul(step, v8_load(lanes->inv_mass + u * stride + W * i));
        v8 check[3];
        for (int c = 0; c < 3; ++c) {
            const ptrdiff_t q = u * stride + W * (3 * i + c);
            const v8 xq = v8_load(x + q), vq = v8_load(v + q);
            v8_store(f + q, force[c][u]);
            if (explicit_euler) { /* x' = x + h v;  v' = v + h a(x, v) */
                const v8 position = v8_add(xq, v8_mul(step, vq));
                const v8 velocity = v8_add(vq, v8_mul(weight, force[c][u]));
                check[c] = v8_add(v8_sub(position, position), v8_sub(velocity, velocity));
                v8_store(x + q, position);
                v8_store(v + q, velocity);
            } else { /* v' = v + h a(x, v);  x' = x + h v' (finite only if v' is) */
                const v8 velocity = v8_add(vq, v8_mul(weight, force[c][u]));
                const v8 position = v8_add(xq, v8_mul(step, velocity));
                check[c] = v8_sub(position, position);
                v8_store(x + q, position);
                v8_store(v + q, velocity);
            }
        }
        checked[u] = v8_add(v8_add(check[0], check[1]), check[2]);
    }
}

/* Step k of a run for the pack's groups; failed[u] receives how many lanes of group u
   failed in it. */
MS_ALWAYS_INLINE void step8(const ms_batch_program* program, const pack* k, int G, double h, int64_t step_index,
                            int explicit_euler, int failed[2]) {
    ms_batch_lanes* lanes = k->lanes;
    const ptrdiff_t stride = k->stride;
    const v8 step = v8_set(h);
    /* the springs: accumulator a of group u in power[2 a + u] */
    v8 power[10];
    for (int q = 0; q < 10; ++q) power[q] = v8_set(0.0);
    {
        const double* MS_RESTRICT x = lanes->x;
        const double* MS_RESTRICT v = lanes->v;
        const double* MS_RESTRICT params = lanes->params;
        double* force = lanes->spring_force;
        const ms_batch_spring* springs = program->springs;
        const int64_t count = program->nspring;
        /* one spring's square roots and divisions ahead of the rest of the work */
        if (count > 0) lengths8(&springs[0], x, force, stride, G, 0);
        for (int64_t o = 0; o < count; ++o) {
            if (o + 1 < count) lengths8(&springs[o + 1], x, force, stride, G, o + 1);
            force8(&springs[o], x, v, params, force, stride, G, o, power);
        }
    }
    v8 flow[2], probe[2];
    for (int u = 0; u < G; ++u) {
        /* as the spring kernel adds up its accumulators; the flow of the step is h times
           the power at its start (ms_flow_add) */
        const v8 total =
            v8_add(power[u], v8_add(v8_add(power[2 + u], power[4 + u]), v8_add(power[6 + u], power[8 + u])));
        flow[u] = v8_mul(step, total);
        probe[u] = v8_sub(flow[u], flow[u]);
    }
    const int32_t* term_start = program->term_start;
    const ms_batch_term* terms = program->terms;
    for (int64_t i = 0; i < lanes->nnode; ++i) {
        v8 checked[2];
        node8(&program->shapes[i], terms + term_start[i], terms + term_start[i + 1], k, G, i, step, explicit_euler,
              checked);
        for (int u = 0; u < G; ++u) probe[u] = v8_add(probe[u], checked[u]);
    }
    for (int u = 0; u < G; ++u) {
        ms_batch_lanes* group = &lanes[u];
        v8_store(group->dampers, v8_add(v8_load(group->dampers), flow[u]));
        failed[u] = 0;
        /* a lane whose probe is not 0 (NaN) failed */
        const unsigned mask = (unsigned)_mm512_cmp_pd_mask(probe[u], v8_set(0.0), _CMP_NEQ_UQ);
        for (int q = 0; q < W && mask != 0; ++q)
            if (((mask >> q) & 1u) && group->failed[q] < 0) {
                group->failed[q] = step_index;
                group->failed_time[q] = group->t[q] + h;
                ++failed[u];
            }
        v8_store(group->t, v8_add(v8_load(group->t), step));
    }
}

static int alive_lanes(const ms_batch_lanes* lanes) {
    int alive = 0;
    for (int q = 0; q < W; ++q) alive += lanes->failed[q] < 0;
    return alive;
}

/* Steps from..n of one group, alive of its lanes not failed. */
static void run_one(const ms_batch_program* program, ms_batch_lanes* lanes, double h, int64_t from, int64_t n,
                    int explicit_euler, int alive) {
    const pack k = {lanes, 0};
    for (int64_t s = from; s < n && alive > 0; ++s) {
        int failed[2];
        step8(program, &k, 1, h, s, explicit_euler, failed);
        alive -= failed[0];
    }
}

/* n steps of two groups whose arrays lie stride doubles apart; once one has no lane left,
   the other goes on alone. */
static void run_two(const ms_batch_program* program, ms_batch_lanes* lanes, ptrdiff_t stride, double h, int64_t n,
                    int explicit_euler) {
    const pack k = {lanes, stride};
    int alive[2] = {alive_lanes(&lanes[0]), alive_lanes(&lanes[1])};
    int64_t s = 0;
    for (; s < n && alive[0] > 0 && alive[1] > 0; ++s) {
        int failed[2];
        step8(program, &k, 2, h, s, explicit_euler, failed);
        alive[0] -= failed[0];
        alive[1] -= failed[1];
    }
    for (int u = 0; u < 2; ++u) run_one(program, &lanes[u], h, s, n, explicit_euler, alive[u]);
}

/* Group b's arrays at group a's plus a stride (in doubles) common to all of them: that stride,
   else 0. */
static ptrdiff_t common_stride(const ms_batch_lanes* a, const ms_batch_lanes* b) {
    const ptrdiff_t stride = b->x - a->x;
    const int common = a->nnode == b->nnode && b->v - a->v == stride && b->f - a->f == stride &&
                       b->inv_mass - a->inv_mass == stride && b->weight - a->weight == stride &&
                       b->params - a->params == stride && b->spring_force - a->spring_force == stride;
    return common ? stride : 0;
}

void ms_batch_steps_avx512(const ms_batch_program* program, ms_batch_lanes* groups, int64_t count, double h, int64_t n,
                           int explicit_euler) {
    int64_t g = 0;
    while (g < count) {
        const ptrdiff_t stride = g + 1 < count ? common_stride(&groups[g], &groups[g + 1]) : 0;
        if (stride != 0) {
            run_two(program, &groups[g], stride, h, n, explicit_euler);
            g += 2;
        } else {
            run_one(program, &groups[g], h, 0, n, explicit_euler, alive_lanes(&groups[g]));
            g += 1;
        }
    }
}
#if defined(__clang__)
#pragma clang attribute pop
#endif
#else
typedef int ms_springs_avx512_unused; /* not an x86-64 build */
#endif
