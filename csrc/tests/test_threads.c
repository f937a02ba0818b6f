/* Threads and determinism: thread counts, and the same result for one call of n steps
   and n calls of one step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"

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

const test_case threads_tests[] = {
    TEST(test_thread_counts),
    TEST(test_determinism),
    {NULL, NULL},
};
