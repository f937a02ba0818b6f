/* The batched kernel (batch.h), written once over the vector layer and compiled once per
 * vector path: the springs_*.c files include it after spring_kernel.h, whose SPRING_FORCE
 * it shares, so a lane computes a spring's force with the very operations a member's own
 * step uses.  Lane q of every vector is member q; the Euler update is the per-value
 * arithmetic of the Euler kernel above.
 */
#include "kernels/batch.h"

/* The first half of a spring's force on the group's vectors: its length and inverse
   length into the first two rows of its force buffer. */
MS_ALWAYS_INLINE void MS_KERNEL(batch_lengths)(const ms_batch_spring* sp, const double* MS_RESTRICT x, double* into) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const double* xa = x + 3 * W * (int64_t)sp->a;
    const double* xb = x + 3 * W * (int64_t)sp->b;
    for (int u = 0; u < U; ++u) {
        const int l = 4 * u;
        const v4 dx = v4_sub(v4_load(xb + l), v4_load(xa + l));
        const v4 dy = v4_sub(v4_load(xb + W + l), v4_load(xa + W + l));
        const v4 dz = v4_sub(v4_load(xb + 2 * W + l), v4_load(xa + 2 * W + l));
        v4 length, inv_length;
        SPRING_LENGTH(v4, dx, dy, dz, length, inv_length);
        v4_store(into + l, length);
        v4_store(into + W + l, inv_length);
    }
}

/* The second half: the force from them into the buffer, the damper power to its
   accumulator. */
MS_ALWAYS_INLINE void MS_KERNEL(batch_force)(const ms_batch_spring* sp, const double* MS_RESTRICT x,
                                             const double* MS_RESTRICT v, const double* MS_RESTRICT params,
                                             double* into, v4* power) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const double* xa = x + 3 * W * (int64_t)sp->a;
    const double* xb = x + 3 * W * (int64_t)sp->b;
    const double* va = v + 3 * W * (int64_t)sp->a;
    const double* vb = v + 3 * W * (int64_t)sp->b;
    const double* p = params + 3 * W * (int64_t)sp->spring;
    v4* accumulator = power + U * sp->slot;
    for (int u = 0; u < U; ++u) {
        const int l = 4 * u;
        v4 fx, fy, fz, pw = accumulator[u];
        const v4 dx = v4_sub(v4_load(xb + l), v4_load(xa + l));
        const v4 dy = v4_sub(v4_load(xb + W + l), v4_load(xa + W + l));
        const v4 dz = v4_sub(v4_load(xb + 2 * W + l), v4_load(xa + 2 * W + l));
        const v4 du = v4_sub(v4_load(vb + l), v4_load(va + l));
        const v4 dv = v4_sub(v4_load(vb + W + l), v4_load(va + W + l));
        const v4 dw = v4_sub(v4_load(vb + 2 * W + l), v4_load(va + 2 * W + l));
        const v4 length = v4_load(into + l), inv_length = v4_load(into + W + l);
        SPRING_FORCE_AT(v4, dx, dy, dz, du, dv, dw, length, inv_length, v4_load(p + l), v4_load(p + W + l),
                        v4_load(p + 2 * W + l), fx, fy, fz, pw, (v4*)NULL);
        accumulator[u] = pw;
        v4_store(into + l, fx);
        v4_store(into + W + l, fy);
        v4_store(into + 2 * W + l, fz);
    }
}

/* The program's springs at (x, v): each one's force on its owner into spring_force, its
   damper power into its accumulator.  Each spring is done on the group's vectors one after
   the other: independent work that the processor overlaps.  Returns the dampers' power of
   each vector, the accumulators added up as the spring kernel adds them. */
MS_ALWAYS_INLINE void MS_KERNEL(batch_springs)(const ms_batch_program* program, const ms_batch_lanes* lanes,
                                               v4 total[MS_BATCH_VECTORS]) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const double* MS_RESTRICT x = lanes->x;
    const double* MS_RESTRICT v = lanes->v;
    const double* MS_RESTRICT params = lanes->params;
    double* MS_RESTRICT force = lanes->spring_force;
    v4 power[5 * U]; /* accumulator a of vector u: power[U a + u] */
    for (int q = 0; q < 5 * U; ++q) power[q] = v4_set(0.0);
    const ms_batch_spring* springs = program->springs;
    const int64_t count = program->nspring;
    /* one spring's square roots and divisions ahead of the rest of the work, which does not
       wait for them */
    if (count > 0) MS_KERNEL(batch_lengths)(&springs[0], x, force);
    for (int64_t o = 0; o < count; ++o) {
        if (o + 1 < count) MS_KERNEL(batch_lengths)(&springs[o + 1], x, force + 3 * W * (o + 1));
        MS_KERNEL(batch_force)(&springs[o], x, v, params, force + 3 * W * o, power);
    }
    /* as the spring kernel adds up its accumulators */
    for (int u = 0; u < U; ++u)
        total[u] = v4_add(power[u], v4_add(v4_add(power[U + u], power[2 * U + u]),
                                           v4_add(power[3 * U + u], power[4 * U + u])));
}

/* Node i of two vectors from lane l on: its force put together from m g and the spring
   forces its shape names, or its terms first .. last, and its update.  checked receives
   each vector's (x' - x') + ... (0, or not finite where the update is not). */
MS_ALWAYS_INLINE void MS_KERNEL(batch_node)(const ms_batch_shape* shape, const ms_batch_term* first,
                                            const ms_batch_term* last, ms_batch_lanes* lanes,
                                            const double* MS_RESTRICT spring_force, int64_t i, int l, v4 step,
                                            int explicit_euler, v4 checked[2]) {
    enum { W = MS_BATCH_WIDTH };
    const v4 zero = v4_set(0.0);
    double* MS_RESTRICT x = lanes->x;
    double* MS_RESTRICT v = lanes->v;
    double* MS_RESTRICT f = lanes->f;
    v4 force[3][2], sum[3][2];
    for (int c = 0; c < 3; ++c)
        for (int u = 0; u < 2; ++u) {
            force[c][u] = v4_load(lanes->weight + W * (3 * i + c) + l + 4 * u);
            sum[c][u] = zero;
        }
    const double* less = spring_force + 3 * W * (int64_t)shape->subtracted + l;
    const double* more = spring_force + 3 * W * (int64_t)shape->added + l;
    switch (shape->kind) {
    case MS_BATCH_ALONE:
        break;
    case MS_BATCH_LESS:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < 2; ++u) force[c][u] = v4_sub(force[c][u], v4_load(less + W * c + 4 * u));
        break;
    case MS_BATCH_MORE:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < 2; ++u)
                force[c][u] = v4_add(force[c][u], v4_add(zero, v4_load(more + W * c + 4 * u)));
        break;
    case MS_BATCH_LESS_MORE:
        for (int c = 0; c < 3; ++c)
            for (int u = 0; u < 2; ++u)
                force[c][u] = v4_add(v4_sub(force[c][u], v4_load(less + W * c + 4 * u)),
                                     v4_add(zero, v4_load(more + W * c + 4 * u)));
        break;
    default: /* MS_BATCH_LISTED */
        for (const ms_batch_term* t = first; t < last; ++t) {
            const double* MS_RESTRICT by = spring_force + 3 * W * (int64_t)t->spring + l;
            switch (t->kind) {
            case MS_BATCH_SUBTRACT:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < 2; ++u) force[c][u] = v4_sub(force[c][u], v4_load(by + W * c + 4 * u));
                break;
            case MS_BATCH_FIRST:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < 2; ++u) sum[c][u] = v4_add(zero, v4_load(by + W * c + 4 * u));
                break;
            case MS_BATCH_NEXT:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < 2; ++u) sum[c][u] = v4_add(sum[c][u], v4_load(by + W * c + 4 * u));
                break;
            case MS_BATCH_ADD:
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < 2; ++u) force[c][u] = v4_add(force[c][u], sum[c][u]);
                break;
            default: /* MS_BATCH_CLEAR */
                for (int c = 0; c < 3; ++c)
                    for (int u = 0; u < 2; ++u) sum[c][u] = zero;
                break;
            }
        }
        break;
    }
    for (int u = 0; u < 2; ++u) {
        const v4 weight = v4_mul(step, v4_load(lanes->inv_mass + W * i + l + 4 * u));
        v4 check[3];
        for (int c = 0; c < 3; ++c) {
            const int64_t q = W * (3 * i + c) + l + 4 * u;
            const v4 xq = v4_load(x + q), vq = v4_load(v + q);
            v4_store(f + q, force[c][u]);
            if (explicit_euler) { /* x' = x + h v;  v' = v + h a(x, v) */
                const v4 position = v4_add(xq, v4_mul(step, vq));
                const v4 velocity = v4_add(vq, v4_mul(weight, force[c][u]));
                check[c] = v4_add(v4_sub(position, position), v4_sub(velocity, velocity));
                v4_store(x + q, position);
                v4_store(v + q, velocity);
            } else { /* v' = v + h a(x, v);  x' = x + h v' */
                const v4 velocity = v4_add(vq, v4_mul(weight, force[c][u]));
                const v4 position = v4_add(xq, v4_mul(step, velocity));
                /* x is finite, so x' is finite only if v' is: x' alone is checked */
                check[c] = v4_sub(position, position);
                v4_store(x + q, position);
                v4_store(v + q, velocity);
            }
        }
        checked[u] = v4_add(v4_add(check[0], check[1]), check[2]);
    }
}

/* Step k of a run for one group; returns how many of its lanes failed in it. */
MS_ALWAYS_INLINE int MS_KERNEL(batch_step)(const ms_batch_program* program, ms_batch_lanes* lanes, double h,
                                           int64_t k, int explicit_euler) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const v4 step = v4_set(h);
    const double* MS_RESTRICT spring_force = lanes->spring_force;
    const int32_t* term_start = program->term_start;
    const ms_batch_term* terms = program->terms;
    v4 power[U], flow[U], probe[U];
    MS_KERNEL(batch_springs)(program, lanes, power);
    for (int u = 0; u < U; ++u) {
        /* the flow of the step: h times the power at its start (ms_flow_add) */
        flow[u] = v4_mul(step, power[u]);
        probe[u] = v4_sub(flow[u], flow[u]);
    }
    for (int64_t i = 0; i < lanes->nnode; ++i) {
        const ms_batch_term* first = terms + term_start[i];
        const ms_batch_term* last = terms + term_start[i + 1];
        /* two vectors at a time, their forces and sums in registers */
        for (int half = 0; half < U; half += 2) {
            v4 checked[2];
            MS_KERNEL(batch_node)(&program->shapes[i], first, last, lanes, spring_force, i, 4 * half, step,
                                  explicit_euler, checked);
            probe[half] = v4_add(probe[half], checked[0]);
            probe[half + 1] = v4_add(probe[half + 1], checked[1]);
        }
    }
    double lane_probe[W];
    for (int u = 0; u < U; ++u) {
        v4_store(lane_probe + 4 * u, probe[u]);
        v4_store(lanes->dampers + 4 * u, v4_add(v4_load(lanes->dampers + 4 * u), flow[u]));
    }
    v4 any = probe[0];
    for (int u = 1; u < U; ++u) any = v4_add(any, probe[u]);
    double lane_any[4];
    v4_store(lane_any, any);
    int failed = 0;
    const int none = (lane_any[0] + lane_any[1]) + (lane_any[2] + lane_any[3]) == 0.0;
    for (int q = 0; q < W && !none; ++q)
        if (lane_probe[q] != 0.0 && lanes->failed[q] < 0) {
            lanes->failed[q] = k;
            lanes->failed_time[q] = lanes->t[q] + h;
            ++failed;
        }
    for (int u = 0; u < U; ++u) v4_store(lanes->t + 4 * u, v4_add(v4_load(lanes->t + 4 * u), step));
    return failed;
}

void MS_KERNEL(ms_batch_steps)(const ms_batch_program* program, ms_batch_lanes* groups, int64_t count, double h,
                               int64_t n, int explicit_euler) {
    for (int64_t g = 0; g < count; ++g) {
        int alive = 0;
        for (int q = 0; q < MS_BATCH_WIDTH; ++q) alive += groups[g].failed[q] < 0;
        for (int64_t k = 0; k < n && alive > 0; ++k)
            alive -= MS_KERNEL(batch_step)(program, &groups[g], h, k, explicit_euler);
    }
}
