/*
 * Plain C tests of the msprings core, written against the public header only.
 *
 * Each test is a function returning 0 on success; ENSURE / ENSURE_NEAR make it return 1
 * at the first failed check.  main runs them all and ends with "N passed, M failed".
 * Physics is checked against closed forms (harmonic and damped oscillators, constant
 * acceleration) and against hand-computed two-node values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "msprings/msprings.h"

/* ---- helpers -------------------------------------------------------------------- */

/* A fresh error record with a recognisable non-OK status, so a test can tell that a
   function really wrote it. */
static ms_error fresh_error(void) {
    ms_error err;
    memset(&err, 0, sizeof err);
    err.status = (ms_status)-1;
    return err;
}

/* True if the error message is a non-empty, NUL-terminated string. */
static int has_message(const ms_error* err) {
    return err->message[0] != '\0' && memchr(err->message, '\0', sizeof err->message) != NULL;
}

static int all_finite(const double* values, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
        if (!isfinite(values[i])) return 0;
    return 1;
}

/* A one-dimensional oscillator along x: node 0 pinned at the origin (mass 0, which is
   allowed on a pinned node), node 1 free with the given mass at x = rest + amplitude,
   one spring of rest length 1 m.  Gravity is off.  Returns NULL on failure. */
static ms_model* make_oscillator(double k, double mass, double c, double amplitude,
                                 ms_integrator integrator) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    if (m == NULL) return NULL;
    m->pinned[0] = 1;
    m->mass[0] = 0.0;
    m->mass[1] = mass;
    m->x_initial[3] = 1.0 + amplitude;
    m->springs[0] = 0;
    m->springs[1] = 1;
    m->rest[0] = 1.0;
    m->k[0] = k;
    m->c[0] = c;
    m->opt.gravity[1] = 0.0;
    m->opt.integrator = integrator;
    if (ms_model_check(m, &err) != MS_OK) {
        fprintf(stderr, "make_oscillator: %s\n", err.message);
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

/* A small deterministic pseudo-random generator (64-bit LCG), uniform in [-1, 1). */
static double lcg_uniform(uint64_t* seed) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A square cloth of side x side nodes, 0.1 m apart in the x-z plane with small random
   offsets, with structural, shear and bending springs (rest = initial length).  If pin
   is non-zero the two corners of the first row are pinned.  Returns NULL on failure. */
static ms_model* make_cloth(int side, int pin, uint64_t seed) {
    const double spacing = 0.1;
    int64_t structural = 2 * (int64_t)side * (side - 1);
    int64_t shear = 2 * (int64_t)(side - 1) * (side - 1);
    int64_t bending = 2 * (int64_t)side * (side - 2);
    ms_error err = fresh_error();
    ms_model* m = ms_model_create((int64_t)side * side, structural + shear + bending, 0, &err);
    if (m == NULL) return NULL;
    for (int r = 0; r < side; ++r) {
        for (int col = 0; col < side; ++col) {
            int64_t i = (int64_t)r * side + col;
            m->x_initial[3 * i + 0] = col * spacing + 0.01 * lcg_uniform(&seed);
            m->x_initial[3 * i + 1] = 0.01 * lcg_uniform(&seed);
            m->x_initial[3 * i + 2] = r * spacing + 0.01 * lcg_uniform(&seed);
            m->mass[i] = 0.02 * (1.5 + lcg_uniform(&seed));
        }
    }
    int64_t s = 0;
    for (int r = 0; r < side; ++r) {
        for (int col = 0; col < side; ++col) {
            int32_t i = r * side + col;
            int32_t pairs[6][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}, {0, 2}, {2, 0}};
            for (int p = 0; p < 6; ++p) {
                int rr = r + pairs[p][0], cc = col + pairs[p][1];
                if (rr < 0 || rr >= side || cc < 0 || cc >= side) continue;
                m->springs[2 * s] = i;
                m->springs[2 * s + 1] = rr * side + cc;
                ++s;
            }
        }
    }
    if (s != m->nspring) {
        fprintf(stderr, "make_cloth: built %lld springs, expected %lld\n", (long long)s,
                (long long)m->nspring);
        ms_model_destroy(m);
        return NULL;
    }
    for (s = 0; s < m->nspring; ++s) {
        const double* a = m->x_initial + 3 * m->springs[2 * s];
        const double* b = m->x_initial + 3 * m->springs[2 * s + 1];
        m->rest[s] = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                          (b[2] - a[2]) * (b[2] - a[2]));
        m->k[s] = 40.0 * (1.0 + 0.25 * lcg_uniform(&seed));
        m->c[s] = 0.02;
    }
    if (pin) {
        m->pinned[0] = 1;
        m->pinned[side - 1] = 1;
    }
    m->opt.drag = 0.001;
    if (ms_model_check(m, &err) != MS_OK) {
        fprintf(stderr, "make_cloth: %s\n", err.message);
        ms_model_destroy(m);
        return NULL;
    }
    return m;
}

/* 64-bit FNV-1a hash of a byte range. */
static uint64_t fnv1a(const void* data, size_t size) {
    const unsigned char* bytes = (const unsigned char*)data;
    uint64_t hash = 14695981039346656037ULL;
    for (size_t i = 0; i < size; ++i) {
        hash ^= bytes[i];
        hash *= 1099511628211ULL;
    }
    return hash;
}

/* The state's external force array, allocated on first use. */
#define EXTERNAL(m, s) ms_state_external((m), (s), NULL)

/* Everything observable about a state, copied out so it can be compared bitwise (an
   external force that was never allocated counts as zeros). */
/* ms_forces, returning the power the forces take out of the nodes as one number
   (dampers and drag in the air's frame, less the wind's work). */
static double forces_power(const ms_model* m, const double* x, const double* v, const double* external, double t,
                           double* f) {
    ms_flow flow;
    ms_forces(m, x, v, external, t, f, &flow);
    return flow.dampers + flow.drag - flow.wind;
}

typedef struct snapshot {
    double* arrays; /* x, v, f, external: 4 x nnode x 3 */
    double t;
    int64_t steps;
    ms_ledger ledger;
} snapshot;

static int snapshot_take(const ms_model* m, const ms_state* s, snapshot* out) {
    size_t block = 3 * (size_t)m->nnode;
    out->arrays = malloc(4 * block * sizeof(double));
    if (out->arrays == NULL) return 0;
    memcpy(out->arrays, s->x, block * sizeof(double));
    memcpy(out->arrays + block, s->v, block * sizeof(double));
    memcpy(out->arrays + 2 * block, s->f, block * sizeof(double));
    if (s->external != NULL)
        memcpy(out->arrays + 3 * block, s->external, block * sizeof(double));
    else
        memset(out->arrays + 3 * block, 0, block * sizeof(double));
    out->t = s->t;
    out->steps = s->steps;
    out->ledger = s->ledger;
    return 1;
}

/* True if the external force (NULL: zeros) is bitwise the saved one. */
static int external_equal(const double* external, const double* saved, size_t count) {
    if (external != NULL) return memcmp(external, saved, count * sizeof(double)) == 0;
    for (size_t q = 0; q < count; ++q)
        if (saved[q] != 0.0 || signbit(saved[q])) return 0;
    return 1;
}

/* True if the state is bitwise identical to the snapshot. */
static int snapshot_equal(const ms_model* m, const ms_state* s, const snapshot* snap) {
    size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
    size_t block = 3 * (size_t)m->nnode;
    return memcmp(s->x, snap->arrays, bytes) == 0 && memcmp(s->v, snap->arrays + block, bytes) == 0 &&
           memcmp(s->f, snap->arrays + 2 * block, bytes) == 0 &&
           external_equal(s->external, snap->arrays + 3 * block, block) &&
           memcmp(&s->t, &snap->t, sizeof s->t) == 0 && s->steps == snap->steps &&
           memcmp(&s->ledger, &snap->ledger, sizeof s->ledger) == 0;
}

static double mechanical_energy(const ms_model* m, const ms_state* s) {
    ms_energy e = ms_state_energy(m, s);
    return e.kinetic + e.spring + e.gravity;
}

/* ---- model creation and checks -------------------------------------------------- */

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
    ENSURE(opt.implicit.newton_tol == 1e-8);
    ENSURE(opt.implicit.cg_max_iter == 1000);
    ENSURE(opt.implicit.cg_tol == 1e-4);
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

/* ---- names ---------------------------------------------------------------------- */

static int test_integrator_names(void) {
    const char* expected[MS_INTEGRATOR_COUNT] = {"explicit_euler", "symplectic_euler",
                                                 "velocity_verlet", "rk4", "implicit_euler"};
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

/* ---- diagnostics on a hand-computed example ------------------------------------- */

/* Two nodes: node 0 at (0, 1, 0) with mass 2 and velocity (1, 0, 0); node 1 at (3, 5, 0)
   with mass 1 and velocity (0, 2, 0).  One spring: l = 5, L = 4, k = 10, c = 2, so
   n = (0.6, 0.8, 0), (v1 - v0).n = 1 and the tension is 10 * 1 + 2 * 1 = 12 N.
   Gravity (0, -10, 0). */
static ms_model* make_two_node_example(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    if (m == NULL) return NULL;
    m->mass[0] = 2.0;
    m->mass[1] = 1.0;
    m->x_initial[1] = 1.0;
    m->x_initial[3] = 3.0;
    m->x_initial[4] = 5.0;
    m->v_initial[0] = 1.0;
    m->v_initial[4] = 2.0;
    m->springs[0] = 0;
    m->springs[1] = 1;
    m->rest[0] = 4.0;
    m->k[0] = 10.0;
    m->c[0] = 2.0;
    m->opt.gravity[1] = -10.0;
    return m;
}

static int test_diagnostics_two_nodes(void) {
    ms_model* m = make_two_node_example();
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(err.status == MS_OK);
    ENSURE(s->t == 0.0 && s->steps == 0 && ms_ledger_dissipated(&s->ledger) == 0.0);
    ENSURE(memcmp(s->x, m->x_initial, 6 * sizeof(double)) == 0);
    ENSURE(memcmp(s->v, m->v_initial, 6 * sizeof(double)) == 0);

    ms_energy e = ms_state_energy(m, s);
    ENSURE_NEAR(e.kinetic, 0.5 * 2.0 * 1.0 + 0.5 * 1.0 * 4.0, 1e-12);
    ENSURE_NEAR(e.spring, 0.5 * 10.0 * 1.0, 1e-12);
    ENSURE_NEAR(e.gravity, 2.0 * 10.0 * 1.0 + 1.0 * 10.0 * 5.0, 1e-12);
    ENSURE(e.dissipated == 0.0);

    double p[3];
    ms_state_momentum(m, s, p);
    ENSURE_NEAR(p[0], 2.0, 1e-12);
    ENSURE_NEAR(p[1], 2.0, 1e-12);
    ENSURE_NEAR(p[2], 0.0, 1e-12);

    double out[1];
    ms_spring_lengths(m, s, out);
    ENSURE_NEAR(out[0], 5.0, 1e-12);
    ms_spring_strain(m, s, out);
    ENSURE_NEAR(out[0], 0.25, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], 12.0, 1e-12);

    /* Total force: tension along n on node 0, the opposite on node 1, plus m g, minus
       drag * v, plus the external force on node 1.  Dissipated power is
       c ((v1 - v0).n)^2 + drag (|v0|^2 + |v1|^2) = 2 + 0.5 * 5. */
    m->opt.drag = 0.5;
    EXTERNAL(m, s)[3] = 1.0;
    EXTERNAL(m, s)[4] = 2.0;
    EXTERNAL(m, s)[5] = 3.0;
    double f[6];
    double power = forces_power(m, s->x, s->v, s->external, 0.0, f);
    ENSURE_NEAR(power, 4.5, 1e-12);
    const double expected_f[6] = {12.0 * 0.6 - 0.5, 12.0 * 0.8 - 20.0, 0.0,
                                  -12.0 * 0.6 + 1.0, -12.0 * 0.8 - 10.0 - 1.0 + 2.0, 3.0};
    for (int a = 0; a < 6; ++a) ENSURE_NEAR(f[a], expected_f[a], 1e-12);

    /* Pinning node 0 removes it from kinetic, gravity and momentum, not from the spring. */
    m->pinned[0] = 1;
    e = ms_state_energy(m, s);
    ENSURE_NEAR(e.kinetic, 2.0, 1e-12);
    ENSURE_NEAR(e.spring, 5.0, 1e-12);
    ENSURE_NEAR(e.gravity, 50.0, 1e-12);
    ms_state_momentum(m, s, p);
    ENSURE_NEAR(p[0], 0.0, 1e-12);
    ENSURE_NEAR(p[1], 2.0, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], 12.0, 1e-12);
    /* Drag on a pinned node does no work: only node 1 counts, c * 1 + 0.5 * |v1|^2. */
    power = forces_power(m, s->x, s->v, s->external, 0.0, f);
    ENSURE_NEAR(power, 2.0 + 0.5 * 4.0, 1e-12);
    for (int a = 3; a < 6; ++a) ENSURE_NEAR(f[a], expected_f[a], 1e-12);

    /* A compressed spring pushes: negative strain and tension. */
    m->rest[0] = 6.0;
    s->v[0] = s->v[4] = 0.0;
    ms_spring_strain(m, s, out);
    ENSURE_NEAR(out[0], -1.0 / 6.0, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], -10.0, 1e-12);

    /* Zero rest length: infinite strain when stretched, zero when also of zero length. */
    m->rest[0] = 0.0;
    ms_spring_strain(m, s, out);
    ENSURE(isinf(out[0]) && out[0] > 0.0);
    memcpy(s->x + 3, s->x, 3 * sizeof(double));
    ms_spring_strain(m, s, out);
    ENSURE(out[0] == 0.0);
    ms_spring_lengths(m, s, out);
    ENSURE(out[0] == 0.0);

    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* ---- forces --------------------------------------------------------------------- */

static int test_newton_third_law(void) {
    ms_model* m = make_cloth(5, 0, 12345u);
    ENSURE(m != NULL);
    m->opt.gravity[1] = 0.0;
    m->opt.drag = 0.0;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 99u;
    for (int64_t i = 0; i < 3 * m->nnode; ++i) {
        s->x[i] += 0.02 * lcg_uniform(&seed);
        s->v[i] = lcg_uniform(&seed);
    }
    double* f = malloc(3 * (size_t)m->nnode * sizeof(double));
    ENSURE(f != NULL);
    double power = forces_power(m, s->x, s->v, s->external, 0.0, f);

    double total[3] = {0.0, 0.0, 0.0}, torque[3] = {0.0, 0.0, 0.0}, scale = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* x = s->x + 3 * i;
        const double* fi = f + 3 * i;
        for (int a = 0; a < 3; ++a) {
            total[a] += fi[a];
            scale += fabs(fi[a]);
        }
        torque[0] += x[1] * fi[2] - x[2] * fi[1];
        torque[1] += x[2] * fi[0] - x[0] * fi[2];
        torque[2] += x[0] * fi[1] - x[1] * fi[0];
    }
    ENSURE(scale > 1.0);
    for (int a = 0; a < 3; ++a) {
        ENSURE_NEAR(total[a], 0.0, 1e-13 * scale);
        /* Spring and damper forces are central, so they exert no net torque either. */
        ENSURE_NEAR(torque[a], 0.0, 1e-13 * scale);
    }

    /* The returned power is the damper dissipation, computed here independently. */
    double expected_power = 0.0;
    for (int64_t sp = 0; sp < m->nspring; ++sp) {
        const double* xi = s->x + 3 * m->springs[2 * sp];
        const double* xj = s->x + 3 * m->springs[2 * sp + 1];
        const double* vi = s->v + 3 * m->springs[2 * sp];
        const double* vj = s->v + 3 * m->springs[2 * sp + 1];
        double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        double l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        double rate = ((vj[0] - vi[0]) * d[0] + (vj[1] - vi[1]) * d[1] + (vj[2] - vi[2]) * d[2]) / l;
        expected_power += m->c[sp] * rate * rate;
    }
    ENSURE(expected_power > 0.0);
    ENSURE_NEAR(power, expected_power, 1e-12 * expected_power);

    free(f);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_zero_length_spring(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    ENSURE(m != NULL);
    for (int i = 0; i < 2; ++i) {
        m->mass[i] = 1.0;
        m->x_initial[3 * i + 0] = 1.0;
        m->x_initial[3 * i + 1] = 2.0;
        m->x_initial[3 * i + 2] = 3.0;
    }
    m->v_initial[0] = 1.0;
    m->v_initial[4] = -1.0;
    m->springs[1] = 1;
    m->rest[0] = 0.5;
    m->k[0] = 10.0;
    m->c[0] = 1.0;
    m->opt.gravity[1] = 0.0;
    ENSURE(ms_model_check(m, &err) == MS_OK);

    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        m->opt.integrator = (ms_integrator)integrator;
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double f[6];
        double power = forces_power(m, s->x, s->v, s->external, 0.0, f);
        for (int a = 0; a < 6; ++a) ENSURE(f[a] == 0.0);
        ENSURE(isfinite(power));
        double out[1];
        ms_spring_lengths(m, s, out);
        ENSURE(out[0] == 0.0);
        ms_spring_strain(m, s, out);
        ENSURE_NEAR(out[0], -1.0, 1e-15);
        ms_spring_tension(m, s, out);
        ENSURE(isfinite(out[0]));
        ms_energy e = ms_state_energy(m, s);
        ENSURE_NEAR(e.spring, 0.5 * 10.0 * 0.25, 1e-15);

        /* The first step starts from zero force: the nodes move apart ballistically. */
        ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_OK);
        for (int a = 0; a < 6; ++a) ENSURE(s->f[a] == 0.0);
        ENSURE(ms_step(m, s, 1e-3, 200, &err) == MS_OK);
        ENSURE(all_finite(s->x, 6) && all_finite(s->v, 6) && all_finite(s->f, 6));
        ENSURE(isfinite(ms_ledger_dissipated(&s->ledger)));
        ms_state_destroy(s);
    }
    ms_model_destroy(m);
    return 0;
}

/* ---- integrators against closed forms ------------------------------------------- */

/* Maximum of the position error and the velocity error / omega against the undamped
   closed form x(T) = A cos(w T), v(T) = -A w sin(w T), after stepping to T with step h. */
static double oscillator_error(ms_integrator integrator, double h, double total_time, int* ok) {
    const double k = 4.0, mass = 1.0, amplitude = 0.1;
    const double omega = sqrt(k / mass);
    ms_model* m = make_oscillator(k, mass, 0.0, amplitude, integrator);
    ms_error err = fresh_error();
    ms_state* s = m ? ms_state_create(m, &err) : NULL;
    int64_t n = (int64_t)llround(total_time / h);
    *ok = s != NULL && ms_step(m, s, h, n, &err) == MS_OK && s->steps == n;
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
    const int order[MS_INTEGRATOR_COUNT] = {1, 1, 2, 4, 1};
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
        ENSURE(ms_step(m, s, h, 1, &err) == MS_OK);
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
            ENSURE(ms_step(m, s, h, 100, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, h, 100, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, h, 1000, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, h, (int64_t)llround(total_time / h), &err) == MS_OK);
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
            ENSURE(ms_step(m, s, h, 1, &err) == MS_OK);
            ENSURE_NEAR(s->x[3], x, 1e-14);
            ENSURE_NEAR(s->v[3], v, 1e-14);
            ENSURE_NEAR(ms_ledger_dissipated(&s->ledger), dissipated, 1e-14);
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
            if (ms_step(m, s, h, per_sample, &err) != MS_OK) worst = -1.0;
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
    const double drift[MS_INTEGRATOR_COUNT] = {-0.5 * g * h * t, 0.5 * g * h * t, 0.0, 0.0, 0.5 * g * h * t};
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
        ENSURE(ms_step(m, s, h, n, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 0.1, 10, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, 1e-3, 500, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, 0.1, 1, &err) == MS_OK);
        ENSURE_NEAR(s->v[0], 0.9, 1e-15);
        ENSURE_NEAR(s->v[1], 1.8, 1e-15);
        ENSURE_NEAR(s->v[2], 1.8, 1e-15);
        ENSURE(s->v[3] == 1.0);
        double expected = 0.5 * mass * 9.0 * (1.0 - 0.81);
        ENSURE_NEAR(ms_ledger_dissipated(&s->ledger), expected, 1e-14);
        ENSURE(ms_step(m, s, 0.1, 1, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, 1e-3, 20, &err) == MS_OK);
        double f[48];
        ENSURE(m->nnode == 16);
        forces_power(m, s->x, s->v, s->external, 0.0, f);
        ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_OK);
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

/* ---- implicit Euler ------------------------------------------------------------- */

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
        double previous = mechanical_energy(m, s);
        /* Enough steps to lose a factor of ~1000 in energy, no more: the displacement is
           stored as 1 + u, so u must stay well above rounding. */
        const int steps = (int)ceil(log(1000.0) / log(1.0 + omega_h * omega_h));
        for (int step = 1; step <= steps; ++step) {
            ENSURE(ms_step(m, s, h, 1, &err) == MS_OK);
            ENSURE(s->solver.newton_iterations == 1);
            ENSURE(s->solver.newton_converged == 1);
            double energy = mechanical_energy(m, s);
            ENSURE_NEAR(energy / previous, factor, 1e-10);
            ENSURE(s->x[4] == 0.0 && s->x[5] == 0.0 && s->v[4] == 0.0 && s->v[5] == 0.0);
            previous = energy;
        }
        /* Without dampers the loss is numerical: the ledger books nothing. */
        ENSURE(ms_ledger_dissipated(&s->ledger) == 0.0);
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
        ENSURE(ms_step(m, s, h, 1, &err) == MS_OK);
        double energy = mechanical_energy(m, s);
        ENSURE_NEAR(energy / previous, 1.0 / (1.0 + omega_h * omega_h), 1e-10);
        previous = energy;
    }
    for (int block = 0; block < 100; ++block) {
        ENSURE(ms_step(m, s, h, 10, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, h, 1, &err) == MS_OK);
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
       double still produces a non-finite state: it is rolled back like any divergence. */
    ms_model* m = make_oscillator(1e6, 1.0, 0.5, 0.1, MS_IMPLICIT_EULER);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-4, 5, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));
    err = fresh_error();
    ENSURE(ms_step(m, s, 1e307, 3, &err) == MS_ERR_DIVERGED);
    ENSURE(err.status == MS_ERR_DIVERGED);
    ENSURE(has_message(&err));
    ENSURE(err.step == 6);
    ENSURE(err.time == s->t);
    ENSURE(s->steps == 5);
    /* x, v, t, steps and dissipated are as before; f is the force at the failed step's
       start, which is the state kept. */
    size_t bytes = 6 * sizeof(double);
    ENSURE(memcmp(s->x, before.arrays, bytes) == 0);
    ENSURE(memcmp(s->v, before.arrays + 6, bytes) == 0);
    ENSURE(s->t == before.t && memcmp(&s->ledger, &before.ledger, sizeof s->ledger) == 0);
    /* A sane step goes on from there. */
    ENSURE(ms_step(m, s, 1e-4, 1, &err) == MS_OK);
    ENSURE(s->steps == 6);
    free(before.arrays);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* ---- largest eigenvalues (stability limits) ------------------------------------- */

static int test_max_eigenvalues_pair(void) {
    /* One free node on a spring from a pinned node: M^-1 K has k / m along the spring and
       k (1 - L / l) / m across it, so its largest eigenvalue is k / m; M^-1 C is c / m
       along the spring, plus drag / m in every direction. */
    const double k = 40.0, mass = 0.25, c = 0.6;
    const double stretches[2] = {0.0, 0.3};
    for (int r = 0; r < 2; ++r) {
        ms_model* m = make_oscillator(k, mass, c, stretches[r], MS_SYMPLECTIC_EULER);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double omega2 = -1.0, gamma = -1.0;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE(err.status == MS_OK);
        ENSURE_NEAR(omega2, k / mass, 1e-8 * k / mass);
        ENSURE_NEAR(gamma, c / mass, 1e-8 * c / mass);
        m->opt.drag = 0.05;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE_NEAR(omega2, k / mass, 1e-8 * k / mass);
        ENSURE_NEAR(gamma, (c + 0.05) / mass, 1e-8 * (c + 0.05) / mass);
        /* Pinning the free node leaves nothing to vibrate. */
        m->pinned[1] = 1;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE(omega2 == 0.0 && gamma == 0.0);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_max_eigenvalues_chain(void) {
    /* A uniform chain of N free nodes hanging off a pinned one, springs at rest length
       along x.  Along the chain K / k is tridiagonal (2 on the diagonal but 1 at the free
       end, -1 beside it): the fixed-free chain, whose modes sin(j' (2 q - 1) pi / (2 (2N + 1)))
       give the eigenvalues 4 (k / m) sin^2((2 q - 1) pi / (2 (2 N + 1))), q = 1..N; the
       largest is q = N.  Across the chain the springs at rest length are slack (zero
       transverse stiffness).  The dampers form the same matrix with c in place of k. */
    const double k = 3.0, c = 0.4, mass = 0.7, pi = 3.14159265358979323846;
    const int sizes[4] = {1, 2, 7, 40};
    for (int r = 0; r < 4; ++r) {
        const int free_nodes = sizes[r];
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(free_nodes + 1, free_nodes, 0, &err);
        ENSURE(m != NULL);
        for (int i = 0; i <= free_nodes; ++i) {
            m->mass[i] = mass;
            m->x_initial[3 * i] = 0.1 * i;
        }
        m->pinned[0] = 1;
        for (int q = 0; q < free_nodes; ++q) {
            m->springs[2 * q] = q;
            m->springs[2 * q + 1] = q + 1;
            m->rest[q] = 0.1;
            m->k[q] = k;
            m->c[q] = c;
        }
        ENSURE(ms_model_check(m, &err) == MS_OK);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        const double sine = sin((2.0 * free_nodes - 1.0) * pi / (2.0 * (2.0 * free_nodes + 1.0)));
        const double expected_omega2 = 4.0 * k / mass * sine * sine;
        const double expected_gamma = 4.0 * c / mass * sine * sine;
        double omega2 = -1.0, gamma = -1.0;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE_NEAR(omega2, expected_omega2, 1e-8 * expected_omega2);
        ENSURE_NEAR(gamma, expected_gamma, 1e-8 * expected_gamma);
        /* The estimate only reads the state. */
        ENSURE(memcmp(s->x, m->x_initial, 3 * (size_t)m->nnode * sizeof(double)) == 0);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* ---- strain limiting ------------------------------------------------------------ */

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
            ENSURE(ms_step(m, free_step, h, 1, &err) == MS_OK);
            m->opt.strain_limiting = 1;
            ENSURE(ms_step(m, limited, h, 1, &err) == MS_OK);
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

/* ---- options of the implicit solver and of strain limiting ---------------------- */

static int test_solver_and_strain_options_check(void) {
    ms_model* m = make_valid_triangle();
    ENSURE(m != NULL);
    m->opt.integrator = MS_IMPLICIT_EULER;
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 3, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
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
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_OK);
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

/* ---- errors and divergence ------------------------------------------------------ */

static int test_divergence_rolls_back(void) {
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
        ms_state* replay = ms_state_copy(m, s, &err);
        ENSURE(replay != NULL);

        int rc = ms_step(m, s, h, 100000, &err);
        ENSURE(rc == MS_ERR_DIVERGED);
        ENSURE(err.status == MS_ERR_DIVERGED);
        ENSURE(has_message(&err));
        ENSURE(err.step >= 2 && err.step < 1000);
        ENSURE(s->steps == err.step - 1);
        ENSURE(err.time == s->t);
        ENSURE(err.time == (double)(err.step - 1) * h);
        ENSURE(all_finite(s->x, 6) && all_finite(s->v, 6));

        /* The rolled-back state is exactly the state after err.step - 1 good steps. */
        ms_error replay_err = fresh_error();
        ENSURE(ms_step(m, replay, h, err.step - 1, &replay_err) == MS_OK);
        ENSURE(memcmp(replay->x, s->x, 6 * sizeof(double)) == 0);
        ENSURE(memcmp(replay->v, s->v, 6 * sizeof(double)) == 0);
        ENSURE(replay->t == s->t && replay->steps == s->steps);
        ENSURE(memcmp(&replay->ledger, &s->ledger, sizeof s->ledger) == 0);

        /* Stepping again fails at the same step and again changes nothing. */
        int64_t failed_step = err.step;
        ms_error again = fresh_error();
        ENSURE(ms_step(m, s, h, 1, &again) == MS_ERR_DIVERGED);
        ENSURE(again.step == failed_step);
        ENSURE(again.time == err.time);
        ENSURE(memcmp(replay->x, s->x, 6 * sizeof(double)) == 0);
        ENSURE(memcmp(replay->v, s->v, 6 * sizeof(double)) == 0);
        ENSURE(s->steps == failed_step - 1);

        ms_state_destroy(replay);
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
    ENSURE(ms_step(m, s, 1e-3, 10, &err) == MS_OK);
    snapshot before;
    ENSURE(snapshot_take(m, s, &before));

    const double bad_h[] = {0.0, -0.0, -1e-3, -INFINITY, INFINITY, NAN};
    for (size_t c = 0; c < sizeof bad_h / sizeof bad_h[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, bad_h[c], 1, &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }
    const int64_t bad_n[] = {0, -1, INT64_MIN};
    for (size_t c = 0; c < sizeof bad_n / sizeof bad_n[0]; ++c) {
        err = fresh_error();
        ENSURE(ms_step(m, s, 1e-3, bad_n[c], &err) == MS_ERR_VALUE);
        ENSURE(err.status == MS_ERR_VALUE);
        ENSURE(has_message(&err));
        ENSURE(snapshot_equal(m, s, &before));
    }

    /* Bad parameters written after creation are caught at the next step. */
    double saved_k = m->k[3];
    m->k[3] = -1.0;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->k[3] = saved_k;
    double saved_mass = m->mass[5];
    m->mass[5] = 0.0;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->mass[5] = saved_mass;
    m->opt.energy_loss = 1.5;
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(snapshot_equal(m, s, &before));
    m->opt.energy_loss = 0.0;

    /* Non-finite state values are caught the same way. */
    double saved = s->x[7];
    s->x[7] = NAN;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    snapshot with_nan;
    ENSURE(snapshot_take(m, s, &with_nan));
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    ENSURE(has_message(&err));
    ENSURE(snapshot_equal(m, s, &with_nan));
    free(with_nan.arrays);
    s->x[7] = saved;
    s->v[2] = INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    s->v[2] = before.arrays[3 * m->nnode + 2];
    EXTERNAL(m, s)[4] = -INFINITY;
    ENSURE(ms_state_check(m, s, &err) == MS_ERR_VALUE);
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_ERR_VALUE);
    EXTERNAL(m, s)[4] = 0.0;
    ENSURE(snapshot_equal(m, s, &before));
    ENSURE(ms_state_check(m, s, &err) == MS_OK);

    /* Everything restored: stepping works again. */
    ENSURE(ms_step(m, s, 1e-3, 1, &err) == MS_OK);
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

/* ---- copies, reset, determinism ------------------------------------------------- */

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
    ENSURE(ms_step(copy, s, 1e-3, 10, &err) == MS_OK);
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
        ENSURE(ms_step(m, s, 1e-3, 10, &err) == MS_OK);
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
        ENSURE(ms_step(m, copy, 1e-3, 10, &err) == MS_OK);
        double saved_x = copy->x[4];
        copy->x[4] += 1.0;
        copy->external[10] = 0.0;
        ENSURE(snapshot_equal(m, s, &original));
        copy->x[4] = saved_x;
        copy->external[10] = 0.5;

        /* Same start, same steps: same bits. */
        ENSURE(ms_step(m, s, 1e-3, 10, &err) == MS_OK);
        ENSURE(memcmp(copy->x, s->x, bytes) == 0);
        ENSURE(memcmp(copy->v, s->v, bytes) == 0);
        ENSURE(copy->steps == s->steps && copy->t == s->t);

        /* The copy outlives its source. */
        ms_state_destroy(s);
        ENSURE(ms_step(m, copy, 1e-3, 5, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 1e-3, 20, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 1e-3, 20, &err) == MS_OK);
    ENSURE(ms_step(m, copy, 1e-3, 20, &err) == MS_OK);
    ENSURE(memcmp(s->x, copy->x, bytes) == 0 && memcmp(s->v, copy->v, bytes) == 0);
    ms_state_destroy(copy);

    /* a copy of a state with one gets its own */
    external[7] = 2.5;
    copy = ms_state_copy(m, s, &err);
    ENSURE(copy != NULL && copy->external != NULL && copy->external != s->external);
    ENSURE(memcmp(copy->external, s->external, bytes) == 0);
    ms_state_destroy(copy);

    m->opt.integrator = MS_VELOCITY_VERLET;
    ENSURE(ms_step(m, s, 1e-3, 3, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 1e-3, 50, &err) == MS_OK);
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
    ENSURE(ms_step(m, s, 1e-3, 50, &err) == MS_OK);
    ENSURE(memcmp(s->x, first_run, bytes) == 0);
    free(first_run);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* Hash of the positions of a fresh 6 x 6 cloth after 1000 steps of the given method,
   taken either as one call of n = 1000 or as 1000 calls of n = 1.  Returns 0 on failure. */
static uint64_t cloth_hash(ms_integrator integrator, int one_call) {
    ms_model* m = make_cloth(6, 1, 2024u);
    if (m == NULL) return 0;
    m->opt.integrator = integrator;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    uint64_t hash = 0;
    int ok = s != NULL;
    if (ok && one_call) {
        ok = ms_step(m, s, 5e-4, 1000, &err) == MS_OK;
    } else {
        for (int i = 0; ok && i < 1000; ++i) ok = ms_step(m, s, 5e-4, 1, &err) == MS_OK;
    }
    if (ok) ok = s->steps == 1000 && all_finite(s->x, 3 * m->nnode);
    if (ok) {
        hash = fnv1a(s->x, 3 * (size_t)m->nnode * sizeof(double));
        /* The cloth really moved: its hash differs from the starting one. */
        if (hash == fnv1a(m->x_initial, 3 * (size_t)m->nnode * sizeof(double))) hash = 0;
    } else {
        fprintf(stderr, "cloth_hash(%s): %s\n", ms_integrator_name(integrator), err.message);
    }
    ms_state_destroy(s);
    ms_model_destroy(m);
    return hash;
}

static int test_spring_blocks(void) {
    /* A 12 x 12 cloth: in rows 0..9 the nodes of columns 1..9 have the same six springs up
       the numbering (+1, +2, +11, +12, +13, +24), so columns 1-4 and 5-8 form blocks where
       the processor has the vector code for them (x86-64 with AVX2); in row 10 the same
       columns, without the +24; in row 11 columns 0-3 and 4-7 with +1 and +2. */
    const int side = 12;
    ms_model* m = make_cloth(side, 1, 5u);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 77u;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) {
        s->x[q] += 0.02 * lcg_uniform(&seed);
        s->v[q] = lcg_uniform(&seed);
    }
    ms_state_forces(m, s, NULL); /* sorts the springs */
    const int vector = ms_avx2_supported();
    int blocks = 0;
    for (int64_t a = 0; a < m->nnode; ++a) {
        if (m->spring_blocks[a] == 0) continue;
        ++blocks;
        const int64_t row = a / side, col = a % side;
        if (row < side - 1) {
            ENSURE(col == 1 || col == 5);
            ENSURE(m->spring_blocks[a] == (row < side - 2 ? 6 : 5));
        } else {
            ENSURE(col == 0 || col == 4);
            ENSURE(m->spring_blocks[a] == 2);
        }
    }
    ENSURE(blocks == (vector ? 2 * side : 0));
    /* in a block, spring j of nodes a..a+3 sits at 4 j + q and reaches equally far */
    for (int64_t r = 0; r < m->nspring;) {
        const int64_t a = m->sorted_springs[2 * r], k = m->spring_blocks[a];
        if (k == 0) {
            ++r;
            continue;
        }
        for (int64_t j = 0; j < k; ++j)
            for (int64_t q = 0; q < 4; ++q) {
                const int32_t* pair = m->sorted_springs + 2 * (r + 4 * j + q);
                ENSURE(pair[0] == a + q && pair[1] - pair[0] == m->sorted_springs[2 * (r + 4 * j) + 1] - a);
                const int32_t* user = m->springs + 2 * (int64_t)m->spring_order[r + 4 * j + q];
                ENSURE((user[0] == pair[0] && user[1] == pair[1]) || (user[0] == pair[1] && user[1] == pair[0]));
            }
        r += 4 * k;
    }
    /* the step's forces (blocks) equal the forces summed spring by spring in the user's order */
    ms_flow flow;
    ms_state_forces(m, s, &flow);
    const double power = flow.dampers + flow.drag - flow.wind;
    double* f = malloc(sizeof(double) * 3 * (size_t)m->nnode);
    ENSURE(f != NULL);
    const double reference_power = forces_power(m, s->x, s->v, NULL, s->t, f);
    double scale = 0.0;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) scale = fmax(scale, fabs(f[q]));
    for (int64_t q = 0; q < 3 * m->nnode; ++q) ENSURE_NEAR(s->f[q], f[q], 1e-13 * scale);
    ENSURE_NEAR(power, reference_power, 1e-12 * reference_power);
    free(f);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

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
            ENSURE(ms_model_add_collider(m, &box, &err) >= 0 && ms_model_add_collider(m_each, &box, &err) >= 0);
        } else if (round == 2) {
            ENSURE(ms_model_remove_collider(m, sphere_id, &err) == MS_OK);
            ENSURE(ms_model_remove_collider(m_each, sphere_id, &err) == MS_OK);
        }
        ENSURE(ms_step(m, one, 2e-3, 150, &err) == MS_OK);
        for (int k = 0; k < 150; ++k) ENSURE(ms_step(m_each, each, 2e-3, 1, &err) == MS_OK);
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
    ENSURE(ms_step(m, one, 2e-3, 13, &err) == MS_OK);
    for (int k = 0; k < 13; ++k) ENSURE(ms_step(m_each, each, 2e-3, 1, &err) == MS_OK);
    ENSURE(memcmp(one->x, each->x, 3 * sizeof(double)) == 0 && memcmp(one->v, each->v, 3 * sizeof(double)) == 0);
    ENSURE_NEAR(one->x[1], 0.0485, 1e-12);
    ms_state_destroy(one);
    ms_state_destroy(each);
    ms_model_destroy(m);
    ms_model_destroy(m_each);
    return 0;
}

static int test_thread_counts(void) {
    /* A request of n > 0 threads means n (at most 64), 0 all online cores; a model's own
       threads wins over its default_threads, which a copy keeps. */
    ENSURE(ms_resolve_threads(3) == 3 && ms_resolve_threads(1000) == 64);
    const int online = ms_resolve_threads(0);
    ENSURE(online >= 1 && online <= 64);
    ms_model* m = make_cloth(4, 1, 3u);
    ENSURE(m != NULL);
    ENSURE(m->opt.threads == 0 && m->default_threads == 0);
    m->default_threads = 5;
    ms_error err = fresh_error();
    ms_model* copy = ms_model_copy(m, &err);
    ENSURE(copy != NULL && copy->default_threads == 5);
    ms_model_destroy(copy);
    ms_model_destroy(m);
    return 0;
}

static int test_determinism(void) {
    uint64_t hashes[MS_INTEGRATOR_COUNT];
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        uint64_t first = cloth_hash((ms_integrator)integrator, 1);
        uint64_t second = cloth_hash((ms_integrator)integrator, 1);
        uint64_t stepwise = cloth_hash((ms_integrator)integrator, 0);
        ENSURE(first != 0);
        ENSURE(first == second);
        ENSURE(first == stepwise);
        hashes[integrator] = first;
    }
    /* Different methods take different paths. */
    for (int a = 0; a < MS_INTEGRATOR_COUNT; ++a)
        for (int b = a + 1; b < MS_INTEGRATOR_COUNT; ++b) ENSURE(hashes[a] != hashes[b]);
    return 0;
}

/* ---- runner --------------------------------------------------------------------- */

typedef struct test_case {
    const char* name;
    int (*run)(void);
} test_case;

#define TEST(fn) {#fn, fn}

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
        const ms_collider* stored = ms_model_find_collider(m, id);
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
    ENSURE(ms_step(m, s, 1e-3, 10, &err) == MS_OK);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* Self-collision with a tiny distance and huge coordinates: the cells lie far beyond int64
   and share the outermost cell (no undefined cast or overflow for the sanitizers to find);
   nodes that far apart are not pushed. */
static int test_self_collision_far_cells(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(3, 0, 0, &err);
    ENSURE(m != NULL);
    const double x[9] = {1e300, 0.0, 0.0, -1e300, 1e300, 0.0, 0.0, -1e308, 1e-300};
    memcpy(m->x_initial, x, sizeof x);
    for (int i = 0; i < 3; ++i) m->mass[i] = 1.0;
    m->opt.gravity[1] = 0.0;
    m->opt.self_collision = 1e-300;
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 3, &err) == MS_OK);
    for (int q = 0; q < 9; ++q) ENSURE(s->x[q] == x[q]);
    ms_state_destroy(s);
    ms_model_destroy(m);
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
    ENSURE(ms_step(m, s, 1e-3, 5, &err) == MS_ERR_DIVERGED);
    for (int q = 0; q < 6; ++q) ENSURE(s->f[q] == 0.25 * q);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* The ledger closes with every mechanism at once: a pinned corner moving with a
   velocity, drag in a gusty wind, an external force, and a moving sphere with friction
   that the cloth falls onto.  With RK4 at small steps mechanical + dissipated - work
   stays put to RK4's error, each dissipated part never decreases, and the watched energy
   books a caller's change as user work at the next step. */
static int test_ledger_closes(void) {
    ms_error err = fresh_error();
    ms_model* m = make_cloth(8, 1, 99);
    ENSURE(m != NULL);
    m->opt.integrator = MS_RK4;
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
    const ms_energy start = ms_state_energy(m, s);
    ms_ledger previous = s->ledger;
    for (int call = 0; call < 40; ++call) {
        ENSURE(ms_step(m, s, 2.5e-4, 50, &err) == MS_OK);
        const double* now = &s->ledger.dampers;
        const double* before = &previous.dampers;
        for (int part = 0; part < 4; ++part) ENSURE(now[part] >= before[part]); /* dissipated parts */
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
    ENSURE(ms_step(m, s, 2.5e-4, 1, &err) == MS_OK);
    ENSURE_NEAR(s->ledger.user, (changed.kinetic + changed.gravity + changed.spring) -
                                    (end.kinetic + end.gravity + end.spring), 1e-14 * scale);
    const ms_energy after = ms_state_energy(m, s);
    total_end = after.kinetic + after.spring + after.gravity + after.dissipated - after.work;
    ENSURE_NEAR(total_end, total_start, 1e-7 * scale);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

int main(void) {
    const test_case tests[] = {
        TEST(test_default_options),
        TEST(test_model_create_destroy),
        TEST(test_model_create_bad_sizes),
        TEST(test_model_check),
        TEST(test_integrator_names),
        TEST(test_diagnostics_two_nodes),
        TEST(test_newton_third_law),
        TEST(test_zero_length_spring),
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
        TEST(test_implicit_energy_factor),
        TEST(test_implicit_unconditionally_stable),
        TEST(test_implicit_pinned_nodes_exact),
        TEST(test_implicit_overflow_rolls_back),
        TEST(test_max_eigenvalues_pair),
        TEST(test_max_eigenvalues_chain),
        TEST(test_strain_limiting),
        TEST(test_solver_and_strain_options_check),
        TEST(test_divergence_rolls_back),
        TEST(test_step_bad_arguments),
        TEST(test_model_copy_independent),
        TEST(test_state_copy_independent),
        TEST(test_storage_on_first_use),
        TEST(test_state_reset),
        TEST(test_determinism),
        TEST(test_spring_blocks),
        TEST(test_thread_counts),
        TEST(test_contact_many_steps_per_call),
        TEST(test_contact_push_towards_an_earlier_collider),
        TEST(test_ledger_closes),
        TEST(test_collider_axis_of_any_size),
        TEST(test_self_collision_far_cells),
        TEST(test_divergence_restores_f),
    };
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
        if (tests[i].run() == 0) {
            ++passed;
        } else {
            ++failed;
            fprintf(stderr, "FAILED %s\n", tests[i].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
