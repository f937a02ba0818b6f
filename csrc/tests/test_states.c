/* One model, many states: ms_step only reads the model, so any number of states of one
   model step independently, each to the bits it would reach as the only state of a model
   of its own, whatever the order in which they are stepped, the step sizes and the
   options of each call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

/* The model's arrays and values, to compare before and after stepping. */
static size_t model_bytes(const ms_model* m) {
    return sizeof(double) * (size_t)(m->nnode * 7 + m->nspring * 3) + (size_t)m->nnode +
           sizeof(int32_t) * (size_t)(m->nspring * 2 + m->nface * 3);
}

/* A cloth with drag, wind, a moving floor and a moving pin: every stage of a step acts. */
static ms_model* busy_cloth(int side, int shuffled, ms_integrator integrator) {
    ms_model* m = make_cloth(side, 1, 31u);
    if (m == NULL) return NULL;
    if (shuffled && shuffle_nodes(m, 32u) != 0) {
        ms_model_destroy(m);
        return NULL;
    }
    m->opt.integrator = integrator;
    m->opt.drag = 0.05;
    m->opt.air.wind[0] = 1.0;
    for (int64_t k = 0; k < m->nspring; ++k) m->c[k] = 0.02;
    ms_collider floor = {0};
    floor.type = MS_PLANE;
    floor.center[1] = -0.05;
    floor.axis[1] = 1.0;
    floor.velocity[1] = 0.1;
    floor.friction = 0.3;
    ms_error err = fresh_error();
    if (ms_model_add_collider(m, &floor, &err) < 0) {
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

/* Two states of one model (the second started elsewhere, with its own external force and a
   moving pin) stepped in turns with different step sizes and call options, against the
   same two runs on two copies of the model. */
static int two_states_as_two_systems(int side, int shuffled, ms_integrator integrator, int threads) {
    ms_model* m = busy_cloth(side, shuffled, integrator);
    ENSURE(m != NULL);
    m->opt.threads = threads;
    ms_error err = fresh_error();
    ms_model* alone[2] = {ms_model_copy(m, &err), ms_model_copy(m, &err)};
    ENSURE(alone[0] != NULL && alone[1] != NULL);
    ms_state* shared[2] = {ms_state_create(m, &err), ms_state_create(m, &err)};
    ms_state* single[2] = {ms_state_create(alone[0], &err), ms_state_create(alone[1], &err)};
    ENSURE(shared[0] != NULL && shared[1] != NULL && single[0] != NULL && single[1] != NULL);
    /* the second starts displaced, pushed and with its pin moving */
    int64_t pin = 0;
    while (!m->pinned[pin]) ++pin;
    ms_state* second[2] = {shared[1], single[1]};
    for (int copy = 0; copy < 2; ++copy) {
        ms_state* s = second[copy];
        uint64_t seed = 33u;
        for (int64_t q = 0; q < 3 * m->nnode; ++q) s->x[q] += 0.01 * lcg_uniform(&seed);
        double* external = EXTERNAL(m, s);
        ENSURE(external != NULL);
        external[3 * (m->nnode / 2) + 2] = 0.5;
        s->v[3 * pin] = 0.2;
    }
    const size_t bytes = model_bytes(m);
    unsigned char* model_before = malloc(bytes);
    ENSURE(model_before != NULL);
    memcpy(model_before, m->buffer, bytes);
    const ms_options options_before = m->opt;

    /* turns: (state, step size, steps, kept start energy, forces unread) */
    const int order[] = {0, 1, 1, 0, 1, 0, 0, 1};
    const double sizes[2] = {integrator >= MS_IMPLICIT_EULER ? 4e-3 : 1e-3, integrator >= MS_IMPLICIT_EULER ? 2e-3 : 7e-4};
    for (size_t turn = 0; turn < sizeof order / sizeof order[0]; ++turn) {
        const int which = order[turn];
        const int64_t n = 1 + (int64_t)(turn % 3) * 2;
        double energies[2][3] = {{0.0}};
        ms_step_options options[2] = {{0}, {0}};
        for (int copy = 0; copy < 2; ++copy) {
            options[copy].start_energy = turn % 2 ? energies[copy] : NULL;
            options[copy].forces_unread = turn == 5;
            options[copy].parameters_unchanged = turn > 2;
            options[copy].motion_unchanged = turn > 2;
        }
        ENSURE(ms_step(m, shared[which], sizes[which], n, &options[0], &err) == MS_OK);
        ENSURE(ms_step(alone[which], single[which], sizes[which], n, &options[1], &err) == MS_OK);
        ENSURE(memcmp(energies[0], energies[1], sizeof energies[0]) == 0);
    }
    for (int which = 0; which < 2; ++which) {
        snapshot expected;
        ENSURE(snapshot_take(alone[which], single[which], &expected));
        ENSURE(snapshot_equal(m, shared[which], &expected));
        ENSURE(memcmp(ms_collider_position(shared[which], 0), ms_collider_position(single[which], 0),
                      3 * sizeof(double)) == 0);
        free(expected.arrays);
    }
    ENSURE(shared[0]->steps != shared[1]->steps || shared[0]->t != shared[1]->t);
    /* stepping read the model and wrote nothing of it */
    ENSURE(memcmp(model_before, m->buffer, bytes) == 0);
    ENSURE(memcmp(&options_before, &m->opt, sizeof options_before) == 0);
    ENSURE(m->colliders[0].center[1] == -0.05);
    free(model_before);
    for (int which = 0; which < 2; ++which) {
        ms_state_destroy(shared[which]);
        ms_state_destroy(single[which]);
        ms_model_destroy(alone[which]);
    }
    ms_model_destroy(m);
    return 0;
}

static int test_states_of_one_model_step_as_separate_systems(void) {
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator)
        for (int shuffled = 0; shuffled < 2; ++shuffled)
            if (two_states_as_two_systems(9, shuffled, (ms_integrator)integrator, 1)) return 1;
    return 0;
}

static int test_states_of_one_model_on_two_workers(void) {
    /* large enough for several workers (10,000 springs or more), in its own numbering and
       renumbered */
    const ms_integrator integrators[] = {MS_SYMPLECTIC_EULER, MS_IMPLICIT_EULER, MS_XPBD};
    for (size_t q = 0; q < sizeof integrators / sizeof integrators[0]; ++q)
        for (int shuffled = 0; shuffled < 2; ++shuffled)
            if (two_states_as_two_systems(72, shuffled, integrators[q], 2)) return 1;
    return 0;
}

/* A failed call of one state (it blows up) is undone, and leaves the other state of the
   model, stepped before and after it, as it would be alone. */
static int test_a_failed_state_leaves_the_others(void) {
    ms_model* m = busy_cloth(9, 0, MS_SYMPLECTIC_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_model* alone = ms_model_copy(m, &err);
    ms_state* calm = ms_state_create(m, &err);
    ms_state* wild = ms_state_create(m, &err);
    ms_state* single = ms_state_create(alone, &err);
    ENSURE(alone != NULL && calm != NULL && wild != NULL && single != NULL);
    wild->v[3 * 40] = 1e200; /* overflows at once */
    snapshot before;
    ENSURE(snapshot_take(m, wild, &before));
    ENSURE(ms_step(m, calm, 1e-3, 5, NULL, &err) == MS_OK);
    ENSURE(ms_step(m, wild, 1e-3, 5, NULL, &err) == MS_ERR_DIVERGED);
    ENSURE(snapshot_equal(m, wild, &before));
    ENSURE(ms_step(m, calm, 1e-3, 5, NULL, &err) == MS_OK);
    ENSURE(ms_step(alone, single, 1e-3, 10, NULL, &err) == MS_OK);
    snapshot expected;
    ENSURE(snapshot_take(alone, single, &expected));
    ENSURE(snapshot_equal(m, calm, &expected));
    free(before.arrays);
    free(expected.arrays);
    ms_state_destroy(calm);
    ms_state_destroy(wild);
    ms_state_destroy(single);
    ms_model_destroy(alone);
    ms_model_destroy(m);
    return 0;
}

const test_case states_tests[] = {
    TEST(test_states_of_one_model_step_as_separate_systems),
    TEST(test_states_of_one_model_on_two_workers),
    TEST(test_a_failed_state_leaves_the_others),
    {NULL, NULL},
};
