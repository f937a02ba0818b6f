/* Minimal assertion macros for the C tests: a failed check prints where and why, and
   makes the enclosing test function (which returns int) return 1. */
#ifndef MSPRINGS_TESTS_ENSURE_H
#define MSPRINGS_TESTS_ENSURE_H

#include <math.h>
#include <stdio.h>

#define ENSURE(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: ENSURE(%s) failed\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* |a - b| <= tol; fails on NaN. */
#define ENSURE_NEAR(a, b, tol)                                                              \
    do {                                                                                    \
        double ensure_a_ = (a), ensure_b_ = (b), ensure_tol_ = (tol);                       \
        if (!(fabs(ensure_a_ - ensure_b_) <= ensure_tol_)) {                                \
            fprintf(stderr, "%s:%d: ENSURE_NEAR(%s, %s, %s) failed: %.17g vs %.17g (tol %g)\n", \
                    __FILE__, __LINE__, #a, #b, #tol, ensure_a_, ensure_b_, ensure_tol_);   \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

#endif
