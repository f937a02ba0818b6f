/* Extended position-based dynamics for springs (xpbd.c). */
#ifndef MSPRINGS_XPBD_H
#define MSPRINGS_XPBD_H

#include "msprings/msprings.h"

/* The springs in colours: those of colour q are springs[start[q] .. start[q + 1]), no two
   of them sharing a node; lambda holds each one's multiplier (by position in springs). */
typedef struct ms_colouring {
    int64_t ncolour;
    int64_t* start;   /* (ncolour + 1) */
    int32_t* springs; /* (nspring) */
    int32_t* pairs;   /* the nodes of springs[r] (nspring x 2), for locality */
    double* params;   /* (rest, k, c) of springs[r], refreshed at every step call (nspring x 3) */
    double* lambda;   /* (nspring) */
} ms_colouring;

/* s->constraints, coloured on first use, with the springs' parameters copied in colour
   order (at every call: views may have changed them). */
int ms_state_ensure_colours(const ms_model* m, ms_state* s, ms_error* err);
void ms_colouring_free(void* colouring);

/* One projection of the springs at positions [begin, end) of the colouring (within one
   colour) on x, which was x_prev at the start of the step of size h; first: the first
   iteration of the step (multipliers start at 0). */
void ms_xpbd_project(const double* inv_mass, const ms_colouring* c, int64_t begin, int64_t end,
                     const double* x_prev, double* x, double h, int first);

#endif
