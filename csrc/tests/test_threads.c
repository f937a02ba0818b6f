/* Threads and determinism: thread counts, counters that hand turns between workers, and
   the same result for one call of n steps and n calls of one step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"
#include "platform/thread.h"
#include "step/ranked.h"

/* recorded from a run of test_golden_hash: symplectic Euler on the user's numbering and
   on a shuffled one (a ranked layout), and xpbd (whose ledger holds the numerical part) */
#define GOLDEN_HASH 0xbce3e1503dbb8e8aULL
#define GOLDEN_RANKED_HASH 0x9299b4fd7c9cb8d6ULL
#define GOLDEN_HASH_XPBD 0x9706fa746c6eb2a5ULL
/* and of the energies the last step call of the first two kept of the state it started from */
#define GOLDEN_START_ENERGY_HASH 0xe5e656e6cfb27a4bULL

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
        ok = ms_step(m, s, 5e-4, 1000, NULL, &err) == MS_OK;
    } else {
        for (int i = 0; ok && i < 1000; ++i) ok = ms_step(m, s, 5e-4, 1, NULL, &err) == MS_OK;
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
    /* A request of n > 0 threads means n (at most 64), 0 all online cores; a state's
       default_threads (used when the model's threads is 0) is kept by a copy. */
    ENSURE(ms_resolve_threads(3) == 3 && ms_resolve_threads(1000) == 64);
    const int online = ms_resolve_threads(0);
    ENSURE(online >= 1 && online <= 64);
    ms_model* m = make_cloth(4, 1, 3u);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(m->opt.threads == 0 && s->default_threads == 0);
    s->default_threads = 5;
    ms_state* copy = ms_state_copy(m, s, &err);
    ENSURE(copy != NULL && copy->default_threads == 5);
    ms_state_destroy(copy);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* Two workers take turns through two counters (ms_counter): each writes its turn into a
   shared log only after the other's count says the previous turn is done, so the log
   alternates and each count ends at the number of its worker's turns. */
#define TURNS 2000
typedef struct turns {
    ms_counter* done[2];
    int log[2 * TURNS];
} turns;

static void take_turns(void* context, int worker) {
    turns* t = context;
    for (int k = 0; k < TURNS; ++k) {
        const int turn = 2 * k + worker;
        if (turn > 0) ms_counter_wait(t->done[1 - worker], worker == 0 ? k : k + 1, -1.0); /* the other's last turn */
        t->log[turn] = worker;
        ms_counter_add(t->done[worker], 1);
    }
}

static int test_counters_hand_turns_between_workers(void) {
    turns* t = calloc(1, sizeof *t);
    ENSURE(t != NULL);
    t->done[0] = ms_counter_create();
    t->done[1] = ms_counter_create();
    ENSURE(t->done[0] != NULL && t->done[1] != NULL);
    ENSURE(ms_threads_run(2, take_turns, t) == 0);
    for (int turn = 0; turn < 2 * TURNS; ++turn) ENSURE(t->log[turn] == turn % 2);
    ms_counter_wait(t->done[0], TURNS, -1.0); /* already there: returns at once */
    ms_counter_wait(t->done[1], TURNS, -1.0);
    ENSURE(ms_counter_wait(t->done[0], TURNS + 1, 0.01) == TURNS); /* not reached: back after the time */
    ENSURE(ms_counter_value(t->done[1]) == TURNS);
    ms_counter_destroy(t->done[0]);
    ms_counter_destroy(t->done[1]);
    free(t);
    return 0;
}

/* The build compiled the thread layer and the vector path of its target: tests/cross.sh
   runs this on Windows (wine) and AArch64 (qemu) as well. */
static int test_build_paths(void) {
#if defined(_WIN32)
    ENSURE(strcmp(ms_thread_layer(), "win32") == 0);
#else
    ENSURE(strcmp(ms_thread_layer(), "posix") == 0);
#endif
    ENSURE(ms_process_id() > 0);
    const char* path = ms_vector_path();
#if defined(MS_NO_VECTOR)
    ENSURE(strcmp(path, "plain") == 0);
#elif defined(__aarch64__) || defined(_M_ARM64)
    ENSURE(strcmp(path, "neon") == 0);
#elif (defined(__x86_64__) || defined(_M_X64)) && defined(MS_NO_AVX2)
    ENSURE(strcmp(path, "sse2") == 0);
#elif defined(__x86_64__) || defined(_M_X64)
    ENSURE(strcmp(path, ms_avx2_supported() ? "avx2" : "sse2") == 0);
#endif
    return 0;
}

/* The hash of everything a run leaves: x, v, f, the ledger, t and steps. */
static uint64_t state_hash(const ms_model* m, const ms_state* s) {
    const size_t bytes = 3 * (size_t)m->nnode * sizeof(double);
    uint64_t parts[6] = {fnv1a(s->x, bytes), fnv1a(s->v, bytes), fnv1a(s->f, bytes),
                         fnv1a(&s->ledger, sizeof s->ledger), fnv1a(&s->t, sizeof s->t),
                         fnv1a(&s->steps, sizeof s->steps)};
    return fnv1a(parts, sizeof parts);
}

/* A 72 x 72 cloth (30,000 springs: large enough to run on several workers) with dampers,
   drag in a wind and a moving pin, and per variant: a sphere rising into it and a ground
   plane, strain limiting, energy loss, its nodes numbered at random (so that the layout
   ranks them in its own order).  Returns the state hash after 40 steps with the given
   worker count, or 0 on failure.  Unless start is NULL, the last step call keeps the
   energy of the state it starts from: start[0..2] receive it and start[3..5] the same
   energies from ms_state_energy before that call. */
enum { WITH_COLLIDERS = 1, WITH_STRAIN_LIMIT = 2, WITH_ENERGY_LOSS = 4, WITH_SHUFFLED = 8 };
static uint64_t run_state(ms_integrator integrator, int variant, int threads, double start[6]) {
    ms_model* m = make_cloth(72, 1, 2026u);
    if (m == NULL) return 0;
    if ((variant & WITH_SHUFFLED) && shuffle_nodes(m, 2027u) != 0) {
        ms_model_destroy(m);
        return 0;
    }
    m->opt.integrator = integrator;
    m->opt.threads = threads;
    m->opt.drag = 0.02;
    m->opt.air.wind[0] = 1.0;
    m->opt.strain_limiting = (variant & WITH_STRAIN_LIMIT) != 0;
    m->opt.strain_limit = 0.02;
    m->opt.energy_loss = (variant & WITH_ENERGY_LOSS) ? 1e-3 : 0.0;
    ms_error err = fresh_error();
    if (variant & WITH_COLLIDERS) {
        ms_collider sphere = {0};
        sphere.type = MS_SPHERE;
        sphere.center[0] = 3.5, sphere.center[1] = -0.45, sphere.center[2] = 3.5;
        sphere.size[0] = 0.5;
        sphere.velocity[1] = 2.0;
        sphere.friction = 0.4;
        sphere.restitution = 0.3;
        ms_collider ground = {0};
        ground.type = MS_PLANE;
        ground.center[1] = -0.02;
        ground.axis[1] = 1.0;
        if (ms_model_add_collider(m, &sphere, &err) < 0 || ms_model_add_collider(m, &ground, &err) < 0) return 0;
    }
    ms_state* s = ms_state_create(m, &err);
    uint64_t hash = 0;
    if (s != NULL) {
        int64_t pin = 0;
        while (!m->pinned[pin]) ++pin;
        s->v[3 * pin] = 0.1; /* the pin moves */
        const double h = integrator == MS_IMPLICIT_EULER ? 2e-3 : 2e-4;
        int ok = ms_step(m, s, h, 25, NULL, &err) == MS_OK;
        ms_step_options keep = {0};
        if (ok && start != NULL) {
            const ms_energy before = ms_state_energy(m, s);
            start[3] = before.kinetic, start[4] = before.spring, start[5] = before.gravity;
            start[0] = start[1] = start[2] = NAN;
            keep.start_energy = start;
        }
        ok = ok && ms_step(m, s, h, 15, &keep, &err) == MS_OK;
        if (ok && start != NULL) ok = !isnan(start[0]) && !isnan(start[1]) && !isnan(start[2]);
        if (ok) hash = state_hash(m, s);
        else fprintf(stderr, "run_hash(%s, %d, %d): %s\n", ms_integrator_name(integrator), variant, threads,
                     err.message);
    }
    ms_state_destroy(s);
    ms_model_destroy(m);
    return hash;
}

static uint64_t run_hash(ms_integrator integrator, int variant, int threads) {
    return run_state(integrator, variant, threads, NULL);
}

/* Every worker count gives the same bits, for every integrator, with and without
   colliders, strain limiting and energy loss. */
static int test_same_result_on_any_number_of_threads(void) {
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        const int every = WITH_COLLIDERS | WITH_STRAIN_LIMIT | WITH_ENERGY_LOSS;
        const int variants[] = {0, every, every | WITH_SHUFFLED};
        for (int k = 0; k < 3; ++k) {
            const uint64_t one = run_hash((ms_integrator)integrator, variants[k], 1);
            ENSURE(one != 0);
            const int counts[] = {2, 3, 4};
            for (int c = 0; c < 3; ++c) ENSURE(run_hash((ms_integrator)integrator, variants[k], counts[c]) == one);
        }
    }
    return 0;
}

/* The same run gives the same bits on every build and processor (the vector paths and
   the blocks are written so that they do): a hash recorded once. */
static int test_golden_hash(void) {
    double start[2][6];
    const uint64_t hash = run_state(MS_SYMPLECTIC_EULER, WITH_COLLIDERS, 2, start[0]);
    const uint64_t ranked = run_state(MS_SYMPLECTIC_EULER, WITH_COLLIDERS | WITH_SHUFFLED, 2, start[1]);
    const uint64_t xpbd = run_hash(MS_XPBD, WITH_COLLIDERS, 2); /* its projections run on the vector path too */
    const double kept[6] = {start[0][0], start[0][1], start[0][2], start[1][0], start[1][1], start[1][2]};
    const uint64_t energy = fnv1a(kept, sizeof kept);
    printf("    golden run hash: 0x%016llx, ranked 0x%016llx, xpbd 0x%016llx, start energy 0x%016llx (vector path %s, "
           "thread layer %s)\n",
           (unsigned long long)hash, (unsigned long long)ranked, (unsigned long long)xpbd,
           (unsigned long long)energy, ms_vector_path(), ms_thread_layer());
    ENSURE(hash == GOLDEN_HASH);
    ENSURE(ranked == GOLDEN_RANKED_HASH);
    ENSURE(xpbd == GOLDEN_HASH_XPBD);
    ENSURE(energy == GOLDEN_START_ENERGY_HASH);
    return 0;
}

/* A step call asked for it keeps the kinetic, spring and gravitational energy of the state
   it starts from: ms_state_energy's to rounding (summed in another order), the same bits on
   any number of workers, and the state's bits as without it, for every integrator, the
   user's numbering and a ranked one. */
static int test_start_energy(void) {
    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        const int every = WITH_COLLIDERS | WITH_STRAIN_LIMIT | WITH_ENERGY_LOSS;
        const int variants[] = {0, every | WITH_SHUFFLED};
        for (int k = 0; k < 2; ++k) {
            double one[6];
            const uint64_t hash = run_state((ms_integrator)integrator, variants[k], 1, one);
            ENSURE(hash != 0 && hash == run_hash((ms_integrator)integrator, variants[k], 1));
            const double scale = fabs(one[3]) + fabs(one[4]) + fabs(one[5]);
            ENSURE(one[4] > 0.0 && one[3] > 0.0);
            for (int part = 0; part < 3; ++part) ENSURE(fabs(one[part] - one[3 + part]) <= 1e-13 * scale);
            const int counts[] = {2, 3};
            for (int c = 0; c < 2; ++c) {
                double other[6];
                ENSURE(run_state((ms_integrator)integrator, variants[k], counts[c], other) == hash);
                ENSURE(memcmp(one, other, sizeof one) == 0);
            }
        }
    }
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

/* A caller's check that asks to stop at its third call. */
typedef struct stop_later {
    int calls;
} stop_later;

static int third_call(void* context) {
    stop_later* check = context;
    return ++check->calls >= 3;
}

/* A call that would run for hours stops when the caller's check asks it to, on one worker
   and on two (and on a renumbered copy), with the same exit as a diverged call: the call is
   undone, and the state is bit for bit as the call found it, whether it was stopped inside
   its one step or after many completed steps. */
static int test_interrupted(void) {
    const ms_integrator integrators[] = {MS_XPBD, MS_PROJECTIVE, MS_IMPLICIT_EULER, MS_SYMPLECTIC_EULER, MS_RK4};
    for (int k = 0; k < 5; ++k)
        for (int threads = 1; threads <= 2; ++threads) {
            const ms_integrator integrator = integrators[k];
            /* two workers step networks of 10,000 springs or more */
            ms_model* m = make_cloth(threads == 1 ? 8 : 48, 1, 7u);
            ENSURE(m != NULL && (threads == 1 || m->nspring >= 10000));
            /* xpbd on two workers on a numbering that is not local: the renumbered copy's call */
            if (integrator == MS_XPBD && threads == 2) ENSURE(shuffle_nodes(m, 5u) == 0);
            m->opt.integrator = integrator;
            m->opt.threads = threads;
            ms_error err = fresh_error();
            ms_state* s = ms_state_create(m, &err);
            ENSURE(s != NULL);
            ENSURE(ms_step(m, s, 1e-3, 2, NULL, &err) == MS_OK);
            ENSURE((ms_ranked_of(s) != NULL) == (integrator == MS_XPBD && threads == 2));
            const int one_step = integrator != MS_SYMPLECTIC_EULER && integrator != MS_RK4;
            m->opt.iterations = INT32_MAX;
            m->opt.implicit.newton_max_iter = INT32_MAX;
            m->opt.implicit.cg_max_iter = INT32_MAX;
            m->opt.implicit.newton_tol = 1e-300;
            m->opt.implicit.cg_tol = 1e-300;
            snapshot before;
            ENSURE(snapshot_take(m, s, &before));
            stop_later check = {0};
            const ms_interrupt interrupt = {third_call, &check};
            const int64_t n = one_step ? 1 : INT64_MAX / 2;
            ms_step_options checked = {0};
            checked.interrupt = &interrupt;
            const int status = ms_step(m, s, one_step ? 1e-3 : 1e-6, n, &checked, &err);
            ENSURE(status == MS_ERR_INTERRUPTED && err.status == MS_ERR_INTERRUPTED && has_message(&err));
            ENSURE(check.calls == 3 && s->workers == (integrator == MS_PROJECTIVE ? 1 : threads));
            /* the call is undone, whatever it had completed */
            ENSURE(err.call_step >= 1 && err.step == s->steps + err.call_step);
            ENSURE(one_step ? err.call_step == 1 : err.call_step > 2);
            ENSURE(snapshot_equal(m, s, &before));
            /* a check that never asks to stop changes nothing: the next call completes */
            m->opt.iterations = 0;
            m->opt.implicit = ms_default_options().implicit;
            ENSURE(ms_step(m, s, 1e-3, 3, NULL, &err) == MS_OK);
            free(before.arrays);
            ms_state_destroy(s);
            ms_model_destroy(m);
        }
    return 0;
}

const test_case threads_tests[] = {
    TEST(test_thread_counts),
    TEST(test_counters_hand_turns_between_workers),
    TEST(test_build_paths),
    TEST(test_determinism),
    TEST(test_same_result_on_any_number_of_threads),
    TEST(test_golden_hash),
    TEST(test_start_energy),
    TEST(test_interrupted),
    {NULL, NULL},
};
