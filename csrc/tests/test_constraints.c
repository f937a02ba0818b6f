/* Self-collision and constraints (strain limiting). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

/* Five springs with no node in common, each stretched by its ends' velocities; gravity
   off.  Spring 0: pinned - free; 1: equal masses; 2: masses 1 and 3; 3: both pinned;
   4: stretched by less than the limit. */
static ms_model* make_separate_springs(ms_integrator integrator) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(10, 5, 0, &err);
    if (m == NULL) return NULL;
    const double masses[10] = {1.0, 0.5, 0.8, 0.8, 1.0, 3.0, 2.0, 2.0, 0.6, 0.6};
    for (int i = 0; i < 10; ++i) m->mass[i] = masses[i];
    m->pinned[0] = 1;
    m->pinned[6] = 1;
    m->pinned[7] = 1;
    for (int q = 0; q < 5; ++q) {
        const int i = 2 * q, j = 2 * q + 1;
        m->springs[2 * q] = i;
        m->springs[2 * q + 1] = j;
        /* Spring q lies along a different direction, its ends 1 m apart, 5 m from the next. */
        const double direction[3] = {cos(0.7 * q), sin(0.7 * q) * 0.6, sin(0.7 * q) * 0.8};
        for (int a = 0; a < 3; ++a) {
            m->x_initial[3 * i + a] = 5.0 * q;
            m->x_initial[3 * j + a] = 5.0 * q + direction[a];
            /* Ends fly apart along the spring (and a little sideways), spring 4's slowly. */
            const double speed = q == 4 ? 0.05 : 20.0, sideways = a == 1 && q != 4 ? 1.0 : 0.0;
            m->v_initial[3 * j + a] = m->pinned[j] ? 0.0 : speed * direction[a] + sideways;
            m->v_initial[3 * i + a] = m->pinned[i] ? (q == 3 ? -speed * direction[a] : 0.0) : -speed * direction[a];
        }
        m->rest[q] = 1.0;
        m->k[q] = 10.0;
        m->c[q] = 0.1;
    }
    m->opt.gravity[1] = 0.0;
    m->opt.integrator = integrator;
    m->opt.strain_limit = 0.05;
    if (ms_model_check(m, &err) != MS_OK) {
        fprintf(stderr, "make_separate_springs: %s\n", err.message);
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

static double distance(const double* a, const double* b) {
    return sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
}

static int test_strain_limiting(void) {
    /* Each step is compared with the same step taken without strain limiting: a spring
       left longer than (1 + tau) L by the integrator ends at exactly (1 + tau) L, its ends
       moved along it in proportion to their inverse masses (a pinned end stays), and each
       moved node's velocity changes by its displacement / h. */
    const double h = 0.01, tau = 0.05;
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_model* m = make_separate_springs((ms_integrator)integrator);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* limited = ms_state_create(m, &err);
        ENSURE(limited != NULL);
        int corrected[5] = {0, 0, 0, 0, 0};
        for (int step = 0; step < 20; ++step) {
            /* The unconstrained step from the same state. */
            ms_state* free_step = ms_state_copy(m, limited, &err);
            ENSURE(free_step != NULL);
            m->opt.strain_limiting = 0;
            ENSURE(ms_step(m, free_step, h, 1, NULL, &err) == MS_OK);
            m->opt.strain_limiting = 1;
            ENSURE(ms_step(m, limited, h, 1, NULL, &err) == MS_OK);
            for (int q = 0; q < 5; ++q) {
                const int i = 2 * q, j = 2 * q + 1;
                const double* xi = limited->x + 3 * i;
                const double* xj = limited->x + 3 * j;
                const double* fi = free_step->x + 3 * i;
                const double* fj = free_step->x + 3 * j;
                const double free_length = distance(fi, fj);
                const double limit = (1.0 + tau) * m->rest[q];
                ENSURE(distance(xi, xj) <= limit * (1.0 + 1e-12) || (m->pinned[i] && m->pinned[j]));
                if (!(free_length > limit) || (m->pinned[i] && m->pinned[j])) {
                    /* Untouched: bit for bit the unconstrained step. */
                    ENSURE(memcmp(xi, fi, 3 * sizeof(double)) == 0 && memcmp(xj, fj, 3 * sizeof(double)) == 0);
                    ENSURE(memcmp(limited->v + 3 * i, free_step->v + 3 * i, 3 * sizeof(double)) == 0);
                    ENSURE(memcmp(limited->v + 3 * j, free_step->v + 3 * j, 3 * sizeof(double)) == 0);
                    continue;
                }
                corrected[q] += 1;
                ENSURE_NEAR(distance(xi, xj), limit, 1e-12 * limit);
                const double wi = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
                const double wj = m->pinned[j] ? 0.0 : 1.0 / m->mass[j];
                const double excess = free_length - limit;
                for (int a = 0; a < 3; ++a) {
                    const double unit = (fj[a] - fi[a]) / free_length;
                    const double move_i = xi[a] - fi[a], move_j = xj[a] - fj[a];
                    /* Node i moves towards j by wi / (wi + wj) of the excess, j the rest. */
                    ENSURE_NEAR(move_i, excess * wi / (wi + wj) * unit, 1e-12);
                    ENSURE_NEAR(move_j, -excess * wj / (wi + wj) * unit, 1e-12);
                    ENSURE_NEAR(limited->v[3 * i + a] - free_step->v[3 * i + a], move_i / h, 1e-9);
                    ENSURE_NEAR(limited->v[3 * j + a] - free_step->v[3 * j + a], move_j / h, 1e-9);
                }
                if (m->pinned[i]) {
                    ENSURE(memcmp(xi, fi, 3 * sizeof(double)) == 0);
                    ENSURE(memcmp(limited->v + 3 * i, free_step->v + 3 * i, 3 * sizeof(double)) == 0);
                }
                if (m->mass[i] == m->mass[j] && !m->pinned[i] && !m->pinned[j])
                    for (int a = 0; a < 3; ++a) ENSURE_NEAR(xi[a] - fi[a], -(xj[a] - fj[a]), 1e-14);
            }
            ms_state_destroy(free_step);
        }
        /* Springs 0 to 2 were corrected (at least in the first step: the velocity change
           then takes out most of the stretching speed); the two pinned ends of spring 3
           flew apart unhindered; spring 4 never reached its limit. */
        ENSURE(corrected[0] >= 1 && corrected[1] >= 1 && corrected[2] >= 1);
        ENSURE(corrected[3] == 0 && corrected[4] == 0);
        ENSURE(distance(limited->x + 18, limited->x + 21) > 1.3);
        ms_state_destroy(limited);
        ms_model_destroy(m);
    }
    return 0;
}

/* Self-collision with a small distance and huge coordinates: the cells lie far beyond int64
   and share the outermost cell (no undefined cast or overflow for the sanitizers to find);
   nodes that far apart are not pushed.  (A distance below 1e-12 m has nothing to act on and
   builds no grid.) */
static int test_self_collision_far_cells(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(3, 0, 0, &err);
    ENSURE(m != NULL);
    const double x[9] = {1e300, 0.0, 0.0, -1e300, 1e300, 0.0, 0.0, -1e308, 1e-300};
    memcpy(m->x_initial, x, sizeof x);
    for (int i = 0; i < 3; ++i) m->mass[i] = 1.0;
    m->opt.gravity[1] = 0.0;
    m->opt.self_collision = 1e-11;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 3, NULL, &err) == MS_OK);
    for (int q = 0; q < 9; ++q) ENSURE(s->x[q] == x[q]);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* The self-collision distance is checked with the options: [0, MS_SELF_COLLISION_MAX] m,
   refused beyond it (and NaN) with a message naming the option and the range. */
static int test_self_collision_range(void) {
    ms_options opt = ms_default_options();
    ms_error err = fresh_error();
    const double valid[] = {0.0, 5e-324, 1e-300, 0.05, 1e3, MS_SELF_COLLISION_MAX};
    for (int k = 0; k < 6; ++k) {
        opt.self_collision = valid[k];
        ENSURE(ms_options_check(&opt, &err) == MS_OK);
    }
    const double invalid[] = {-1e-300, -1.0, nextafter(MS_SELF_COLLISION_MAX, INFINITY), 1e100, INFINITY, NAN};
    for (int k = 0; k < 6; ++k) {
        opt.self_collision = invalid[k];
        ENSURE(ms_options_check(&opt, &err) == MS_ERR_VALUE);
        ENSURE(strstr(err.message, "self_collision") != NULL && strstr(err.message, "[0, 1e+06]") != NULL);
    }
    return 0;
}

/* A state whose arithmetic overflows in the self-collision pass (triangles 1e80 m across:
   the closest-point test multiplies four such lengths) is a divergence, rolled back; out of
   memory is reported only when an allocation fails. */
static int test_self_collision_overflow_is_a_divergence(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(4, 0, 2, &err);
    ENSURE(m != NULL);
    const double x[12] = {0.0, 0.0, 0.0, 1e80, 0.0, 0.0, 0.0, 0.0, 1e80, 3e79, 1e78, 3e79};
    memcpy(m->x_initial, x, sizeof x);
    const int32_t faces[6] = {0, 1, 2, 1, 2, 3};
    memcpy(m->faces, faces, sizeof faces);
    for (int i = 0; i < 4; ++i) m->mass[i] = 1.0;
    m->opt.self_collision = 0.05;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_ERR_DIVERGED);
    for (int q = 0; q < 12; ++q) ENSURE(s->x[q] == x[q]);
    ENSURE(s->steps == 0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case constraints_tests[] = {
    TEST(test_strain_limiting),
    TEST(test_self_collision_far_cells),
    TEST(test_self_collision_range),
    TEST(test_self_collision_overflow_is_a_divergence),
    {NULL, NULL},
};
