/* Model and options: creation, checks, option defaults and limits, integrator names,
   copies of models and states, storage allocated on first use, reset. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

static int test_default_options(void) {
    ms_options opt = ms_default_options();
    ENSURE(opt.gravity[0] == 0.0);
    ENSURE(opt.gravity[1] == -9.81);
    ENSURE(opt.gravity[2] == 0.0);
    ENSURE(opt.drag == 0.0);
    ENSURE(opt.energy_loss == 0.0);
    ENSURE(opt.integrator == MS_SYMPLECTIC_EULER);
    ENSURE(opt.strain_limiting == 0);
    ENSURE(opt.strain_limit == 0.1);
    ENSURE(opt.implicit.newton_max_iter == 50);
    ENSURE(opt.implicit.newton_tol == 1e-6);
    ENSURE(opt.implicit.cg_max_iter == 1000);
    ENSURE(opt.implicit.cg_tol == 1e-2);
    ms_error err = fresh_error();
    ENSURE(ms_options_check(&opt, &err) == MS_OK);
    ENSURE(err.status == MS_OK);
    return 0;
}

static int test_model_create_destroy(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(5, 7, 0, &err);
    ENSURE(m != NULL);
    ENSURE(err.status == MS_OK);
    ENSURE(m->nnode == 5);
    ENSURE(m->nspring == 7);
    ENSURE(m->buffer != NULL);
    for (int64_t i = 0; i < 5; ++i) {
        ENSURE(m->mass[i] == 0.0);
        ENSURE(m->pinned[i] == 0);
        for (int a = 0; a < 3; ++a) {
            ENSURE(m->x_initial[3 * i + a] == 0.0);
            ENSURE(m->v_initial[3 * i + a] == 0.0);
        }
    }
    for (int64_t s = 0; s < 7; ++s) {
        ENSURE(m->springs[2 * s] == 0 && m->springs[2 * s + 1] == 0);
        ENSURE(m->rest[s] == 0.0 && m->k[s] == 0.0 && m->c[s] == 0.0);
    }
    ms_options def = ms_default_options();
    ENSURE(memcmp(m->opt.gravity, def.gravity, sizeof def.gravity) == 0);
    ENSURE(m->opt.drag == def.drag && m->opt.energy_loss == def.energy_loss);
    ENSURE(m->opt.integrator == def.integrator);
    /* Every array is writable over its whole extent (ASan checks the bounds). */
    for (int64_t i = 0; i < 5; ++i) {
        m->mass[i] = 1.0;
        m->pinned[i] = 1;
        for (int a = 0; a < 3; ++a) m->x_initial[3 * i + a] = m->v_initial[3 * i + a] = 1.0;
    }
    for (int64_t s = 0; s < 7; ++s) {
        m->springs[2 * s] = 1;
        m->springs[2 * s + 1] = 2;
        m->rest[s] = m->k[s] = m->c[s] = 1.0;
    }
    ENSURE(m->mass[4] == 1.0 && m->springs[13] == 2 && m->c[6] == 1.0);
    ms_model_destroy(m);

    m = ms_model_create(1, 0, 0, &err);
    ENSURE(m != NULL);
    ENSURE(m->nnode == 1 && m->nspring == 0);
    m->mass[0] = 1.0;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_model_destroy(m);
    return 0;
}

static int test_model_create_bad_sizes(void) {
    const int64_t bad[][2] = {{0, 0}, {-1, 0}, {0, 3}, {INT64_MIN, 0}, {3, -1},
                              {(int64_t)INT32_MAX + 1, 0}, {2, (int64_t)INT32_MAX + 1}};
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(bad[c][0], bad[c][1], 0, &err);
        ENSURE(m == NULL);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(strstr(err.message, bad[c][0] < 1 || bad[c][0] > INT32_MAX ? "nnode" : "nspring") != NULL);
    }
    return 0;
}

/* A valid 3-node model with two springs; node 2 pinned. */
static ms_model* make_valid_triangle(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(3, 2, 0, &err);
    if (m == NULL) return NULL;
    for (int i = 0; i < 3; ++i) {
        m->mass[i] = 1.0 + i;
        m->x_initial[3 * i] = (double)i;
    }
    m->pinned[2] = 1;
    m->springs[0] = 0;
    m->springs[1] = 1;
    m->springs[2] = 1;
    m->springs[3] = 2;
    for (int s = 0; s < 2; ++s) {
        m->rest[s] = 1.0;
        m->k[s] = 10.0;
        m->c[s] = 0.5;
    }
    return m;
}

/* The check must report MS_ERR_VALUE with a message. */
static int expect_check_fails(const ms_model* m) {
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_ERR_VALUE);
    ENSURE(err.status == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    return 0;
}

static int test_model_check(void) {
    ms_model* m = make_valid_triangle();
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ENSURE(err.status == MS_OK);
    ENSURE(ms_model_check_values(m, &err) == MS_OK);

    /* Topology: out-of-range and self springs. */
    const int32_t bad_pairs[][2] = {{0, 3}, {3, 0}, {-1, 1}, {1, -1}, {INT32_MAX, 0}, {1, 1}, {0, 0}};
    for (size_t c = 0; c < sizeof bad_pairs / sizeof bad_pairs[0]; ++c) {
        m->springs[2] = bad_pairs[c][0];
        m->springs[3] = bad_pairs[c][1];
        ENSURE(expect_check_fails(m) == 0);
        m->springs[2] = 1;
        m->springs[3] = 2;
    }
    ENSURE(ms_model_check(m, &err) == MS_OK);

    /* Spring parameters: negative or non-finite. */
    double* spring_arrays[3] = {m->rest, m->k, m->c};
    const double bad_values[] = {-1e-300, -1.0, NAN, INFINITY, -INFINITY};
    for (int a = 0; a < 3; ++a) {
        for (size_t b = 0; b < sizeof bad_values / sizeof bad_values[0]; ++b) {
            double saved = spring_arrays[a][1];
            spring_arrays[a][1] = bad_values[b];
            ENSURE(expect_check_fails(m) == 0);
            ENSURE(ms_model_check_values(m, &err) == MS_ERR_VALUE);
            spring_arrays[a][1] = saved;
        }
    }
    /* Zero is a valid rest length, stiffness and damping. */
    m->rest[0] = m->k[0] = m->c[0] = 0.0;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    m->rest[0] = 1.0;
    m->k[0] = 10.0;
    m->c[0] = 0.5;

    /* Masses: zero is allowed only on a pinned node; negative or non-finite never. */
    m->mass[0] = 0.0;
    ENSURE(expect_check_fails(m) == 0);
    m->mass[0] = 1.0;
    m->mass[2] = 0.0;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    const double bad_masses[] = {-1.0, NAN, INFINITY};
    for (size_t b = 0; b < sizeof bad_masses / sizeof bad_masses[0]; ++b) {
        m->mass[0] = bad_masses[b];
        ENSURE(expect_check_fails(m) == 0);
        m->mass[0] = 1.0;
        m->mass[2] = bad_masses[b];
        ENSURE(expect_check_fails(m) == 0);
        m->mass[2] = 0.0;
    }
    m->pinned[1] = 2;
    ENSURE(expect_check_fails(m) == 0);
    m->pinned[1] = 0;

    /* Initial state must be finite. */
    m->x_initial[4] = NAN;
    ENSURE(expect_check_fails(m) == 0);
    m->x_initial[4] = 0.0;
    m->v_initial[8] = -INFINITY;
    ENSURE(expect_check_fails(m) == 0);
    m->v_initial[8] = 0.0;

    /* Options. */
    m->opt.drag = -0.1;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.drag = NAN;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.drag = 0.0;
    m->opt.energy_loss = 1.0;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.energy_loss = -0.01;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.energy_loss = 0.5;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    m->opt.energy_loss = 0.0;
    m->opt.gravity[2] = INFINITY;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.gravity[2] = 0.0;
    m->opt.integrator = MS_INTEGRATOR_COUNT;
    ENSURE(expect_check_fails(m) == 0);
    m->opt.integrator = (ms_integrator)-1;
    ENSURE(expect_check_fails(m) == 0);
    ENSURE(ms_options_check(&m->opt, &err) == MS_ERR_VALUE);
    m->opt.integrator = MS_RK4;

    ENSURE(ms_model_check(m, &err) == MS_OK);
    ENSURE(err.status == MS_OK);
    ms_model_destroy(m);
    return 0;
}

static int test_integrator_names(void) {
    const char* expected[MS_INTEGRATOR_COUNT] = {"explicit_euler", "symplectic_euler",
                                                 "velocity_verlet", "rk4", "implicit_euler", "projective",
                                                 "xpbd"};
    for (int i = 0; i < MS_INTEGRATOR_COUNT; ++i) {
        const char* name = ms_integrator_name(i);
        ENSURE(name != NULL);
        ENSURE(strcmp(name, expected[i]) == 0);
        ENSURE(ms_integrator_from_name(name) == i);
    }
    ENSURE(ms_integrator_name(-1) == NULL);
    ENSURE(ms_integrator_name(MS_INTEGRATOR_COUNT) == NULL);
    ENSURE(ms_integrator_from_name("") == -1);
    ENSURE(ms_integrator_from_name("euler") == -1);
    ENSURE(ms_integrator_from_name("rk4 ") == -1);
    ENSURE(ms_integrator_from_name("rk") == -1);
    ENSURE(ms_integrator_from_name("implicit_euler_and_more") == -1);
    return 0;
}

static int test_solver_and_strain_options_check(void) {
    ms_model* m = make_valid_triangle();
    ENSURE(m != NULL);
    m->opt.integrator = MS_IMPLICIT_EULER;
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 3, NULL, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));
    const ms_options good = m->opt;

    /* Each bad value: refused by the option check, the model check and ms_step, which
       leaves the state alone. */
    enum { BAD_CASES = 20 };
    for (int c = 0; c < BAD_CASES; ++c) {
        m->opt = good;
        ms_implicit_options* im = &m->opt.implicit;
        switch (c) {
        case 0: im->newton_max_iter = 0; break;
        case 1: im->newton_max_iter = -1; break;
        case 2: im->newton_max_iter = INT32_MIN; break;
        case 3: im->cg_max_iter = 0; break;
        case 4: im->cg_max_iter = -5; break;
        case 5: im->newton_tol = 0.0; break;
        case 6: im->newton_tol = -1e-8; break;
        case 7: im->newton_tol = NAN; break;
        case 8: im->newton_tol = -INFINITY; break;
        case 9: im->cg_tol = 0.0; break;
        case 10: im->cg_tol = -0.0; break;
        case 11: im->cg_tol = -1e-4; break;
        case 12: im->cg_tol = NAN; break;
        case 13: m->opt.strain_limit = -1e-3; break;
        case 14: m->opt.strain_limit = NAN; break;
        case 15: m->opt.strain_limit = -INFINITY; break;
        case 16: m->opt.strain_limiting = 2; break;
        case 17: m->opt.strain_limiting = -1; break;
        case 18: m->opt.strain_limiting = 1; m->opt.strain_limit = NAN; break;
        default: im->newton_tol = -INFINITY; im->cg_tol = NAN; break;
        }
        err = fresh_error();
        ENSURE(ms_options_check(&m->opt, &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(expect_check_fails(m) == 0);
        err = fresh_error();
        ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }
    /* The messages name the option. */
    m->opt = good;
    m->opt.implicit.cg_max_iter = 0;
    ENSURE(ms_options_check(&m->opt, &err) == MS_ERR_VALUE && strstr(err.message, "cg_max_iter") != NULL);
    m->opt = good;
    m->opt.implicit.newton_tol = NAN;
    ENSURE(ms_options_check(&m->opt, &err) == MS_ERR_VALUE && strstr(err.message, "newton_tol") != NULL);
    m->opt = good;
    m->opt.strain_limit = -1.0;
    ENSURE(ms_options_check(&m->opt, &err) == MS_ERR_VALUE && strstr(err.message, "strain_limit") != NULL);

    /* The edges of the valid ranges are accepted. */
    m->opt = good;
    m->opt.implicit.newton_max_iter = 1;
    m->opt.implicit.cg_max_iter = 1;
    m->opt.implicit.newton_tol = 1e-300;
    m->opt.implicit.cg_tol = 1e-300;
    m->opt.strain_limiting = 1;
    m->opt.strain_limit = 0.0;
    ENSURE(ms_options_check(&m->opt, &err) == MS_OK);
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK);
    ENSURE(s->steps == before.steps + 1);
    /* With a limit of 0 the last spring of the pass (its free end hanging from the pinned
       node) is left no longer than its rest length.  The pass is single, so the earlier
       spring, which shares node 1 with it, may be stretched again by that correction. */
    double lengths[2];
    ms_spring_lengths(m, s, lengths);
    ENSURE(lengths[1] <= m->rest[1] * (1.0 + 1e-12));

    free(before.arrays);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_model_copy_independent(void) {
    ms_model* m = make_cloth(4, 1, 11u);
    ENSURE(m != NULL);
    m->opt.drag = 0.25;
    m->opt.integrator = MS_VELOCITY_VERLET;
    ms_error err = fresh_error();
    ms_model* copy = ms_model_copy(m, &err);
    ENSURE(copy != NULL);
    ENSURE(copy->nnode == m->nnode && copy->nspring == m->nspring);
    ENSURE(copy->buffer != m->buffer && copy->mass != m->mass && copy->k != m->k);
    size_t n = (size_t)m->nnode, ns = (size_t)m->nspring;
    ENSURE(memcmp(copy->mass, m->mass, n * sizeof(double)) == 0);
    ENSURE(memcmp(copy->pinned, m->pinned, n) == 0);
    ENSURE(memcmp(copy->springs, m->springs, 2 * ns * sizeof(int32_t)) == 0);
    ENSURE(memcmp(copy->rest, m->rest, ns * sizeof(double)) == 0);
    ENSURE(memcmp(copy->k, m->k, ns * sizeof(double)) == 0);
    ENSURE(memcmp(copy->c, m->c, ns * sizeof(double)) == 0);
    ENSURE(memcmp(copy->x_initial, m->x_initial, 3 * n * sizeof(double)) == 0);
    ENSURE(memcmp(copy->v_initial, m->v_initial, 3 * n * sizeof(double)) == 0);
    ENSURE(memcmp(&copy->opt, &m->opt, sizeof m->opt) == 0);
    ENSURE(ms_model_check(copy, &err) == MS_OK);

    double k0 = m->k[0], mass0 = m->mass[0];
    copy->k[0] = 1234.0;
    copy->mass[0] = 9.0;
    copy->springs[1] = 2;
    copy->x_initial[5] = -7.0;
    copy->opt.gravity[1] = 0.0;
    ENSURE(m->k[0] == k0 && m->mass[0] == mass0 && m->springs[1] == 1);
    ENSURE(m->x_initial[5] != -7.0 && m->opt.gravity[1] == -9.81);

    /* The copy outlives its source. */
    ms_model_destroy(m);
    ms_state* s = ms_state_create(copy, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(copy, s, 1e-3, 10, NULL, &err) == MS_OK);
    ms_state_destroy(s);
    ms_model_destroy(copy);
    return 0;
}

static int test_state_copy_independent(void) {
    ms_model* m = make_cloth(4, 1, 5u);
    ENSURE(m != NULL);
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        m->opt.integrator = (ms_integrator)integrator;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        EXTERNAL(m, s)[10] = 0.5;
        ENSURE(ms_step(m, s, 1e-3, 10, NULL, &err) == MS_OK);
        ms_state* copy = ms_state_copy(m, s, &err);
        ENSURE(copy != NULL);
        ENSURE(copy->buffer != s->buffer && copy->x != s->x);
        size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
        ENSURE(memcmp(copy->x, s->x, bytes) == 0);
        ENSURE(memcmp(copy->v, s->v, bytes) == 0);
        ENSURE(memcmp(copy->external, s->external, bytes) == 0);
        ENSURE(copy->t == s->t && copy->steps == s->steps && memcmp(&copy->ledger, &s->ledger, sizeof s->ledger) == 0);

        snapshot original;
        ENSURE(snapshot_take(m, s, &original));
        ENSURE(ms_step(m, copy, 1e-3, 10, NULL, &err) == MS_OK);
        double saved_x = copy->x[4];
        copy->x[4] += 1.0;
        copy->external[10] = 0.0;
        ENSURE(snapshot_equal(m, s, &original));
        copy->x[4] = saved_x;
        copy->external[10] = 0.5;

        /* Same start, same steps: same bits. */
        ENSURE(ms_step(m, s, 1e-3, 10, NULL, &err) == MS_OK);
        ENSURE(memcmp(copy->x, s->x, bytes) == 0);
        ENSURE(memcmp(copy->v, s->v, bytes) == 0);
        ENSURE(copy->steps == s->steps && copy->t == s->t);

        /* The copy outlives its source. */
        ms_state_destroy(s);
        ENSURE(ms_step(m, copy, 1e-3, 5, NULL, &err) == MS_OK);
        free(original.arrays);
        ms_state_destroy(copy);
    }
    ms_model_destroy(m);
    return 0;
}

static int test_storage_on_first_use(void) {
    /* A symplectic Euler system without constraints holds x, v, f and 1/m only: the
       external force and the double buffer appear when something needs them. */
    ms_model* m = make_cloth(4, 1, 8u);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(s->external == NULL && s->x_next == NULL && s->v_next == NULL);
    ENSURE(ms_step(m, s, 1e-3, 20, NULL, &err) == MS_OK);
    ENSURE(s->external == NULL && s->x_next == NULL);

    /* a copy of a state without an external force has none either, and steps the same */
    ms_state* copy = ms_state_copy(m, s, &err);
    ENSURE(copy != NULL && copy->external == NULL);

    double* external = ms_state_external(m, s, &err);
    ENSURE(external != NULL && err.status == MS_OK);
    ENSURE(ms_state_external(m, s, &err) == external);
    for (int64_t q = 0; q < 3 * m->nnode; ++q) ENSURE(external[q] == 0.0);
    /* a zero external force changes nothing */
    size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
    ENSURE(ms_step(m, s, 1e-3, 20, NULL, &err) == MS_OK);
    ENSURE(ms_step(m, copy, 1e-3, 20, NULL, &err) == MS_OK);
    ENSURE(memcmp(s->x, copy->x, bytes) == 0 && memcmp(s->v, copy->v, bytes) == 0);
    ms_state_destroy(copy);

    /* a copy of a state with one gets its own */
    external[7] = 2.5;
    copy = ms_state_copy(m, s, &err);
    ENSURE(copy != NULL && copy->external != NULL && copy->external != s->external);
    ENSURE(memcmp(copy->external, s->external, bytes) == 0);
    ms_state_destroy(copy);

    m->opt.integrator = MS_VELOCITY_VERLET;
    ENSURE(ms_step(m, s, 1e-3, 3, NULL, &err) == MS_OK);
    ENSURE(s->x_next != NULL && s->v_next == s->x_next + 3 * m->nnode);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_state_reset(void) {
    ms_model* m = make_cloth(4, 1, 21u);
    ENSURE(m != NULL);
    m->opt.integrator = MS_VELOCITY_VERLET;
    m->v_initial[7] = 0.3;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(s->v[7] == 0.3);
    EXTERNAL(m, s)[9] = 0.125;
    size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
    double* first_run = malloc(bytes);
    ENSURE(first_run != NULL);
    ENSURE(ms_step(m, s, 1e-3, 50, NULL, &err) == MS_OK);
    memcpy(first_run, s->x, bytes);
    ENSURE(ms_ledger_dissipated(&s->ledger) > 0.0);

    ms_state_reset(m, s);
    ENSURE(memcmp(s->x, m->x_initial, bytes) == 0);
    ENSURE(memcmp(s->v, m->v_initial, bytes) == 0);
    ENSURE(s->t == 0.0 && s->steps == 0 && ms_ledger_dissipated(&s->ledger) == 0.0);
    for (int64_t i = 0; i < 3 * m->nnode; ++i) {
        ENSURE(s->f[i] == 0.0);
        ENSURE(EXTERNAL(m, s)[i] == (i == 9 ? 0.125 : 0.0));
    }
    ENSURE(ms_step(m, s, 1e-3, 50, NULL, &err) == MS_OK);
    ENSURE(memcmp(s->x, first_run, bytes) == 0);
    free(first_run);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case model_tests[] = {
    TEST(test_default_options),
    TEST(test_model_create_destroy),
    TEST(test_model_create_bad_sizes),
    TEST(test_model_check),
    TEST(test_integrator_names),
    TEST(test_solver_and_strain_options_check),
    TEST(test_model_copy_independent),
    TEST(test_state_copy_independent),
    TEST(test_storage_on_first_use),
    TEST(test_state_reset),
    {NULL, NULL},
};
