/* The springs' part of implicit Euler's product y = (a M + b C + c K) p (implicit.c), written
 * once over the vector layer (vector.h) and compiled once per vector path beside the spring
 * kernel (springs_avx2.c, springs_sse2.c, springs_neon.c and springs_plain.c include this
 * file).
 *
 * Each spring's block B = beta I + alpha n n^T (beta = c k_t, alpha = c (k - k_t) + b damping)
 * acts on u = p_i - p_j; B u is added to its owner i and taken from its other end j.  A lane
 * group's four springs of one j are one v4, one lane per owner, as in the spring kernel: the
 * owners' p are loaded once and their sums kept in registers over the group's springs and
 * added to y once; in a lane group proper the four other ends are consecutive and read and
 * written four at a time.  Every lane does the scalar formula's operations in its order
 * (a single spring's too), so every path gives the same bits.
 */
#include "kernels/tangent.h"
#include "platform/vector.h"

#if MS_SPRING_BLOCK_DOUBLES != 5
#error "the lanes read each spring's values as two nodes' three"
#endif

/* The values B u of the four springs of one j whose blocks start at bl (MS_PRODUCT_BLOCK_DOUBLES values each: n,
   k_t, k - k_t, c), for u = the owners' p (pa) less the other ends' (pb). */
MS_ALWAYS_INLINE void MS_KERNEL(product_lanes)(const double* MS_RESTRICT bl, v4 stiffness, v4 damping,
                                               const v4 pa[3], const v4 pb[3], v4 value[3]) {
    const int64_t every_other[MS_LANES] = {0, 2, 4, 6}; /* blocks of 6 values as pairs of nodes */
    v4 n[3], kt, excess, c;
    v4_gather_nodes(bl, every_other, &n[0], &n[1], &n[2]);
    v4_gather_nodes(bl + 3, every_other, &kt, &excess, &c);
    const v4 beta = v4_mul(stiffness, kt);
    const v4 alpha = v4_add(v4_mul(stiffness, excess), v4_mul(damping, c));
    const v4 u0 = v4_sub(pa[0], pb[0]), u1 = v4_sub(pa[1], pb[1]), u2 = v4_sub(pa[2], pb[2]);
    const v4 along = v4_mul(alpha, v4_add(v4_add(v4_mul(n[0], u0), v4_mul(n[1], u1)), v4_mul(n[2], u2)));
    value[0] = v4_add(v4_mul(beta, u0), v4_mul(along, n[0]));
    value[1] = v4_add(v4_mul(beta, u1), v4_mul(along, n[1]));
    value[2] = v4_add(v4_mul(beta, u2), v4_mul(along, n[2]));
}

/* Where a spring's other end's value goes (its dest in the layout): owned nodes into y, the
   block's halo into its buffer. */
static inline double* MS_KERNEL(product_target)(double* y, double* halo, int32_t dest) {
    return dest >= 0 ? y + 3 * (int64_t)dest : halo + 3 * (int64_t)(-1 - dest);
}

void MS_KERNEL(ms_spring_product)(const ms_layout* layout, int64_t block, const double* MS_RESTRICT blocks,
                                  double stiffness_scale, double damping_scale, const double* MS_RESTRICT p,
                                  double* MS_RESTRICT y) {
    const int32_t* MS_RESTRICT pairs = layout->pairs;
    const int32_t* MS_RESTRICT dest = layout->dest;
    const uint16_t* MS_RESTRICT lanes = layout->lanes;
    const int64_t own_end = layout->node_start[block + 1];
    double* halo = layout->halo + 3 * layout->halo_start[block];
    memset(halo, 0, sizeof(double) * 3 * (size_t)(layout->halo_start[block + 1] - layout->halo_start[block]));
    const v4 stiffness = v4_set(stiffness_scale), damping = v4_set(damping_scale);
    const int64_t end = layout->spring_start[block + 1];
    for (int64_t s = layout->spring_start[block]; s < end;) {
        const int64_t a = pairs[2 * s];
        const int64_t kind = lanes[a], k = kind & MS_MAX_LANE_SPRINGS;
        if (kind & MS_GATHERED) { /* four owners anywhere in the block: every end on its own */
            int64_t owner[MS_LANES];
            double* mine[MS_LANES];
            for (int q = 0; q < MS_LANES; ++q) {
                owner[q] = pairs[2 * (s + q)];
                mine[q] = y + 3 * owner[q];
            }
            v4 pa[3], sum[3] = {v4_set(0.0), v4_set(0.0), v4_set(0.0)};
            v4_gather_nodes(p, owner, &pa[0], &pa[1], &pa[2]);
            for (int64_t j = 0; j < k; ++j) {
                const int64_t r = s + MS_LANES * j;
                const int64_t other[MS_LANES] = {pairs[2 * r + 1], pairs[2 * r + 3], pairs[2 * r + 5],
                                                 pairs[2 * r + 7]};
                double* const to[MS_LANES] = {
                    MS_KERNEL(product_target)(y, halo, dest[r]), MS_KERNEL(product_target)(y, halo, dest[r + 1]),
                    MS_KERNEL(product_target)(y, halo, dest[r + 2]),
                    MS_KERNEL(product_target)(y, halo, dest[r + 3])};
                v4 pb[3], value[3];
                v4_gather_nodes(p, other, &pb[0], &pb[1], &pb[2]);
                MS_KERNEL(product_lanes)(blocks + MS_PRODUCT_BLOCK_DOUBLES * r, stiffness, damping, pa, pb, value);
                for (int c = 0; c < 3; ++c) sum[c] = v4_add(sum[c], value[c]);
                v4_scatter_nodes(to, value[0], value[1], value[2], 1);
            }
            v4_scatter_nodes(mine, sum[0], sum[1], sum[2], 0);
            s += MS_LANES * k;
            continue;
        }
        if (k > 0) { /* a lane group: owners a..a+3, the other ends of each j consecutive */
            v4 pa[3], sum[3] = {v4_set(0.0), v4_set(0.0), v4_set(0.0)};
            v4_load_nodes(p + 3 * a, &pa[0], &pa[1], &pa[2]);
            for (int64_t j = 0; j < k; ++j) {
                const int64_t r = s + MS_LANES * j;
                const int64_t b = pairs[2 * r + 1];
                v4 pb[3], value[3];
                v4_load_nodes(p + 3 * b, &pb[0], &pb[1], &pb[2]);
                MS_KERNEL(product_lanes)(blocks + MS_PRODUCT_BLOCK_DOUBLES * r, stiffness, damping, pa, pb, value);
                for (int c = 0; c < 3; ++c) sum[c] = v4_add(sum[c], value[c]);
                if (b + MS_LANES <= own_end) {
                    v4_add_nodes(y + 3 * b, value[0], value[1], value[2], 1);
                } else if (b >= own_end) {
                    v4_add_nodes(halo + 3 * (b - own_end), value[0], value[1], value[2], 1);
                } else { /* the four ends straddle the end of the owned nodes: one at a time */
                    double* const to[MS_LANES] = {
                        MS_KERNEL(product_target)(y, halo, dest[r]), MS_KERNEL(product_target)(y, halo, dest[r + 1]),
                        MS_KERNEL(product_target)(y, halo, dest[r + 2]),
                        MS_KERNEL(product_target)(y, halo, dest[r + 3])};
                    v4_scatter_nodes(to, value[0], value[1], value[2], 1);
                }
            }
            v4_add_nodes(y + 3 * a, sum[0], sum[1], sum[2], 0);
            s += MS_LANES * k;
            continue;
        }
        /* the springs of one owner left single, one at a time */
        const double p0 = p[3 * a], p1 = p[3 * a + 1], p2 = p[3 * a + 2];
        v1 sum0 = 0.0, sum1 = 0.0, sum2 = 0.0;
        int64_t r = s;
        for (; r < end && pairs[2 * r] == a; ++r) {
            const int64_t j = pairs[2 * r + 1];
            const double* bl = blocks + MS_PRODUCT_BLOCK_DOUBLES * r;
            const v1 beta = stiffness_scale * bl[3];
            const v1 alpha = stiffness_scale * bl[4] + damping_scale * bl[5];
            const v1 u0 = p0 - p[3 * j], u1 = p1 - p[3 * j + 1], u2 = p2 - p[3 * j + 2];
            const v1 along = alpha * (bl[0] * u0 + bl[1] * u1 + bl[2] * u2);
            const v1 value0 = beta * u0 + along * bl[0], value1 = beta * u1 + along * bl[1],
                     value2 = beta * u2 + along * bl[2];
            sum0 += value0;
            sum1 += value1;
            sum2 += value2;
            double* yj = MS_KERNEL(product_target)(y, halo, dest[r]);
            yj[0] -= value0;
            yj[1] -= value1;
            yj[2] -= value2;
        }
        y[3 * a] += sum0;
        y[3 * a + 1] += sum1;
        y[3 * a + 2] += sum2;
        s = r;
    }
}
