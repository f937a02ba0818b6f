/* The batched path of an ensemble's step call (ensemble_batch.c), for ensemble.c. */
#ifndef MSPRINGS_STEP_ENSEMBLE_BATCH_H
#define MSPRINGS_STEP_ENSEMBLE_BATCH_H

#include "msprings/msprings.h"

/* Decides which members of a call the batched path steps, and gathers them (continuing: a
   later part of a call made in parts).  Returns how many it takes, or -1 with err set if
   memory runs out (nothing changed). */
int ms_batch_prepare(ms_ensemble* e, int continuing, ms_error* err);

/* Whether member i is the batched path's in this call. */
int ms_batch_takes(const ms_ensemble* e, int64_t i);

/* The batched path's units of work (groups of members) in this call. */
int64_t ms_batch_groups(const ms_ensemble* e);

/* Steps worker's share of the batched path's groups (of workers). */
void ms_batch_run(ms_ensemble* e, double h, int64_t n, int worker, int workers);

/* After the workers: writes the batched members back into their states, and marks and puts
   back those that diverged. */
void ms_batch_finish(ms_ensemble* e);

/* Puts the batched path's members back where the call made in parts began. */
void ms_batch_roll_back(ms_ensemble* e);

void ms_batch_destroy(ms_ensemble* e);

#endif
