/* The model and state layer's private helpers: what the files above it may use of a state
 * beyond the public header (its storage, its workspaces, the ledger's arithmetic). */
#ifndef MSPRINGS_MODEL_MODEL_H
#define MSPRINGS_MODEL_MODEL_H

#include "msprings/msprings.h"
#include "platform/errors.h"
#include "platform/portable.h"

/* The workspaces a state keeps (ms_state.workspace), one slot per owner.  A state frees
   them from the last slot to the first, so a slot may hold a state whose own slots
   are freed with it (the renumbered copy). */
enum ms_workspace_slot {
    MS_WORK_CALL = 0,       /* the step driver: the start of a standalone call (step.c) */
    MS_WORK_STEP,           /* the step driver: the layout and the block sums (run.c) */
    MS_WORK_CONTACT,        /* contact: push marks, node-spring lists, gap bounds */
    MS_WORK_SELF_COLLISION, /* self-collision: adjacency and hash grid */
    MS_WORK_IMPLICIT,       /* implicit Euler: its matrix pattern, factor and work arrays */
    MS_WORK_PROJECTIVE,     /* projective dynamics: its factored matrix and work */
    MS_WORK_XPBD,           /* xpbd: spring colours and multipliers */
    MS_WORK_RANKED,         /* the step driver: the renumbered copy (ranked.c) */
    MS_WORK_SLOTS
};
_Static_assert(MS_WORK_SLOTS == MS_WORKSPACE_COUNT, "one slot per workspace owner");

static inline void* ms_workspace_get(const ms_state* s, int slot) { return s->workspace[slot].data; }

/* Puts data in the slot, to be freed with the state by destroy(data); what the slot held
   is freed first. */
void ms_workspace_set(ms_state* s, int slot, void* data, void (*destroy)(void* data));

/* ledger += what a step booked; ledger += the integrated flows of its forces. */
void ms_ledger_add(ms_ledger* ledger, const ms_ledger* booked);
void ms_ledger_add_flow(ms_ledger* ledger, const ms_flow* flow);
int ms_ledger_finite(const ms_ledger* ledger);

/* flow += weight * rate: a step integrates its forces' power with its own quadrature. */
void ms_flow_add(ms_flow* flow, const ms_flow* rate, double weight);
int ms_flow_finite(const ms_flow* flow);

/* The second half of the double buffer (s->x_next, s->v_next), allocated on first use. */
int ms_state_ensure_next(const ms_model* m, ms_state* s, ms_error* err);

/* Stage storage for Verlet, RK4, projective dynamics and xpbd, allocated on first use: 3
   arrays of nnode x 3. */
int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err);

/* Checks that the state's colliders are the model's, row for row. */
int ms_state_same_colliders(const ms_model* m, const ms_state* s, ms_error* err);

/* Room for count colliders in the state's arrays. */
int ms_state_reserve_colliders(ms_state* s, int64_t count, ms_error* err);

/* Moves every collider of the state by its velocity times h. */
void ms_state_move_colliders(const ms_model* m, ms_state* s, double h);

#endif
