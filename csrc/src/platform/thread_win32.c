/* The thread layer (thread.h) on Windows threads and interlocked operations (Windows 7 and
   later; MSVC, clang-cl and MinGW-w64). */
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <stdlib.h>
#include <windows.h>

#include "msprings/msprings.h"
#include "platform/thread.h"

const char* ms_thread_layer(void) { return "win32"; }

long long ms_process_id(void) { return (long long)GetCurrentProcessId(); }

int ms_cpu_count(void) {
    const DWORD online = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return online > 0 ? (int)online : 1;
}

double ms_clock_seconds(void) {
    LARGE_INTEGER now, frequency;
    if (!QueryPerformanceCounter(&now) || !QueryPerformanceFrequency(&frequency) || frequency.QuadPart <= 0)
        return 0.0;
    return (double)now.QuadPart / (double)frequency.QuadPart;
}

/* The same sense-reversing spinning barrier as the POSIX layer's, on interlocked
   operations (each a full memory barrier).  Waiters read the sense through a volatile
   load and fence once it has flipped, which orders their later reads after it; after a
   while they give the processor to another thread. */
struct ms_barrier {
    volatile LONG arrived;
    volatile LONG sense;
    LONG count;
};

ms_barrier* ms_barrier_create(int count) {
    ms_barrier* b = malloc(sizeof *b);
    if (b == NULL) return NULL;
    b->arrived = 0;
    b->sense = 0;
    b->count = count;
    return b;
}

void ms_barrier_wait(ms_barrier* b, int* local_sense) {
    const LONG sense = !*local_sense;
    *local_sense = sense;
    if (InterlockedIncrement(&b->arrived) == b->count) {
        InterlockedExchange(&b->arrived, 0);
        InterlockedExchange(&b->sense, sense);
        return;
    }
    for (long spins = 0; b->sense != sense; ++spins) {
        if (spins > 2000) SwitchToThread();
        else YieldProcessor();
    }
    MemoryBarrier();
}

void ms_barrier_destroy(ms_barrier* b) { free(b); }

/* Workers wait at a gate until every thread has been created, so that a failure to
   create one sends the others home before any work is done. */
typedef struct crew {
    ms_thread_work work;
    void* context;
    SRWLOCK lock;
    CONDITION_VARIABLE gate;
    int start; /* 0: wait, 1: run, -1: go home */
} crew;

typedef struct member {
    crew* crew;
    int worker;
} member;

static DWORD WINAPI run_member(LPVOID argument) {
    const member* me = argument;
    crew* c = me->crew;
    AcquireSRWLockExclusive(&c->lock);
    while (c->start == 0) SleepConditionVariableSRW(&c->gate, &c->lock, INFINITE, 0);
    const int run = c->start > 0;
    ReleaseSRWLockExclusive(&c->lock);
    if (run) c->work(c->context, me->worker);
    return 0;
}

/* A slim reader/writer lock and a condition variable: nothing to destroy. */
struct ms_counter {
    SRWLOCK lock;
    CONDITION_VARIABLE raised;
    long long count;
};

ms_counter* ms_counter_create(void) {
    ms_counter* c = malloc(sizeof *c);
    if (c == NULL) return NULL;
    InitializeSRWLock(&c->lock);
    InitializeConditionVariable(&c->raised);
    c->count = 0;
    return c;
}

void ms_counter_add(ms_counter* c, long long amount) {
    AcquireSRWLockExclusive(&c->lock);
    c->count += amount;
    ReleaseSRWLockExclusive(&c->lock);
    WakeAllConditionVariable(&c->raised);
}

long long ms_counter_wait(ms_counter* c, long long at_least, double seconds) {
    const DWORD wait = seconds < 0 ? INFINITE : (DWORD)(seconds * 1e3 + 0.5);
    AcquireSRWLockExclusive(&c->lock);
    while (c->count < at_least)
        if (!SleepConditionVariableSRW(&c->raised, &c->lock, wait, 0) && wait != INFINITE)
            break; /* the time is up (or a failure: the caller waits again) */
    const long long count = c->count;
    ReleaseSRWLockExclusive(&c->lock);
    return count;
}

long long ms_counter_value(ms_counter* c) {
    AcquireSRWLockShared(&c->lock);
    const long long count = c->count;
    ReleaseSRWLockShared(&c->lock);
    return count;
}

void ms_counter_destroy(ms_counter* c) { free(c); }

_Static_assert(MS_MAX_THREADS - 1 <= MAXIMUM_WAIT_OBJECTS, "one wait covers every started thread");

int ms_threads_run(int count, ms_thread_work work, void* context) {
    if (count <= 1) {
        work(context, 0);
        return 0;
    }
    if (count > MS_MAX_THREADS) return -1;
    crew c = {work, context, SRWLOCK_INIT, CONDITION_VARIABLE_INIT, 0};
    HANDLE threads[MS_MAX_THREADS]; /* threads[k - 1] runs worker k */
    member members[MS_MAX_THREADS];
    int started = 1;
    for (; started < count; ++started) {
        members[started].crew = &c;
        members[started].worker = started;
        threads[started - 1] = CreateThread(NULL, 0, run_member, &members[started], 0, NULL);
        if (threads[started - 1] == NULL) break;
    }
    AcquireSRWLockExclusive(&c.lock);
    c.start = started == count ? 1 : -1;
    ReleaseSRWLockExclusive(&c.lock);
    WakeAllConditionVariable(&c.gate);
    if (started == count) work(context, 0);
    if (started > 1) WaitForMultipleObjects((DWORD)(started - 1), threads, TRUE, INFINITE);
    for (int k = 1; k < started; ++k) CloseHandle(threads[k - 1]);
    return started == count ? 0 : -1;
}
#else
typedef int ms_thread_win32_unused; /* other systems use another implementation */
#endif
