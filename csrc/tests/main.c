/*
 * Runner of the plain C tests of the msprings core, written against the public header only.
 *
 * The tests live in test_<concept>.c, one table per file; main runs every table and ends
 * with "N passed, M failed".  Physics is checked against closed forms (harmonic and damped
 * oscillators, constant acceleration) and against hand-computed two-node values.
 */
#include <stdio.h>

#include "helpers.h"

int main(void) {
    const test_case* const tables[] = {
        model_tests,    forces_tests,      integrators_tests, implicit_tests, divergence_tests,
        contact_tests,  constraints_tests, threads_tests,     ledger_tests,      cholesky_tests,
        solvers_tests,  states_tests,      ensemble_tests, gradient_tests,
    };
    int passed = 0, failed = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; ++t) {
        for (const test_case* test = tables[t]; test->run != NULL; ++test) {
            if (test->run() == 0) {
                ++passed;
            } else {
                ++failed;
                fprintf(stderr, "FAILED %s\n", test->name);
            }
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
