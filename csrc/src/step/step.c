/* The step driver: ms_step checks a call, keeps where it starts, runs it (run.c, or on the
 * renumbered copy, ranked.c) and undoes it if it fails; and the forces of a state outside
 * a step (ms_state_forces).
 *
 * A call is all or nothing.  A step call that fails after its checks (a divergence, an
 * interruption, memory running out) leaves the state as it found it: everything a call
 * changes is kept as the call begins and put back on the one way out of a failed call.  A
 * call of one step needs no copy of x, v and f: its step writes the next state into the
 * other half of the double buffer, or in place only once it is known to be finite, and a
 * diverged call puts f back itself (run.c).  Longer calls copy x and v once, into storage
 * made on first use; f they put back themselves as well.  A call made in parts (ms_call)
 * copies f too: the parts after the first write it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "step/ranked.h"
#include "step/step.h"

/* The start of a call, which a failure of the call (or of a part continuing it) goes back
   to: the caller's for a call made in parts, the state's (slot MS_WORK_CALL) for a call
   that stands alone. */
struct ms_call {
    int kept;                /* holds a start */
    int motion;              /* x and v are in motion_copy (else the call's one step keeps them) */
    int forces;              /* f is in motion_copy (else the call puts it back itself) */
    double t;
    int64_t steps;
    ms_ledger ledger;        /* before the call booked the caller's changes (ledger.user) */
    int watched;
    double watched_energy;
    ms_solver_stats solver;
    int64_t collider_count;
    int64_t collider_capacity;
    double* collider_center; /* where the colliders were          (collider_capacity x 3) */
    int64_t copy_nodes;      /* nodes motion_copy has room for */
    int copy_arrays;         /* arrays of copy_nodes x 3 it has room for: 2 (x, v) or 3 (and f) */
    double* motion_copy;     /* x, v and f                         (copy_arrays x copy_nodes x 3) */
};

ms_call* ms_call_create(void) { return calloc(1, sizeof(ms_call)); }

void ms_call_destroy(ms_call* call) {
    if (call == NULL) return;
    free(call->collider_center);
    free(call->motion_copy);
    free(call);
}

static void call_free(void* call) { ms_call_destroy(call); }

void ms_call_end(ms_call* call) {
    if (call != NULL) call->kept = 0;
}

/* Keeps in start what a step call may change, with copies of x and v if copies, and of f
   too if forces.  Returns MS_OK or MS_ERR_MEMORY (nothing changed but the storage). */
static int keep_call_start(const ms_model* m, const ms_state* s, ms_call* start, int copies, int forces,
                           ms_error* err) {
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    if (s->collider_count > start->collider_capacity) {
        double* center = realloc(start->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
        if (center == NULL)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the positions of %lld colliders",
                                (long long)s->collider_count);
        start->collider_center = center;
        start->collider_capacity = s->collider_count;
    }
    /* room for x and v, and f for a call made in parts (a standalone call puts f back itself) */
    const int arrays = forces ? 3 : 2;
    if (copies && (start->copy_nodes != m->nnode || start->copy_arrays < arrays)) {
        free(start->motion_copy);
        start->copy_nodes = 0;
        start->motion_copy = malloc((size_t)arrays * bytes);
        if (start->motion_copy == NULL)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the state of %lld nodes a step starts from",
                                (long long)m->nnode);
        start->copy_nodes = m->nnode;
        start->copy_arrays = arrays;
    }
    start->kept = 1;
    start->motion = copies;
    start->forces = forces;
    start->t = s->t;
    start->steps = s->steps;
    start->ledger = s->ledger;
    start->watched = s->watched;
    start->watched_energy = s->watched_energy;
    start->solver = s->solver;
    start->collider_count = s->collider_count;
    if (s->collider_count > 0)
        memcpy(start->collider_center, s->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    if (copies) {
        memcpy(start->motion_copy, s->x, bytes);
        memcpy(start->motion_copy + 3 * m->nnode, s->v, bytes);
    }
    if (forces) memcpy(start->motion_copy + 6 * m->nnode, s->f, bytes);
    return MS_OK;
}

/* Puts back what keep_call_start kept, and forgets it. */
static void roll_back(const ms_model* m, ms_state* s, ms_call* start) {
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    if (start->motion) {
        memcpy(s->x, start->motion_copy, bytes);
        memcpy(s->v, start->motion_copy + 3 * m->nnode, bytes);
    }
    if (start->forces) memcpy(s->f, start->motion_copy + 6 * m->nnode, bytes);
    s->t = start->t;
    s->steps = start->steps;
    s->ledger = start->ledger;
    s->watched = start->watched;
    s->watched_energy = start->watched_energy;
    s->solver = start->solver;
    if (s->collider_count == start->collider_count && s->collider_count > 0)
        memcpy(s->collider_center, start->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    /* the renumbered copy holds where the failed call got to: copied in again next call */
    ms_ranked_forget(s);
    start->kept = 0;
}

int ms_call_roll_back(const ms_model* m, ms_state* s, ms_call* call) {
    if (call == NULL || !call->kept || !call->forces) return 0;
    roll_back(m, s, call);
    return 1;
}

/* The message of a call that diverged or was interrupted (status), while s is at its last
   finite (completed) step and start holds where the call began. */
static void describe_failure(const ms_state* s, const ms_call* start, int status, double h, ms_error* err) {
    const int64_t step = s->steps + 1;
    const double time = s->t + h;
    if (status == MS_ERR_INTERRUPTED)
        ms_error_set(err, MS_ERR_INTERRUPTED,
                     "the step call was interrupted in its step %lld (t = %g s). The system is as it was "
                     "before the call (t = %g s)",
                     (long long)(step - start->steps), time, start->t);
    else
        ms_error_set(err, MS_ERR_DIVERGED,
                     "the motion blew up at t = %g s (step %lld of this call, dt = %g s): a position or "
                     "velocity became non-finite. The system is as it was before the call (t = %g s). "
                     "Use a smaller dt, more damping or a more stable integrator",
                     time, (long long)(step - start->steps), h, start->t);
    if (err != NULL) {
        err->step = step;
        err->time = time;
        err->call_step = step - start->steps;
    }
}

/* The values of the model a step depends on: all of them if the parameters (mass,
   pinned, rest, k, c) may have changed, else the colliders and the options. */
static int check_values(const ms_model* m, int parameters, ms_error* err) {
    if (parameters) return ms_model_check_values(m, err);
    for (int64_t k = 0; k < m->ncollider; ++k)
        if (ms_collider_check(&m->colliders[k], err)) return MS_ERR_VALUE;
    return ms_options_check(&m->opt, err);
}

/* The state's values a step depends on: all of them, or, if x and v are as the last step
   left them (finite), the external force and the colliders. */
static int check_state(const ms_model* m, const ms_state* s, int motion, ms_error* err) {
    if (motion) return ms_state_check(m, s, err);
    if (s->external != NULL && ms_check_finite_vectors(s->external, m->nnode, "external", err)) return MS_ERR_VALUE;
    if (ms_state_same_colliders(m, s, err)) return MS_ERR_VALUE;
    return ms_check_finite_vectors(s->collider_center, s->collider_count, "collider positions", err);
}

/* What the caller changed since the state was watched (not before the first step, which
   is the set-up of the initial state) goes to the ledger. */
static void book_watched(const ms_model* m, ms_state* s) {
    if (!s->watched) return;
    if (s->steps > 0) s->ledger.user += ms_mechanical_energy(m, s->x, s->v) - s->watched_energy;
    s->watched = 0;
}

/* The step's storage, made by the first call: the layout and block sums, or for a network
   whose numbering does not keep the nodes of a spring close together, the renumbered copy
   with its own. */
static int ensure_step_storage(const ms_model* m, ms_state* s, ms_error* err) {
    if (ms_step_layout(s) != NULL || ms_ranked_of(s) != NULL) return MS_OK;
    int32_t* node_order;
    if (ms_rank_nodes(m, &node_order) != 0)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory ordering %lld nodes for the step", (long long)m->nnode);
    if (node_order != NULL) return ms_ranked_create(m, s, node_order, err);
    return ms_step_storage_make(m, s, NULL, err);
}

/* The parameters were checked and read by an earlier step call: into the layout, or into
   the renumbered copy's. */
static int parameters_read(const ms_state* s) {
    const ms_layout* layout = ms_step_layout(s);
    if (layout != NULL) return layout->filled;
    return ms_ranked_of(s) != NULL && ms_ranked_filled(s);
}

int ms_step(const ms_model* m, ms_state* s, double h, int64_t n, const ms_step_options* options, ms_error* err) {
    static const ms_step_options standalone = {0};
    const ms_step_options* opt = options != NULL ? options : &standalone;
    const int parameters = !opt->parameters_unchanged || !parameters_read(s);
    const int motion = !opt->motion_unchanged;
    ms_call* call = opt->call;
    /* a part of a longer call goes back to where its first part began */
    const int continuing = call != NULL && call->kept && call->forces;
    int refused = MS_OK;
    if (ms_time_step_check(h, err))
        refused = MS_ERR_VALUE;
    else if (n < 1)
        refused = ms_error_set(err, MS_ERR_VALUE, "n = %lld must be >= 1 (number of steps)", (long long)n);
    else if (check_values(m, parameters, err) || check_state(m, s, motion, err))
        refused = MS_ERR_VALUE;
    else if (ensure_step_storage(m, s, err))
        refused = MS_ERR_MEMORY;
    if (refused != MS_OK) {
        /* a part refused after others stepped (a value written through a view between
           them): the whole call is refused, and undone */
        if (continuing) roll_back(m, s, call);
        return refused;
    }
    ms_call* start = call;
    if (start == NULL) {
        start = ms_workspace_get(s, MS_WORK_CALL);
        if (start == NULL) {
            start = ms_call_create();
            if (start == NULL)
                return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the state a step starts from");
            ms_workspace_set(s, MS_WORK_CALL, start, call_free);
        }
    }
    if (!continuing && keep_call_start(m, s, start, n > 1 || call != NULL, call != NULL, err)) return MS_ERR_MEMORY;
    book_watched(m, s);
    const int status = ms_step_layout(s) != NULL ? ms_step_call(m, s, h, n, parameters, opt, err)
                                                 : ms_ranked_step(m, s, h, n, parameters, motion, opt, err);
    if (status != MS_OK) {
        /* the one way out of a failed call: everything back as the call found it */
        if (status == MS_ERR_DIVERGED || status == MS_ERR_INTERRUPTED) describe_failure(s, start, status, h, err);
        roll_back(m, s, start);
        return status;
    }
    if (call == NULL) start->kept = 0;
    ms_error_clear(err);
    return MS_OK;
}

int ms_state_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err) {
    if (ensure_step_storage(m, s, err)) return MS_ERR_MEMORY;
    if (ms_ranked_of(s) != NULL) return ms_ranked_forces(m, s, flow, err);
    ms_run_forces(m, s, flow);
    return MS_OK;
}
