/* The batched kernel (batch.h), written once over the vector layer and compiled once per
 * vector path: the springs_*.c files include it after spring_kernel.h, whose SPRING_FORCE
 * it shares, so a lane computes a spring's force with the very operations a member's own
 * step uses.  Lane q of every vector is member q; the Euler update is the per-value
 * arithmetic of the Euler kernel above.
 */
#include "kernels/batch.h"

/* The lanes' forces at (x, v): m g on every node, then the program's springs.  Each
   operation is done on the group's vectors one after the other: independent work that the
   processor overlaps.  Returns the dampers' power of each vector. */
MS_ALWAYS_INLINE void MS_KERNEL(batch_forces)(const ms_batch_op* ops, int64_t nop, const ms_batch_lanes* lanes,
                                              v4 total[MS_BATCH_VECTORS]) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const double* MS_RESTRICT x = lanes->x;
    const double* MS_RESTRICT v = lanes->v;
    double* MS_RESTRICT f = lanes->f;
    const double* MS_RESTRICT params = lanes->params;
    for (int64_t i = 0; i < lanes->nnode; ++i)
        for (int u = 0; u < U; ++u) {
            const v4 mass = v4_load(lanes->mass + W * i + 4 * u);
            for (int c = 0; c < 3; ++c)
                v4_store(f + W * (3 * i + c) + 4 * u, v4_mul(mass, v4_load(lanes->gravity + W * c + 4 * u)));
        }
    v4 power[5][U], sum[4][3][U];
    for (int u = 0; u < U; ++u) {
        for (int a = 0; a < 5; ++a) power[a][u] = v4_set(0.0);
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 3; ++c) sum[r][c][u] = v4_set(0.0);
    }
    for (int64_t o = 0; o < nop; ++o) {
        const ms_batch_op* op = &ops[o];
        if (op->kind == MS_BATCH_FLUSH) {
            double* fa = f + 3 * W * (int64_t)op->a;
            for (int c = 0; c < 3; ++c)
                for (int u = 0; u < U; ++u) {
                    double* p = fa + W * c + 4 * u;
                    v4_store(p, v4_add(v4_load(p), sum[op->reg][c][u]));
                    sum[op->reg][c][u] = v4_set(0.0);
                }
            continue;
        }
        const double* xa = x + 3 * W * (int64_t)op->a;
        const double* xb = x + 3 * W * (int64_t)op->b;
        const double* va = v + 3 * W * (int64_t)op->a;
        const double* vb = v + 3 * W * (int64_t)op->b;
        const double* p = params + 3 * W * (int64_t)op->spring;
        double* ft = f + 3 * W * (int64_t)op->target;
        v4* into[3] = {sum[op->reg][0], sum[op->reg][1], sum[op->reg][2]};
        v4* accumulator = power[op->slot];
        for (int u = 0; u < U; ++u) {
            const int l = 4 * u;
            v4 fx, fy, fz;
            const v4 dx = v4_sub(v4_load(xb + l), v4_load(xa + l));
            const v4 dy = v4_sub(v4_load(xb + W + l), v4_load(xa + W + l));
            const v4 dz = v4_sub(v4_load(xb + 2 * W + l), v4_load(xa + 2 * W + l));
            const v4 du = v4_sub(v4_load(vb + l), v4_load(va + l));
            const v4 dv = v4_sub(v4_load(vb + W + l), v4_load(va + W + l));
            const v4 dw = v4_sub(v4_load(vb + 2 * W + l), v4_load(va + 2 * W + l));
            SPRING_FORCE(v4, dx, dy, dz, du, dv, dw, v4_load(p + l), v4_load(p + W + l), v4_load(p + 2 * W + l), fx, fy,
                         fz, accumulator[u], (v4*)NULL);
            into[0][u] = v4_add(into[0][u], fx);
            into[1][u] = v4_add(into[1][u], fy);
            into[2][u] = v4_add(into[2][u], fz);
            v4_store(ft + l, v4_sub(v4_load(ft + l), fx));
            v4_store(ft + W + l, v4_sub(v4_load(ft + W + l), fy));
            v4_store(ft + 2 * W + l, v4_sub(v4_load(ft + 2 * W + l), fz));
        }
    }
    /* as the spring kernel adds up its accumulators */
    for (int u = 0; u < U; ++u)
        total[u] = v4_add(power[0][u], v4_add(v4_add(power[1][u], power[2][u]), v4_add(power[3][u], power[4][u])));
}

/* Step k of a run for one group; returns how many of its lanes failed in it. */
MS_ALWAYS_INLINE int MS_KERNEL(batch_step)(const ms_batch_op* ops, int64_t nop, ms_batch_lanes* lanes, double h,
                                           int64_t k, int explicit_euler) {
    enum { U = MS_BATCH_VECTORS, W = MS_BATCH_WIDTH };
    const v4 step = v4_set(h);
    double* MS_RESTRICT x = lanes->x;
    double* MS_RESTRICT v = lanes->v;
    const double* MS_RESTRICT f = lanes->f;
    v4 power[U], flow[U], probe[U];
    MS_KERNEL(batch_forces)(ops, nop, lanes, power);
    for (int u = 0; u < U; ++u) {
        /* the flow of the step: h times the power at its start (ms_flow_add) */
        flow[u] = v4_mul(step, power[u]);
        probe[u] = v4_sub(flow[u], flow[u]);
    }
    for (int64_t i = 0; i < lanes->nnode; ++i)
        for (int u = 0; u < U; ++u) {
            const v4 weight = v4_mul(step, v4_load(lanes->inv_mass + W * i + 4 * u));
            for (int c = 0; c < 3; ++c) {
                const int64_t q = W * (3 * i + c) + 4 * u;
                const v4 xq = v4_load(x + q), vq = v4_load(v + q), fq = v4_load(f + q);
                v4 position, velocity;
                if (explicit_euler) { /* x' = x + h v;  v' = v + h a(x, v) */
                    position = v4_add(xq, v4_mul(step, vq));
                    velocity = v4_add(vq, v4_mul(weight, fq));
                } else { /* v' = v + h a(x, v);  x' = x + h v' */
                    velocity = v4_add(vq, v4_mul(weight, fq));
                    position = v4_add(xq, v4_mul(step, velocity));
                }
                probe[u] = v4_add(probe[u], v4_sub(position, position));
                probe[u] = v4_add(probe[u], v4_sub(velocity, velocity));
                v4_store(x + q, position);
                v4_store(v + q, velocity);
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

void MS_KERNEL(ms_batch_steps)(const ms_batch_op* ops, int64_t nop, ms_batch_lanes* groups, int64_t count, double h,
                               int64_t n, int explicit_euler) {
    for (int64_t g = 0; g < count; ++g) {
        int alive = 0;
        for (int q = 0; q < MS_BATCH_WIDTH; ++q) alive += groups[g].failed[q] < 0;
        for (int64_t k = 0; k < n && alive > 0; ++k)
            alive -= MS_KERNEL(batch_step)(ops, nop, &groups[g], h, k, explicit_euler);
    }
}
