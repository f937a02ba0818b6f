/* Extended position-based dynamics for springs (xpbd.c). */
#ifndef MSPRINGS_XPBD_H
#define MSPRINGS_XPBD_H

#include "msprings/msprings.h"

/* The springs in colours: those of colour q are springs[start[q] .. start[q + 1]), no two
   of them sharing a node; lambda holds each one's multiplier (by position in springs). */
typedef struct ms_colouring ms_colouring;
/* One projection of the springs at positions [begin, end) of the colouring (within one
   colour) on x, which was x_prev at the start of the step; first: the first iteration of
   the step (multipliers start at 0); the parameters from ms_xpbd_prepare. */
typedef void (*ms_xpbd_kernel)(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, double* x,
                               int first);

struct ms_colouring {
    int64_t nspring;
    int64_t ncolour;
    int64_t* start;   /* (ncolour + 1) */
    int32_t* springs; /* (nspring) */
    int32_t* pairs;   /* the nodes of springs[r] (nspring x 2), for locality */
    double* params;   /* rows of springs[r]'s rest length, alpha~, gamma, 1 / denominator,
                         w_i and w_j for the step size of the call, refreshed at every step
                         call (MS_XPBD_PARAMS x nspring) */
    double* lambda;   /* (nspring) */
    ms_xpbd_kernel project; /* the projection on this processor's vector path */
};

#define MS_XPBD_PARAMS 6

/* s->constraints, coloured on first use. */
int ms_state_ensure_colours(const ms_model* m, ms_state* s, ms_error* err);
/* The springs' parameters for steps of size h, in colour order: at every step call, after
   s->inv_mass (views may have changed the model). */
void ms_xpbd_prepare(const ms_model* m, ms_state* s, double h);
void ms_colouring_free(void* colouring);

/* The projection of each vector path (xpbd_kernel.h compiled once per path). */
void ms_xpbd_project_plain(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, double* x,
                           int first);
void ms_xpbd_project_sse2(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, double* x,
                          int first);
void ms_xpbd_project_avx2(const ms_colouring* c, int64_t begin, int64_t end, const double* x_prev, double* x,
                          int first);

#endif
