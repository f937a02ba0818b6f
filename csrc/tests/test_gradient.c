/* Gradients through a run (msprings/gradient.h): the backward pass on a damped oscillator
   against central differences of the runs themselves, for every integrator that has one;
   the same for a node sliding on the ground and over a sphere, and the dot-product test of
   the backward and tangent passes there; the refusals; a checkpoint that the steps do not
   reproduce; the same bits on two workers as on one; and the adjoint of the spring forces on the step's layout against the
   spring-by-spring one, on every vector path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "vector_paths.h"
#include "kernels/derivatives.h"
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
   at one value if corrupt), on threads workers. */
static backward_result backward_on(const ms_model* m, int corrupt, int threads) {
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
    ms_gradient_run run = {H, STEPS, EVERY, checkpoints, 2, record_steps, NULL, threads};
    ms_state* s = ms_state_create(m, &err);
    result.status = s == NULL ? -1 : ms_gradient_backward(m, s, &run, dx, NULL, result.grad_x, result.grad_v, &g, &err);
    if (result.status != MS_OK && !has_message(&err)) result.status = -2;
    ms_state_destroy(s);
    return result;
}

static backward_result backward(const ms_model* m, int corrupt) { return backward_on(m, corrupt, 1); }

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

/* ---- contact ---------------------------------------------------------------------------
   The oscillator's free node put on a collider with friction 0.05 and thrown across it at
   0.8 m/s: on the ground (a plane through the origin) or on top of a sphere of radius 2 m
   (the node slides over its curved top), pulled by the spring from its pin above.  It slides
   all through the 0.3 s run: no node starts or stops touching, and none sticks. */

#define CONTACT_STEPS 150
#define CONTACT_EVERY 30
#define CONTACT_H 2e-3

static ms_model* make_slider(int sphere, ms_integrator integrator) {
    ms_model* m = make_oscillator(4.0, 1.5, 0.3, 0.2, integrator);
    if (m == NULL) return NULL;
    m->opt.gravity[1] = -9.81;
    m->x_initial[0] = 0.0, m->x_initial[1] = 0.5, m->x_initial[2] = 0.0;
    m->x_initial[3] = 1.2, m->x_initial[4] = 0.0, m->x_initial[5] = 0.0;
    m->v_initial[3] = 0.0, m->v_initial[4] = 0.0, m->v_initial[5] = 0.8;
    m->opt.implicit.newton_tol = 1e-14;
    m->opt.implicit.cg_tol = 1e-14;
    ms_collider c;
    memset(&c, 0, sizeof c);
    c.type = sphere ? MS_SPHERE : MS_PLANE;
    c.axis[1] = 1.0;
    if (sphere) {
        c.center[0] = 1.2, c.center[1] = -2.0;
        c.size[0] = 2.0;
    }
    c.friction = 0.05;
    ms_error err = fresh_error();
    if (ms_model_add_collider(m, &c, &err) < 0) {
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

/* L = the free node's final x + 2 z + 3 v_z, after CONTACT_STEPS steps one step per call
   (its checkpoints into checkpoints, unless NULL); *touched counts the steps that left it on
   the surface. */
static double slider_loss(const ms_model* m, double* checkpoints, int* touched, int* ok) {
    ms_error err;
    ms_state* s = ms_state_create(m, &err);
    *ok = s != NULL;
    *touched = 0;
    const int sphere = m->colliders[0].type == MS_SPHERE;
    for (int64_t k = 0; k <= CONTACT_STEPS && *ok; ++k) {
        if (checkpoints != NULL && k % CONTACT_EVERY == 0) {
            memcpy(checkpoints + 12 * (k / CONTACT_EVERY), s->x, sizeof(double) * 6);
            memcpy(checkpoints + 12 * (k / CONTACT_EVERY) + 6, s->v, sizeof(double) * 6);
        }
        if (k > 0) {
            const double* x = s->x + 3;
            const double r[3] = {x[0] - 1.2, x[1] + 2.0, x[2]};
            const double gap = sphere ? sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) - 2.0 : x[1];
            *touched += fabs(gap) <= 1e-12;
        }
        if (k < CONTACT_STEPS) *ok = ms_step(m, s, CONTACT_H, 1, NULL, &err) == MS_OK;
    }
    const double loss = *ok ? s->x[3] + 2.0 * s->x[5] + 3.0 * s->v[5] : NAN;
    ms_state_destroy(s);
    return loss;
}

static int test_sliding_contact_gradient_matches_central_differences(void) {
    const ms_integrator integrators[5] = {MS_SYMPLECTIC_EULER, MS_EXPLICIT_EULER, MS_VELOCITY_VERLET, MS_RK4,
                                          MS_IMPLICIT_EULER};
    for (int sphere = 0; sphere < 2; ++sphere)
        for (int i = 0; i < 5; ++i) {
            /* implicit Euler holds a node inside its step while its approach velocity is within
               about 1e-9 of zero: over the sphere's curved top this node is near that switch at
               many steps, and central differences cross it */
            if (sphere && integrators[i] == MS_IMPLICIT_EULER) continue;
            ms_model* m = make_slider(sphere, integrators[i]);
            ENSURE(m != NULL);
            double checkpoints[(CONTACT_STEPS / CONTACT_EVERY + 1) * 12];
            int touched = 0, ok = 0;
            slider_loss(m, checkpoints, &touched, &ok);
            ENSURE(ok);
            /* on the surface after every step (explicit Euler on the sphere: every other one,
               as its position follows the velocity before the step's contact) */
            ENSURE(touched >= CONTACT_STEPS / 2);
            const int64_t record_steps[2] = {0, CONTACT_STEPS};
            double dx[12] = {0.0}, dv[12] = {0.0};
            dx[6 + 3] = 1.0, dx[6 + 5] = 2.0, dv[6 + 5] = 3.0;
            double grad_x[6], grad_v[6], k = 0.0, c = 0.0, rest = 0.0, mass[2] = {0.0}, external[6] = {0.0};
            ms_parameter_arrays g = {&k, &c, &rest, mass, external};
            ms_gradient_run run = {CONTACT_H, CONTACT_STEPS, CONTACT_EVERY, checkpoints, 2, record_steps, NULL, 1};
            ms_error err = fresh_error();
            ms_state* s = ms_state_create(m, &err);
            ENSURE(s != NULL);
            ENSURE(ms_gradient_backward(m, s, &run, dx, dv, grad_x, grad_v, &g, &err) == MS_OK);
            double* values[6] = {m->k, m->c, m->mass + 1, m->x_initial + 3, m->v_initial + 5, m->rest};
            const double adjoint[6] = {k, c, mass[1], grad_x[3], grad_v[5], rest};
            for (int p = 0; p < 6; ++p) {
                const double base = *values[p], eps = 1e-6 * fmax(fabs(base), 1.0);
                int ok_up = 0, ok_down = 0, touched_up = 0, touched_down = 0;
                *values[p] = base + eps;
                const double up = slider_loss(m, NULL, &touched_up, &ok_up);
                *values[p] = base - eps;
                const double down = slider_loss(m, NULL, &touched_down, &ok_down);
                *values[p] = base;
                ENSURE(ok_up && ok_down && touched_up == touched && touched_down == touched);
                const double difference = (up - down) / (2.0 * eps);
                ENSURE_NEAR(adjoint[p], difference, 1e-6 * fabs(difference) + 1e-9);
            }
            /* the tangent pass along every one of those parameters at once, against the adjoint */
            double direction_k = 0.7, direction_c = -0.4, direction_rest = 0.3, direction_mass[2] = {0.0, 0.5};
            double direction_external[6] = {0.0, 0.0, 0.0, 0.2, -0.1, 0.3};
            ms_parameter_arrays d = {&direction_k, &direction_c, &direction_rest, direction_mass, direction_external};
            const double dx0[6] = {0.0, 0.0, 0.0, 0.4, 0.0, -0.2}, dv0[6] = {0.0, 0.0, 0.0, 0.1, 0.0, 0.6};
            double record_dx[12], record_dv[12];
            ENSURE(ms_gradient_tangent(m, s, &run, 1, dx0, dv0, &d, record_dx, record_dv, &err) == MS_OK);
            const double tangent = record_dx[6 + 3] + 2.0 * record_dx[6 + 5] + 3.0 * record_dv[6 + 5];
            double along = direction_k * k + direction_c * c + direction_rest * rest + direction_mass[1] * mass[1];
            for (int q = 0; q < 6; ++q)
                along += direction_external[q] * external[q] + dx0[q] * grad_x[q] + dv0[q] * grad_v[q];
            ENSURE_NEAR(along, tangent, 1e-12 * fabs(tangent));
            ms_state_destroy(s);
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

/* Two workers step each stretch again beside the adjoint of the next one: the same bits as
   one, for every integrator, and the checkpoint not reproduced is still reported. */
static int test_two_workers_give_the_bits_of_one(void) {
    const ms_integrator integrators[] = {MS_SYMPLECTIC_EULER, MS_EXPLICIT_EULER, MS_VELOCITY_VERLET, MS_RK4,
                                         MS_IMPLICIT_EULER};
    for (size_t i = 0; i < sizeof integrators / sizeof integrators[0]; ++i) {
        ms_model* m = make_oscillator(4.0, 1.5, 0.3, 0.2, integrators[i]);
        ENSURE(m != NULL);
        const backward_result one = backward_on(m, 0, 1);
        ENSURE(one.status == MS_OK);
        ENSURE(one.k != 0.0 && one.grad_x[3] != 0.0);
        for (int threads = 2; threads <= 3; ++threads) {
            const backward_result more = backward_on(m, 0, threads);
            ENSURE(more.status == MS_OK);
            ENSURE(memcmp(more.grad_x, one.grad_x, sizeof one.grad_x) == 0);
            ENSURE(memcmp(more.grad_v, one.grad_v, sizeof one.grad_v) == 0);
            ENSURE(memcmp(more.mass, one.mass, sizeof one.mass) == 0);
            ENSURE(memcmp(more.external, one.external, sizeof one.external) == 0);
            ENSURE(memcmp(&more.k, &one.k, sizeof one.k) == 0 && memcmp(&more.c, &one.c, sizeof one.c) == 0);
            ENSURE(memcmp(&more.rest, &one.rest, sizeof one.rest) == 0);
            ENSURE(backward_on(m, 1, threads).status == MS_ERR_DIVERGED);
        }
        ms_model_destroy(m);
    }
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
    /* colliders have a gradient; self-collision, with them or not, has none */
    ms_collider ground;
    memset(&ground, 0, sizeof ground);
    ground.type = MS_PLANE;
    ground.axis[1] = 1.0;
    ground.center[1] = -5.0;
    ENSURE(ms_model_add_collider(m, &ground, &err) >= 0);
    err = fresh_error();
    ENSURE(ms_gradient_check(m, &err) == MS_OK);
    m->opt.self_collision = 0.01;
    ENSURE(ms_gradient_check(m, &err) == MS_ERR_VALUE && strstr(err.message, "self-collision") != NULL);
    m->opt.self_collision = 0.0;
    /* records out of order */
    double checkpoints[(STEPS / EVERY + 1) * 12];
    ENSURE(checkpoints_of(m, checkpoints) == 0);
    const int64_t record_steps[2] = {STEPS, 0};
    double dx[12] = {0.0}, grad_x[6], grad_v[6], k, c, rest, mass[2], external[6];
    ms_parameter_arrays g = {&k, &c, &rest, mass, external};
    ms_gradient_run run = {H, STEPS, EVERY, checkpoints, 2, record_steps, NULL, 1};
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    err = fresh_error();
    ENSURE(ms_gradient_backward(m, s, &run, dx, NULL, grad_x, grad_v, &g, &err) == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* The outputs of one adjoint of the forces. */
typedef struct adjoint_out {
    double *lx, *lv, *pairing, *grad, *k, *c, *rest, *mass, *external;
} adjoint_out;

static void adjoint_out_free(adjoint_out* o) {
    free(o->lx);
    free(o->lv);
    free(o->pairing);
    free(o->grad);
    free(o->k);
    free(o->c);
    free(o->rest);
    free(o->mass);
    free(o->external);
}

static int adjoint_out_make(const ms_model* m, adjoint_out* o) {
    const size_t n = (size_t)m->nnode, ns = (size_t)m->nspring;
    o->lx = calloc(3 * n, sizeof(double));
    o->lv = calloc(3 * n, sizeof(double));
    o->pairing = calloc(n, sizeof(double));
    o->grad = calloc(3 * ns, sizeof(double));
    o->k = calloc(ns, sizeof(double));
    o->c = calloc(ns, sizeof(double));
    o->rest = calloc(ns, sizeof(double));
    o->mass = calloc(n, sizeof(double));
    o->external = calloc(3 * n, sizeof(double));
    const int ok = o->lx && o->lv && o->pairing && o->grad && o->k && o->c && o->rest && o->mass && o->external;
    if (!ok) adjoint_out_free(o);
    return ok ? 0 : -1;
}

/* The largest |a - b| over the largest |a|. */
static double relative_gap(const double* a, const double* b, int64_t count) {
    double gap = 0.0, size = 0.0;
    for (int64_t q = 0; q < count; ++q) {
        gap = fmax(gap, fabs(a[q] - b[q]));
        size = fmax(size, fabs(a[q]));
    }
    return size > 0.0 ? gap / size : gap;
}

/* On a cloth in its own numbering (lane groups) and shuffled (gathered groups, singles):
   ms_forces_adjoint on the layout agrees with the spring-by-spring reference to rounding
   (J^T lf for x and v, the pairing lf.f and the parameters' gradient); and the kernel of
   every vector path gives the same bits as the plain one. */
static int test_spring_adjoint_on_the_layout_matches_the_reference(void) {
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
        ms_model* m = make_cloth(11, 1, 7);
        ENSURE(m != NULL);
        if (shuffled) ENSURE(shuffle_nodes(m, 3) == 0);
        const int64_t n = m->nnode, n3 = 3 * n, ns = m->nspring;
        uint64_t seed = 11;
        double* state = malloc(sizeof(double) * (size_t)(3 * n3));
        ENSURE(state != NULL);
        double *x = state, *v = state + n3, *lf = state + 2 * n3;
        for (int64_t q = 0; q < n3; ++q) {
            x[q] = m->x_initial[q] + 0.02 * lcg_uniform(&seed);
            v[q] = lcg_uniform(&seed);
            lf[q] = lcg_uniform(&seed);
        }
        x[3 * 5] = x[3 * 4]; /* two nodes at one place: a spring too short to have a direction */
        x[3 * 5 + 1] = x[3 * 4 + 1];
        x[3 * 5 + 2] = x[3 * 4 + 2];
        ms_error err;
        ms_spring_adjoint* springs = ms_spring_adjoint_create(m, &err);
        ENSURE(springs != NULL);
        adjoint_out want, got;
        ENSURE(adjoint_out_make(m, &want) == 0);
        ENSURE(adjoint_out_make(m, &got) == 0);
        const ms_parameter_arrays g_want = {want.k, want.c, want.rest, want.mass, want.external};
        const ms_parameter_arrays g_got = {got.k, got.c, got.rest, got.mass, got.external};
        ms_forces_adjoint(m, NULL, x, v, NULL, lf, want.lx, want.lv, &g_want, want.pairing);
        ms_forces_adjoint(m, springs, x, v, NULL, lf, got.lx, got.lv, &g_got, got.pairing);
        ms_spring_adjoint_collect(springs, &g_got);
        ENSURE(relative_gap(want.lx, got.lx, n3) < 1e-13);
        ENSURE(relative_gap(want.lv, got.lv, n3) < 1e-13);
        ENSURE(relative_gap(want.pairing, got.pairing, n) < 1e-13);
        ENSURE(relative_gap(want.k, got.k, ns) < 1e-13);
        ENSURE(relative_gap(want.c, got.c, ns) < 1e-13);
        ENSURE(relative_gap(want.rest, got.rest, ns) < 1e-13);
        ENSURE(relative_gap(want.mass, got.mass, n) < 1e-13);
        ENSURE(all_finite(got.lx, n3) && all_finite(got.k, ns));

        /* every path */
        const ms_layout* layout = springs->layout;
        ms_spring_adjoint_kernel paths[3];
        VECTOR_PATHS(paths, ms_springs_adjoint);
        adjoint_out first;
        ENSURE(adjoint_out_make(m, &first) == 0);
        paths[0](layout, x, v, lf, first.lx, first.lv, first.grad, first.pairing);
        for (int p = 1; p < 3; ++p) {
            if (paths[p] == NULL) continue;
            adjoint_out o;
            ENSURE(adjoint_out_make(m, &o) == 0);
            paths[p](layout, x, v, lf, o.lx, o.lv, o.grad, o.pairing);
            ENSURE(memcmp(o.lx, first.lx, sizeof(double) * (size_t)n3) == 0);
            ENSURE(memcmp(o.lv, first.lv, sizeof(double) * (size_t)n3) == 0);
            ENSURE(memcmp(o.pairing, first.pairing, sizeof(double) * (size_t)n) == 0);
            ENSURE(memcmp(o.grad, first.grad, sizeof(double) * 3 * (size_t)ns) == 0);
            adjoint_out_free(&o);
        }
        adjoint_out_free(&first);
        adjoint_out_free(&want);
        adjoint_out_free(&got);
        free(state);
        ms_spring_adjoint_destroy(springs);
        ms_model_destroy(m);
    }
    return 0;
}

const test_case gradient_tests[] = {
    TEST(test_oscillator_gradient_matches_central_differences),
    TEST(test_sliding_contact_gradient_matches_central_differences),
    TEST(test_a_checkpoint_not_reproduced_is_reported),
    TEST(test_two_workers_give_the_bits_of_one),
    TEST(test_what_has_no_gradient_is_refused),
    TEST(test_spring_adjoint_on_the_layout_matches_the_reference),
    {NULL, NULL},
};
