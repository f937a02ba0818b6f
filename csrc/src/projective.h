/* Projective dynamics for springs (projective.c). */
#ifndef MSPRINGS_PROJECTIVE_H
#define MSPRINGS_PROJECTIVE_H

#include "msprings/msprings.h"

typedef struct ms_projective ms_projective;

/* s->projective ready for steps of size h: its pattern made on first use (and again when
   the pins change), its factor made again when h, a mass or a stiffness changed.
   MS_ERR_VALUE if the matrix cannot be factored, MS_ERR_MEMORY, MS_ERR_INTERRUPTED if the
   caller's check (or NULL) stopped the factorisation. */
int ms_state_ensure_projective(const ms_model* m, ms_state* s, double h, const ms_interrupt* interrupt,
                               ms_error* err);
void ms_projective_free(void* solver);

struct ms_worker;

/* One step from (x, v) to (x_out, v_out) with the other forces f_ext at the start (node
   forces, dampers, air: nnode x 3), by worker w (the call's only one), which checks
   whether to stop (ms_should_stop) before each round.  Returns 1 if the result is
   finite. */
int ms_projective_step(struct ms_worker* w, const ms_model* m, ms_state* s, const double* f_ext, const double* x,
                       const double* v, double* x_out, double* v_out, double h);

#endif
