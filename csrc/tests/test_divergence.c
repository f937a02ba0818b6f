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

static int test_divergence_undoes_the_call(void) {
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
        ENSURE(ms_step(m, s, 1e-4, 3, NULL, &err) == MS_OK); /* a start the failed call must keep */
        snapshot before;
        ENSURE(snapshot_take(m, s, &before));
        ms_state* replay = ms_state_copy(m, s, &err);
        ENSURE(replay != NULL);

        int rc = ms_step(m, s, h, 100000, NULL, &err);
        ENSURE(rc == MS_ERR_DIVERGED);
        ENSURE(err.status == MS_ERR_DIVERGED);
        ENSURE(has_message(&err));
        /* the step that blew up: of the call, counted as steps counts, and the time it
           would have reached */
        ENSURE(err.call_step >= 2 && err.call_step < 1000);
        ENSURE(err.step == 3 + err.call_step);
        double time = before.t;
        for (int64_t k = 0; k < err.call_step; ++k) time += h;
        ENSURE(err.time == time);
        /* the call is undone: everything as it began, bit for bit */
        ENSURE(snapshot_equal(m, s, &before));

        /* Stepping again fails at the same step and again changes nothing. */
        ms_error again = fresh_error();
        ENSURE(ms_step(m, s, h, 100000, NULL, &again) == MS_ERR_DIVERGED);
        ENSURE(again.step == err.step && again.call_step == err.call_step && again.time == err.time);
        ENSURE(snapshot_equal(m, s, &before));

        /* Stepping on from there is as if no call had failed. */
        ENSURE(ms_step(m, s, 1e-4, 7, NULL, &err) == MS_OK);
        ENSURE(ms_step(m, replay, 1e-4, 7, NULL, &err) == MS_OK);
        ENSURE(memcmp(replay->x, s->x, 6 * sizeof(double)) == 0 && memcmp(replay->v, s->v, 6 * sizeof(double)) == 0);
        ENSURE(replay->t == s->t && replay->steps == s->steps);
        ENSURE(memcmp(&replay->ledger, &s->ledger, sizeof s->ledger) == 0);

        free(before.arrays);
        ms_state_destroy(replay);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* A caller's change booked at the start of a call (ledger.user) is pending again after the
   call failed: the ledger is exactly as before, and what it reports is too. */
static int test_divergence_keeps_the_pending_change(void) {
    ms_model* m = make_oscillator(1e6, 1.0, 0.0, 0.1, MS_EXPLICIT_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-4, 2, NULL, &err) == MS_OK);
    ms_state_watch(m, s);
    s->x[3] = 1e155;
    const ms_ledger ledger = s->ledger, reported = ms_state_ledger(m, s);
    const double watched_energy = s->watched_energy;
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));
    ENSURE(ms_step(m, s, 1e-4, 1, NULL, &err) == MS_ERR_DIVERGED);
    ENSURE(snapshot_equal(m, s, &before));
    ENSURE(memcmp(&s->ledger, &ledger, sizeof ledger) == 0);
    ENSURE(s->watched && s->watched_energy == watched_energy);
    const ms_ledger again = ms_state_ledger(m, s);
    ENSURE(memcmp(&again, &reported, sizeof again) == 0);
    free(before.arrays);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* A call made in parts (ms_call) is undone as a whole, by a failure of a later part or by
   ms_call_roll_back between parts; a call that stands alone keeps no start for later. */
static int test_call_in_parts_is_undone_as_a_whole(void) {
    ms_model* m = make_cloth(5, 1, 7u);
    ENSURE(m != NULL);
    ms_collider plane = {0};
    plane.type = MS_PLANE;
    plane.center[1] = -3.0;
    plane.axis[1] = 1.0;
    plane.velocity[1] = 0.5;
    ms_error err = fresh_error();
    ENSURE(ms_model_add_collider(m, &plane, &err) >= 0);
    ms_state* s = ms_state_create(m, &err);
    ms_call* call = ms_call_create();
    ENSURE(s != NULL && call != NULL);
    ENSURE(ms_step(m, s, 1e-3, 4, NULL, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));
    const double plane_y = ms_collider_position(s, 0)[1];
    ms_step_options parts = {0};
    parts.call = call;

    ENSURE(ms_step(m, s, 1e-3, 1, &parts, &err) == MS_OK);
    ENSURE(ms_step(m, s, 1e-3, 3, &parts, &err) == MS_OK);
    ENSURE(s->steps == before.steps + 4 && ms_collider_position(s, 0)[1] != plane_y);
    ENSURE(ms_call_roll_back(m, s, call) == 1);
    ENSURE(snapshot_equal(m, s, &before) && ms_collider_position(s, 0)[1] == plane_y);
    ENSURE(ms_call_roll_back(m, s, call) == 0); /* forgotten once used */

    ENSURE(ms_step(m, s, 1e-3, 2, &parts, &err) == MS_OK);
    m->k[0] = 1e300; /* the next part blows up */
    ENSURE(ms_step(m, s, 1e-3, 50, &parts, &err) == MS_ERR_DIVERGED);
    m->k[0] = 1.0;
    ENSURE(err.call_step >= 3 && err.step == before.steps + err.call_step);
    ENSURE(snapshot_equal(m, s, &before) && ms_collider_position(s, 0)[1] == plane_y);

    /* a part refused by its checks (a bad value written between parts) undoes the parts
       before it too */
    ENSURE(ms_step(m, s, 1e-3, 2, &parts, &err) == MS_OK);
    m->mass[3] = -1.0;
    ENSURE(ms_step(m, s, 1e-3, 2, &parts, &err) == MS_ERR_VALUE);
    m->mass[3] = 1.0;
    ENSURE(snapshot_equal(m, s, &before) && ms_collider_position(s, 0)[1] == plane_y);
    ENSURE(ms_call_roll_back(m, s, call) == 0);

    /* an ended call is not undone: the next part given it starts a new call */
    ENSURE(ms_step(m, s, 1e-3, 2, &parts, &err) == MS_OK);
    ms_call_end(call);
    ENSURE(ms_call_roll_back(m, s, call) == 0);
    ENSURE(ms_step(m, s, 1e-3, 2, &parts, &err) == MS_OK);
    ENSURE(ms_call_roll_back(m, s, call) == 1);
    ENSURE(s->steps == before.steps + 2);

    ENSURE(ms_step(m, s, 1e-3, 2, NULL, &err) == MS_OK); /* standing alone: nothing kept */
    ENSURE(ms_call_roll_back(m, s, call) == 0);
    ENSURE(s->steps == before.steps + 4);
    free(before.arrays);
    ms_call_destroy(call);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* Coordinates near 1e153 under a plane, on two workers: the contact pushes book spring
   energies that overflow, and every worker must see that and leave the call together (a
   decision only one worker saw left the other waiting at a barrier for ever).  Every
   integrator returns, and a failed call leaves the state as it found it. */
static int test_extreme_coordinates_on_two_workers(void) {
    const int64_t nnode = 10051; /* 10,050 springs: enough for several workers */
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(nnode, nnode - 1, 0, &err);
        ENSURE(m != NULL);
        uint64_t seed = 12345u;
        for (int64_t i = 0; i < nnode; ++i) {
            m->mass[i] = 1.0;
            for (int a = 0; a < 3; ++a) {
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                m->x_initial[3 * i + a] = ((double)(seed >> 11) / 9007199254740992.0 - 0.5) * 2e153;
            }
        }
        for (int64_t e = 0; e + 1 < nnode; ++e) {
            m->springs[2 * e] = (int32_t)e;
            m->springs[2 * e + 1] = (int32_t)(e + 1);
            m->k[e] = 1.0;
            m->rest[e] = 1.0;
        }
        m->opt.integrator = (ms_integrator)integrator;
        m->opt.threads = 2;
        ms_collider plane = {0};
        plane.type = MS_PLANE;
        plane.axis[1] = 1.0;
        ENSURE(ms_model_add_collider(m, &plane, &err) >= 0);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        snapshot before;
        ENSURE(snapshot_take(m, s, &before));
        const int status = ms_step(m, s, 1e-3, 3, NULL, &err);
        ENSURE(status == MS_OK || status == MS_ERR_DIVERGED);
        if (status == MS_ERR_DIVERGED) ENSURE(snapshot_equal(m, s, &before));
        free(before.arrays);
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
    ENSURE(ms_step(m, s, 1e-3, 10, NULL, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));

    const double bad_h[] = {0.0, -0.0, -1e-3, -INFINITY, INFINITY, NAN};
    for (size_t c = 0; c < sizeof bad_h / sizeof bad_h[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, bad_h[c], 1, NULL, &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }
    const int64_t bad_n[] = {0, -1, INT64_MIN};
    for (size_t c = 0; c < sizeof bad_n / sizeof bad_n[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, 1e-3, bad_n[c], NULL, &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }

    /* Bad parameters written after creation are caught at the next step. */
    double saved_k = m->k[3];
    m->k[3] = -1.0;
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->k[3] = saved_k;
    double saved_mass = m->mass[5];
    m->mass[5] = 0.0;
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->mass[5] = saved_mass;
    m->opt.energy_loss = 1.5;
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->opt.energy_loss = 0.0;

    /* Non-finite state values are caught the same way. */
    double saved = s->x[7];
    s->x[7] = NAN;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    snapshot with_nan;
    ENSURE(snapshot_take(m, s, &with_nan));
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    ENSURE(snapshot_equal(m, s, &with_nan));
    free(with_nan.arrays);
    s->x[7] = saved;
    s->v[2] = INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    s->v[2] = before.arrays[3 * m->nnode + 2];
    EXTERNAL(m, s)[4] = -INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
    EXTERNAL(m, s)[4] = 0.0;
    ENSURE(snapshot_equal(m, s, &before));
    ENSURE(ms_state_check(m, s, &err) == MS_OK);

    /* Everything restored: stepping works again. */
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 1e-3, 5, NULL, &err) == MS_ERR_DIVERGED);
    for (int q = 0; q < 6; ++q) ENSURE(s->f[q] == 0.25 * q);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case divergence_tests[] = {
    TEST(test_divergence_undoes_the_call),
    TEST(test_divergence_keeps_the_pending_change),
    TEST(test_call_in_parts_is_undone_as_a_whole),
    TEST(test_extreme_coordinates_on_two_workers),
    TEST(test_step_bad_arguments),
    TEST(test_divergence_restores_f),
    {NULL, NULL},
};
