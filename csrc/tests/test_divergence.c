/* Divergence and rollback: a diverging call leaves the state as it found it; bad
   arguments are refused before anything changes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

static int test_divergence_rolls_back(void) {
    /* w h = 1000 is far outside every explicit method's stability region: the amplitude
       grows by orders of magnitude per step until it overflows.  Implicit Euler is left
       out: it is unconditionally stable and damps this oscillator instead (see
       test_implicit_unconditionally_stable and test_implicit_overflow_rolls_back). */
    const double h = 1.0;
    for (int integrator = 0; integrator < MS_IMPLICIT_EULER; ++integrator) {
        ms_model* m = make_oscillator(1e6, 1.0, 0.0, 0.1, (ms_integrator)integrator);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ms_state* replay = ms_state_copy(m, s, &err);
        ENSURE(replay != NULL);

        int rc = ms_step(m, s, h, 100000, &err);
        ENSURE(rc == MS_ERR_DIVERGED);
        ENSURE(err.status == MS_ERR_DIVERGED);
        ENSURE(has_message(&err));
        ENSURE(err.step >= 2 && err.step < 1000);
        ENSURE(s->steps == err.step - 1);
        ENSURE(err.time == s->t);
        ENSURE(err.time == (double)(err.step - 1) * h);
        ENSURE(all_finite(s->x, 6) && all_finite(s->v, 6));

        /* The rolled-back state is exactly the state after err.step - 1 good steps. */
        ms_error replay_err = fresh_error();
        ENSURE(ms_step(m, replay, h, err.step - 1, &replay_err) == MS_OK);
        ENSURE(memcmp(replay->x, s->x, 6 * sizeof(double)) == 0);
        ENSURE(memcmp(replay->v, s->v, 6 * sizeof(double)) == 0);
        ENSURE(replay->t == s->t && replay->steps == s->steps);
        ENSURE(memcmp(&replay->ledger, &s->ledger, sizeof s->ledger) == 0);

        /* Stepping again fails at the same step and again changes nothing. */
        int64_t failed_step = err.step;
        ms_error again = fresh_error();
        ENSURE(ms_step(m, s, h, 1, &again) == MS_ERR_DIVERGED);
        ENSURE(again.step == failed_step);
        ENSURE(again.time == err.time);
        ENSURE(memcmp(replay->x, s->x, 6 * sizeof(double)) == 0);
        ENSURE(memcmp(replay->v, s->v, 6 * sizeof(double)) == 0);
        ENSURE(s->steps == failed_step - 1);

        ms_state_destroy(replay);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* Bad time steps, step counts, parameters and state values are refused by ms_step with
   MS_ERR_VALUE and leave the state exactly as it was, whatever the integrator. */
static int step_bad_arguments(ms_integrator integrator) {
    ms_model* m = make_cloth(4, 1, 3u);
    ENSURE(m != NULL);
    m->opt.integrator = integrator;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    EXTERNAL(m, s)[5] = 0.25;
    ENSURE(ms_step(m, s, 1e-3, 10, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));

    const double bad_h[] = {0.0, -0.0, -1e-3, -INFINITY, INFINITY, NAN};
    for (size_t c = 0; c < sizeof bad_h / sizeof bad_h[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, bad_h[c], 1, &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }
    const int64_t bad_n[] = {0, -1, INT64_MIN};
    for (size_t c = 0; c < sizeof bad_n / sizeof bad_n[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, 1e-3, bad_n[c], &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }

    /* Bad parameters written after creation are caught at the next step. */
    double saved_k = m->k[3];
    m->k[3] = -1.0;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->k[3] = saved_k;
    double saved_mass = m->mass[5];
    m->mass[5] = 0.0;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->mass[5] = saved_mass;
    m->opt.energy_loss = 1.5;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->opt.energy_loss = 0.0;

    /* Non-finite state values are caught the same way. */
    double saved = s->x[7];
    s->x[7] = NAN;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    snapshot with_nan;
    ENSURE(snapshot_take(m, s, &with_nan));
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    ENSURE(snapshot_equal(m, s, &with_nan));
    free(with_nan.arrays);
    s->x[7] = saved;
    s->v[2] = INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    s->v[2] = before.arrays[3 * m->nnode + 2];
    EXTERNAL(m, s)[4] = -INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    EXTERNAL(m, s)[4] = 0.0;
    ENSURE(snapshot_equal(m, s, &before));
    ENSURE(ms_state_check(m, s, &err) == MS_OK);

    /* Everything restored: stepping works again. */
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_OK);
    ENSURE(s->steps == before.steps + 1);

    free(before.arrays);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_step_bad_arguments(void) {
    ENSURE(step_bad_arguments(MS_RK4) == 0);
    ENSURE(step_bad_arguments(MS_IMPLICIT_EULER) == 0);
    return 0;
}

/* A diverging call puts f back as it found it: f is state (saved in model files). */
static int test_divergence_restores_f(void) {
    ms_error err = fresh_error();
    ms_model* m = make_oscillator(1e10, 1.0, 0.0, 1e300, MS_RK4);
    ENSURE(m != NULL);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    for (int q = 0; q < 6; ++q) s->f[q] = 0.25 * q;
    ENSURE(ms_step(m, s, 1e-3, 5, &err) == MS_ERR_DIVERGED);
    for (int q = 0; q < 6; ++q) ENSURE(s->f[q] == 0.25 * q);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case divergence_tests[] = {
    TEST(test_divergence_rolls_back),
    TEST(test_step_bad_arguments),
    TEST(test_divergence_restores_f),
    {NULL, NULL},
};
