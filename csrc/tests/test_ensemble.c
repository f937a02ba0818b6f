/* Ensembles: every member of an ms_ensemble steps to the bits its model and state reach
   alone with ms_step, on the batched path (small members of the Euler methods, one member
   per vector lane) and one by one; a member that diverges goes back alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

#define MEMBERS 19 /* three groups of the batched path: two stepped together on AVX-512, one alone */

/* A string of 11 nodes 0.1 m apart, node 0 pinned, springs to the next node and the one
   after (lane groups of two springs, then single springs, in its layout), wobbling. */
static ms_model* make_string(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(11, 19, 0, &err);
    if (m == NULL) return NULL;
    uint64_t seed = 5u;
    for (int64_t i = 0; i < 11; ++i) {
        m->x_initial[3 * i] = 0.1 * (double)i;
        m->x_initial[3 * i + 2] = 0.01 * lcg_uniform(&seed);
        m->mass[i] = 0.1;
    }
    m->pinned[0] = 1;
    int64_t s = 0;
    for (int32_t i = 0; i < 11; ++i)
        for (int32_t step = 1; step <= 2; ++step)
            if (i + step < 11) {
                m->springs[2 * s] = i;
                m->springs[2 * s + 1] = i + step;
                m->rest[s] = 0.1 * step;
                ++s;
            }
    return m;
}

/* MEMBERS strings (or cloths of side 5, which step renumbered) with stiffnesses, damping,
   masses and gravity of their own. */
static int make_members(ms_model* models[MEMBERS], ms_state* states[MEMBERS], ms_integrator integrator,
                        int cloth) {
    ms_error err = fresh_error();
    for (int i = 0; i < MEMBERS; ++i) {
        models[i] = cloth ? make_cloth(5, 1, 7u) : make_string();
        ENSURE(models[i] != NULL);
        models[i]->opt.integrator = integrator;
        models[i]->opt.gravity[1] = -9.81 + 0.5 * i;
        for (int64_t s = 0; s < models[i]->nspring; ++s) {
            models[i]->k[s] = 40.0 + 3.0 * i + 0.1 * (double)s;
            models[i]->c[s] = 0.01 * (i % 3);
            if (cloth) continue;
            models[i]->k[s] = 4.0 + 0.3 * i + 0.01 * (double)s;
        }
        for (int64_t n = 0; n < models[i]->nnode; ++n)
            if (!models[i]->pinned[n]) models[i]->mass[n] = 0.05 + 0.01 * i;
        states[i] = ms_state_create(models[i], &err);
        ENSURE(states[i] != NULL);
        states[i]->v[3 * 7 + 1] = 0.1 * i;
    }
    return 0;
}

static void destroy_members(ms_model* models[MEMBERS], ms_state* states[MEMBERS]) {
    for (int i = 0; i < MEMBERS; ++i) {
        ms_state_destroy(states[i]);
        ms_model_destroy(models[i]);
    }
}

/* The ensemble's members against the same calls on each model alone. */
static int members_as_alone(ms_integrator integrator, int cloth, int threads, int64_t batched) {
    ms_model* models[MEMBERS];
    ms_state* states[MEMBERS];
    ENSURE(make_members(models, states, integrator, cloth) == 0);
    ms_error err = fresh_error();
    ms_ensemble* e = ms_ensemble_create((const ms_model* const*)models, (const ms_state* const*)states, MEMBERS, &err);
    ENSURE(e != NULL);
    const ms_ensemble_options options = {threads, 0};
    const int64_t calls[3] = {1, 30, 7};
    for (int c = 0; c < 3; ++c) {
        ENSURE(ms_ensemble_step(e, 1e-3, calls[c], &options, &err) == MS_OK);
        ms_ensemble_end_call(e);
        ENSURE(e->nbatched == batched);
        for (int i = 0; i < MEMBERS; ++i) ENSURE(ms_step(models[i], states[i], 1e-3, calls[c], NULL, &err) == MS_OK);
        for (int i = 0; i < MEMBERS; ++i) {
            snapshot expected;
            ENSURE(snapshot_take(models[i], states[i], &expected));
            const int same = snapshot_equal(e->models[i], e->states[i], &expected);
            free(expected.arrays);
            ENSURE(same);
            ENSURE(e->t[i] == states[i]->t && e->steps[i] == states[i]->steps);
        }
    }
    ms_ensemble_destroy(e);
    destroy_members(models, states);
    return 0;
}

static int test_ensemble_symplectic_batched(void) { return members_as_alone(MS_SYMPLECTIC_EULER, 0, 1, MEMBERS); }
static int test_ensemble_explicit_batched_two_workers(void) {
    return members_as_alone(MS_EXPLICIT_EULER, 0, 2, MEMBERS);
}
static int test_ensemble_cloth_renumbered_one_by_one(void) { return members_as_alone(MS_SYMPLECTIC_EULER, 1, 2, 0); }
static int test_ensemble_verlet_one_by_one(void) { return members_as_alone(MS_VELOCITY_VERLET, 0, 3, 0); }

/* One member blows up: it goes back to where the call began, marked; the others go on as
   they would alone. */
static int diverging_member(ms_integrator integrator) {
    ms_model* models[MEMBERS];
    ms_state* states[MEMBERS];
    ENSURE(make_members(models, states, integrator, 0) == 0);
    for (int64_t s = 0; s < models[3]->nspring; ++s) models[3]->k[s] = 1e9;
    ms_error err = fresh_error();
    ms_ensemble* e = ms_ensemble_create((const ms_model* const*)models, (const ms_state* const*)states, MEMBERS, &err);
    ENSURE(e != NULL);
    snapshot start;
    ENSURE(snapshot_take(e->models[3], e->states[3], &start));
    const ms_ensemble_options options = {2, 0};
    ENSURE(ms_ensemble_step(e, 1e-3, 400, &options, &err) == MS_OK);
    ms_ensemble_end_call(e);
    ENSURE(e->diverged[3] && e->divergence_step[3] > 0 && isfinite(e->divergence_time[3]));
    ENSURE(snapshot_equal(e->models[3], e->states[3], &start));
    free(start.arrays);
    ENSURE(ms_step(models[3], states[3], 1e-3, 400, NULL, &err) == MS_ERR_DIVERGED);
    ENSURE(err.step == e->divergence_step[3] && err.time == e->divergence_time[3]);
    for (int i = 0; i < MEMBERS; ++i) {
        if (i == 3) continue;
        ENSURE(!e->diverged[i]);
        ENSURE(ms_step(models[i], states[i], 1e-3, 400, NULL, &err) == MS_OK);
        snapshot expected;
        ENSURE(snapshot_take(models[i], states[i], &expected));
        const int same = snapshot_equal(e->models[i], e->states[i], &expected);
        free(expected.arrays);
        ENSURE(same);
    }
    ms_ensemble_destroy(e);
    destroy_members(models, states);
    return 0;
}

static int test_ensemble_diverging_member_batched(void) { return diverging_member(MS_SYMPLECTIC_EULER); }
static int test_ensemble_diverging_member_one_by_one(void) { return diverging_member(MS_RK4); }

static int test_ensemble_refuses_another_topology(void) {
    ms_model* a = make_cloth(4, 1, 1u);
    ms_model* b = make_cloth(5, 1, 1u);
    ENSURE(a != NULL && b != NULL);
    ms_error err = fresh_error();
    ms_state* sa = ms_state_create(a, &err);
    ms_state* sb = ms_state_create(b, &err);
    const ms_model* models[2] = {a, b};
    const ms_state* states[2] = {sa, sb};
    ENSURE(ms_ensemble_create(models, states, 2, &err) == NULL);
    ENSURE(err.status == MS_ERR_VALUE && has_message(&err));
    ms_state_destroy(sa);
    ms_state_destroy(sb);
    ms_model_destroy(a);
    ms_model_destroy(b);
    return 0;
}

const test_case ensemble_tests[] = {
    TEST(test_ensemble_symplectic_batched),
    TEST(test_ensemble_explicit_batched_two_workers),
    TEST(test_ensemble_cloth_renumbered_one_by_one),
    TEST(test_ensemble_verlet_one_by_one),
    TEST(test_ensemble_diverging_member_batched),
    TEST(test_ensemble_diverging_member_one_by_one),
    TEST(test_ensemble_refuses_another_topology),
    {NULL, NULL},
};
