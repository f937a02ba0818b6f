/* The thread layer (thread.h) on POSIX threads and C11 atomics. */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "msprings/msprings.h"
#include "platform/thread.h"

const char* ms_thread_layer(void) { return "posix"; }

long long ms_process_id(void) { return (long long)getpid(); }

int ms_cpu_count(void) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

double ms_clock_seconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return 0.0;
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* A sense-reversing spinning barrier: a stage of a mid-sized network takes a fraction of
   a millisecond, far less than waking a thread that slept in the kernel.  Waiters yield
   the processor after a while so an oversubscribed machine still makes progress. */
struct ms_barrier {
    atomic_int arrived;
    atomic_int sense;
    int count;
};

ms_barrier* ms_barrier_create(int count) {
    ms_barrier* b = malloc(sizeof *b);
    if (b == NULL) return NULL;
    atomic_init(&b->arrived, 0);
    atomic_init(&b->sense, 0);
    b->count = count;
    return b;
}

void ms_barrier_wait(ms_barrier* b, int* local_sense) {
    const int sense = !*local_sense;
    *local_sense = sense;
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->count - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&b->sense, sense, memory_order_release);
        return;
    }
    for (long spins = 0; atomic_load_explicit(&b->sense, memory_order_acquire) != sense; ++spins)
        if (spins > 2000) sched_yield();
}

void ms_barrier_destroy(ms_barrier* b) { free(b); }

struct ms_counter {
    pthread_mutex_t lock;
    pthread_cond_t raised;
    long long count;
};

ms_counter* ms_counter_create(void) {
    ms_counter* c = malloc(sizeof *c);
    if (c == NULL) return NULL;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    if (pthread_cond_init(&c->raised, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->count = 0;
    return c;
}

void ms_counter_add(ms_counter* c, long long amount) {
    pthread_mutex_lock(&c->lock);
    c->count += amount;
    pthread_cond_broadcast(&c->raised);
    pthread_mutex_unlock(&c->lock);
}

long long ms_counter_wait(ms_counter* c, long long at_least, double seconds) {
    struct timespec until;
    if (seconds >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        const long long nanoseconds = until.tv_nsec + (long long)(seconds * 1e9);
        until.tv_sec += (time_t)(nanoseconds / 1000000000);
        until.tv_nsec = (long)(nanoseconds % 1000000000);
    }
    pthread_mutex_lock(&c->lock);
    while (c->count < at_least) {
        if (seconds < 0)
            pthread_cond_wait(&c->raised, &c->lock);
        else if (pthread_cond_timedwait(&c->raised, &c->lock, &until) != 0)
            break; /* the time is up (ETIMEDOUT) */
    }
    const long long count = c->count;
    pthread_mutex_unlock(&c->lock);
    return count;
}

long long ms_counter_value(ms_counter* c) {
    pthread_mutex_lock(&c->lock);
    const long long count = c->count;
    pthread_mutex_unlock(&c->lock);
    return count;
}

void ms_counter_destroy(ms_counter* c) {
    if (c == NULL) return;
    pthread_cond_destroy(&c->raised);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Workers wait at a gate until every thread has been created, so that a failure to
   create one sends the others home before any work is done. */
typedef struct crew {
    ms_thread_work work;
    void* context;
    pthread_mutex_t lock;
    pthread_cond_t gate;
    int start; /* 0: wait, 1: run, -1: go home */
} crew;

typedef struct member {
    crew* crew;
    int worker;
} member;

static void* run_member(void* argument) {
    const member* me = argument;
    crew* c = me->crew;
    pthread_mutex_lock(&c->lock);
    while (c->start == 0) pthread_cond_wait(&c->gate, &c->lock);
    const int run = c->start > 0;
    pthread_mutex_unlock(&c->lock);
    if (run) c->work(c->context, me->worker);
    return NULL;
}

int ms_threads_run(int count, ms_thread_work work, void* context) {
    if (count <= 1) {
        work(context, 0);
        return 0;
    }
    if (count > MS_MAX_THREADS) return -1;
    crew c = {work, context, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t threads[MS_MAX_THREADS];
    member members[MS_MAX_THREADS];
    int started = 1;
    for (; started < count; ++started) {
        members[started].crew = &c;
        members[started].worker = started;
        if (pthread_create(&threads[started], NULL, run_member, &members[started]) != 0) break;
    }
    pthread_mutex_lock(&c.lock);
    c.start = started == count ? 1 : -1;
    pthread_cond_broadcast(&c.gate);
    pthread_mutex_unlock(&c.lock);
    if (started == count) work(context, 0);
    for (int k = 1; k < started; ++k) pthread_join(threads[k], NULL);
    pthread_cond_destroy(&c.gate);
    pthread_mutex_destroy(&c.lock);
    return started == count ? 0 : -1;
}
#else
typedef int ms_thread_posix_unused; /* Windows builds use thread_win32.c */
#endif
