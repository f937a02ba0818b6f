/* A network whose numbering does not keep the nodes of a spring close together steps on a
 * copy of the model and the state renumbered by rank (ranked.c), kept in the state's slot
 * MS_WORK_RANKED. */
#ifndef MSPRINGS_STEP_RANKED_H
#define MSPRINGS_STEP_RANKED_H

#include "step/step.h"

typedef struct ms_ranked {
    ms_model m;         /* the model renumbered by rank */
    ms_state* s;        /* the state renumbered by rank, with its step storage */
    int32_t* node_order; /* the node of each rank (nnode) */
    int32_t* rank;      /* the rank of each node (nnode) */
    void* buffer;       /* rank and the renumbered model's masses, pins, spring ends and triangles */
    int current;        /* the copy's x and v are the state's (set as a call or ms_state_forces
                           copies them, cleared when a call is undone) */
} ms_ranked;

/* Makes the state's copy from the ranks' order node_order (ms_rank_nodes), which it takes
   over. */
int ms_ranked_create(const ms_model* m, ms_state* s, int32_t* node_order, ms_error* err);

/* The state's renumbered copy, or NULL if it steps in its own numbering (or has not
   stepped yet). */
static inline ms_ranked* ms_ranked_of(const ms_state* s) { return ms_workspace_get(s, MS_WORK_RANKED); }

/* A step call on the copy after ms_step's checks (parameters: the masses and pins may have
   changed since the last call; motion: x and v may have been written since). */
int ms_ranked_step(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, int motion,
                   const ms_step_options* options, ms_error* err);

/* ms_state_forces on the copy. */
int ms_ranked_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err);

/* The copy read the parameters in an earlier call. */
int ms_ranked_filled(const ms_state* s);

/* The copy's x and v are to be copied in again (a call was undone). */
void ms_ranked_forget(ms_state* s);

#endif
