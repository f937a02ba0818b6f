/* Integrators and convergence: the explicit methods against closed forms (harmonic and
   damped oscillators, constant acceleration) and against one-dimensional reference steps. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"
#include "step/ranked.h"

/* Maximum of the position error and the velocity error / omega against the undamped
   closed form x(T) = A cos(w T), v(T) = -A w sin(w T), after stepping to T with step h. */
static double oscillator_error(ms_integrator integrator, double h, double total_time, int* ok) {
    const double k = 4.0, mass = 1.0, amplitude = 0.1;
    const double omega = sqrt(k / mass);
    ms_model* m = make_oscillator(k, mass, 0.0, amplitude, integrator);
    ms_error err = fresh_error();
    ms_state* s = m ? ms_state_create(m, &err) : NULL;
    int64_t n = (int64_t)llround(total_time / h);
    *ok = s != NULL && ms_step(m, s, h, n, NULL, &err) == MS_OK && s->steps == n;
    double error = INFINITY;
    if (*ok) {
        double x = s->x[3] - 1.0, v = s->v[3];
        double ex = amplitude * cos(omega * total_time);
        double ev = -amplitude * omega * sin(omega * total_time);
        error = fmax(fabs(x - ex), fabs(v - ev) / omega);
        /* The motion stays on the x axis and the pinned node does not move. */
        if (s->x[4] != 0.0 || s->x[5] != 0.0 || s->v[4] != 0.0 || s->v[5] != 0.0) *ok = 0;
        if (s->x[0] != 0.0 || s->x[1] != 0.0 || s->x[2] != 0.0 || s->v[0] != 0.0) *ok = 0;
        if (!(fabs(s->t - total_time) <= 1e-12)) *ok = 0;
    }
    ms_state_destroy(s);
    ms_model_destroy(m);
    return error;
}

static int test_oscillator_accuracy(void) {
    /* Global error of a method of order p is about A (w h)^p (w T) times a constant below
       one for all five methods; halving h divides it by 2^p. */
    const int order[MS_INTEGRATOR_COUNT] = {1, 1, 2, 4, 1, 1, 1};
    const double omega = 2.0, amplitude = 0.1, total_time = 2.0, h = 0.01;
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        int ok_coarse = 0, ok_fine = 0;
        double coarse = oscillator_error((ms_integrator)integrator, h, total_time, &ok_coarse);
        double fine = oscillator_error((ms_integrator)integrator, h / 2, total_time, &ok_fine);
        ENSURE(ok_coarse && ok_fine);
        double bound = amplitude * pow(omega * h, order[integrator]) * omega * total_time;
        ENSURE(coarse > 0.0 && fine > 0.0);
        ENSURE(coarse <= bound);
        ENSURE(fine <= bound / pow(2.0, order[integrator]));
        ENSURE_NEAR(log2(coarse / fine), (double)order[integrator], 0.25);
    }
    return 0;
}

static int test_explicit_euler_energy_growth(void) {
    /* For x'' = -w^2 x, forward Euler maps (x, v/w) by a matrix whose singular values
       are both sqrt(1 + w^2 h^2), so the energy grows by exactly (1 + w^2 h^2) per step. */
    const double k = 9.0, mass = 1.0, h = 0.01;
    const double factor = 1.0 + (k / mass) * h * h;
    ms_model* m = make_oscillator(k, mass, 0.0, 0.2, MS_EXPLICIT_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    double initial = mechanical_energy(m, s);
    ENSURE_NEAR(initial, 0.5 * 9.0 * 0.04, 1e-14);
    double previous = initial;
    for (int step = 1; step <= 300; ++step) {
        ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
        double energy = mechanical_energy(m, s);
        ENSURE_NEAR(energy / previous, factor, 1e-11);
        previous = energy;
    }
    ENSURE_NEAR(previous / initial, pow(factor, 300), 1e-9);
    ENSURE(ms_ledger_dissipated(&s->ledger) == 0.0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_symplectic_energy_bounded(void) {
    /* Symplectic Euler and Verlet conserve a modified energy: the true energy only
       oscillates, by O(w h) and O((w h)^2) respectively, with no drift. */
    const double k = 4.0, mass = 1.0, h = 0.01;
    const double omega_h = sqrt(k / mass) * h;
    const ms_integrator methods[2] = {MS_SYMPLECTIC_EULER, MS_VELOCITY_VERLET};
    const double tolerance[2] = {omega_h, omega_h * omega_h};
    for (int c = 0; c < 2; ++c) {
        ms_model* m = make_oscillator(k, mass, 0.0, 0.1, methods[c]);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double initial = mechanical_energy(m, s);
        for (int block = 0; block < 50; ++block) {
            ENSURE(ms_step(m, s, h, 100, NULL, &err) == MS_OK);
            ENSURE_NEAR(mechanical_energy(m, s) / initial, 1.0, tolerance[c]);
        }
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* Closed form of the under-damped oscillator released from rest at x = A. */
static void damped_solution(double omega, double zeta, double amplitude, double t, double* x, double* v) {
    double wd = omega * sqrt(1.0 - zeta * zeta);
    double ratio = zeta / sqrt(1.0 - zeta * zeta);
    double decay = exp(-zeta * omega * t);
    *x = amplitude * decay * (cos(wd * t) + ratio * sin(wd * t));
    *v = -amplitude * decay * omega * omega / wd * sin(wd * t);
}

static int test_damped_oscillator_rk4_ledger(void) {
    /* RK4 against the closed form (error below A (w h)^4 w t), and the energy ledger:
       mechanical + dissipated stays at its initial value to O((w h)^4), while dissipated
       accounts for the lost energy. */
    const double k = 4.0, mass = 1.0, zeta = 0.1, amplitude = 0.1, h = 0.01;
    const double omega = sqrt(k / mass), c = 2.0 * zeta * sqrt(k * mass);
    ms_model* m = make_oscillator(k, mass, c, amplitude, MS_RK4);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    double initial = mechanical_energy(m, s);
    double previous_dissipated = 0.0;
    for (int block = 1; block <= 10; ++block) {
        ENSURE(ms_step(m, s, h, 100, NULL, &err) == MS_OK);
        double t = block * 100 * h, x, v;
        damped_solution(omega, zeta, amplitude, t, &x, &v);
        ENSURE_NEAR(s->x[3] - 1.0, x, amplitude * pow(omega * h, 4) * omega * t);
        ENSURE_NEAR(s->v[3], v, amplitude * pow(omega * h, 4) * omega * omega * t);
        ms_energy e = ms_state_energy(m, s);
        ENSURE(e.dissipated == ms_ledger_dissipated(&s->ledger));
        ENSURE(e.dissipated > previous_dissipated);
        previous_dissipated = e.dissipated;
        ENSURE_NEAR(e.kinetic + e.spring + e.gravity + e.dissipated, initial, pow(omega * h, 4) * initial);
    }
    /* After 10 s at a decay rate of 2 zeta w = 0.4 /s only e^-4 of the energy is left. */
    ENSURE(ms_ledger_dissipated(&s->ledger) > 0.95 * initial);

    /* Drag joins the ledger the same way (power drag |v|^2). */
    m->opt.drag = 0.3;
    ms_state_reset(m, s);
    ENSURE(ms_step(m, s, h, 1000, NULL, &err) == MS_OK);
    ENSURE_NEAR(mechanical_energy(m, s) + ms_ledger_dissipated(&s->ledger), initial, pow(omega * h, 4) * initial);
    ENSURE(ms_ledger_dissipated(&s->ledger) > 0.99 * initial);

    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_damped_verlet_second_order(void) {
    /* With the predicted end velocity for the damper, Verlet stays second order. */
    const double k = 4.0, mass = 1.0, zeta = 0.1, amplitude = 0.1, total_time = 2.0;
    const double omega = sqrt(k / mass), c = 2.0 * zeta * sqrt(k * mass);
    double error[2];
    for (int r = 0; r < 2; ++r) {
        double h = 0.01 / (1 << r);
        ms_model* m = make_oscillator(k, mass, c, amplitude, MS_VELOCITY_VERLET);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ENSURE(ms_step(m, s, h, (int64_t)llround(total_time / h), NULL, &err) == MS_OK);
        double x, v;
        damped_solution(omega, zeta, amplitude, total_time, &x, &v);
        error[r] = fmax(fabs(s->x[3] - 1.0 - x), fabs(s->v[3] - v) / omega);
        ENSURE(ms_ledger_dissipated(&s->ledger) > 0.0);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    ENSURE(error[0] <= amplitude * pow(omega * 0.01, 2) * omega * total_time);
    ENSURE_NEAR(log2(error[0] / error[1]), 2.0, 0.25);
    return 0;
}

/* Acceleration of the free node of the one-dimensional oscillator built below
   (pinned node at the origin, spring along +x, gravity along x). */
typedef struct line_oscillator {
    double k, rest, c, drag, mass, gravity_x;
} line_oscillator;

static double line_acceleration(const line_oscillator* p, double x, double v) {
    return (-p->k * (x - p->rest) - (p->c + p->drag) * v) / p->mass + p->gravity_x;
}

static double line_power(const line_oscillator* p, double v) { return (p->c + p->drag) * v * v; }

/* One step of each method written out for the one-dimensional case: the reference the
   library's vectorised integrators must reproduce, dissipation quadrature included. */
static void line_step(const line_oscillator* p, ms_integrator integrator, double h, double* x, double* v,
                      double* dissipated) {
    const double x0 = *x, v0 = *v, a0 = line_acceleration(p, x0, v0);
    switch (integrator) {
    case MS_EXPLICIT_EULER:
        *x = x0 + h * v0;
        *v = v0 + h * a0;
        *dissipated = h * line_power(p, v0);
        break;
    case MS_SYMPLECTIC_EULER:
        *v = v0 + h * a0;
        *x = x0 + h * *v;
        *dissipated = h * line_power(p, v0);
        break;
    case MS_VELOCITY_VERLET: {
        double half = v0 + 0.5 * h * a0;
        *x = x0 + h * half;
        double predicted = half + 0.5 * h * line_acceleration(p, *x, half);
        *v = half + 0.5 * h * line_acceleration(p, *x, predicted);
        *dissipated = 0.5 * h * (line_power(p, v0) + line_power(p, predicted));
        break;
    }
    case MS_IMPLICIT_EULER: {
        /* v' = v0 + h a(x0 + h v', v') is linear in v' here:
           v' (1 + h (c + drag) / m + h^2 k / m) = v0 + h (-k (x0 - L) / m + g). */
        const double denominator = 1.0 + h * (p->c + p->drag) / p->mass + h * h * p->k / p->mass;
        *v = (v0 + h * (-p->k * (x0 - p->rest) / p->mass + p->gravity_x)) / denominator;
        *x = x0 + h * *v;
        *dissipated = h * line_power(p, *v); /* rectangle rule at the end of the step */
        break;
    }
    case MS_PROJECTIVE: {
        /* the other forces (gravity, drag, the damper) at the start give the target y; on a
           line the local step's d = -L is exact, so one global solve is backward Euler for
           the spring: (m / h^2 + k) x' = m y / h^2 + k L */
        const double y = x0 + h * v0 + h * h * (p->gravity_x - (p->drag + p->c) * v0 / p->mass);
        *x = (p->mass / (h * h) * y + p->k * p->rest) / (p->mass / (h * h) + p->k);
        *v = (*x - x0) / h;
        *dissipated = h * line_power(p, v0);
        break;
    }
    case MS_XPBD: {
        /* gravity and drag kick, then one projection of the spring; for one spring on a
           line that is backward Euler for the spring and its damper:
           d (m / (k h^2) + 1 + c / (k h)) = -(x^ - L) - c / (k h) (x^ - x0) */
        const double v_hat = v0 + h * (p->gravity_x - p->drag * v0 / p->mass);
        const double x_hat = x0 + h * v_hat;
        const double gamma = p->c / (p->k * h);
        const double d = (-(x_hat - p->rest) - gamma * (x_hat - x0)) / (p->mass / (p->k * h * h) + 1.0 + gamma);
        *x = x_hat + d;
        *v = (*x - x0) / h;
        /* the drag's and the damper's power at the start (the damper acts inside the
           constraint; its power at the start estimates what it removes) */
        *dissipated = h * line_power(p, v0);
        break;
    }
    case MS_RK4:
    default: {
        double v2 = v0 + 0.5 * h * a0, x2 = x0 + 0.5 * h * v0;
        double a2 = line_acceleration(p, x2, v2);
        double v3 = v0 + 0.5 * h * a2, x3 = x0 + 0.5 * h * v2;
        double a3 = line_acceleration(p, x3, v3);
        double v4 = v0 + h * a3, x4 = x0 + h * v3;
        double a4 = line_acceleration(p, x4, v4);
        *x = x0 + h / 6.0 * (v0 + 2.0 * v2 + 2.0 * v3 + v4);
        *v = v0 + h / 6.0 * (a0 + 2.0 * a2 + 2.0 * a3 + a4);
        *dissipated = h / 6.0 * (line_power(p, v0) + 2.0 * line_power(p, v2) + 2.0 * line_power(p, v3) +
                                 line_power(p, v4));
        break;
    }
    }
}

static int test_steps_match_reference_formulas(void) {
    /* Spring, damper, drag, gravity and energy loss together, a few large steps: each
       method's positions, velocities and dissipated energy agree with the formulas in
       the design notes to rounding. */
    const line_oscillator p = {7.0, 1.0, 0.6, 0.25, 1.5, -3.0};
    const double h = 0.05, loss = 0.02;
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_model* m = make_oscillator(p.k, p.mass, p.c, 0.3, (ms_integrator)integrator);
        ENSURE(m != NULL);
        m->opt.drag = p.drag;
        m->opt.gravity[0] = p.gravity_x;
        m->opt.energy_loss = loss;
        m->v_initial[3] = 0.7;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double x = 1.3, v = 0.7, dissipated = 0.0;
        for (int step = 0; step < 8; ++step) {
            double step_dissipated;
            line_step(&p, (ms_integrator)integrator, h, &x, &v, &step_dissipated);
            dissipated += step_dissipated + 0.5 * p.mass * v * v * (1.0 - (1.0 - loss) * (1.0 - loss));
            v *= 1.0 - loss;
            ENSURE(ms_step(m, s, h, 1, NULL, &err) == MS_OK);
            ENSURE_NEAR(s->x[3], x, 1e-14);
            ENSURE_NEAR(s->v[3], v, 1e-14);
            /* the forces' and the energy loss's parts (numerical is the large-step solvers' own) */
            ENSURE_NEAR(ms_ledger_dissipated(&s->ledger) - s->ledger.numerical, dissipated, 1e-14);
            ENSURE(s->x[4] == 0.0 && s->v[4] == 0.0);
        }
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* Largest |mechanical + dissipated - initial| / initial of a damped Verlet oscillator
   over 10 s sampled every 0.1 s; negative on failure. */
static double verlet_ledger_drift(double h) {
    ms_model* m = make_oscillator(4.0, 1.0, 0.4, 0.1, MS_VELOCITY_VERLET);
    ms_error err = fresh_error();
    ms_state* s = m ? ms_state_create(m, &err) : NULL;
    double worst = -1.0;
    if (s != NULL) {
        double initial = mechanical_energy(m, s);
        int64_t per_sample = (int64_t)llround(0.1 / h);
        worst = 0.0;
        for (int sample = 0; sample < 100 && worst >= 0.0; ++sample) {
            if (ms_step(m, s, h, per_sample, NULL, &err) != MS_OK) worst = -1.0;
            else worst = fmax(worst, fabs(mechanical_energy(m, s) + ms_ledger_dissipated(&s->ledger) - initial) / initial);
        }
    }
    ms_state_destroy(s);
    ms_model_destroy(m);
    return worst;
}

static int test_damped_verlet_ledger_second_order(void) {
    /* The trapezoid rule on the dissipated power keeps Verlet's ledger error O((w h)^2);
       a rectangle rule would make it first order. */
    const double omega = 2.0, h = 0.01;
    double coarse = verlet_ledger_drift(h), fine = verlet_ledger_drift(h / 2);
    ENSURE(coarse > 0.0 && fine > 0.0);
    ENSURE(coarse <= (omega * h) * (omega * h));
    ENSURE_NEAR(log2(coarse / fine), 2.0, 0.25);
    return 0;
}

static int test_constant_acceleration(void) {
    /* One free node under gravity only.  The exact path is x0 + v0 t + g t^2 / 2; after n
       steps symplectic and implicit Euler are ahead by g h t / 2 (both take x' = x + h v'
       with v' = v + h g) and explicit Euler behind by g h t / 2, Verlet and RK4 are exact.
       Velocity is exact for all five. */
    const double h = 0.01, g = -9.81, x0 = 2.0, v0 = 3.0;
    const int64_t n = 100;
    const double t = n * h;
    const double drift[MS_INTEGRATOR_COUNT] = {-0.5 * g * h * t, 0.5 * g * h * t, 0.0, 0.0, 0.5 * g * h * t,
                                               0.5 * g * h * t, 0.5 * g * h * t};
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(1, 0, 0, &err);
        ENSURE(m != NULL);
        m->mass[0] = 0.7;
        m->x_initial[1] = x0;
        m->v_initial[1] = v0;
        m->v_initial[2] = -1.0;
        m->opt.integrator = (ms_integrator)integrator;
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ENSURE(ms_step(m, s, h, n, NULL, &err) == MS_OK);
        ENSURE(s->steps == n);
        ENSURE_NEAR(s->t, t, 1e-13);
        ENSURE_NEAR(s->x[1], x0 + v0 * t + 0.5 * g * t * t + drift[integrator], 1e-12);
        ENSURE_NEAR(s->v[1], v0 + g * t, 1e-12);
        ENSURE(s->x[0] == 0.0 && s->v[0] == 0.0);
        ENSURE_NEAR(s->x[2], -t, 1e-13);
        ENSURE(s->v[2] == -1.0);
        ENSURE_NEAR(s->f[1], 0.7 * g, 1e-14);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_external_force(void) {
    /* The external force adds to gravity every step: a = g + F / m. */
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(1, 0, 0, &err);
    ENSURE(m != NULL);
    m->mass[0] = 2.0;
    m->opt.integrator = MS_RK4;
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    EXTERNAL(m, s)[0] = 4.0;
    EXTERNAL(m, s)[1] = 2.0 * 9.81;
    ENSURE(ms_step(m, s, 0.1, 10, NULL, &err) == MS_OK);
    ENSURE_NEAR(s->x[0], 0.5 * 2.0 * 1.0, 1e-12);
    ENSURE_NEAR(s->v[0], 2.0, 1e-12);
    ENSURE_NEAR(s->x[1], 0.0, 1e-12);
    ENSURE_NEAR(s->v[1], 0.0, 1e-12);
    ENSURE_NEAR(s->f[0], 4.0, 1e-15);
    ENSURE_NEAR(s->f[1], 0.0, 1e-12);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_pinned_node_kinematics(void) {
    /* A pinned node with its own velocity, tied by a stiff spring to a free node under
       gravity: it moves at constant velocity whatever the forces. */
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_model* m = make_oscillator(50.0, 0.5, 0.3, 0.05, (ms_integrator)integrator);
        ENSURE(m != NULL);
        m->opt.gravity[1] = -9.81;
        m->opt.drag = 0.1;
        m->mass[0] = 3.0;
        m->v_initial[0] = 0.5;
        m->v_initial[2] = -0.25;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        EXTERNAL(m, s)[1] = 100.0;
        ENSURE(ms_step(m, s, 1e-3, 500, NULL, &err) == MS_OK);
        ENSURE_NEAR(s->x[0], 0.5 * 0.5, 1e-12);
        ENSURE(s->x[1] == 0.0);
        ENSURE_NEAR(s->x[2], -0.25 * 0.5, 1e-12);
        ENSURE(s->v[0] == 0.5 && s->v[1] == 0.0 && s->v[2] == -0.25);
        /* The free node did move. */
        ENSURE(s->x[4] < -1e-3);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_energy_loss(void) {
    /* After a step the free velocities are scaled by (1 - loss) and the kinetic energy
       removed, 1/2 m |v|^2 (1 - (1 - loss)^2), is added to dissipated. */
    const double loss = 0.1, mass = 2.0;
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(2, 0, 0, &err);
        ENSURE(m != NULL);
        m->mass[0] = mass;
        m->mass[1] = mass;
        m->pinned[1] = 1;
        m->v_initial[0] = 1.0;
        m->v_initial[1] = 2.0;
        m->v_initial[2] = 2.0;
        m->v_initial[3] = 1.0;
        m->opt.gravity[1] = 0.0;
        m->opt.energy_loss = loss;
        m->opt.integrator = (ms_integrator)integrator;
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ENSURE(ms_step(m, s, 0.1, 1, NULL, &err) == MS_OK);
        ENSURE_NEAR(s->v[0], 0.9, 1e-15);
        ENSURE_NEAR(s->v[1], 1.8, 1e-15);
        ENSURE_NEAR(s->v[2], 1.8, 1e-15);
        ENSURE(s->v[3] == 1.0);
        double expected = 0.5 * mass * 9.0 * (1.0 - 0.81);
        ENSURE_NEAR(ms_ledger_dissipated(&s->ledger), expected, 1e-14);
        ENSURE(ms_step(m, s, 0.1, 1, NULL, &err) == MS_OK);
        ENSURE_NEAR(ms_ledger_dissipated(&s->ledger), expected + 0.5 * mass * 9.0 * 0.81 * (1.0 - 0.81), 1e-14);
        ENSURE_NEAR(mechanical_energy(m, s) + ms_ledger_dissipated(&s->ledger), 0.5 * mass * 9.0, 1e-14);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_force_field_is_start_of_step(void) {
    /* s->f holds the total force at the state the most recent step started from. */
    ms_model* m = make_cloth(4, 1, 7u);
    ENSURE(m != NULL);
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        m->opt.integrator = (ms_integrator)integrator;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ENSURE(ms_step(m, s, 1e-3, 20, NULL, &err) == MS_OK);
        double f[48];
        ENSURE(m->nnode == 16);
        forces_power(m, s->x, s->v, s->external, 0.0, f);
        ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK);
        for (int i = 0; i < 16; ++i) {
            if (m->pinned[i]) continue;
            for (int a = 0; a < 3; ++a) {
                const double expected = f[3 * i + a];
                ENSURE_NEAR(s->f[3 * i + a], expected, 1e-12 * (1.0 + fabs(expected)));
            }
        }
        ms_state_destroy(s);
    }
    ms_model_destroy(m);
    return 0;
}

/* The caller's arithmetic still produces subnormals (the core put its mode back). */
static int caller_keeps_subnormals(void) {
    volatile double tiny = 1e-310, half = 0.5;
    volatile double product = tiny * half;
    return product > 0.0 && product < tiny;
}

static int test_subnormals_flushed_inside_steps(void) {
    /* A chain at rest whose first node is kicked sideways: the kick shrinks at every spring
       it crosses, so without the flush its front leaves subnormal speeds behind (the slow
       path on x86).  With it (x86-64 and AArch64) every speed is zero or normal, and the
       caller's floating-point mode is as it was, for the in-place and the buffered steps. */
    const int64_t n = 400;
    const ms_integrator integrators[2] = {MS_SYMPLECTIC_EULER, MS_RK4};
    for (int which = 0; which < 2; ++which) {
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(n, n - 1, 0, &err);
        ENSURE(m != NULL);
        for (int64_t i = 0; i < n; ++i) {
            m->x_initial[3 * i] = (double)i;
            m->mass[i] = 1.0;
        }
        for (int64_t e = 0; e < n - 1; ++e) {
            m->springs[2 * e] = (int32_t)e;
            m->springs[2 * e + 1] = (int32_t)(e + 1);
            m->rest[e] = 1.0;
            m->k[e] = 100.0;
            m->c[e] = 0.5;
        }
        m->opt.gravity[1] = 0.0;
        m->opt.integrator = integrators[which];
        ENSURE(ms_model_check(m, &err) == MS_OK);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        s->v[1] = 1.0;
        int zero_seen = 0;
        for (int step = 0; step < 300; ++step) {
            ENSURE(ms_step(m, s, 0.01, 1, NULL, &err) == MS_OK);
            ENSURE(caller_keeps_subnormals());
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
            for (int64_t q = 0; q < 3 * n; ++q) ENSURE(s->v[q] == 0.0 || fabs(s->v[q]) >= DBL_MIN);
#endif
            zero_seen |= s->v[3 * (n - 1) + 1] == 0.0;
        }
        ENSURE(zero_seen);
        ENSURE(ms_state_forces(m, s, NULL, &err) == MS_OK);
        ENSURE(caller_keeps_subnormals());
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_forces_unread_leaves_f(void) {
    /* A call told that f will not be read (a recording between records) leaves f as it
       found it when it steps in place, in the user's numbering and on a renumbered copy; the
       next call, told nothing, writes the force as if nothing had been said: x, v and f
       equal a twin's to the bit. */
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
        ms_model* m = make_cloth(72, 1, 2026u);
        ENSURE(m != NULL);
        if (shuffled) ENSURE(shuffle_nodes(m, 2027u) == 0);
        m->opt.threads = 1;
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ms_state* twin = ms_state_create(m, &err);
        ENSURE(s != NULL && twin != NULL);
        ENSURE(ms_step(m, s, 1e-3, 2, NULL, &err) == MS_OK && ms_step(m, twin, 1e-3, 2, NULL, &err) == MS_OK);
        ENSURE(shuffled == (ms_ranked_of(s) != NULL));
        const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
        double* found = malloc(bytes);
        ENSURE(found != NULL);
        memcpy(found, s->f, bytes);
        ms_step_options unread = {0};
        unread.forces_unread = 1;
        ENSURE(ms_step(m, s, 1e-3, 3, &unread, &err) == MS_OK);
        ENSURE(memcmp(found, s->f, bytes) == 0);
        ENSURE(ms_step(m, twin, 1e-3, 3, NULL, &err) == MS_OK);
        ENSURE(memcmp(found, twin->f, bytes) != 0);
        ENSURE(memcmp(s->x, twin->x, bytes) == 0 && memcmp(s->v, twin->v, bytes) == 0);
        ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK && ms_step(m, twin, 1e-3, 1, NULL, &err) == MS_OK);
        ENSURE(memcmp(s->f, twin->f, bytes) == 0 && memcmp(s->x, twin->x, bytes) == 0);
        /* a refused call changes nothing, and leaves nothing for the next */
        double start[3] = {-1.0, -1.0, -1.0};
        unread.start_energy = start;
        ENSURE(ms_step(m, s, -1.0, 1, &unread, &err) == MS_ERR_VALUE);
        ENSURE(start[0] == -1.0 && start[1] == -1.0 && start[2] == -1.0);
        ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK && ms_step(m, twin, 1e-3, 1, NULL, &err) == MS_OK);
        ENSURE(memcmp(s->f, twin->f, bytes) == 0);
        free(found);
        ms_state_destroy(twin);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

const test_case integrators_tests[] = {
    TEST(test_oscillator_accuracy),
    TEST(test_explicit_euler_energy_growth),
    TEST(test_symplectic_energy_bounded),
    TEST(test_damped_oscillator_rk4_ledger),
    TEST(test_damped_verlet_second_order),
    TEST(test_steps_match_reference_formulas),
    TEST(test_damped_verlet_ledger_second_order),
    TEST(test_constant_acceleration),
    TEST(test_external_force),
    TEST(test_pinned_node_kinematics),
    TEST(test_energy_loss),
    TEST(test_force_field_is_start_of_step),
    TEST(test_subnormals_flushed_inside_steps),
    TEST(test_forces_unread_leaves_f),
    {NULL, NULL},
};
