/* The batched path of an ensemble's step call (ensemble_batch.c), for ensemble.c. */
#ifndef MSPRINGS_STEP_ENSEMBLE_BATCH_H
#define MSPRINGS_STEP_ENSEMBLE_BATCH_H

#include "msprings/msprings.h"

/* Decides which members of a call the batched path steps, and gathers them (continuing: a
   later part of a call made in parts).  Returns how many it takes, or -1 with err set if
   memory runs out (nothing changed). */
int ms_batch_prepare(ms_ensemble* e, double h, int continuing, ms_error* err);

/* Whether member i is the batched path's in this call. */
int ms_batch_takes(const ms_ensemble* e, int64_t i);

/* The batched path's units of work (groups of members) in this call. */
int64_t ms_batch_groups(const ms_ensemble* e);

/* Steps worker's share of the batched path's groups (of workers). */
void ms_batch_run(ms_ensemble* e, double h, int64_t n, int worker, int workers);

/* After the workers: scatters the batched members back into their states, marks and puts
   back those that diverged.  Returns MS_OK. */
int ms_batch_finish(ms_ensemble* e, ms_error* err);

/* Forgets the batched path's start of a call made in parts (the members were put back). */
void ms_batch_forget(ms_ensemble* e);

void ms_batch_destroy(ms_ensemble* e);

#endif
