/* The xpbd projection (xpbd.c), written once over the vector layer (vector.h) and compiled
 * once per vector path beside the spring kernel (springs_avx2.c, springs_sse2.c,
 * springs_plain.c include this file after spring_kernel.h).  Springs of one colour share
 * no node, so four of them are projected at once in the lanes of a v4, the rest one at a
 * time with the same operations: every path gives the same bits.  Positions are rows of
 * four doubles per node (x, y, z, 0), so that a node is one vector load and four nodes
 * one transpose away from the lanes.
 */
#include "kernels/colouring.h"
#include "platform/vector.h"

/* Below this length (m) a spring has no direction to push along: it is left alone. */
#define MS_XPBD_MIN_LENGTH 1e-12

/* The multiplier's change of springs with ends at (xi*, xj*), which were at (pi*, pj*) at
   the start of the step, in type V: the unit vector (nx, ny, nz) from j to i and the
   change (0 for a spring too short to have a direction). */
#define XPBD_CHANGE(V, xix, xiy, xiz, xjx, xjy, xjz, pix, piy, piz, pjx, pjy, pjz, rest, alpha, gamma, scale,     \
                    lambda, nx, ny, nz, change)                                                                 \
    do {                                                                                                        \
        const V dx_ = V##_sub(xix, xjx), dy_ = V##_sub(xiy, xjy), dz_ = V##_sub(xiz, xjz);                       \
        const V length_ = V##_sqrt(V##_add(V##_add(V##_mul(dx_, dx_), V##_mul(dy_, dy_)), V##_mul(dz_, dz_)));   \
        const V inv_length_ = V##_if_greater(length_, V##_set(MS_XPBD_MIN_LENGTH), V##_div(V##_set(1.0), length_)); \
        nx = V##_mul(dx_, inv_length_);                                                                         \
        ny = V##_mul(dy_, inv_length_);                                                                         \
        nz = V##_mul(dz_, inv_length_);                                                                         \
        /* grad C.(x - x_prev) */                                                                               \
        const V rate_ = V##_add(V##_add(V##_mul(nx, V##_sub(V##_sub(xix, pix), V##_sub(xjx, pjx))),               \
                                        V##_mul(ny, V##_sub(V##_sub(xiy, piy), V##_sub(xjy, pjy)))),              \
                                V##_mul(nz, V##_sub(V##_sub(xiz, piz), V##_sub(xjz, pjz))));                      \
        const V free_ = V##_sub(V##_sub(V##_sub(rest, length_), V##_mul(alpha, lambda)), V##_mul(gamma, rate_));  \
        change = V##_if_greater(length_, V##_set(MS_XPBD_MIN_LENGTH), V##_mul(free_, scale));                   \
    } while (0)

void MS_KERNEL(ms_xpbd_project)(const ms_colouring* c, int64_t begin, int64_t end, const double* MS_RESTRICT x_prev,
                                double* MS_RESTRICT x, int first) {
    const int64_t ns = c->nspring;
    const double* MS_RESTRICT rest = c->params;
    const double* MS_RESTRICT alpha = rest + ns;
    const double* MS_RESTRICT gamma = alpha + ns;
    const double* MS_RESTRICT scale = gamma + ns;
    const double* MS_RESTRICT w_i = scale + ns;
    const double* MS_RESTRICT w_j = w_i + ns;
    const int32_t* MS_RESTRICT pairs = c->pairs;
    double* MS_RESTRICT multipliers = c->lambda;
    int64_t r = begin;
    for (; r + 4 <= end; r += 4) {
        /* each node's (x, y, z, 0) row, four nodes to a matrix whose columns are the lanes */
        const int32_t* pr = pairs + 2 * r;
        v4 rows[4], xi[4], xj[4], pi[4], pj[4];
        for (int q = 0; q < 4; ++q) rows[q] = v4_load(x + 4 * (int64_t)pr[2 * q]);
        v4_transpose(rows, xi);
        for (int q = 0; q < 4; ++q) rows[q] = v4_load(x + 4 * (int64_t)pr[2 * q + 1]);
        v4_transpose(rows, xj);
        for (int q = 0; q < 4; ++q) rows[q] = v4_load(x_prev + 4 * (int64_t)pr[2 * q]);
        v4_transpose(rows, pi);
        for (int q = 0; q < 4; ++q) rows[q] = v4_load(x_prev + 4 * (int64_t)pr[2 * q + 1]);
        v4_transpose(rows, pj);
        const v4 lambda = first ? v4_set(0.0) : v4_load(multipliers + r);
        v4 nx, ny, nz, change;
        XPBD_CHANGE(v4, xi[0], xi[1], xi[2], xj[0], xj[1], xj[2], pi[0], pi[1], pi[2], pj[0], pj[1], pj[2],
                    v4_load(rest + r), v4_load(alpha + r), v4_load(gamma + r), v4_load(scale + r), lambda, nx, ny,
                    nz, change);
        v4_store(multipliers + r, v4_add(lambda, change));
        const v4 ci = v4_mul(v4_load(w_i + r), change), cj = v4_mul(v4_load(w_j + r), change);
        const v4 zero = v4_set(0.0);
        const v4 move_i[4] = {v4_mul(ci, nx), v4_mul(ci, ny), v4_mul(ci, nz), zero};
        const v4 move_j[4] = {v4_mul(cj, nx), v4_mul(cj, ny), v4_mul(cj, nz), zero};
        v4_transpose(move_i, rows);
        for (int q = 0; q < 4; ++q) {
            double* node = x + 4 * (int64_t)pr[2 * q];
            v4_store(node, v4_add(v4_load(node), rows[q]));
        }
        v4_transpose(move_j, rows);
        for (int q = 0; q < 4; ++q) {
            double* node = x + 4 * (int64_t)pr[2 * q + 1];
            v4_store(node, v4_sub(v4_load(node), rows[q]));
        }
    }
    for (; r < end; ++r) {
        const int64_t i = pairs[2 * r], j = pairs[2 * r + 1];
        double* xi = x + 4 * i;
        double* xj = x + 4 * j;
        const double* pi = x_prev + 4 * i;
        const double* pj = x_prev + 4 * j;
        const v1 lambda = first ? 0.0 : multipliers[r];
        v1 nx, ny, nz, change;
        XPBD_CHANGE(v1, xi[0], xi[1], xi[2], xj[0], xj[1], xj[2], pi[0], pi[1], pi[2], pj[0], pj[1], pj[2], rest[r],
                    alpha[r], gamma[r], scale[r], lambda, nx, ny, nz, change);
        multipliers[r] = lambda + change;
        const v1 ci = w_i[r] * change, cj = w_j[r] * change;
        xi[0] += ci * nx;
        xi[1] += ci * ny;
        xi[2] += ci * nz;
        xj[0] -= cj * nx;
        xj[1] -= cj * ny;
        xj[2] -= cj * nz;
    }
}
