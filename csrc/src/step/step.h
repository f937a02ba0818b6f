/* The step driver's run of a call (run.c), for ms_step (step.c) and the renumbered copy
 * (ranked.c). */
#ifndef MSPRINGS_STEP_STEP_H
#define MSPRINGS_STEP_STEP_H

#include "kernels/team.h"

/* The step's layout and its sums per block (slot MS_WORK_STEP). */
typedef struct step_storage {
    ms_layout* layout;
    ms_node_sums* node_sums;       /* (layout->nnode_block) */
    ms_flow* block_flow;           /* (2 x layout->nblock) */
    ms_block_energy* block_energy; /* (layout->nblock) */
} step_storage;

/* Makes the step's storage: the layout (made here if layout is NULL, else taken over) and
   the step's sums per block.  MS_ERR_MEMORY if it cannot be had. */
int ms_step_storage_make(const ms_model* m, ms_state* s, ms_layout* layout, ms_error* err);

/* The state's step layout, or NULL before its first step (or when it steps renumbered). */
static inline ms_layout* ms_step_layout(const ms_state* s) {
    const step_storage* storage = ms_workspace_get(s, MS_WORK_STEP);
    return storage != NULL ? storage->layout : NULL;
}

/* A step call after ms_step's checks of its arguments and its booking of the caller's
   changes (ledger.user), with the step's storage made: n steps of h on s; parameters: the
   model's parameters may have changed since the last call (they are read again); from
   options, forces_unread, start_energy and interrupt.  Returns MS_OK, or MS_ERR_DIVERGED
   (or MS_ERR_INTERRUPTED) with x and v at the last finite (completed) step and f as the
   call found it, or MS_ERR_MEMORY (or an error of the solver's preparation); ms_step then
   undoes the call. */
int ms_step_call(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, const ms_step_options* options,
                 ms_error* err);

/* The total force at the state's x, v and time into s->f, summed exactly as a step sums
   it, with its power flows into *flow (or NULL); the step's storage made. */
void ms_run_forces(const ms_model* m, ms_state* s, ms_flow* flow);

/* The number of workers a step of this model and state may use. */
int ms_thread_count(const ms_model* m, const ms_state* s);

/* The number of workers a step call of this model and state runs on: ms_thread_count for a
   large network, else 1. */
int ms_step_workers(const ms_model* m, const ms_state* s);

#endif
