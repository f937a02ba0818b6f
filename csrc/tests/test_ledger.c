/* The energy ledger: it closes with every mechanism at once. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

/* A cloth with every mechanism at once: a pinned corner moving with a velocity, drag in a
   gusty wind, an external force, and a moving sphere with friction that the cloth falls
   onto.  Returns 0 with *model and *state made, or 1. */
static int every_mechanism(ms_integrator integrator, ms_model** model, ms_state** state) {
    ms_error err = fresh_error();
    ms_model* m = make_cloth(8, 1, 99);
    ENSURE(m != NULL);
    m->opt.integrator = integrator;
    m->opt.drag = 0.01;
    m->opt.air.wind[0] = 1.5;
    m->opt.air.gust = 0.5;
    ms_collider sphere = {0};
    sphere.type = MS_SPHERE;
    sphere.center[0] = 0.35, sphere.center[1] = -0.4, sphere.center[2] = 0.35;
    sphere.size[0] = 0.2;
    sphere.velocity[1] = 0.3;
    sphere.friction = 0.3;
    sphere.restitution = 0.2;
    ENSURE(ms_model_add_collider(m, &sphere, &err) >= 0);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    s->v[0] = 0.2; /* node 0 is pinned: it moves */
    double* external = ms_state_external(m, s, &err);
    ENSURE(external != NULL);
    external[3 * 20 + 2] = 0.05;
    *model = m;
    *state = s;
    return 0;
}

/* The ledger closes with every mechanism at once.  With RK4 at small steps
   mechanical + dissipated - work stays put to RK4's error, each dissipated part never
   decreases (numerical, the large-step solvers' own, stays 0 for RK4), and the watched
   energy books a caller's change as user work at the next step. */
static int test_ledger_closes(void) {
    ms_error err = fresh_error();
    ms_model* m;
    ms_state* s;
    ENSURE(every_mechanism(MS_RK4, &m, &s) == 0);
    const ms_energy start = ms_state_energy(m, s);
    ms_ledger previous = s->ledger;
    for (int call = 0; call < 40; ++call) {
        ENSURE(ms_step(m, s, 2.5e-4, 50, NULL, &err) == MS_OK);
        const double* now = &s->ledger.dampers;
        const double* before = &previous.dampers;
        for (int part = 0; part < 4; ++part) ENSURE(now[part] >= before[part]); /* dissipated parts */
        ENSURE(s->ledger.numerical == 0.0);
        previous = s->ledger;
    }
    ENSURE(s->ledger.dampers > 0.0 && s->ledger.drag > 0.0 && s->ledger.contact > 0.0);
    ENSURE(s->ledger.wind != 0.0 && s->ledger.external != 0.0 && s->ledger.pins != 0.0 && s->ledger.colliders != 0.0);
    const ms_energy end = ms_state_energy(m, s);
    const double scale = end.dissipated + fabs(end.work) + fabs(end.kinetic) + fabs(end.spring);
    const double total_start = start.kinetic + start.spring + start.gravity + start.dissipated - start.work;
    double total_end = end.kinetic + end.spring + end.gravity + end.dissipated - end.work;
    ENSURE_NEAR(total_end, total_start, 1e-7 * scale);

    /* a change between steps, booked at the next one */
    ms_state_watch(m, s);
    s->v[3 * 30 + 1] += 0.5;
    const ms_energy changed = ms_state_energy(m, s);
    ENSURE(ms_step(m, s, 2.5e-4, 1, NULL, &err) == MS_OK);
    ENSURE_NEAR(s->ledger.user, (changed.kinetic + changed.gravity + changed.spring) -
                                    (end.kinetic + end.gravity + end.spring), 1e-14 * scale);
    const ms_energy after = ms_state_energy(m, s);
    total_end = after.kinetic + after.spring + after.gravity + after.dissipated - after.work;
    ENSURE_NEAR(total_end, total_start, 1e-7 * scale);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* implicit Euler, projective and xpbd book what they remove by themselves as numerical, so
   with every mechanism at once the total stays put to rounding, at a step 40 times RK4's. */
static int test_large_step_solvers_close_the_ledger_to_rounding(void) {
    const ms_integrator solvers[3] = {MS_IMPLICIT_EULER, MS_PROJECTIVE, MS_XPBD};
    for (int q = 0; q < 3; ++q) {
        ms_error err = fresh_error();
        ms_model* m;
        ms_state* s;
        ENSURE(every_mechanism(solvers[q], &m, &s) == 0);
        const ms_energy start = ms_state_energy(m, s);
        ENSURE(ms_step(m, s, 1e-2, 50, NULL, &err) == MS_OK);
        const ms_energy end = ms_state_energy(m, s);
        ENSURE(s->ledger.numerical != 0.0 && s->ledger.contact > 0.0 && s->ledger.colliders != 0.0);
        const double scale = fabs(end.dissipated) + fabs(end.work) + fabs(end.kinetic) + fabs(end.spring) +
                             fabs(end.gravity - start.gravity);
        ENSURE_NEAR(end.kinetic + end.spring + end.gravity + end.dissipated - end.work,
                    start.kinetic + start.spring + start.gravity + start.dissipated - start.work, 1e-12 * scale);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* A node thrown at a ground plane at rest (restitution 0.6, friction 0.2) comes to rest on
   it.  The plane does no work at any step; contact dissipates, never less from one step to
   the next, at most the 7.742 J the node had above its resting state on the ground; and
   with RK4, exact under constant gravity, the ledger closes to rounding.  The same with
   every integrator for the work and the bound (the explicit Euler step adds 1/2 m g^2 h^2
   of its own per step, which contact may then remove). */
static int test_static_collider_does_no_work(void) {
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(1, 0, 0, &err);
        ENSURE(m != NULL);
        m->mass[0] = 1.0;
        m->x_initial[1] = 0.2;
        m->v_initial[0] = 3.0, m->v_initial[1] = 1.6;
        m->opt.integrator = (ms_integrator)integrator;
        ms_collider ground = {0};
        ground.type = MS_PLANE;
        ground.axis[1] = 1.0;
        ground.restitution = 0.6;
        ground.friction = 0.2;
        ENSURE(ms_model_add_collider(m, &ground, &err) >= 0);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        const double h = 1e-3, start = mechanical_energy(m, s);
        ENSURE_NEAR(start, 7.742, 1e-12);
        double contact = 0.0;
        for (int step = 0; step < 3000; ++step) {
            ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
            ENSURE(s->ledger.colliders == 0.0);
            ENSURE(s->ledger.contact >= contact);
            contact = s->ledger.contact;
        }
        const double own = integrator == MS_EXPLICIT_EULER ? 3000 * 0.5 * 9.81 * 9.81 * h * h : 0.0;
        ENSURE(contact > 7.0 && contact <= start + own + 1e-12 * start);
        if (integrator == MS_RK4) {
            const ms_energy end = ms_state_energy(m, s);
            ENSURE_NEAR(end.kinetic + end.spring + end.gravity + end.dissipated - end.work, start, 1e-12 * start);
        }
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

const test_case ledger_tests[] = {
    TEST(test_ledger_closes),
    TEST(test_large_step_solvers_close_the_ledger_to_rounding),
    TEST(test_static_collider_does_no_work),
    {NULL, NULL},
};
