/* Multithreaded Euler steps for large networks.
 *
 * Each worker owns a contiguous range of springs and a contiguous range of nodes.  In the
 * spring phase it accumulates its springs' forces into a private buffer that covers only
 * the nodes its springs touch; after a barrier, in the node phase, it sums for each of its
 * nodes the node forces and every worker's buffer in worker order, then integrates the
 * node.  Every sum is taken in an order fixed by the partition, so a run is bitwise
 * repeatable for a given thread count, with no locks or atomics.  Workers are started for
 * one call and joined before it returns: no thread outlives a call (so the library is safe
 * to use across fork()).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define MS_MAX_THREADS 64

typedef struct worker worker;

/* A sense-reversing spinning barrier: a step of a mid-sized network takes a fraction of a
   millisecond, far less than waking a thread that slept in the kernel.  Waiters yield the
   processor after a while so an oversubscribed machine still makes progress. */
typedef struct spin_barrier {
    atomic_int arrived;
    atomic_int sense;
    int count;
} spin_barrier;

static void spin_barrier_wait(spin_barrier* b, int* local_sense) {
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

typedef struct team {
    const ms_model* m;
    ms_model* movable; /* the same model, for moving the colliders after a step (worker 0) */
    ms_state* s;
    double h;
    int64_t n;
    int count;
    int explicit_euler;
    int buffered;      /* colliders: through the double buffer, with contact at each worker */
    spin_barrier barrier;
    pthread_mutex_t lock;
    pthread_cond_t gate;
    int start;         /* 0: wait, 1: run, -1: abandon (not every worker could start) */
    worker* workers;
    int64_t completed; /* steps finished with a finite state (written by worker 0) */
} team;

struct worker {
    team* team;
    int id;
    pthread_t thread;
    int64_t spring_begin, spring_end; /* springs [begin, end) */
    int64_t node_begin, node_end;     /* nodes integrated by this worker */
    int64_t touch_begin, touch_end;   /* nodes its springs touch: its buffer's range */
    double* buffer;                   /* 3 x (touch_end - touch_begin) */
    ms_flow flow;                     /* W: its springs' dampers, its nodes' own forces and pins */
    ms_contact contact;               /* J: contact at its nodes in this step */
    int sense;                        /* its side of the barrier */
    int bad;                          /* its nodes would become non-finite in this step */
};

int ms_resolve_threads(int n) {
    int threads = n;
    if (threads <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        threads = online > 0 ? (int)online : 1;
    }
    if (threads > MS_MAX_THREADS) threads = MS_MAX_THREADS;
    return threads;
}

int ms_thread_count(const ms_model* m) {
    return ms_resolve_threads(m->opt.threads > 0 ? m->opt.threads : m->default_threads);
}

int ms_parallel_eligible(const ms_model* m) {
    const ms_air* air = &m->opt.air;
    const int face_forces = m->nface > 0 && air->density > 0.0 &&
                            (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0);
    return (m->opt.integrator == MS_SYMPLECTIC_EULER || m->opt.integrator == MS_EXPLICIT_EULER) &&
           m->nspring >= MS_PARALLEL_MIN_SPRINGS && ms_thread_count(m) > 1 &&
           !m->opt.strain_limiting && m->opt.self_collision == 0.0 && m->opt.energy_loss == 0.0 && !face_forces;
}

/* The state a step reads (x, v) and, with the double buffer, the one it writes (next). */
typedef struct halves {
    double *x, *v, *x_next, *v_next;
} halves;

static void spring_phase(worker* w, const halves* now) {
    const ms_model* m = w->team->m;
    memset(w->buffer, 0, sizeof(double) * 3 * (size_t)(w->touch_end - w->touch_begin));
    /* the buffer covers nodes [touch_begin, touch_end): shift it so it is indexed by node */
    const ms_flow none = {0.0, 0.0, 0.0, 0.0, 0.0};
    w->flow = none;
    w->flow.dampers = ms_spring_forces(m, w->spring_begin, w->spring_end, now->x, now->v,
                                       w->buffer - 3 * w->touch_begin);
}

static void node_phase(worker* w, double t, const halves* now) {
    team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* st = tm->s;
    const double h = tm->h;
    double* restrict x = now->x;
    double* restrict v = now->v;
    double* restrict f = st->f;
    /* the nodes' own forces, then every worker's spring buffer in worker order */
    ms_node_forces(m, x, v, ms_active_external(st), t, w->node_begin, w->node_end, f, &w->flow);
    for (int k = 0; k < tm->count; ++k) {
        const worker* other = &tm->workers[k];
        const int64_t begin = other->touch_begin > w->node_begin ? other->touch_begin : w->node_begin;
        const int64_t end = other->touch_end < w->node_end ? other->touch_end : w->node_end;
        const double* part = other->buffer - 3 * other->touch_begin;
        for (int64_t q = 3 * begin; q < 3 * end; ++q) f[q] += part[q];
    }
    const int64_t begin = w->node_begin, end = w->node_end;
    if (st->moving_pins) w->flow.pins = ms_pin_power(m, x, v, ms_active_external(st), t, f, begin, end);
    if (!tm->buffered) {
        /* checked only: a worker writes its nodes once every worker's check has passed */
        w->bad = !ms_euler_check(st->inv_mass, x, v, f, h, tm->explicit_euler, begin, end);
        return;
    }
    /* into the other half, then contact for these nodes (each node on its own, so it
       does not matter which worker does it), then the finiteness of the result */
    int finite = ms_euler_into(st->inv_mass, x, v, f, h, tm->explicit_euler, begin, end, now->x_next, now->v_next);
    const ms_contact none = {0.0, 0.0, 0};
    w->contact = none;
    if (finite) {
        w->contact = ms_collide_nodes(m, st, x, now->x_next, now->v_next, h, begin, end);
        finite = ms_all_finite(now->x_next + 3 * begin, 3 * (size_t)(end - begin)) &&
                 ms_all_finite(now->v_next + 3 * begin, 3 * (size_t)(end - begin));
    }
    w->bad = !finite;
}

static void* run_worker(void* argument) {
    worker* w = argument;
    team* tm = w->team;
    ms_state* st = tm->s;
    if (w->id > 0) {
        pthread_mutex_lock(&tm->lock);
        while (tm->start == 0) pthread_cond_wait(&tm->gate, &tm->lock);
        const int run = tm->start > 0;
        pthread_mutex_unlock(&tm->lock);
        if (!run) return NULL;
    }
    double t = st->t;
    halves now = {st->x, st->v, st->x_next, st->v_next};
    for (int64_t step = 0; step < tm->n; ++step) {
        spring_phase(w, &now);
        spin_barrier_wait(&tm->barrier, &w->sense);
        node_phase(w, t, &now);
        spin_barrier_wait(&tm->barrier, &w->sense);
        int bad = 0;
        ms_flow flow = {0.0, 0.0, 0.0, 0.0, 0.0};
        ms_contact contact = {0.0, 0.0, 0};
        for (int k = 0; k < tm->count; ++k) {
            const worker* other = &tm->workers[k];
            bad |= other->bad;
            ms_flow_add(&flow, &other->flow, tm->h);
            contact.dissipated += other->contact.dissipated;
            contact.work += other->contact.work;
            contact.pushes += other->contact.pushes;
        }
        /* every worker sees the same flags and sums and stops before the same step */
        if (bad || !ms_flow_finite(&flow) || !isfinite(contact.dissipated) || !isfinite(contact.work)) break;
        if (tm->buffered) {
            /* the new state is complete in the other half: every worker turns to it */
            halves turned = {now.x_next, now.v_next, now.x, now.v};
            now = turned;
        } else {
            ms_euler_commit(st->inv_mass, now.x, now.v, st->f, tm->h, tm->explicit_euler, w->node_begin,
                            w->node_end);
        }
        t += tm->h;
        if (w->id == 0) {
            st->t += tm->h;
            st->steps += 1;
            ms_ledger_add_flow(&st->ledger, &flow);
            /* the springs' share of the pushes, from the complete new state, in spring
               order (the others wait at the barrier below) */
            if (contact.pushes > 0) contact.work += ms_push_spring_energy(tm->m, st, now.x);
            st->ledger.contact += contact.dissipated;
            st->ledger.colliders += contact.work;
            tm->completed = step + 1;
            /* nobody reads the colliders again before the next node phase */
            if (tm->buffered) ms_move_colliders(tm->movable, tm->h);
        }
        /* the next spring phase reads every node's new x and v and overwrites the buffers
           and powers everyone just read */
        spin_barrier_wait(&tm->barrier, &w->sense);
    }
    return NULL;
}

int64_t ms_parallel_euler(ms_model* m, ms_state* s, double h, int64_t n, int* failed) {
    const int count = ms_thread_count(m);
    team tm;
    worker workers[MS_MAX_THREADS];
    memset(&tm, 0, sizeof tm);
    tm.m = m;
    tm.movable = m;
    tm.s = s;
    tm.buffered = m->ncollider > 0;
    tm.h = h;
    tm.n = n;
    tm.count = count;
    tm.explicit_euler = m->opt.integrator == MS_EXPLICIT_EULER;
    tm.workers = workers;
    *failed = 0;
    int allocated = 0, started = 0;
    for (int k = 0; k < count; ++k) {
        worker* w = &workers[k];
        memset(w, 0, sizeof *w);
        w->team = &tm;
        w->id = k;
        w->spring_begin = ms_model_unit_start(m, m->nspring * k / count);
        w->spring_end = ms_model_unit_start(m, m->nspring * (k + 1) / count);
        w->node_begin = m->nnode * k / count;
        w->node_end = m->nnode * (k + 1) / count;
        int64_t low = m->nnode, high = 0;
        for (int64_t r = w->spring_begin; r < w->spring_end; ++r)
            for (int end = 0; end < 2; ++end) {
                const int64_t node = m->sorted_springs[2 * r + end];
                if (node < low) low = node;
                if (node + 1 > high) high = node + 1;
            }
        if (high <= low) low = high = 0;
        w->touch_begin = low;
        w->touch_end = high;
        w->buffer = malloc(sizeof(double) * 3 * (size_t)(high - low > 0 ? high - low : 1));
        if (w->buffer == NULL) break;
        allocated = k + 1;
    }
    int64_t completed = -1;
    if (allocated == count) {
        atomic_init(&tm.barrier.arrived, 0);
        atomic_init(&tm.barrier.sense, 0);
        tm.barrier.count = count;
        pthread_mutex_init(&tm.lock, NULL);
        pthread_cond_init(&tm.gate, NULL);
        for (started = 1; started < count; ++started)
            if (pthread_create(&workers[started].thread, NULL, run_worker, &workers[started]) != 0) break;
        /* Open the gate only if every worker is there; otherwise send them home. */
        pthread_mutex_lock(&tm.lock);
        tm.start = started == count ? 1 : -1;
        pthread_cond_broadcast(&tm.gate);
        pthread_mutex_unlock(&tm.lock);
        if (started == count) {
            run_worker(&workers[0]);
            completed = tm.completed;
        }
        for (int k = 1; k < started; ++k) pthread_join(workers[k].thread, NULL);
        pthread_cond_destroy(&tm.gate);
        pthread_mutex_destroy(&tm.lock);
    }
    for (int k = 0; k < allocated; ++k) free(workers[k].buffer);
    if (completed < 0) {
        *failed = 1; /* resources: the caller falls back to one thread */
        return 0;
    }
    if (tm.buffered && completed % 2 == 1) {
        /* an odd number of turns left the newest state in the other half: bring it home */
        const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
        memcpy(s->x, s->x_next, bytes);
        memcpy(s->v, s->v_next, bytes);
    }
    return completed;
}
