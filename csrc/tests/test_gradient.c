/* Gradients through a run (msprings/gradient.h): the backward pass on a damped oscillator
   against central differences of the runs themselves, for every integrator that has one;
   the refusals; and a checkpoint that the steps do not reproduce. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/gradient.h"
#include "msprings/msprings.h"

#define STEPS 200
#define EVERY 50
#define H 1e-2

/* The final x of the oscillator's free node after STEPS steps of m from its initial state. */
static double final_x(const ms_model* m, int* ok) {
    ms_error err;
    ms_state* s = ms_state_create(m, &err);
    *ok = s != NULL && ms_step(m, s, H, STEPS, NULL, &err) == MS_OK;
    const double x = *ok ? s->x[3] : NAN;
    ms_state_destroy(s);
    return x;
}

/* The checkpoints of a run of m every EVERY steps (and at the end), stepped one step per call. */
static int checkpoints_of(const ms_model* m, double* checkpoints) {
    ms_error err;
    ms_state* s = ms_state_create(m, &err);
    if (s == NULL) return -1;
    const int64_t n3 = 3 * m->nnode;
    for (int64_t k = 0; k <= STEPS; ++k) {
        if (k % EVERY == 0) {
            memcpy(checkpoints + 2 * n3 * (k / EVERY), s->x, sizeof(double) * (size_t)n3);
            memcpy(checkpoints + 2 * n3 * (k / EVERY) + n3, s->v, sizeof(double) * (size_t)n3);
        }
        if (k < STEPS && ms_step(m, s, H, 1, NULL, &err) != MS_OK) {
            ms_state_destroy(s);
            return -1;
        }
    }
    ms_state_destroy(s);
    return 0;
}

typedef struct backward_result {
    int status;
    double grad_x[6], grad_v[6], k, c, rest, mass[2], external[6];
} backward_result;

/* dL/d(...) of L = the free node's final x, with checkpoints from checkpoints_of (corrupted
   at one value if corrupt). */
static backward_result backward(const ms_model* m, int corrupt) {
    backward_result result;
    memset(&result, 0, sizeof result);
    double checkpoints[(STEPS / EVERY + 1) * 12];
    const int64_t record_steps[2] = {0, STEPS};
    double dx[12] = {0.0};
    dx[6 + 3] = 1.0; /* record 1, node 1, x */
    ms_parameter_arrays g = {&result.k, &result.c, &result.rest, result.mass, result.external};
    ms_error err;
    if (checkpoints_of(m, checkpoints) != 0) {
        result.status = -1;
        return result;
    }
    if (corrupt) checkpoints[2 * 6 * 2 + 3] += 1e-12; /* x of node 1 at step 2 EVERY */
    ms_gradient_run run = {H, STEPS, EVERY, checkpoints, 2, record_steps, NULL};
    ms_state* s = ms_state_create(m, &err);
    result.status = s == NULL ? -1 : ms_gradient_backward(m, s, &run, dx, NULL, result.grad_x, result.grad_v, &g, &err);
    if (result.status != MS_OK && !has_message(&err)) result.status = -2;
    ms_state_destroy(s);
    return result;
}

static int test_oscillator_gradient_matches_central_differences(void) {
    const ms_integrator integrators[5] = {MS_SYMPLECTIC_EULER, MS_EXPLICIT_EULER, MS_VELOCITY_VERLET, MS_RK4,
                                          MS_IMPLICIT_EULER};
    for (int i = 0; i < 5; ++i) {
        ms_model* m = make_oscillator(4.0, 1.5, 0.3, 0.2, integrators[i]);
        ENSURE(m != NULL);
        m->opt.implicit.newton_tol = 1e-14;
        m->opt.implicit.cg_tol = 1e-14;
        const backward_result result = backward(m, 0);
        ENSURE(result.status == MS_OK);
        /* dL/dk, dL/dc, dL/dmass of the free node, dL/dx0 of the free node */
        double* values[4] = {m->k, m->c, m->mass + 1, m->x_initial + 3};
        const double adjoint[4] = {result.k, result.c, result.mass[1], result.grad_x[3]};
        for (int p = 0; p < 4; ++p) {
            const double base = *values[p], eps = 1e-5 * fmax(fabs(base), 1.0);
            int ok_up = 0, ok_down = 0;
            *values[p] = base + eps;
            const double up = final_x(m, &ok_up);
            *values[p] = base - eps;
            const double down = final_x(m, &ok_down);
            *values[p] = base;
            ENSURE(ok_up && ok_down);
            const double difference = (up - down) / (2.0 * eps);
            ENSURE_NEAR(adjoint[p], difference, 1e-6 * fabs(difference) + 1e-10);
        }
        /* the pinned node's own forces and motion take no part */
        ENSURE(result.mass[0] == 0.0 && result.external[0] == 0.0);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_a_checkpoint_not_reproduced_is_reported(void) {
    ms_model* m = make_oscillator(4.0, 1.5, 0.3, 0.2, MS_SYMPLECTIC_EULER);
    ENSURE(m != NULL);
    ENSURE(backward(m, 1).status == MS_ERR_DIVERGED);
    ms_model_destroy(m);
    return 0;
}

static int test_what_has_no_gradient_is_refused(void) {
    ms_model* m = make_oscillator(4.0, 1.5, 0.3, 0.2, MS_XPBD);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ENSURE(ms_gradient_check(m, &err) == MS_ERR_VALUE && has_message(&err));
    ENSURE(strstr(err.message, "xpbd") != NULL);
    ENSURE(backward(m, 0).status == MS_ERR_VALUE);
    m->opt.integrator = MS_SYMPLECTIC_EULER;
    err = fresh_error();
    ENSURE(ms_gradient_check(m, &err) == MS_OK);
    m->opt.strain_limiting = 1;
    ENSURE(ms_gradient_check(m, &err) == MS_ERR_VALUE && strstr(err.message, "strain") != NULL);
    m->opt.strain_limiting = 0;
    /* records out of order */
    double checkpoints[(STEPS / EVERY + 1) * 12];
    ENSURE(checkpoints_of(m, checkpoints) == 0);
    const int64_t record_steps[2] = {STEPS, 0};
    double dx[12] = {0.0}, grad_x[6], grad_v[6], k, c, rest, mass[2], external[6];
    ms_parameter_arrays g = {&k, &c, &rest, mass, external};
    ms_gradient_run run = {H, STEPS, EVERY, checkpoints, 2, record_steps, NULL};
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    err = fresh_error();
    ENSURE(ms_gradient_backward(m, s, &run, dx, NULL, grad_x, grad_v, &g, &err) == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case gradient_tests[] = {
    TEST(test_oscillator_gradient_matches_central_differences),
    TEST(test_a_checkpoint_not_reproduced_is_reported),
    TEST(test_what_has_no_gradient_is_refused),
    {NULL, NULL},
};
