/* The backward and tangent passes of a recorded run (msprings/gradient.h).
 *
 * The backward pass takes the stretches between checkpoints from the last to the first.
 * For each it steps the stretch again from its checkpoint with ms_step, one step per call,
 * keeping the state before every step, and checks that it arrives at the next checkpoint
 * bit for bit (the same code on the same state and model; any number of workers gives the
 * same bits); then it takes the stretch's steps back with ms_adjoint_step, adding each
 * record's dL/dx and dL/dv where the record was made.  The memory is the checkpoints and
 * one stretch of states.  The tangent pass steps the run forward once, carrying every
 * direction's tangent along with ms_tangent_step.
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
    if (m->ncollider > 0)
        return ms_error_set(err, MS_ERR_VALUE,
                            "colliders have no gradient here (contact is not smooth): remove them for a "
                            "differentiable run");
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

/* The caller's check, about every CHECK_SECONDS. */
typedef struct pacer {
    const ms_interrupt* interrupt;
    double checked_at;
} pacer;

static int should_stop(pacer* p) {
    if (p->interrupt == NULL || p->interrupt->check == NULL) return 0;
    const double now = ms_clock_seconds();
    if (now - p->checked_at < CHECK_SECONDS) return 0;
    p->checked_at = now;
    return p->interrupt->check(p->interrupt->context) != 0;
}

/* One step of s from the state it holds, as the recorded run took it; moved: x and v were
   written since the last step call (so it checks them again). */
static int step_once(const ms_model* m, ms_state* s, double h, int* first, int moved, ms_error* err) {
    ms_step_options options = {0};
    options.parameters_unchanged = !*first;
    options.motion_unchanged = !*first && !moved;
    options.forces_unread = 1;
    *first = 0;
    return ms_step(m, s, h, 1, &options, err);
}

static void inverse_masses(const ms_model* m, double* inv_mass) {
    for (int64_t i = 0; i < m->nnode; ++i) inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
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

int ms_gradient_backward(const ms_model* m, ms_state* s, const ms_gradient_run* run, const double* dx_records,
                         const double* dv_records, double* grad_x, double* grad_v, ms_parameter_arrays* grad,
                         ms_error* err) {
    if (check_run(m, run, err)) return MS_ERR_VALUE;
    const int64_t n3 = 3 * m->nnode, every = run->checkpoint_every;
    const size_t state_bytes = sizeof(double) * (size_t)n3;
    const int64_t stretch = every < run->steps ? every : run->steps;
    if ((uint64_t)stretch + 1 > SIZE_MAX / (2 * state_bytes))
        return ms_error_set(err, MS_ERR_MEMORY, "a stretch of %lld steps between checkpoints does not fit in memory",
                            (long long)stretch);
    double* states = malloc(2 * state_bytes * (size_t)(stretch + 1)); /* x then v at each step of a stretch */
    double* work = malloc(sizeof(double) * (size_t)(ms_adjoint_work_size(m) + m->nnode));
    if (states == NULL || work == NULL) {
        free(states);
        free(work);
        return out_of_memory(err, m);
    }
    double* inv_mass = work + ms_adjoint_work_size(m);
    inverse_masses(m, inv_mass);
    ms_error unused;
    ms_spring_adjoint* springs = ms_spring_adjoint_create(m, err);
    if (springs == NULL) {
        free(states);
        free(work);
        return MS_ERR_MEMORY;
    }
    ms_adjoint_preconditioner* factor = ms_adjoint_preconditioner_create(m, &unused); /* NULL: a diagonal one */
    const ms_fp_mode found = ms_flush_subnormals();
    pacer p = {run->interrupt, ms_clock_seconds()};
    memset(grad_x, 0, state_bytes);
    memset(grad_v, 0, state_bytes);
    int status = MS_OK, first = 1;
    int64_t r = run->nrecord - 1;
    for (int64_t c = checkpoint_count(run) - 2; c >= 0 && status == MS_OK; --c) {
        const int64_t begin = c * every, end = begin + every < run->steps ? begin + every : run->steps;
        const double* start = run->checkpoints + 2 * n3 * c;
        memcpy(s->x, start, state_bytes);
        memcpy(s->v, start + n3, state_bytes);
        for (int64_t k = begin; k < end && status == MS_OK; ++k) {
            double* kept = states + 2 * n3 * (k - begin);
            memcpy(kept, s->x, state_bytes);
            memcpy(kept + n3, s->v, state_bytes);
            status = step_once(m, s, run->h, &first, k == begin, err);
            if (status == MS_OK && should_stop(&p)) status = MS_ERR_INTERRUPTED;
        }
        if (status != MS_OK) break;
        const double* next = start + 2 * n3;
        if (memcmp(s->x, next, state_bytes) != 0 || memcmp(s->v, next + n3, state_bytes) != 0) {
            status = not_reproduced(err, end);
            break;
        }
        memcpy(states + 2 * n3 * (end - begin), next, 2 * state_bytes);
        for (int64_t k = end - 1; k >= begin; --k) {
            for (; r >= 0 && run->record_steps[r] == k + 1; --r) {
                for (int64_t q = 0; q < n3; ++q) grad_x[q] += dx_records[n3 * r + q];
                if (dv_records != NULL)
                    for (int64_t q = 0; q < n3; ++q) grad_v[q] += dv_records[n3 * r + q];
            }
            const double* kept = states + 2 * n3 * (k - begin);
            const double* after = kept + 2 * n3;
            if (ms_adjoint_step(m, inv_mass, s->external, kept, kept + n3, after, after + n3, run->h, grad_x, grad_v,
                                grad, factor, springs, work)) {
                status = unsolved(err, k + 1);
                break;
            }
            if (should_stop(&p)) {
                status = MS_ERR_INTERRUPTED;
                break;
            }
        }
    }
    for (; status == MS_OK && r >= 0; --r) { /* the records of the initial state */
        for (int64_t q = 0; q < n3; ++q) grad_x[q] += dx_records[n3 * r + q];
        if (dv_records != NULL)
            for (int64_t q = 0; q < n3; ++q) grad_v[q] += dv_records[n3 * r + q];
    }
    if (status == MS_OK) ms_spring_adjoint_collect(springs, grad);
    ms_restore_fp(found);
    ms_adjoint_preconditioner_destroy(factor);
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
    if (tangents == NULL || work == NULL) {
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
    pacer p = {run->interrupt, ms_clock_seconds()};
    memcpy(s->x, run->checkpoints, state_bytes);
    memcpy(s->v, run->checkpoints + n3, state_bytes);
    int status = MS_OK, first = 1;
    int64_t r = 0;
    for (int64_t k = 0; k < run->steps && status == MS_OK; ++k) {
        for (; r < run->nrecord && run->record_steps[r] == k; ++r)
            record_tangent(run->nrecord, n3, r, ndirection, dx, dv, record_dx, record_dv);
        memcpy(before, s->x, state_bytes);
        memcpy(before + n3, s->v, state_bytes);
        status = step_once(m, s, run->h, &first, k == 0, err);
        for (int64_t d = 0; d < ndirection && status == MS_OK; ++d)
            if (ms_tangent_step(m, inv_mass, s->external, before, before + n3, s->x, s->v, run->h, dx + n3 * d,
                                dv + n3 * d, &directions[d], factor, work))
                status = unsolved(err, k + 1);
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
    free(tangents);
    free(work);
    if (status == MS_ERR_INTERRUPTED) return ms_error_set(err, MS_ERR_INTERRUPTED, "the tangent pass was interrupted");
    return status;
}
