/* The implicit (backward Euler) solver: energy factor, stability at any step, exact
   pinned nodes, rollback on overflow. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "vector_paths.h"
#include "kernels/tangent.h"
#include "msprings/msprings.h"

static int test_implicit_energy_factor(void) {
    /* Backward Euler on x'' = -w^2 x maps (w x, v) by (1 / (1 + a^2)) [[1, a], [-a, 1]]
       with a = w h: a rotation scaled by 1 / sqrt(1 + a^2), so the energy is multiplied by
       exactly 1 / (1 + a^2) every step.  The spring is linear along its own axis and the
       motion stays on that axis, so the first Newton iteration is already exact. */
    const double k = 9.0, mass = 0.5, amplitude = 0.2;
    const double omega_h_values[3] = {0.05, 0.5, 2.0};
    for (int c = 0; c < 3; ++c) {
        const double omega_h = omega_h_values[c];
        const double h = omega_h / sqrt(k / mass);
        const double factor = 1.0 / (1.0 + omega_h * omega_h);
        ms_model* m = make_oscillator(k, mass, 0.0, amplitude, MS_IMPLICIT_EULER);
        ENSURE(m != NULL);
        m->v_initial[3] = 0.3;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        const double start = mechanical_energy(m, s);
        double previous = start;
        /* Enough steps to lose a factor of ~1000 in energy, no more: the displacement is
           stored as 1 + u, so u must stay well above rounding. */
        const int steps = (int)ceil(log(1000.0) / log(1.0 + omega_h * omega_h));
        for (int step = 1; step <= steps; ++step) {
            ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
            ENSURE(s->solver.newton_iterations == 1);
            ENSURE(s->solver.newton_converged == 1);
            double energy = mechanical_energy(m, s);
            ENSURE_NEAR(energy / previous, factor, 1e-10);
            ENSURE(s->x[4] == 0.0 && s->x[5] == 0.0 && s->v[4] == 0.0 && s->v[5] == 0.0);
            previous = energy;
        }
        /* Without dampers the loss is the solver's own: the ledger books all of it as
           numerical, and nothing else. */
        ENSURE(s->ledger.dampers == 0.0 && s->ledger.drag == 0.0 && s->ledger.contact == 0.0);
        ENSURE(ms_ledger_work(&s->ledger) == 0.0);
        ENSURE_NEAR(s->ledger.numerical, start - previous, 1e-12 * start);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_implicit_unconditionally_stable(void) {
    /* At w h = 100, a hundred times any explicit method's limit, the energy still falls by
       1 / (1 + (w h)^2) per step and the oscillator comes to rest at the rest length. */
    const double k = 1e6, mass = 1.0, amplitude = 0.1, omega_h = 100.0;
    const double h = omega_h / sqrt(k / mass);
    ms_model* m = make_oscillator(k, mass, 0.0, amplitude, MS_IMPLICIT_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    double initial = mechanical_energy(m, s), previous = initial;
    /* u shrinks by a factor of ~100 per step: two steps keep it far above rounding. */
    for (int step = 0; step < 2; ++step) {
        ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
        double energy = mechanical_energy(m, s);
        ENSURE_NEAR(energy / previous, 1.0 / (1.0 + omega_h * omega_h), 1e-10);
        previous = energy;
    }
    for (int block = 0; block < 100; ++block) {
        ENSURE(ms_step(m, s, h, 10, NULL, &err) == MS_OK);
        ENSURE(all_finite(s->x, 6) && all_finite(s->v, 6));
        double energy = mechanical_energy(m, s);
        ENSURE(energy <= previous);
        ENSURE(fabs(s->x[3] - 1.0) <= amplitude);
        previous = energy;
    }
    ENSURE(s->steps == 1002);
    ENSURE(previous <= 1e-20 * initial);
    ENSURE_NEAR(s->x[3], 1.0, 1e-12);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_implicit_pinned_nodes_exact(void) {
    /* Pinned rows are removed from the linear systems, so a pinned node moves by exactly
       x += h v with its own velocity, bit for bit, however hard the springs pull. */
    ms_model* m = make_cloth(5, 1, 77u);
    ENSURE(m != NULL);
    m->opt.integrator = MS_IMPLICIT_EULER;
    m->pinned[12] = 1; /* an interior node too, with springs on every side */
    const int pins[3] = {0, 4, 12};
    const double velocity[3][3] = {{0.3, -0.1, 0.05}, {0.0, 0.0, 0.0}, {-0.2, 0.4, 0.1}};
    for (int p = 0; p < 3; ++p)
        for (int a = 0; a < 3; ++a) m->v_initial[3 * pins[p] + a] = velocity[p][a];
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    const double h = 1e-2;
    for (int step = 0; step < 50; ++step) {
        double expected[3][3];
        for (int p = 0; p < 3; ++p)
            for (int a = 0; a < 3; ++a) expected[p][a] = s->x[3 * pins[p] + a] + h * velocity[p][a];
        ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
        for (int p = 0; p < 3; ++p)
            for (int a = 0; a < 3; ++a) {
                ENSURE(s->x[3 * pins[p] + a] == expected[p][a]);
                ENSURE(s->v[3 * pins[p] + a] == velocity[p][a]);
            }
    }
    /* The free nodes did move: the cloth fell and was dragged. */
    ENSURE(s->x[3 * 24 + 1] < m->x_initial[3 * 24 + 1] - 0.01);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_implicit_overflow_rolls_back(void) {
    /* Implicit Euler cannot blow up gradually, but a step so large that h^2 k overflows a
       double still produces a non-finite state: the call is undone like any divergence. */
    ms_model* m = make_oscillator(1e6, 1.0, 0.5, 0.1, MS_IMPLICIT_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-4, 5, NULL, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));
    err = fresh_error();
    ENSURE(ms_step(m, s, 1e307, 3, NULL, &err) == MS_ERR_DIVERGED);
    ENSURE(err.status == MS_ERR_DIVERGED);
    ENSURE(has_message(&err));
    ENSURE(err.step == 6 && err.call_step == 1);
    ENSURE(err.time == s->t + 1e307);
    /* the call is undone: the state is bitwise as it began */
    ENSURE(snapshot_equal(m, s, &before));
    /* A sane step goes on from there. */
    ENSURE(ms_step(m, s, 1e-4, 1, NULL, &err) == MS_OK);
    ENSURE(s->steps == 6);
    free(before.arrays);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* Steps a fresh state from the (x, v, t) of s and checks that s, stepped alike, ends bit for
   bit where it does: the solver keeps nothing from earlier steps that changes a step. */
static int steps_like_a_fresh_state(const ms_model* m, ms_state* s, double h, int steps) {
    ms_error err = fresh_error();
    ms_state* fresh = ms_state_create(m, &err);
    ENSURE(fresh != NULL);
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    memcpy(fresh->x, s->x, bytes);
    memcpy(fresh->v, s->v, bytes);
    fresh->t = s->t;
    ENSURE(ms_step(m, s, h, steps, NULL, &err) == MS_OK);
    ENSURE(ms_step(m, fresh, h, steps, NULL, &err) == MS_OK);
    ENSURE(memcmp(s->x, fresh->x, bytes) == 0 && memcmp(s->v, fresh->v, bytes) == 0);
    ENSURE(s->solver.newton_converged && s->solver.cg_converged);
    ms_state_destroy(fresh);
    return 0;
}

static int test_implicit_coarse_level_new_pins(void) {
    /* A cloth of 1,089 nodes is not factored directly: CG runs with block Jacobi and the
       coarse level over aggregates, whose pattern is made for the pins.  Steps converge,
       a fresh state steps to the same bits (the coarse level keeps nothing of one step for
       the next), and pinning a node makes the aggregates again. */
    ms_model* m = make_cloth(33, 1, 17u);
    ENSURE(m != NULL);
    m->opt.integrator = MS_IMPLICIT_EULER;
    for (int64_t q = 0; q < m->nspring; ++q) m->k[q] = 2e3;
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    const double h = 1.0 / 60.0;
    ENSURE(ms_step(m, s, h, 4, NULL, &err) == MS_OK);
    ENSURE(s->solver.newton_converged && s->solver.cg_iterations > s->solver.newton_iterations);
    ENSURE(steps_like_a_fresh_state(m, s, h, 2) == 0);
    m->pinned[465] = 1;
    ENSURE(steps_like_a_fresh_state(m, s, h, 2) == 0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_implicit_new_pins_new_system(void) {
    /* The solver keeps the sparsity pattern of its matrix over the free nodes between steps;
       pinning or releasing a node changes that pattern, and the next step must solve the
       new system: exactly as a state that never saw the old pins, with the new pinned
       node moving by its own velocity.  Stiff springs at a large step, so that a wrong
       system would not converge to the same answer. */
    ms_model* m = make_cloth(5, 1, 91u);
    ENSURE(m != NULL);
    m->opt.integrator = MS_IMPLICIT_EULER;
    for (int64_t q = 0; q < m->nspring; ++q) {
        m->k[q] = 2e3;
        m->c[q] = 0.5;
    }
    m->opt.drag = 0.2;
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    const double h = 1.0 / 60.0;
    ENSURE(ms_step(m, s, h, 5, NULL, &err) == MS_OK);
    const int64_t node = 12;
    double held[3];
    for (int a = 0; a < 3; ++a) held[a] = s->x[3 * node + a] + h * s->v[3 * node + a];
    m->pinned[node] = 1;
    ENSURE(steps_like_a_fresh_state(m, s, h, 1) == 0);
    for (int a = 0; a < 3; ++a) ENSURE(s->x[3 * node + a] == held[a]);
    ENSURE(steps_like_a_fresh_state(m, s, h, 4) == 0);
    m->pinned[node] = 0;
    ENSURE(steps_like_a_fresh_state(m, s, h, 5) == 0);
    /* Released, the node moves with the cloth again. */
    ENSURE(s->x[3 * node + 1] != held[1]);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* The springs' part of implicit Euler's product on the layout (kernels/product_kernel.h), on
   a cloth of two spring blocks in its own numbering (lane groups) and shuffled (gathered
   groups and single springs): after the blocks' halos are gathered it agrees with the sum
   spring by spring of B (p_i - p_j) to rounding, and the kernel of every vector path gives
   the same bits as the plain one. */
static int test_spring_product_on_the_layout(void) {
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
        ms_model* m = make_cloth(41, 1, 7);
        ENSURE(m != NULL);
        if (shuffled) ENSURE(shuffle_nodes(m, 3) == 0);
        ms_error err = fresh_error();
        ms_layout* layout = ms_layout_create(m, &err);
        ENSURE(layout != NULL);
        ENSURE(layout->nblock > 1);
        int64_t proper = 0, gathered = 0, single = 0;
        for (int64_t r = 0; r < layout->nspring;) {
            const int64_t kind = layout->lanes[layout->pairs[2 * r]], k = kind & MS_MAX_LANE_SPRINGS;
            if (k > 0) {
                if (kind & MS_GATHERED) gathered += 1;
                else proper += 1;
                r += MS_LANES * k;
            } else {
                single += 1;
                r += 1;
            }
        }
        ENSURE(shuffled ? gathered > 0 && single > 0 : proper > 0);
        const int64_t n3 = 3 * m->nnode, ns = layout->nspring;
        double* blocks = malloc(sizeof(double) * (size_t)(MS_PRODUCT_BLOCK_DOUBLES * ns + 5 * n3));
        ENSURE(blocks != NULL);
        double *p = blocks + MS_PRODUCT_BLOCK_DOUBLES * ns, *want = p + n3, *got[3] = {want + n3, want + 2 * n3, want + 3 * n3};
        uint64_t seed = 5;
        for (int64_t r = 0; r < ns; ++r) {
            double* b = blocks + MS_PRODUCT_BLOCK_DOUBLES * r;
            const double n[3] = {lcg_uniform(&seed), lcg_uniform(&seed), lcg_uniform(&seed)};
            const double length = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            for (int a = 0; a < 3; ++a) b[a] = n[a] / length;
            b[3] = 50.0 * lcg_uniform(&seed); /* k_t, of either sign */
            b[4] = 100.0 * (1.0 + lcg_uniform(&seed));
            b[5] = 1.0 + lcg_uniform(&seed);
        }
        for (int64_t q = 0; q < n3; ++q) p[q] = lcg_uniform(&seed);
        const double stiffness = 2.5e-4, damping = 1.0 / 60.0;
        memset(want, 0, sizeof(double) * (size_t)n3);
        for (int64_t r = 0; r < ns; ++r) {
            const double* b = blocks + MS_PRODUCT_BLOCK_DOUBLES * r;
            const int64_t i = layout->pairs[2 * r], j = layout->pairs[2 * r + 1];
            const double beta = stiffness * b[3], alpha = stiffness * b[4] + damping * b[5];
            const double u[3] = {p[3 * i] - p[3 * j], p[3 * i + 1] - p[3 * j + 1], p[3 * i + 2] - p[3 * j + 2]};
            const double along = alpha * (b[0] * u[0] + b[1] * u[1] + b[2] * u[2]);
            for (int a = 0; a < 3; ++a) {
                want[3 * i + a] += beta * u[a] + along * b[a];
                want[3 * j + a] -= beta * u[a] + along * b[a];
            }
        }
        ms_spring_product_kernel paths[3];
        VECTOR_PATHS(paths, ms_spring_product);
        for (int path = 0; path < 3; ++path) {
            if (paths[path] == NULL) continue;
            double* y = got[path];
            memset(y, 0, sizeof(double) * (size_t)n3);
            for (int64_t b = 0; b < layout->nblock; ++b) paths[path](layout, b, blocks, stiffness, damping, p, y);
            ms_layout_gather(layout, 0, m->nnode, y);
            double gap = 0.0, size = 0.0;
            for (int64_t q = 0; q < n3; ++q) {
                gap = fmax(gap, fabs(y[q] - want[q]));
                size = fmax(size, fabs(want[q]));
            }
            ENSURE(size > 0.0 && gap <= 1e-13 * size);
            ENSURE(memcmp(y, got[0], sizeof(double) * (size_t)n3) == 0);
        }
        free(blocks);
        ms_layout_destroy(layout);
        ms_model_destroy(m);
    }
    return 0;
}

const test_case implicit_tests[] = {
    TEST(test_implicit_energy_factor),
    TEST(test_implicit_unconditionally_stable),
    TEST(test_implicit_pinned_nodes_exact),
    TEST(test_implicit_overflow_rolls_back),
    TEST(test_implicit_new_pins_new_system),
    TEST(test_implicit_coarse_level_new_pins),
    TEST(test_spring_product_on_the_layout),
    {NULL, NULL},
};
