/* Shared by the plain C tests: the helpers in helpers.c and the test tables that main.c runs.
   Each test is a function returning 0 on success (see ensure.h); each test_<concept>.c
   lists its tests in a table ending with {NULL, NULL}. */
#ifndef MSPRINGS_TESTS_HELPERS_H
#define MSPRINGS_TESTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "msprings/msprings.h"

/* ---- helpers (helpers.c) -------------------------------------------------------- */

/* A fresh error record with a recognisable non-OK status, so a test can tell that a
   function really wrote it. */
ms_error fresh_error(void);

/* True if the error message is a non-empty, NUL-terminated string. */
int has_message(const ms_error* err);

int all_finite(const double* values, int64_t count);

/* A one-dimensional oscillator along x: node 0 pinned at the origin (mass 0, which is
   allowed on a pinned node), node 1 free with the given mass at x = rest + amplitude,
   one spring of rest length 1 m.  Gravity is off.  Returns NULL on failure. */
ms_model* make_oscillator(double k, double mass, double c, double amplitude, ms_integrator integrator);

/* A small deterministic pseudo-random generator (64-bit LCG), uniform in [-1, 1). */
double lcg_uniform(uint64_t* seed);

/* A square cloth of side x side nodes, 0.1 m apart in the x-z plane with small random
   offsets, with structural, shear and bending springs (rest = initial length).  If pin
   is non-zero the two corners of the first row are pinned.  Returns NULL on failure. */
ms_model* make_cloth(int side, int pin, uint64_t seed);

/* Numbers the nodes of m anew in a random order (positions, velocities, masses, pins and
   springs follow them), as a network read from a file may come.  Returns 0, or -1 if out
   of memory. */
int shuffle_nodes(ms_model* m, uint64_t seed);

/* The state's external force array, allocated on first use. */
#define EXTERNAL(m, s) ms_state_external((m), (s), NULL)

/* ms_forces, returning the power the forces take out of the nodes as one number
   (dampers and drag in the air's frame, less the wind's work). */
double forces_power(const ms_model* m, const double* x, const double* v, const double* external, double t,
                    double* f);

/* Everything observable about a state, copied out so it can be compared bitwise (an
   external force that was never allocated counts as zeros). */
typedef struct snapshot {
    double* arrays; /* x, v, f, external: 4 x nnode x 3 */
    double t;
    int64_t steps;
    ms_ledger ledger;
} snapshot;

/* Fills out (its arrays malloc'ed, for the caller to free); 0 if out of memory. */
int snapshot_take(const ms_model* m, const ms_state* s, snapshot* out);

/* True if the state is bitwise identical to the snapshot. */
int snapshot_equal(const ms_model* m, const ms_state* s, const snapshot* snap);

/* Kinetic + spring + gravity energy of the state (J). */
double mechanical_energy(const ms_model* m, const ms_state* s);

/* ---- test tables (one per test_<concept>.c, run by main.c) ---------------------- */

typedef struct test_case {
    const char* name;
    int (*run)(void);
} test_case;

#define TEST(fn) {#fn, fn}

extern const test_case model_tests[];
extern const test_case forces_tests[];
extern const test_case integrators_tests[];
extern const test_case implicit_tests[];
extern const test_case divergence_tests[];
extern const test_case contact_tests[];
extern const test_case constraints_tests[];
extern const test_case threads_tests[];
extern const test_case ledger_tests[];
extern const test_case cholesky_tests[];
extern const test_case solvers_tests[];
extern const test_case states_tests[];
extern const test_case ensemble_tests[];
extern const test_case gradient_tests[];

#endif
