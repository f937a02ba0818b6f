/* The backward and tangent passes of a recorded run (msprings/gradient.h).
 *
 * The backward pass takes the stretches between checkpoints from the last to the first.
 * For each it steps the stretch again from its checkpoint with ms_step, one step per call,
 * keeping the state before every step, and checks that it arrives at the next checkpoint
 * bit for bit (the same code on the same state and model; any number of workers gives the
 * same bits); then it takes the stretch's steps back with ms_adjoint_step, adding each
 * record's dL/dx and dL/dv where the record was made.  The memory is the checkpoints and
 * one stretch of states; with two threads, two: a second thread steps each stretch again
 * while the calling thread takes the one after it back (the pipeline below).  The tangent
 * pass steps the run forward once, carrying every direction's tangent along with
 * ms_tangent_step.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform/thread.h"
#include "solvers/adjoint.h"
#include "step/step.h"

/* Seconds between two calls of the caller's interruption check. */
#define CHECK_SECONDS 0.025

int ms_gradient_check(const ms_model* m, ms_error* err) {
    const ms_options* opt = &m->opt;
    const char* integrator = NULL;
    switch (opt->integrator) {
    case MS_EXPLICIT_EULER: case MS_SYMPLECTIC_EULER: case MS_VELOCITY_VERLET: case MS_RK4:
    case MS_IMPLICIT_EULER: break;
    case MS_PROJECTIVE: integrator = "projective"; break;
    case MS_XPBD: integrator = "xpbd"; break;
    default: integrator = "this integrator"; break;
    }
    if (integrator != NULL)
        return ms_error_set(err, MS_ERR_VALUE,
                            "%s has no gradient here: differentiable runs use symplectic_euler, explicit_euler, "
                            "velocity_verlet, rk4 or implicit_euler",
                            integrator);
    if (opt->strain_limiting)
        return ms_error_set(err, MS_ERR_VALUE, "strain limiting has no gradient here: set strain_limit = None");
    if (opt->self_collision > 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "self-collision has no gradient here: set self_collision = 0");
    const ms_air* air = &opt->air;
    if (m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0))
        return ms_error_set(err, MS_ERR_VALUE,
                            "the air on the faces (drag_coefficient, lift_coefficient) has no gradient here: set "
                            "both to 0 for a differentiable run");
    if (opt->drag != 0.0 && ms_air_has_wind(air))
        return ms_error_set(err, MS_ERR_VALUE,
                            "drag with wind has no gradient here: set the wind and gusts to 0 (drag alone is fine)");
    return MS_OK;
}

static int check_run(const ms_model* m, const ms_gradient_run* run, ms_error* err) {
    if (ms_gradient_check(m, err)) return MS_ERR_VALUE;
    if (ms_time_step_check(run->h, err)) return MS_ERR_VALUE;
    if (run->steps < 1 || run->checkpoint_every < 1 || run->nrecord < 1 || run->checkpoints == NULL ||
        run->record_steps == NULL)
        return ms_error_set(err, MS_ERR_VALUE, "a run needs steps >= 1, checkpoint_every >= 1 and records");
    if (run->checkpoint_every > run->steps)
        return ms_error_set(err, MS_ERR_VALUE, "checkpoint_every = %lld must be at most steps = %lld",
                            (long long)run->checkpoint_every, (long long)run->steps);
    for (int64_t r = 0; r < run->nrecord; ++r) {
        const int64_t step = run->record_steps[r];
        if (step < 0 || step > run->steps || (r > 0 && step < run->record_steps[r - 1]))
            return ms_error_set(err, MS_ERR_VALUE, "record_steps must ascend in [0, %lld]", (long long)run->steps);
    }
    return MS_OK;
}

static int64_t checkpoint_count(const ms_gradient_run* run) { /* no overflow for any steps >= every >= 1 */
    return run->steps / run->checkpoint_every + (run->steps % run->checkpoint_every != 0) + 1;
}

/* The caller's check, about every CHECK_SECONDS; or, for a worker that must not call it,
   whether halt has reached halt_at (looked at every step). */
typedef struct pacer {
    const ms_interrupt* interrupt;
    double checked_at;
    ms_counter* halt;
    long long halt_at;
} pacer;

static int should_stop(pacer* p) {
    if (p->halt != NULL) return ms_counter_value(p->halt) >= p->halt_at;
    if (p->interrupt == NULL || p->interrupt->check == NULL) return 0;
    const double now = ms_clock_seconds();
    if (now - p->checked_at < CHECK_SECONDS) return 0;
    p->checked_at = now;
    return p->interrupt->check(p->interrupt->context) != 0;
}

/* One step of s from the state it holds, as the recorded run took it; moved: x and v were
   written since the last step call (so it checks them again); with colliders, the state
   before its contact pass goes into before_contact. */
static int step_once(const ms_model* m, ms_state* s, double h, int* first, int moved, double* before_contact,
                     ms_error* err) {
    ms_step_options options = {0};
    options.parameters_unchanged = !*first;
    options.motion_unchanged = !*first && !moved;
    options.forces_unread = 1;
    options.before_contact = before_contact;
    *first = 0;
    return ms_step(m, s, h, 1, &options, err);
}

static void inverse_masses(const ms_model* m, double* inv_mass) {
    for (int64_t i = 0; i < m->nnode; ++i) inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
}

/* ---- contact: what the passes keep of it, per step of a stretch ----------------------
   A step with colliders is its integrator's step, then contact on the state that step
   reached (kernels.h): the passes take the integrator's derivative up to that state, kept
   by the step itself (ms_step_options.before_contact), and contact's derivative from it.
   The colliders' centres at each step are the run's: a moving collider is where the run's
   steps moved it, step by step from where it started, as ms_step moves it. */

typedef struct contact_tape {
    int64_t ncollider;
    double* before;     /* x then v before contact at each step of a stretch (stretch x 2 x nnode x 3) */
    double* centers;    /* the colliders' centres at the start of each step of a stretch (stretch x ncollider x 3) */
    double* at_checkpoint; /* and at each checkpoint (ncheckpoint x ncollider x 3) */
    double* lx_old;     /* the adjoint of the step's start through contact (nnode x 3) */
    void* scratch;
    /* implicit Euler with a collider at rest: the nodes each step held (ms_find_held) */
    double* held;       /* their normals (stretch x nnode x 3) */
    uint8_t* holding;   /* whether the step held any (stretch) */
    double* hessian;    /* the normals' derivatives at one step (nnode x 9) */
} contact_tape;

static void contact_tape_free(contact_tape* t) {
    free(t->before);
    free(t->centers);
    free(t->at_checkpoint);
    free(t->lx_old);
    free(t->scratch);
    free(t->held);
    free(t->holding);
    free(t->hessian);
}

/* Implicit Euler holds the nodes resting on a collider at rest inside its solve. */
static int holds(const ms_model* m) {
    if (m->opt.integrator != MS_IMPLICIT_EULER) return 0;
    for (int64_t k = 0; k < m->ncollider; ++k) {
        const double* velocity = m->colliders[k].velocity;
        if (velocity[0] == 0.0 && velocity[1] == 0.0 && velocity[2] == 0.0) return 1;
    }
    return 0;
}

/* Room for steps steps and ncheckpoint checkpoints (none without colliders); -1 if memory ran out. */
static int contact_tape_make(const ms_model* m, int64_t steps, int64_t ncheckpoint, contact_tape* t) {
    memset(t, 0, sizeof *t);
    if (m->ncollider == 0) return 0;
    const size_t n3 = 3 * (size_t)m->nnode, c3 = 3 * (size_t)m->ncollider;
    t->ncollider = m->ncollider;
    t->before = malloc(sizeof(double) * 2 * n3 * (size_t)steps);
    t->centers = malloc(sizeof(double) * c3 * (size_t)steps);
    t->at_checkpoint = malloc(sizeof(double) * c3 * (size_t)ncheckpoint);
    t->lx_old = malloc(sizeof(double) * n3);
    t->scratch = malloc(ms_contact_derivative_bytes(m));
    if (holds(m)) {
        t->held = malloc(sizeof(double) * n3 * (size_t)steps);
        t->holding = malloc((size_t)steps);
        t->hessian = malloc(sizeof(double) * 3 * n3);
    }
    if (t->before == NULL || t->centers == NULL || t->at_checkpoint == NULL || t->lx_old == NULL ||
        t->scratch == NULL || (holds(m) && (t->held == NULL || t->holding == NULL || t->hessian == NULL))) {
        contact_tape_free(t);
        return -1;
    }
    return 0;
}

/* Where the colliders are at every checkpoint: moved from s's centres (the run's start)
   step by step; s's centres are left at the run's end. */
static void contact_checkpoints(const ms_model* m, ms_state* s, const ms_gradient_run* run, contact_tape* t) {
    if (t->ncollider == 0) return;
    const size_t bytes = sizeof(double) * 3 * (size_t)t->ncollider;
    memcpy(t->at_checkpoint, s->collider_center, bytes);
    for (int64_t k = 1; k <= run->steps; ++k) {
        ms_state_move_colliders(m, s, run->h);
        if (k % run->checkpoint_every == 0 || k == run->steps)
            memcpy(t->at_checkpoint + 3 * t->ncollider * ((k + run->checkpoint_every - 1) / run->checkpoint_every),
                   s->collider_center, bytes);
    }
}

/* Keeps the colliders' centres before step k of a stretch, and says where that step keeps
   its state before contact (NULL without colliders).  For implicit Euler it also finds the
   nodes the step will hold, as the step finds them: from the forces at the step's start,
   summed as the step sums them.  *status: MS_OK, or MS_ERR_MEMORY with err set. */
static double* contact_keep(const ms_model* m, ms_state* s, contact_tape* t, int64_t k, double h, int* status,
                            ms_error* err) {
    if (t->ncollider == 0 || *status != MS_OK) return NULL;
    memcpy(t->centers + 3 * t->ncollider * k, s->collider_center, sizeof(double) * 3 * (size_t)t->ncollider);
    if (t->held != NULL) {
        for (int64_t i = 0; i < m->nnode; ++i) s->inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
        *status = ms_state_forces(m, s, NULL, err);
        if (*status != MS_OK) return NULL;
        t->holding[k] = (uint8_t)ms_find_held(m, s, s->x, s->v, s->f, h, t->held + 3 * (size_t)m->nnode * (size_t)k);
    }
    return t->before + 6 * (size_t)m->nnode * (size_t)k;
}

/* The held nodes of step k of a stretch that started at x, or NULL for none. */
static const ms_held_contact* contact_held(const ms_model* m, contact_tape* t, int64_t k, const double* x,
                                           ms_held_contact* held) {
    if (t->held == NULL || !t->holding[k]) return NULL;
    held->normal = t->held + 3 * (size_t)m->nnode * (size_t)k;
    held->hessian = t->hessian;
    ms_held_hessians(m, t->centers + 3 * t->ncollider * k, x, held->normal, t->hessian);
    return held;
}

static int out_of_memory(ms_error* err, const ms_model* m) {
    return ms_error_set(err, MS_ERR_MEMORY, "out of memory for the gradient of a run of %lld nodes",
                        (long long)m->nnode);
}

static int unsolved(ms_error* err, int64_t step) {
    return ms_error_set(err, MS_ERR_VALUE,
                        "the linear solve of implicit Euler's derivative did not converge at step %lld: use a smaller "
                        "dt",
                        (long long)step);
}

static int not_reproduced(ms_error* err, int64_t step) {
    return ms_error_set(err, MS_ERR_DIVERGED,
                        "stepping the run again from its checkpoint did not reproduce the state recorded at step %lld",
                        (long long)step);
}

/* ---- the backward pass ----------------------------------------------------------------
   What the pass shares between the replay of stretches and their adjoint. */
typedef struct backward {
    const ms_model* m;
    ms_state* s;
    const ms_gradient_run* run;
    const double* dx_records;
    const double* dv_records;
    double* grad_x;
    double* grad_v;
    ms_parameter_arrays* grad;
    contact_tape* contact;
    ms_spring_adjoint* springs;
    ms_adjoint_preconditioner* factor;
    double* work;
    const double* inv_mass;
    pacer* p;
    int first;     /* no step taken yet (step_once) */
    int64_t r;     /* the last record not yet added */
} backward;

/* Steps stretch c again from its checkpoint, keeping x then v before each of its steps and
   after its last in states, and checks that it reaches the next checkpoint bit for bit.
   p: the caller's check, or NULL for none. */
static int replay(backward* b, int64_t c, double* states, pacer* p, ms_error* err) {
    const ms_model* m = b->m;
    ms_state* s = b->s;
    const ms_gradient_run* run = b->run;
    contact_tape* contact = b->contact;
    const int64_t n3 = 3 * m->nnode, every = run->checkpoint_every;
    const size_t state_bytes = sizeof(double) * (size_t)n3;
    const int64_t begin = c * every, end = begin + every < run->steps ? begin + every : run->steps;
    const double* start = run->checkpoints + 2 * n3 * c;
    memcpy(s->x, start, state_bytes);
    memcpy(s->v, start + n3, state_bytes);
    if (contact->ncollider > 0)
        memcpy(s->collider_center, contact->at_checkpoint + 3 * contact->ncollider * c,
               sizeof(double) * 3 * (size_t)contact->ncollider);
    int status = MS_OK, first = b->first; /* b's fields are the adjoint's while this runs beside it */
    for (int64_t k = begin; k < end && status == MS_OK; ++k) {
        double* kept = states + 2 * n3 * (k - begin);
        memcpy(kept, s->x, state_bytes);
        memcpy(kept + n3, s->v, state_bytes);
        double* before_contact = contact_keep(m, s, contact, k - begin, run->h, &status, err);
        if (status == MS_OK)
            status = step_once(m, s, run->h, &first, k == begin || contact->ncollider > 0, before_contact, err);
        if (status == MS_OK && p != NULL && should_stop(p)) status = MS_ERR_INTERRUPTED;
    }
    b->first = first;
    if (status != MS_OK) return status;
    const double* next = start + 2 * n3;
    if (memcmp(s->x, next, state_bytes) != 0 || memcmp(s->v, next + n3, state_bytes) != 0)
        return not_reproduced(err, end);
    memcpy(states + 2 * n3 * (end - begin), next, 2 * state_bytes);
    return MS_OK;
}

/* Takes the steps of stretch c back, from the states its replay kept. */
static int take_back(backward* b, int64_t c, const double* states, ms_error* err) {
    const ms_model* m = b->m;
    const ms_gradient_run* run = b->run;
    contact_tape* contact = b->contact;
    const int64_t n3 = 3 * m->nnode, every = run->checkpoint_every;
    const size_t state_bytes = sizeof(double) * (size_t)n3;
    const int64_t begin = c * every, end = begin + every < run->steps ? begin + every : run->steps;
    double *grad_x = b->grad_x, *grad_v = b->grad_v;
    const double* external = b->s->external; /* read once: the replay beside writes into s */
    int64_t r = b->r;
    int status = MS_OK;
    for (int64_t k = end - 1; k >= begin && status == MS_OK; --k) {
        for (; r >= 0 && run->record_steps[r] == k + 1; --r) {
            for (int64_t q = 0; q < n3; ++q) grad_x[q] += b->dx_records[n3 * r + q];
            if (b->dv_records != NULL)
                for (int64_t q = 0; q < n3; ++q) grad_v[q] += b->dv_records[n3 * r + q];
        }
        const double* kept = states + 2 * n3 * (k - begin);
        const double* after = kept + 2 * n3;
        if (contact->ncollider > 0) { /* contact, then the integrator's step up to it */
            after = contact->before + 2 * n3 * (k - begin);
            memset(contact->lx_old, 0, state_bytes);
            ms_contact_adjoint(m, b->inv_mass, contact->centers + 3 * contact->ncollider * (k - begin), run->h, kept,
                               after, after + n3, grad_x, grad_v, contact->lx_old, contact->scratch);
        }
        ms_held_contact on;
        const ms_held_contact* held = contact_held(m, contact, k - begin, kept, &on);
        if (held != NULL ? ms_implicit_held_adjoint(m, b->inv_mass, external, kept + n3, after, after + n3, run->h,
                                                    held, grad_x, grad_v, b->grad, b->factor, b->work)
                         : ms_adjoint_step(m, b->inv_mass, external, kept, kept + n3, after, after + n3, run->h,
                                           grad_x, grad_v, b->grad, b->factor, b->springs, b->work)) {
            status = unsolved(err, k + 1);
            break;
        }
        if (contact->ncollider > 0)
            for (int64_t q = 0; q < n3; ++q) grad_x[q] += contact->lx_old[q];
        if (should_stop(b->p)) status = MS_ERR_INTERRUPTED;
    }
    b->r = r;
    return status;
}

/* The pipeline: worker 1 steps the stretches again from the last to the first, the i-th
   into half i % 2 of the states, while worker 0 (the calling thread, which alone runs the
   caller's check) takes them back in the same order.  Each hands the other a count: the
   stretches stepped again, the stretches taken back (a half is stepped into again once the
   stretch before in it was taken back).  They sleep while they wait. */
typedef struct pipeline {
    backward* b;
    double* states;
    size_t stretch_doubles;
    int64_t last;              /* the last stretch, stepped again first */
    ms_counter* replayed;      /* stretches stepped again (or failed: replay_status) */
    ms_counter* taken_back;    /* stretches taken back; all of them once worker 0 stops */
    int replay_status[2];      /* of the stretch in each half, written before replayed is raised */
    ms_error replay_err;       /* the replay's failure (it stops at the first) */
    int status;                /* worker 0's; when it stops early it raises taken_back past last + 1 */
    ms_error* err;
} pipeline;

static void pipeline_replay(pipeline* pl) {
    const ms_fp_mode found = ms_flush_subnormals(); /* as the steps compute (portable.h) */
    pacer halted = {NULL, 0.0, pl->taken_back, pl->last + 2}; /* worker 0 stopped early */
    for (int64_t i = 0; i <= pl->last; ++i) {
        /* half i % 2 is free once stretch i - 2 was taken back */
        if (i >= 2 && ms_counter_wait(pl->taken_back, i - 1, -1.0) >= halted.halt_at) break;
        const int status = replay(pl->b, pl->last - i, pl->states + (size_t)(i % 2) * pl->stretch_doubles, &halted,
                                  &pl->replay_err);
        pl->replay_status[i % 2] = status;
        ms_counter_add(pl->replayed, 1);
        if (status != MS_OK) break;
    }
    ms_restore_fp(found);
}

static void pipeline_take_back(pipeline* pl) {
    int status = MS_OK;
    for (int64_t i = 0; i <= pl->last && status == MS_OK; ++i) {
        while (ms_counter_wait(pl->replayed, i + 1, CHECK_SECONDS) < i + 1) /* the caller's check while it waits */
            if (should_stop(pl->b->p)) {
                status = MS_ERR_INTERRUPTED;
                break;
            }
        if (status != MS_OK) break;
        status = pl->replay_status[i % 2];
        if (status != MS_OK) {
            *pl->err = pl->replay_err;
            break;
        }
        status = take_back(pl->b, pl->last - i, pl->states + (size_t)(i % 2) * pl->stretch_doubles, pl->err);
        if (status == MS_OK) ms_counter_add(pl->taken_back, 1);
    }
    if (status != MS_OK) ms_counter_add(pl->taken_back, pl->last + 2); /* sends worker 1 home */
    pl->status = status;
}

static void pipeline_work(void* context, int worker) {
    if (worker == 0)
        pipeline_take_back(context);
    else
        pipeline_replay(context);
}

/* Whether the pass steps each stretch again on a second worker while it takes the next one
   back: with two workers or more, more than one stretch, no colliders (their tape is kept
   for one stretch) and a step that runs on one worker. */
static int pipelined(const ms_model* m, const ms_state* s, const ms_gradient_run* run) {
    return run->threads >= 2 && checkpoint_count(run) > 2 && m->ncollider == 0 && ms_step_workers(m, s) == 1;
}

int ms_gradient_backward(const ms_model* m, ms_state* s, const ms_gradient_run* run, const double* dx_records,
                         const double* dv_records, double* grad_x, double* grad_v, ms_parameter_arrays* grad,
                         ms_error* err) {
    if (check_run(m, run, err)) return MS_ERR_VALUE;
    const int64_t n3 = 3 * m->nnode, every = run->checkpoint_every;
    const size_t state_bytes = sizeof(double) * (size_t)n3;
    const int64_t stretch = every < run->steps ? every : run->steps;
    int two = pipelined(m, s, run); /* two stretches of states: one replayed, one taken back */
    if ((uint64_t)stretch + 1 > SIZE_MAX / (2 * (2 * state_bytes)))
        return ms_error_set(err, MS_ERR_MEMORY, "a stretch of %lld steps between checkpoints does not fit in memory",
                            (long long)stretch);
    const size_t stretch_doubles = 2 * (size_t)n3 * (size_t)(stretch + 1); /* x then v at each step of a stretch */
    double* states = two ? malloc(sizeof(double) * stretch_doubles * 2) : NULL;
    if (states == NULL) { /* one stretch, one thread */
        two = 0;
        states = malloc(sizeof(double) * stretch_doubles);
    }
    double* work = malloc(sizeof(double) * (size_t)(ms_adjoint_work_size(m) + m->nnode));
    contact_tape contact;
    if (states == NULL || work == NULL || contact_tape_make(m, stretch, checkpoint_count(run), &contact)) {
        free(states);
        free(work);
        return out_of_memory(err, m);
    }
    contact_checkpoints(m, s, run, &contact);
    double* inv_mass = work + ms_adjoint_work_size(m);
    inverse_masses(m, inv_mass);
    ms_error unused;
    ms_spring_adjoint* springs = ms_spring_adjoint_create(m, err);
    if (springs == NULL) {
        contact_tape_free(&contact);
        free(states);
        free(work);
        return MS_ERR_MEMORY;
    }
    ms_adjoint_preconditioner* factor = ms_adjoint_preconditioner_create(m, &unused); /* NULL: a diagonal one */
    const ms_fp_mode found = ms_flush_subnormals();
    pacer p = {run->interrupt, ms_clock_seconds(), NULL, 0};
    memset(grad_x, 0, state_bytes);
    memset(grad_v, 0, state_bytes);
    backward b = {m, s, run, dx_records, dv_records, grad_x, grad_v, grad, &contact, springs, factor, work, inv_mass,
                  &p, 1, run->nrecord - 1};
    int status = MS_OK;
    const int64_t last = checkpoint_count(run) - 2;
    pipeline pl = {&b, states, stretch_doubles, last, NULL, NULL, {MS_OK, MS_OK}, {0}, MS_OK, err};
    if (two) {
        pl.replayed = ms_counter_create();
        pl.taken_back = ms_counter_create();
    }
    if (pl.replayed != NULL && pl.taken_back != NULL && ms_threads_run(2, pipeline_work, &pl) == 0) {
        status = pl.status; /* the same operations on the same numbers as one stretch after the other */
    } else {
        for (int64_t c = last; c >= 0 && status == MS_OK; --c) {
            status = replay(&b, c, states, &p, err);
            if (status == MS_OK) status = take_back(&b, c, states, err);
        }
    }
    ms_counter_destroy(pl.replayed);
    ms_counter_destroy(pl.taken_back);
    for (; status == MS_OK && b.r >= 0; --b.r) { /* the records of the initial state */
        for (int64_t q = 0; q < n3; ++q) grad_x[q] += dx_records[n3 * b.r + q];
        if (dv_records != NULL)
            for (int64_t q = 0; q < n3; ++q) grad_v[q] += dv_records[n3 * b.r + q];
    }
    if (status == MS_OK) ms_spring_adjoint_collect(springs, grad);
    ms_restore_fp(found);
    ms_adjoint_preconditioner_destroy(factor);
    contact_tape_free(&contact);
    ms_spring_adjoint_destroy(springs);
    free(states);
    free(work);
    if (status == MS_ERR_INTERRUPTED) return ms_error_set(err, MS_ERR_INTERRUPTED, "the backward pass was interrupted");
    return status;
}

/* Copies every direction's tangent into record r. */
static void record_tangent(int64_t nrecord, int64_t n3, int64_t r, int64_t ndirection, const double* dx,
                           const double* dv, double* record_dx, double* record_dv) {
    for (int64_t d = 0; d < ndirection; ++d) {
        memcpy(record_dx + n3 * (nrecord * d + r), dx + n3 * d, sizeof(double) * (size_t)n3);
        if (record_dv != NULL) memcpy(record_dv + n3 * (nrecord * d + r), dv + n3 * d, sizeof(double) * (size_t)n3);
    }
}

int ms_gradient_tangent(const ms_model* m, ms_state* s, const ms_gradient_run* run, int64_t ndirection,
                        const double* dx0, const double* dv0, const ms_parameter_arrays* directions,
                        double* record_dx, double* record_dv, ms_error* err) {
    if (check_run(m, run, err)) return MS_ERR_VALUE;
    if (ndirection < 1) return ms_error_set(err, MS_ERR_VALUE, "ndirection = %lld must be >= 1", (long long)ndirection);
    const int64_t n3 = 3 * m->nnode, every = run->checkpoint_every;
    const size_t state_bytes = sizeof(double) * (size_t)n3;
    double* tangents = malloc(2 * state_bytes * (size_t)(ndirection + 1)); /* dx of every direction, dv, the state */
    double* work = malloc(sizeof(double) * (size_t)(ms_adjoint_work_size(m) + m->nnode));
    contact_tape contact; /* one step's, and lx_old for the tangent of the step's start */
    if (tangents == NULL || work == NULL || contact_tape_make(m, 1, 1, &contact)) {
        free(tangents);
        free(work);
        return out_of_memory(err, m);
    }
    double* dx = tangents;
    double* dv = tangents + n3 * ndirection;
    double* before = tangents + 2 * n3 * ndirection; /* x then v before the step */
    memcpy(dx, dx0, state_bytes * (size_t)ndirection);
    memcpy(dv, dv0, state_bytes * (size_t)ndirection);
    double* inv_mass = work + ms_adjoint_work_size(m);
    inverse_masses(m, inv_mass);
    ms_error unused;
    ms_adjoint_preconditioner* factor = ms_adjoint_preconditioner_create(m, &unused); /* NULL: a diagonal one */
    const ms_fp_mode found = ms_flush_subnormals();
    pacer p = {run->interrupt, ms_clock_seconds(), NULL, 0};
    memcpy(s->x, run->checkpoints, state_bytes);
    memcpy(s->v, run->checkpoints + n3, state_bytes);
    int status = MS_OK, first = 1;
    int64_t r = 0;
    for (int64_t k = 0; k < run->steps && status == MS_OK; ++k) {
        for (; r < run->nrecord && run->record_steps[r] == k; ++r)
            record_tangent(run->nrecord, n3, r, ndirection, dx, dv, record_dx, record_dv);
        memcpy(before, s->x, state_bytes);
        memcpy(before + n3, s->v, state_bytes);
        double* before_contact = contact_keep(m, s, &contact, 0, run->h, &status, err);
        if (status == MS_OK)
            status = step_once(m, s, run->h, &first, k == 0 || contact.ncollider > 0, before_contact, err);
        /* with colliders, the integrator's step up to contact, then contact */
        const double* after = contact.ncollider > 0 ? contact.before : s->x;
        ms_held_contact on;
        const ms_held_contact* held = status == MS_OK ? contact_held(m, &contact, 0, before, &on) : NULL;
        for (int64_t d = 0; d < ndirection && status == MS_OK; ++d) {
            if (contact.ncollider > 0) memcpy(contact.lx_old, dx + n3 * d, state_bytes); /* dx of the start */
            if (held != NULL ? ms_implicit_held_tangent(m, inv_mass, s->external, before + n3, after, after + n3,
                                                        run->h, held, dx + n3 * d, dv + n3 * d, &directions[d], factor,
                                                        work)
                             : ms_tangent_step(m, inv_mass, s->external, before, before + n3, after, after + n3,
                                               run->h, dx + n3 * d, dv + n3 * d, &directions[d], factor, work))
                status = unsolved(err, k + 1);
            else if (contact.ncollider > 0)
                ms_contact_tangent(m, inv_mass, contact.centers, run->h, before, after, after + n3, contact.lx_old,
                                   dx + n3 * d, dv + n3 * d);
        }
        if (status == MS_OK && (k + 1) % every == 0) {
            const double* kept = run->checkpoints + 2 * n3 * ((k + 1) / every);
            if (memcmp(s->x, kept, state_bytes) != 0 || memcmp(s->v, kept + n3, state_bytes) != 0)
                status = not_reproduced(err, k + 1);
        }
        if (status == MS_OK && should_stop(&p)) status = MS_ERR_INTERRUPTED;
    }
    if (status == MS_OK) {
        const double* last = run->checkpoints + 2 * n3 * (checkpoint_count(run) - 1);
        if (memcmp(s->x, last, state_bytes) != 0 || memcmp(s->v, last + n3, state_bytes) != 0)
            status = not_reproduced(err, run->steps);
        for (; r < run->nrecord; ++r) record_tangent(run->nrecord, n3, r, ndirection, dx, dv, record_dx, record_dv);
    }
    ms_restore_fp(found);
    ms_adjoint_preconditioner_destroy(factor);
    contact_tape_free(&contact);
    free(tangents);
    free(work);
    if (status == MS_ERR_INTERRUPTED) return ms_error_set(err, MS_ERR_INTERRUPTED, "the tangent pass was interrupted");
    return status;
}
