/* The springs' tangent stiffness: per spring a block of MS_SPRING_BLOCK_DOUBLES values, the
   unit vector n (3), the transverse stiffness k_t and the axial excess k - k_t, so that
   K_s = k_t I + (k - k_t) n n^T.  The exact derivative of the spring force has
   k_t = k (1 - L/l), negative for a compressed spring; clamped, k_t = k max(0, 1 - L/l)
   keeps every K_s positive semidefinite.  Zero-length springs get a zero block. */
#ifndef MSPRINGS_KERNELS_TANGENT_H
#define MSPRINGS_KERNELS_TANGENT_H

#include "kernels/layout.h"
#include "model/model.h"

#define MS_SPRING_BLOCK_DOUBLES 5

/* Spring s's block at its ends' positions xi, xj (either order), into b[0 .. 4]: clamped
   if clamp is non-zero, else exact. */
void ms_spring_block(const ms_model* m, int64_t s, const double* xi, const double* xj, double* b, int clamp);

/* The clamped blocks of every spring at positions x, into blocks[5 s ..]. */
void ms_spring_blocks(const ms_model* m, const double* x, double* blocks);

/* Spring s's block B = beta I + alpha n n^T (beta = c k_t, alpha = c (k - k_t) + b damping)
   times p_i - p_j: what it adds to y_i and takes from y_j. */
static inline void ms_spring_product(const ms_model* m, const double* blocks, int64_t s, double damping_scale,
                                  double stiffness_scale, const double* pi, const double* pj, double value[3]) {
    const double* b = blocks + MS_SPRING_BLOCK_DOUBLES * s;
    const double beta = stiffness_scale * b[3];
    const double alpha = stiffness_scale * b[4] + damping_scale * m->c[s];
    const double u[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
    const double along = alpha * (b[0] * u[0] + b[1] * u[1] + b[2] * u[2]);
    for (int a = 0; a < 3; ++a) value[a] = beta * u[a] + along * b[a];
}

/* y = a M p + b C p + c K p, where C = -df/dv (dampers c n n^T per spring, drag I per
   node) and K = -df/dx (the blocks K_s), each spring block acting on p_i - p_j and
   scattered with opposite signs to i and j.  With (a, b, c) = (1, h, h^2) it is the
   backward Euler matrix M - h df/dv - h^2 df/dx.  Rows of pinned nodes (inv_mass 0) are
   set to zero; p is used as given. */
void ms_system_product(const ms_model* m, const double* inv_mass, const double* blocks, double mass_scale,
                       double damping_scale, double stiffness_scale, const double* p, double* y);

/* The springs' part of y = (a M + b C + c K) p on spring block b of the layout (implicit.c):
   blocks holds, in the layout's order, MS_PRODUCT_BLOCK_DOUBLES values per spring (its block
   as above, then its damping c); each spring's B (p_i - p_j), with beta = stiffness_scale k_t
   and alpha = stiffness_scale (k - k_t) + damping_scale c, is added to y at its owner i and
   taken from its other end j (in y if the block owns j, else in the block's halo, which it
   zeroes first).  Each owner's values are summed apart and added to y once, after its
   springs (a lane group's four owners together).  Compiled per vector path
   (product_kernel.h), every path with the same bits. */
#define MS_PRODUCT_BLOCK_DOUBLES (MS_SPRING_BLOCK_DOUBLES + 1)
typedef void (*ms_spring_product_kernel)(const ms_layout* layout, int64_t block, const double* blocks,
                                         double stiffness_scale, double damping_scale, const double* p, double* y);
#define MS_DECLARE_PRODUCT_KERNEL(path)                                                                            \
    void ms_spring_product_##path(const ms_layout* layout, int64_t block, const double* blocks,                   \
                                  double stiffness_scale, double damping_scale, const double* p, double* y)
MS_DECLARE_PRODUCT_KERNEL(plain);
MS_DECLARE_PRODUCT_KERNEL(sse2);
MS_DECLARE_PRODUCT_KERNEL(neon);
MS_DECLARE_PRODUCT_KERNEL(avx2);

#endif
