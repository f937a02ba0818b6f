/* Springs in colours (no two of one colour share a node) grouped by region, and the xpbd
 * projection of a colour's springs on each vector path (xpbd_kernel.h); made and used by
 * the xpbd solver (solvers/xpbd.c). */
#ifndef MSPRINGS_KERNELS_COLOURING_H
#define MSPRINGS_KERNELS_COLOURING_H

#include "msprings/msprings.h"

typedef struct ms_colouring ms_colouring;
/* One projection of the springs at positions [begin, end) of the colouring (within one
   colour) on x, which was x_prev at the start of the step, both as rows (x, y, z, 0) of
   four doubles per node (nnode x 4); first: the first iteration of the step (multipliers
   start at 0); the parameters from ms_xpbd_prepare (solvers/xpbd.c). */
typedef void (*ms_xpbd_kernel)(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, double* x,
                               int first);

/* Springs per region at least (solvers/xpbd.c): a region's springs are projected by one worker
   with no barrier between their colours. */
#define MS_XPBD_REGION_SPRINGS 4096

/* The springs in colours, grouped by region: segment (g, q) = g ncolour + q holds the
   springs of colour q whose both ends lie in region g (the nodes cut into nregion ranges of
   consecutive indices), or for g = nregion the boundary springs of colour q, whose ends lie
   in two regions.  Regions share no node, so each is projected on its own, colour after
   colour; the boundary follows. */
struct ms_colouring {
    int64_t nspring;
    int64_t ncolour;
    int64_t nregion;
    int64_t* start;   /* segment starts in springs ((nregion + 1) ncolour + 1) */
    int32_t* springs; /* (nspring) */
    int32_t* pairs;   /* the nodes of springs[r] (nspring x 2), for locality */
    double h;         /* the step size params were made for (0: none yet) */
    double* params;   /* rows of springs[r]'s rest length, alpha~, gamma, 1 / denominator,
                         w_i and w_j for the step size of the call, refreshed at every step
                         call (MS_XPBD_PARAMS x nspring) */
    double* lambda;   /* the multipliers, by position in springs (nspring) */
    double* rows;     /* the positions being projected and those at the start of the step,
                         as rows (x, y, z, 0) (2 x nnode x 4) */
    double* held;     /* the normals of the nodes resting on a collider (ms_find_held;
                         nnode x 3), with colliders only, else NULL */
    int holding;      /* worker 0's, for the step: some node is held */
    ms_xpbd_kernel project; /* the projection on this processor's vector path */
};

#define MS_XPBD_PARAMS 6

/* The projection of each vector path (xpbd_kernel.h compiled once per path; the paths as
   layout.h declares them). */
#define MS_DECLARE_XPBD_KERNEL(path)                                                                     \
    void ms_xpbd_project_##path(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, \
                                double* x, int first)
MS_DECLARE_XPBD_KERNEL(plain);
MS_DECLARE_XPBD_KERNEL(sse2);
MS_DECLARE_XPBD_KERNEL(neon);
MS_DECLARE_XPBD_KERNEL(avx2);

#endif
