/* Collision and contact with colliders. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "vector_paths.h"
#include "kernels/kernels.h"
#include "msprings/msprings.h"

static int test_contact_many_steps_per_call(void) {
    /* A cloth falling onto a sphere and the ground: one call of 150 steps (the contact pass
       carries the nodes' known gaps from step to step) equals 150 calls of one step bit for
       bit, also after a third collider is added and the sphere removed between calls. */
    ms_model* m = make_cloth(10, 0, 9u);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_collider sphere = {0};
    sphere.type = MS_SPHERE;
    sphere.center[0] = 0.45, sphere.center[1] = -0.4, sphere.center[2] = 0.45;
    sphere.size[0] = 0.3;
    sphere.friction = 0.3;
    sphere.thickness = 0.005;
    ms_collider ground = {0};
    ground.type = MS_PLANE;
    ground.center[1] = -1.0;
    ground.axis[1] = 1.0;
    ground.velocity[1] = 0.2;
    const int64_t sphere_id = ms_model_add_collider(m, &sphere, &err);
    ENSURE(sphere_id >= 0 && ms_model_add_collider(m, &ground, &err) >= 0);
    ms_model* m_each = ms_model_copy(m, &err);
    ENSURE(m_each != NULL);
    ms_state* one = ms_state_create(m, &err);
    ms_state* each = ms_state_create(m_each, &err);
    ENSURE(one != NULL && each != NULL);
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    for (int round = 0; round < 3; ++round) {
        if (round == 1) {
            ms_collider box = {0};
            box.type = MS_BOX;
            box.center[0] = 0.2, box.center[1] = -0.8, box.center[2] = 0.2;
            box.size[0] = box.size[1] = box.size[2] = 0.15;
            ENSURE(ms_add_collider(m, one, &box, &err) >= 0 && ms_add_collider(m_each, each, &box, &err) >= 0);
        } else if (round == 2) {
            ENSURE(ms_remove_collider(m, one, sphere_id, &err) == MS_OK);
            ENSURE(ms_remove_collider(m_each, each, sphere_id, &err) == MS_OK);
        }
        ENSURE(ms_step(m, one, 2e-3, 150, NULL, &err) == MS_OK);
        for (int k = 0; k < 150; ++k) ENSURE(ms_step(m_each, each, 2e-3, 1, NULL, &err) == MS_OK);
        ENSURE(memcmp(one->x, each->x, bytes) == 0 && memcmp(one->v, each->v, bytes) == 0);
        ENSURE(memcmp(&one->ledger, &each->ledger, sizeof one->ledger) == 0);
    }
    /* the cloth did reach the colliders */
    double lowest = INFINITY;
    for (int64_t i = 0; i < m->nnode; ++i) lowest = fmin(lowest, one->x[3 * i + 1]);
    ENSURE(lowest < -0.5);
    ms_state_destroy(one);
    ms_state_destroy(each);
    ms_model_destroy(m);
    ms_model_destroy(m_each);
    return 0;
}

static int test_contact_push_towards_an_earlier_collider(void) {
    /* A rising plane with restitution 1, listed second, kicks a free node up into a fixed
       ceiling listed first: the ceiling must stop it within one call of many steps as it
       does with one call per step. */
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(1, 0, 0, &err);
    ENSURE(m != NULL);
    m->mass[0] = 1.0;
    m->opt.gravity[1] = 0.0;
    ms_collider ceiling = {0};
    ceiling.type = MS_PLANE;
    ceiling.center[1] = 0.0485;
    ceiling.axis[1] = -1.0;
    ms_collider kicker = {0};
    kicker.type = MS_PLANE;
    kicker.center[1] = -0.001;
    kicker.axis[1] = 1.0;
    kicker.velocity[1] = 1.0;
    kicker.restitution = 1.0;
    ENSURE(ms_model_add_collider(m, &ceiling, &err) >= 0 && ms_model_add_collider(m, &kicker, &err) >= 0);
    ms_model* m_each = ms_model_copy(m, &err);
    ENSURE(m_each != NULL);
    ms_state* one = ms_state_create(m, &err);
    ms_state* each = ms_state_create(m_each, &err);
    ENSURE(one != NULL && each != NULL);
    ENSURE(ms_step(m, one, 2e-3, 13, NULL, &err) == MS_OK);
    for (int k = 0; k < 13; ++k) ENSURE(ms_step(m_each, each, 2e-3, 1, NULL, &err) == MS_OK);
    ENSURE(memcmp(one->x, each->x, 3 * sizeof(double)) == 0 && memcmp(one->v, each->v, 3 * sizeof(double)) == 0);
    ENSURE_NEAR(one->x[1], 0.0485, 1e-12);
    ms_state_destroy(one);
    ms_state_destroy(each);
    ms_model_destroy(m);
    ms_model_destroy(m_each);
    return 0;
}

/* A finite plane normal of any size is normalised without overflow (scaled before it is
   squared); a zero one is refused. */
static int test_collider_axis_of_any_size(void) {
    ms_error err = fresh_error();
    ms_model* m = make_oscillator(10.0, 1.0, 0.0, 0.1, MS_SYMPLECTIC_EULER);
    ENSURE(m != NULL);
    const double scales[] = {1e-10, 1.0, 1e200, 1.7e308};
    for (int k = 0; k < 4; ++k) {
        ms_collider plane = {0};
        plane.type = MS_PLANE;
        plane.center[1] = -5.0;
        plane.axis[0] = scales[k], plane.axis[1] = scales[k];
        const int64_t id = ms_model_add_collider(m, &plane, &err);
        ENSURE(id >= 0);
        const ms_collider* stored = ms_find_collider(m, id);
        ENSURE_NEAR(stored->axis[0], sqrt(0.5), 1e-15);
        ENSURE_NEAR(stored->axis[1], sqrt(0.5), 1e-15);
        ENSURE(stored->axis[2] == 0.0);
    }
    ms_collider zero = {0};
    zero.type = MS_CYLINDER;
    zero.size[0] = zero.size[1] = 1.0;
    zero.axis[2] = 1e-300;
    ENSURE(ms_model_add_collider(m, &zero, &err) < 0 && err.status == MS_ERR_VALUE);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 10, NULL, &err) == MS_OK);
    ms_state_destroy(s);
    /* the ids run out at INT64_MAX: refused, not wrapped, and the colliders unchanged */
    ms_collider last = {0};
    last.type = MS_PLANE;
    last.axis[1] = 1.0;
    const int64_t before = m->ncollider;
    m->next_collider_id = INT64_MAX - 1;
    ENSURE(ms_model_add_collider(m, &last, &err) == INT64_MAX - 1);
    err = fresh_error();
    ENSURE(ms_model_add_collider(m, &last, &err) < 0 && err.status == MS_ERR_VALUE && err.message[0] != '\0');
    ENSURE(m->ncollider == before + 1 && m->next_collider_id == INT64_MAX);
    ms_model_destroy(m);
    return 0;
}

/* The gap bounds' screening (four nodes at a time on each vector path) against the scalar
   test it stands for: it stops at the first four of which some node's known gap is not
   greater than its bound (or where fewer than four are left), every node before that has
   its gap reduced by its bound with the scalar arithmetic's bits, and no node from there on
   is touched; every path gives the plain path's bits. */
static int test_gap_screening_matches_the_scalar_test(void) {
    enum { N = 203 };
    static double x_old[3 * N], x[3 * N], known[N], want[N], got[N];
    const double start[3] = {0.1, -2.0, 0.3}, finish[3] = {0.1, -1.99, 0.31}, thickness = 0.004;
    ms_gap_screen paths[3];
    VECTOR_PATHS(paths, ms_screen_gaps);
    uint64_t seed = 5;
    for (int trial = 0; trial < 40; ++trial) {
        for (int64_t q = 0; q < 3 * N; ++q) {
            x_old[q] = 3.0 * lcg_uniform(&seed);
            x[q] = x_old[q] + 0.01 * lcg_uniform(&seed);
        }
        /* gaps well above the paths, but one node (none in the last trials) has a small one */
        const int64_t close = trial < 30 ? (int64_t)(trial * 7 % N) : -1;
        for (int64_t i = 0; i < N; ++i)
            known[i] = i == close ? 0.001 * fabs(lcg_uniform(&seed)) : 2.0 + lcg_uniform(&seed);
        const int64_t begin = trial % 5;
        /* the scalar test, as the contact pass runs it */
        memcpy(want, known, sizeof known);
        int64_t stop = begin;
        for (int64_t i = begin; i < N; ++i) {
            const double r0[3] = {x_old[3 * i] - start[0], x_old[3 * i + 1] - start[1], x_old[3 * i + 2] - start[2]};
            const double path[3] = {(x[3 * i] - finish[0]) - r0[0], (x[3 * i + 1] - finish[1]) - r0[1],
                                    (x[3 * i + 2] - finish[2]) - r0[2]};
            const double length = fabs(path[0]) + fabs(path[1]) + fabs(path[2]);
            const double bound =
                length + MS_GAP_ROUNDING * (fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + length + thickness);
            if (!(want[i] > bound)) break;
            want[i] -= bound;
            stop = i + 1;
        }
        const int64_t expected_stop = begin + (stop - begin) / 4 * 4; /* the start of the four that failed */
        for (int p = 0; p < 3; ++p) {
            if (paths[p] == NULL) continue;
            memcpy(got, known, sizeof known);
            const int64_t returned = paths[p](x_old, x, got, start, finish, thickness, NULL, begin, N);
            ENSURE(returned == expected_stop);
            ENSURE(memcmp(got, want, sizeof(double) * (size_t)returned) == 0);
            ENSURE(memcmp(got + returned, known + returned, sizeof(double) * (size_t)(N - returned)) == 0);
            if (close < 0 || close < begin) ENSURE(returned == begin + (N - begin) / 4 * 4);
        }
    }
    return 0;
}

/* A plane's full test in the screening, against collide_node's arithmetic written out: from
   gaps forgotten (0, as at the start of a call), each four nodes all farther from the plane
   than their paths are long (plus the margin) get collide_node's new bounds to the bit,
   on every path; the screening stops at the first four with a node near the plane, or with
   a bound that still holds beside one that does not (those go to the scalar test), and
   touches nothing from there on. */
static int test_gap_screening_runs_the_plane_test(void) {
    enum { N = 203 };
    static double x_old[3 * N], x[3 * N], known[N], want[N], got[N];
    const double start[3] = {0.0, 0.05, 0.0}, finish[3] = {0.0, 0.0501, 0.0}, thickness = 0.002;
    const double axis[3] = {0.6, 0.8, 0.0}; /* a unit axis */
    ms_gap_screen paths[3];
    VECTOR_PATHS(paths, ms_screen_gaps);
    uint64_t seed = 11;
    for (int trial = 0; trial < 40; ++trial) {
        /* nodes 0.1 to 3 m above the plane, moving up to 1 cm; one node (none in the last
           trials) on it, and in some trials one node with a bound that holds */
        const int64_t close = trial < 30 ? (int64_t)(trial * 7 % N) : -1;
        const int64_t bounded = trial % 3 == 0 ? (int64_t)(trial * 13 % N) : -1;
        for (int64_t i = 0; i < N; ++i) {
            const double height = i == close ? 0.5 * thickness : 0.1 + 2.9 * fabs(lcg_uniform(&seed));
            const double t = lcg_uniform(&seed); /* along the plane */
            const double along[3] = {-0.8 * t, 0.6 * t, lcg_uniform(&seed)};
            for (int a = 0; a < 3; ++a) {
                x_old[3 * i + a] = start[a] + height * axis[a] + along[a];
                x[3 * i + a] = x_old[3 * i + a] + (finish[a] - start[a]) + 0.01 * lcg_uniform(&seed);
            }
            known[i] = i == bounded ? 5.0 : 0.0;
        }
        const int64_t begin = trial % 5;
        memcpy(want, known, sizeof known);
        int64_t stop = begin;
        for (int64_t i = begin; i < N; ++i) {
            if (known[i] != 0.0) break;
            /* collide_node's pass-over for a plane */
            const double r0[3] = {x_old[3 * i] - start[0], x_old[3 * i + 1] - start[1], x_old[3 * i + 2] - start[2]};
            const double r1[3] = {x[3 * i] - finish[0], x[3 * i + 1] - finish[1], x[3 * i + 2] - finish[2]};
            const double path[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
            const double margin = MS_FULL_TEST_ROUNDING * (fabs(r0[0]) + fabs(r0[1]) + fabs(r0[2]) + fabs(path[0]) +
                                                           fabs(path[1]) + fabs(path[2]) + thickness);
            const double start_gap = r0[0] * axis[0] + r0[1] * axis[1] + r0[2] * axis[2] - thickness;
            const double travel = sqrt(path[0] * path[0] + path[1] * path[1] + path[2] * path[2]);
            if (!(start_gap > travel + margin)) break;
            want[i] = start_gap - travel - margin;
            stop = i + 1;
        }
        const int64_t expected_stop = begin + (stop - begin) / 4 * 4;
        for (int p = 0; p < 3; ++p) {
            if (paths[p] == NULL) continue;
            memcpy(got, known, sizeof known);
            const int64_t returned = paths[p](x_old, x, got, start, finish, thickness, axis, begin, N);
            ENSURE(returned == expected_stop);
            ENSURE(memcmp(got, want, sizeof(double) * (size_t)returned) == 0);
            ENSURE(memcmp(got + returned, known + returned, sizeof(double) * (size_t)(N - returned)) == 0);
            if ((close < 0 || close < begin) && (bounded < 0 || bounded < begin))
                ENSURE(returned == begin + (N - begin) / 4 * 4);
            /* without the plane, gaps of 0 stop the screening at once */
            memcpy(got, known, sizeof known);
            ENSURE(paths[p](x_old, x, got, start, finish, thickness, NULL, begin, N) == begin);
        }
    }
    return 0;
}

const test_case contact_tests[] = {
    TEST(test_contact_many_steps_per_call),
    TEST(test_contact_push_towards_an_earlier_collider),
    TEST(test_collider_axis_of_any_size),
    TEST(test_gap_screening_matches_the_scalar_test),
    TEST(test_gap_screening_runs_the_plane_test),
    {NULL, NULL},
};
