/* The large-step solvers: xpbd's spring colours and projective dynamics' convergence to
   backward Euler. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"
#include "kernels/colouring.h"
#include "model/model.h"

/* Every spring has exactly one segment; no two springs of a segment (one colour of one
   region, or of the boundary) share a node; a region's springs have both ends in it, the
   boundary's in two regions.  *boundary receives the boundary's springs. */
static int colouring_valid(const ms_model* m, const ms_colouring* c, int64_t* boundary) {
    const int64_t nsegment = (c->nregion + 1) * c->ncolour;
    if (c->start[0] != 0 || c->start[nsegment] != m->nspring) return 0;
    uint8_t* seen = calloc((size_t)(m->nspring > 0 ? m->nspring : 1), 1);
    int64_t* mark = malloc(sizeof(int64_t) * (size_t)m->nnode);
    int ok = seen != NULL && mark != NULL;
    for (int64_t i = 0; ok && i < m->nnode; ++i) mark[i] = -1;
    *boundary = 0;
    for (int64_t g = 0; ok && g < nsegment; ++g)
        for (int64_t r = c->start[g]; r < c->start[g + 1]; ++r) {
            const int32_t sp = c->springs[r];
            const int32_t i = m->springs[2 * (int64_t)sp], j = m->springs[2 * (int64_t)sp + 1];
            ok &= !seen[sp] && mark[i] != g && mark[j] != g;
            ok &= c->pairs[2 * r] == i && c->pairs[2 * r + 1] == j;
            seen[sp] = 1;
            mark[i] = mark[j] = g;
            const int64_t region = g / c->ncolour, ri = i * c->nregion / m->nnode, rj = j * c->nregion / m->nnode;
            ok &= region == c->nregion ? ri != rj : ri == region && rj == region;
            *boundary += region == c->nregion;
        }
    for (int64_t sp = 0; ok && sp < m->nspring; ++sp) ok &= seen[sp];
    free(seen);
    free(mark);
    return ok;
}

/* The colours of greedy colouring in spring order, one sweep over the springs left per
   colour (each takes the springs whose nodes the colour has not touched yet): the plain
   way, for comparison.  Returns the number of colours, or -1. */
static int64_t sweep_colours(const ms_model* m, int64_t* colour) {
    int64_t* mark = malloc(sizeof(int64_t) * (size_t)m->nnode);
    if (mark == NULL) return -1;
    for (int64_t i = 0; i < m->nnode; ++i) mark[i] = -1;
    for (int64_t sp = 0; sp < m->nspring; ++sp) colour[sp] = -1;
    int64_t ncolour = 0;
    for (int64_t left = m->nspring; left > 0; ++ncolour)
        for (int64_t sp = 0; sp < m->nspring; ++sp) {
            const int32_t i = m->springs[2 * sp], j = m->springs[2 * sp + 1];
            if (colour[sp] >= 0 || mark[i] == ncolour || mark[j] == ncolour) continue;
            mark[i] = mark[j] = ncolour;
            colour[sp] = ncolour;
            --left;
        }
    free(mark);
    return ncolour;
}

static int test_xpbd_colours(void) {
    ms_model* m = make_cloth(64, 1, 11u);
    ENSURE(m != NULL);
    m->opt.integrator = MS_XPBD;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK);
    const ms_colouring* c = ms_workspace_get(s, MS_WORK_XPBD);
    ENSURE(c != NULL && c->ncolour >= 2 && c->nregion == 4);
    int64_t boundary = 0;
    ENSURE(colouring_valid(m, c, &boundary));
    /* three cuts across the cloth's rows: a small boundary */
    ENSURE(boundary > 0 && 8 * boundary < m->nspring);
    /* the colours, and the order within each, are those of the plain greedy colouring */
    int64_t* colour = malloc(sizeof(int64_t) * (size_t)m->nspring);
    ENSURE(colour != NULL);
    ENSURE(sweep_colours(m, colour) == c->ncolour);
    int same = 1;
    int32_t previous = -1;
    for (int64_t g = 0; g < (c->nregion + 1) * c->ncolour; ++g, previous = -1)
        for (int64_t r = c->start[g]; r < c->start[g + 1]; previous = c->springs[r], ++r)
            same &= colour[c->springs[r]] == g % c->ncolour && c->springs[r] > previous;
    free(colour);
    ms_state_destroy(s);
    ms_model_destroy(m);
    ENSURE(same);
    return 0;
}

/* A hub with many springs and a spring given many times need as many colours as springs
   meet at a node: the colouring stays valid, takes no more colours than that, and its
   segments stay few (within four per spring). */
static int test_xpbd_colours_crowded(void) {
    const int64_t nspring = 200000;
    for (int shape = 0; shape < 2; ++shape) {
        /* shape 0: a star, node 0 joined to every other; 1: one spring given nspring times,
           beside a short chain */
        const int64_t nnode = shape == 0 ? nspring + 1 : 8;
        ms_model* m = ms_model_create(nnode, nspring, 0, NULL);
        ENSURE(m != NULL);
        for (int64_t i = 0; i < nnode; ++i) {
            m->mass[i] = 1.0;
            m->x_initial[3 * i] = (double)i;
        }
        for (int64_t sp = 0; sp < nspring; ++sp) {
            const int64_t other = shape == 0 ? sp + 1 : sp < nspring - 6 ? 1 : sp - (nspring - 6) + 2;
            m->springs[2 * sp] = shape == 0 || sp < nspring - 6 ? 0 : (int32_t)(other - 1);
            m->springs[2 * sp + 1] = (int32_t)other;
            m->rest[sp] = 1.0;
            m->k[sp] = 100.0;
        }
        m->opt.integrator = MS_XPBD;
        m->opt.threads = 2;
        ms_error err = fresh_error();
        ENSURE(ms_model_check(m, &err) == MS_OK);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        ENSURE(ms_step(m, s, 1e-3, 2, NULL, &err) == MS_OK);
        const ms_colouring* c = ms_workspace_get(s, MS_WORK_XPBD);
        int64_t boundary = 0;
        ENSURE(colouring_valid(m, c, &boundary));
        const int64_t needed = shape == 0 ? nspring : nspring - 5; /* the springs at node 0 */
        ENSURE(c->ncolour == needed);
        ENSURE((c->nregion + 1) * c->ncolour <= 4 * nspring);
        ENSURE(all_finite(s->x, 3 * nnode));
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* Largest node distance after one step of h from the model's initial state with
   projective dynamics of the given rounds, to converged implicit Euler; negative on failure. */
static double projective_distance(int iterations, double h) {
    ms_model* m = make_cloth(6, 1, 12u);
    if (m == NULL) return -1.0;
    for (int64_t sp = 0; sp < m->nspring; ++sp) {
        m->k[sp] = 2e3;
        m->c[sp] = 0.0;
    }
    m->opt.drag = 0.0; /* explicit in projective dynamics, implicit in backward Euler */
    ms_error err = fresh_error();
    ms_state* a = ms_state_create(m, &err);
    ms_state* b = ms_state_create(m, &err);
    double distance = -1.0;
    if (a != NULL && b != NULL) {
        m->opt.integrator = MS_IMPLICIT_EULER;
        m->opt.implicit.newton_tol = 1e-14;
        m->opt.implicit.cg_tol = 1e-12;
        const int first = ms_step(m, a, h, 1, NULL, &err);
        m->opt.integrator = MS_PROJECTIVE;
        m->opt.iterations = iterations;
        if (first == MS_OK && ms_step(m, b, h, 1, NULL, &err) == MS_OK) {
            distance = 0.0;
            for (int64_t q = 0; q < 3 * m->nnode; ++q) distance = fmax(distance, fabs(a->x[q] - b->x[q]));
        }
    }
    ms_state_destroy(a);
    ms_state_destroy(b);
    ms_model_destroy(m);
    return distance;
}

/* The local/global rounds approach backward Euler's step for undamped springs without
   drag (both of which projective dynamics takes at the start of the step). */
static int test_projective_converges_to_backward_euler(void) {
    const double h = 1.0 / 60.0;
    double previous = INFINITY;
    for (int iterations = 1; iterations <= 4096; iterations *= 8) {
        const double distance = projective_distance(iterations, h);
        ENSURE(distance >= 0.0 && distance < previous);
        previous = distance;
    }
    printf("    projective after 4096 rounds: %.3g m from backward Euler\n", previous);
    ENSURE(previous < 1e-9);
    return 0;
}

const test_case solvers_tests[] = {
    TEST(test_xpbd_colours),
    TEST(test_xpbd_colours_crowded),
    TEST(test_projective_converges_to_backward_euler),
    {NULL, NULL},
};
