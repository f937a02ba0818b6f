"""Core stepping benchmark: msprings against a plain C loop and a vectorised NumPy step.

Scenes follow the project's benchmark definitions exactly:

* cloth-N (N = 64 and N = 256): an N x N sheet of 1 kg nodes 0.625 m apart with structural,
  shear and bend springs (k = 2500 N/m, c = 1 N s/m, rest length = initial length), two
  corners pinned, gravity on, symplectic Euler with h = 1e-3 s.
* chain-N (N = 2 and N = 11): N nodes 1 m apart on the x axis, neighbour springs with
  k = 20 N/m and c = 0.3 N s/m, node 0 pinned, gravity on, symplectic Euler, h = 1e-3 s.

msprings runs the cloth twice: on one thread (``s.threads = 1``) and on all online cores
(``s.threads = 0``, the default).  Peers on the cloth scenes:

* "plain C loop": a single-threaded C function (source below) compiled at run time with the
  system C compiler (``cc -O3 -shared -fPIC``, no ``-march=native``, no ``-ffast-math``) and
  called through ctypes on NumPy arrays.  It does the same physics per step as msprings.
* "NumPy (bincount)": a vectorised step that gathers both ends of every spring, evaluates all
  springs at once and scatters the forces onto nodes with one ``np.bincount``.
* Design variants of the C loop (same compiler and flags), each changing one thing, so the
  effect of one design choice of the msprings core can be measured on its own: springs
  visited in order of their lower node through an index array (as the core does), stored in
  that order, or shuffled; double-buffered instead of in-place updates; node forces that read
  drag and external-force terms although they are off; and the node-sorted loop on all cores
  with private force buffers and either a spinning or a sleeping (``pthread_barrier_t``)
  barrier.  Beside them, two probes in C show what more threads can gain on this machine at
  all: memory read bandwidth and floating-point addition throughput on one and on all cores.

Every timed run starts from a fresh copy of the initial state and one untimed step; msprings'
one-time costs (building a system, copying it, its first step) are reported in their own table.

Before anything is timed, every implementation is run 100 steps from the same initial state
and its positions are compared with single-threaded msprings' (node (N-1, N-1) and all nodes
must agree to 1e-9 m), and two all-core msprings runs must end bitwise identical.

Memory: the bytes per node and per spring of a symplectic-Euler system are measured in a
child process, from glibc's allocation counters (``mallinfo2``) and from the growth of the
resident set (``/proc/self/statm``) while systems of known size are built and stepped.

Usage, from the repository root::

    python benchmarks/bench_core.py            # full run (about three minutes)
    python benchmarks/bench_core.py --quick    # short smoke run
    python benchmarks/bench_core.py --repeats 7
    python benchmarks/bench_core.py --skip-variants --skip-memory   # headline rows only

The report is Markdown on stdout.  The exit status is 0 when every agreement and
repeatability check passes and 1 otherwise (or when the C peers cannot be compiled).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Callable, Sequence

import numpy as np

try:  # as part of the benchmarks package (python -m msprings bench)
    from .common import (cloth_geometry, cpu_model, format_rate, format_seconds, format_vector, import_msprings,
                         keep_freed_memory, load_average, round_steps, spring_lengths)
except ImportError:  # as a script: python benchmarks/bench_core.py
    from common import (cloth_geometry, cpu_model, format_rate, format_seconds, format_vector, import_msprings,
                        keep_freed_memory, load_average, round_steps, spring_lengths)

#: Time step of every scene (s).
TIME_STEP = 1e-3
#: Standard gravity used by every scene (m/s^2), y up.
GRAVITY = (0.0, -9.81, 0.0)
#: Steps taken by the agreement check before anything is timed.
CHECK_STEPS = 100
#: Largest allowed distance (m) between a peer's and msprings' positions after the check.
CHECK_TOLERANCE = 1e-9
#: Steps of each of the two all-core runs that must end bitwise identical (--quick: 20).
REPEAT_STEPS = 300
#: Springs shorter than this (m) have no direction and exert no force in the C and NumPy peers.
MIN_LENGTH = 1e-12

CLOTH_SIZES = (64, 256)
CLOTH_SPACING = 0.625
CLOTH_K = 2500.0
CLOTH_C = 1.0
CHAIN_SIZES = (2, 11)
CHAIN_K = 20.0
CHAIN_C = 0.3
CHAIN_BATCH = 1000

#: Online logical CPUs: what ``s.threads = 0`` uses, and the thread count of the threaded C loops.
CORES = os.cpu_count() or 1

#: Compiler flags of the C peers (the compiler itself is ``$CC`` or ``cc``).
C_FLAGS = ("-O3", "-shared", "-fPIC")
#: Extra flags for the threaded variants' file (the plain loop's file needs none).
C_THREAD_FLAGS = ("-pthread",)

MSPRINGS_ONE = "msprings, 1 thread"
MSPRINGS_ALL = f"msprings, all {CORES} cores"
PLAIN_C = "plain C loop"
NUMPY = "NumPy (bincount)"
C_SORTED = "C loop, node-sorted springs"
C_SHUFFLED = "plain C loop, springs shuffled"
C_STORED = "plain C loop, springs stored in node-sorted order"
C_DOUBLE = "C loop, node-sorted, double-buffered"
C_ALL_TERMS = "C loop, node-sorted, reads drag and external"
C_SPIN = f"C loop, node-sorted, {CORES} threads, spinning barrier"
C_SLEEP = f"C loop, node-sorted, {CORES} threads, pthread barrier"
#: The C design variants, each compared with C_SORTED (what the variant isolates, in words).
VARIANTS = {
    PLAIN_C: "springs visited in the scene's order, no index (vs node-sorted through an index)",
    C_SHUFFLED: "springs in a random order, no index: what sorting saves on arbitrary input",
    C_SORTED: "reference: springs visited in node-sorted order through an index array",
    C_STORED: "springs and their parameters permuted into node-sorted order, no index",
    C_DOUBLE: "double buffering (vs in-place update)",
    C_ALL_TERMS: "node forces read drag v and external (vs gravity only)",
    C_SPIN: f"{CORES} threads, private buffers, spinning barrier",
    C_SLEEP: f"{CORES} threads, private buffers, sleeping barrier",
}

#: Memory targets of a symplectic-Euler system (bytes).
TARGET_BYTES_PER_NODE = 150.0
TARGET_BYTES_PER_SPRING = 120.0
#: "About" the target: within this factor counts as met.
MEMORY_SLACK = 1.1

PLAIN_C_SOURCE = r"""
#include <math.h>
#include <stdint.h>

/* Symplectic Euler on a damped mass-spring network, one spring at a time.
   x, v, f: (nnode x 3); springs: (nspring x 2); mass, inv_mass, pinned: (nnode);
   rest, k, c: (nspring); gravity: (3). */
void cloth_run(int64_t nnode, int64_t nspring,
               double *x, double *v, double *f,
               const double *mass, const double *inv_mass, const uint8_t *pinned,
               const int32_t *springs, const double *rest, const double *k, const double *c,
               const double *gravity, double h, double min_length, int64_t nsteps)
{
    for (int64_t step = 0; step < nsteps; ++step) {
        for (int64_t a = 0; a < nnode; ++a) {
            f[3 * a + 0] = mass[a] * gravity[0];
            f[3 * a + 1] = mass[a] * gravity[1];
            f[3 * a + 2] = mass[a] * gravity[2];
        }
        for (int64_t s = 0; s < nspring; ++s) {
            const int64_t i = springs[2 * s];
            const int64_t j = springs[2 * s + 1];
            const double dx = x[3 * j + 0] - x[3 * i + 0];
            const double dy = x[3 * j + 1] - x[3 * i + 1];
            const double dz = x[3 * j + 2] - x[3 * i + 2];
            const double length = sqrt(dx * dx + dy * dy + dz * dz);
            if (length <= min_length) {
                continue; /* no direction: the spring exerts no force */
            }
            const double inv_length = 1.0 / length;
            const double nx = dx * inv_length;
            const double ny = dy * inv_length;
            const double nz = dz * inv_length;
            const double closing = (v[3 * j + 0] - v[3 * i + 0]) * nx
                                 + (v[3 * j + 1] - v[3 * i + 1]) * ny
                                 + (v[3 * j + 2] - v[3 * i + 2]) * nz;
            /* positive tension pulls i towards j and j towards i */
            const double tension = k[s] * (length - rest[s]) + c[s] * closing;
            f[3 * i + 0] += tension * nx;
            f[3 * i + 1] += tension * ny;
            f[3 * i + 2] += tension * nz;
            f[3 * j + 0] -= tension * nx;
            f[3 * j + 1] -= tension * ny;
            f[3 * j + 2] -= tension * nz;
        }
        for (int64_t a = 0; a < nnode; ++a) {
            if (pinned[a]) {
                continue; /* pinned nodes ignore forces and have zero velocity here */
            }
            for (int d = 0; d < 3; ++d) {
                v[3 * a + d] += h * f[3 * a + d] * inv_mass[a];
                x[3 * a + d] += h * v[3 * a + d];
            }
        }
    }
}
"""

VARIANTS_C_SOURCE = r"""
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Design variants of the plain loop.  Each keeps its arithmetic per spring and per node and
   changes one thing: the order springs are visited in, where a step writes its result, what
   the node forces read, or how many threads share the work. */

typedef struct network {
    int64_t nnode;
    int64_t nspring;
    const double *mass;      /* (nnode) */
    const double *inv_mass;  /* (nnode), 0 on pinned nodes */
    const uint8_t *pinned;   /* (nnode) */
    const int32_t *springs;  /* (nspring x 2) */
    const int32_t *order;    /* (nspring) visiting order: springs sorted by their lower node */
    const double *rest;      /* (nspring) */
    const double *k;         /* (nspring) */
    const double *c;         /* (nspring) */
    const double *gravity;   /* (3) */
    double h;
    double min_length;
} network;

/* Adds the forces of springs order[begin .. end) to f, which holds nodes from `first` on:
   the plain loop's arithmetic, in node-sorted order. */
static inline void add_spring_forces(const network *net, const double *restrict x,
                                     const double *restrict v, double *restrict f, int64_t first,
                                     int64_t begin, int64_t end)
{
    const int32_t *springs = net->springs;
    for (int64_t r = begin; r < end; ++r) {
        const int64_t s = net->order[r];
        const int64_t i = springs[2 * s];
        const int64_t j = springs[2 * s + 1];
        const double dx = x[3 * j + 0] - x[3 * i + 0];
        const double dy = x[3 * j + 1] - x[3 * i + 1];
        const double dz = x[3 * j + 2] - x[3 * i + 2];
        const double length = sqrt(dx * dx + dy * dy + dz * dz);
        if (length <= net->min_length) {
            continue;
        }
        const double inv_length = 1.0 / length;
        const double nx = dx * inv_length;
        const double ny = dy * inv_length;
        const double nz = dz * inv_length;
        const double closing = (v[3 * j + 0] - v[3 * i + 0]) * nx
                             + (v[3 * j + 1] - v[3 * i + 1]) * ny
                             + (v[3 * j + 2] - v[3 * i + 2]) * nz;
        const double tension = net->k[s] * (length - net->rest[s]) + net->c[s] * closing;
        double *fi = f + 3 * (i - first);
        double *fj = f + 3 * (j - first);
        fi[0] += tension * nx;
        fi[1] += tension * ny;
        fi[2] += tension * nz;
        fj[0] -= tension * nx;
        fj[1] -= tension * ny;
        fj[2] -= tension * nz;
    }
}

static inline void gravity_forces(const network *net, double *restrict f)
{
    for (int64_t a = 0; a < net->nnode; ++a) {
        f[3 * a + 0] = net->mass[a] * net->gravity[0];
        f[3 * a + 1] = net->mass[a] * net->gravity[1];
        f[3 * a + 2] = net->mass[a] * net->gravity[2];
    }
}

/* In-place symplectic Euler update of nodes [begin, end). */
static inline void update_nodes(const network *net, double *restrict x, double *restrict v,
                                const double *restrict f, int64_t begin, int64_t end)
{
    const double h = net->h;
    for (int64_t a = begin; a < end; ++a) {
        if (net->pinned[a]) {
            continue;
        }
        for (int d = 0; d < 3; ++d) {
            v[3 * a + d] += h * f[3 * a + d] * net->inv_mass[a];
            x[3 * a + d] += h * v[3 * a + d];
        }
    }
}

/* The plain loop with springs in node-sorted order. */
void sorted_run(const network *net, double *x, double *v, double *f, int64_t nsteps)
{
    for (int64_t step = 0; step < nsteps; ++step) {
        gravity_forces(net, f);
        add_spring_forces(net, x, v, f, 0, 0, net->nspring);
        update_nodes(net, x, v, f, 0, net->nnode);
    }
}

/* Node-sorted, double-buffered: a step reads (x, v) from one pair of arrays and writes the
   next state into the other pair, then they swap; the newest state is copied home at the
   end of the call. */
void double_buffer_run(const network *net, double *x, double *v, double *f, double *x_other,
                       double *v_other, int64_t nsteps)
{
    double *x_now = x, *v_now = v, *x_next = x_other, *v_next = v_other;
    const double h = net->h;
    for (int64_t step = 0; step < nsteps; ++step) {
        gravity_forces(net, f);
        add_spring_forces(net, x_now, v_now, f, 0, 0, net->nspring);
        for (int64_t a = 0; a < net->nnode; ++a) {
            for (int d = 0; d < 3; ++d) {
                if (net->pinned[a]) { /* every node is written: the other pair is stale */
                    v_next[3 * a + d] = v_now[3 * a + d];
                    x_next[3 * a + d] = x_now[3 * a + d];
                    continue;
                }
                const double velocity = v_now[3 * a + d] + h * f[3 * a + d] * net->inv_mass[a];
                v_next[3 * a + d] = velocity;
                x_next[3 * a + d] = x_now[3 * a + d] + h * velocity;
            }
        }
        double *swap = x_now;
        x_now = x_next;
        x_next = swap;
        swap = v_now;
        v_now = v_next;
        v_next = swap;
    }
    if (x_now != x) {
        memcpy(x, x_now, sizeof(double) * 3 * (size_t)net->nnode);
        memcpy(v, v_now, sizeof(double) * 3 * (size_t)net->nnode);
    }
}

/* Node-sorted, with node forces m g - drag v + external read for every node although drag
   is 0 and external is all zeros: what a step costs when it does not skip unused terms. */
void all_terms_run(const network *net, double *x, double *v, double *f,
                   const double *external, double drag, int64_t nsteps)
{
    for (int64_t step = 0; step < nsteps; ++step) {
        for (int64_t a = 0; a < net->nnode; ++a) {
            for (int d = 0; d < 3; ++d) {
                f[3 * a + d] = net->mass[a] * net->gravity[d] - drag * v[3 * a + d]
                             + external[3 * a + d];
            }
        }
        add_spring_forces(net, x, v, f, 0, 0, net->nspring);
        update_nodes(net, x, v, f, 0, net->nnode);
    }
}

/* ---- threads: private force buffers and a barrier per phase ---------------------------- */

#define MAX_THREADS 64

/* A barrier that waits by spinning on a generation counter (yielding the processor after a
   while, so an oversubscribed machine still makes progress). */
typedef struct spin_barrier {
    atomic_int arrived;
    atomic_int generation;
    int count;
} spin_barrier;

static void spin_barrier_wait(spin_barrier *b)
{
    const int generation = atomic_load_explicit(&b->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->count - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->generation, 1, memory_order_release);
        return;
    }
    for (long spins = 0;
         atomic_load_explicit(&b->generation, memory_order_acquire) == generation; ++spins) {
        if (spins > 2000) {
            sched_yield();
        }
    }
}

typedef struct team team;

typedef struct worker {
    team *team;
    pthread_t thread;
    int64_t spring_begin, spring_end; /* its springs, positions in the node-sorted order */
    int64_t node_begin, node_end;     /* the nodes it sums and integrates */
    int64_t touch_begin, touch_end;   /* the nodes its springs touch: its buffer's range */
    double *buffer;                   /* (touch_end - touch_begin) x 3 */
} worker;

struct team {
    const network *net;
    double *x;
    double *v;
    int64_t nsteps;
    int count;
    int spinning;
    atomic_int start; /* 0: wait, 1: run, -1: give up (a thread could not be started) */
    spin_barrier spin;
    pthread_barrier_t sleeping;
    worker *workers;
};

static void team_wait(team *t)
{
    if (t->spinning) {
        spin_barrier_wait(&t->spin);
    } else {
        pthread_barrier_wait(&t->sleeping);
    }
}

static void *work(void *argument)
{
    worker *w = argument;
    team *t = w->team;
    const network *net = t->net;
    int start;
    while ((start = atomic_load_explicit(&t->start, memory_order_acquire)) == 0) {
        sched_yield();
    }
    if (start < 0) {
        return NULL;
    }
    const size_t buffer_bytes = sizeof(double) * 3 * (size_t)(w->touch_end - w->touch_begin);
    for (int64_t step = 0; step < t->nsteps; ++step) {
        memset(w->buffer, 0, buffer_bytes);
        add_spring_forces(net, t->x, t->v, w->buffer, w->touch_begin, w->spring_begin,
                          w->spring_end);
        team_wait(t); /* every buffer is complete */
        for (int64_t a = w->node_begin; a < w->node_end; ++a) {
            double force[3] = {net->mass[a] * net->gravity[0], net->mass[a] * net->gravity[1],
                               net->mass[a] * net->gravity[2]};
            for (int q = 0; q < t->count; ++q) {
                const worker *other = &t->workers[q];
                if (a >= other->touch_begin && a < other->touch_end) {
                    const double *part = other->buffer + 3 * (a - other->touch_begin);
                    force[0] += part[0];
                    force[1] += part[1];
                    force[2] += part[2];
                }
            }
            if (net->pinned[a]) {
                continue;
            }
            for (int d = 0; d < 3; ++d) {
                t->v[3 * a + d] += net->h * force[d] * net->inv_mass[a];
                t->x[3 * a + d] += net->h * t->v[3 * a + d];
            }
        }
        team_wait(t); /* every node is updated and every buffer read */
    }
    return NULL;
}

/* The node-sorted loop on `threads` threads.  Each thread owns a contiguous range of the
   sorted springs and accumulates their forces into a private buffer over the nodes they
   touch; after a barrier each thread sums, for its own range of nodes, every buffer that
   covers the node and updates the node; a second barrier closes the step.  Threads are
   started for the call and joined before it returns.  Returns 0, or -1 if the threads or
   buffers could not be had (nothing stepped). */
int threaded_run(const network *net, double *x, double *v, int threads, int spinning,
                 int64_t nsteps)
{
    if (threads < 1 || threads > MAX_THREADS) {
        return -1;
    }
    worker workers[MAX_THREADS];
    team t;
    memset(&t, 0, sizeof t);
    t.net = net;
    t.x = x;
    t.v = v;
    t.nsteps = nsteps;
    t.count = threads;
    t.spinning = spinning;
    t.workers = workers;
    atomic_init(&t.start, 0);
    atomic_init(&t.spin.arrived, 0);
    atomic_init(&t.spin.generation, 0);
    t.spin.count = threads;
    int allocated = 0;
    for (int q = 0; q < threads; ++q) {
        worker *w = &workers[q];
        memset(w, 0, sizeof *w);
        w->team = &t;
        w->spring_begin = net->nspring * q / threads;
        w->spring_end = net->nspring * (q + 1) / threads;
        w->node_begin = net->nnode * q / threads;
        w->node_end = net->nnode * (q + 1) / threads;
        int64_t low = net->nnode, high = 0;
        for (int64_t r = w->spring_begin; r < w->spring_end; ++r) {
            for (int end = 0; end < 2; ++end) {
                const int64_t node = net->springs[2 * (int64_t)net->order[r] + end];
                low = node < low ? node : low;
                high = node + 1 > high ? node + 1 : high;
            }
        }
        if (high <= low) {
            low = high = 0;
        }
        w->touch_begin = low;
        w->touch_end = high;
        w->buffer = malloc(sizeof(double) * 3 * (size_t)(high > low ? high - low : 1));
        if (w->buffer == NULL) {
            break;
        }
        allocated = q + 1;
    }
    int status = -1;
    if (allocated == threads && pthread_barrier_init(&t.sleeping, NULL, (unsigned)threads) == 0) {
        int started = 1;
        while (started < threads &&
               pthread_create(&workers[started].thread, NULL, work, &workers[started]) == 0) {
            ++started;
        }
        atomic_store_explicit(&t.start, started == threads ? 1 : -1, memory_order_release);
        if (started == threads) {
            work(&workers[0]);
            status = 0;
        }
        for (int q = 1; q < started; ++q) {
            pthread_join(workers[q].thread, NULL);
        }
        pthread_barrier_destroy(&t.sleeping);
    }
    for (int q = 0; q < allocated; ++q) {
        free(workers[q].buffer);
    }
    return status;
}

/* ---- memory bandwidth: what a memory-bound step can gain from more threads ------------ */

typedef struct stream_part {
    const double *x;
    int64_t begin, end;
    int repeats;
    double sum;
    pthread_t thread;
} stream_part;

static void *stream_work(void *argument)
{
    stream_part *part = argument;
    double sums[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int r = 0; r < part->repeats; ++r) {
        int64_t i = part->begin;
        for (; i + 8 <= part->end; i += 8) {
            for (int q = 0; q < 8; ++q) {
                sums[q] += part->x[i + q];
            }
        }
        for (; i < part->end; ++i) {
            sums[0] += part->x[i];
        }
    }
    part->sum = sums[0] + sums[1] + sums[2] + sums[3] + sums[4] + sums[5] + sums[6] + sums[7];
    return NULL;
}

/* Reads x (n doubles) `repeats` times, split in contiguous parts over `threads` threads.
   Returns the sum of everything read (so the reads cannot be left out), or NaN if a thread
   could not be started. */
double stream_read(const double *x, int64_t n, int threads, int repeats)
{
    if (threads < 1 || threads > MAX_THREADS) {
        return NAN;
    }
    stream_part parts[MAX_THREADS];
    for (int q = 0; q < threads; ++q) {
        parts[q] = (stream_part){x, n * q / threads, n * (q + 1) / threads, repeats, 0.0, 0};
    }
    int started = 1;
    while (started < threads &&
           pthread_create(&parts[started].thread, NULL, stream_work, &parts[started]) == 0) {
        ++started;
    }
    stream_work(&parts[0]);
    double sum = 0.0;
    for (int q = 0; q < started; ++q) {
        if (q > 0) {
            pthread_join(parts[q].thread, NULL);
        }
        sum += parts[q].sum;
    }
    return started == threads ? sum : NAN;
}

/* ---- arithmetic throughput: what a compute-bound step can gain from more threads ------- */

typedef struct adder {
    int64_t iterations;
    double sum;
    pthread_t thread;
} adder;

static void *add_work(void *argument)
{
    adder *a = argument;
    /* twelve independent chains of additions: enough to keep the adders busy rather than
       waiting on one chain's latency */
    double s0 = 1.0, s1 = 2.0, s2 = 3.0, s3 = 4.0, s4 = 5.0, s5 = 6.0;
    double s6 = 7.0, s7 = 8.0, s8 = 9.0, s9 = 10.0, s10 = 11.0, s11 = 12.0;
    const double e = 1e-9;
    for (int64_t i = 0; i < a->iterations; ++i) {
        s0 += e; s1 += e; s2 += e; s3 += e; s4 += e; s5 += e;
        s6 += e; s7 += e; s8 += e; s9 += e; s10 += e; s11 += e;
    }
    a->sum = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11;
    return NULL;
}

/* Runs `iterations` rounds of twelve independent additions on each of `threads` threads.
   Returns the sum of the results (NaN if a thread could not be started). */
double add_throughput(int threads, int64_t iterations)
{
    if (threads < 1 || threads > MAX_THREADS) {
        return NAN;
    }
    adder adders[MAX_THREADS];
    for (int q = 0; q < threads; ++q) {
        adders[q] = (adder){iterations, 0.0, 0};
    }
    int started = 1;
    while (started < threads &&
           pthread_create(&adders[started].thread, NULL, add_work, &adders[started]) == 0) {
        ++started;
    }
    add_work(&adders[0]);
    double sum = 0.0;
    for (int q = 0; q < started; ++q) {
        if (q > 0) {
            pthread_join(adders[q].thread, NULL);
        }
        sum += adders[q].sum;
    }
    return started == threads ? sum : NAN;
}
"""


# ---------------------------------------------------------------------------------------------
# scenes


@dataclass(frozen=True)
class Scene:
    """A spring network as plain arrays, the common input of every implementation."""

    name: str
    positions: np.ndarray  # (nnode, 3) float64, m
    springs: np.ndarray  # (nspring, 2) int32 node indices
    rest: np.ndarray  # (nspring,) float64, m
    k: np.ndarray  # (nspring,) float64, N/m
    c: np.ndarray  # (nspring,) float64, N s/m
    mass: np.ndarray  # (nnode,) float64, kg
    pinned: np.ndarray  # (nnode,) bool
    watched_node: int  # node whose position is reported

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.positions.shape[0])

    @property
    def n_springs(self) -> int:
        """Number of springs."""
        return int(self.springs.shape[0])


def cloth_scene(n: int) -> Scene:
    """The cloth-N scene: N x N nodes, springs in the order structural, shear, bend."""
    positions, springs, pinned = cloth_geometry(n, CLOTH_SPACING)
    nspring = springs.shape[0]
    return Scene(
        name=f"cloth-{n}",
        positions=positions,
        springs=springs,
        rest=spring_lengths(positions, springs),
        k=np.full(nspring, CLOTH_K),
        c=np.full(nspring, CLOTH_C),
        mass=np.ones(n * n),
        pinned=pinned,
        watched_node=n * n - 1,  # node (N-1, N-1)
    )


def chain_scene(n: int) -> Scene:
    """The chain-N scene: N nodes 1 m apart on the x axis, node 0 pinned."""
    if n < 2:
        raise ValueError(f"chain size n must be >= 2, got {n}")
    positions = np.zeros((n, 3))
    positions[:, 0] = np.arange(n, dtype=float)
    springs = np.stack((np.arange(n - 1), np.arange(1, n)), axis=1).astype(np.int32)
    pinned = np.zeros(n, dtype=bool)
    pinned[0] = True
    return Scene(
        name=f"chain-{n}",
        positions=positions,
        springs=springs,
        rest=spring_lengths(positions, springs),
        k=np.full(n - 1, CHAIN_K),
        c=np.full(n - 1, CHAIN_C),
        mass=np.ones(n),
        pinned=pinned,
        watched_node=n - 1,
    )


def build_system(msprings: ModuleType, scene: Scene, threads: int | None = None) -> object:
    """A msprings.System for the scene, stepped with symplectic Euler.

    ``threads`` sets ``s.threads`` (0 = all online cores, 1 = one thread); None keeps the
    default.
    """
    system = msprings.System(
        scene.positions,
        scene.springs,
        mass=scene.mass,
        k=scene.k,
        c=scene.c,
        rest=scene.rest,
        pinned=scene.pinned,
        gravity=GRAVITY,
        integrator="symplectic_euler",
    )
    if threads is not None:
        system.threads = threads
    return system


def node_sorted_order(springs: np.ndarray) -> np.ndarray:
    """Spring indices sorted by each spring's lower node index (stable: ties keep their order).

    The order the msprings core visits springs in; the C variants use it too.
    """
    return np.argsort(springs.min(axis=1), kind="stable").astype(np.int32)


def permuted(scene: Scene, order: np.ndarray) -> Scene:
    """The same scene with its springs (and their parameters) listed in the given order."""
    return replace(scene, springs=np.ascontiguousarray(scene.springs[order]),
                   rest=scene.rest[order], k=scene.k[order], c=scene.c[order])


#: Seed of the random spring order of the shuffled variant.
SHUFFLE_SEED = 12345


# ---------------------------------------------------------------------------------------------
# peers


@dataclass
class PeerState:
    """Positions and velocities of a peer implementation: (nnode, 3) float64 each."""

    x: np.ndarray
    v: np.ndarray


def fresh_state(scene: Scene) -> PeerState:
    """The scene's initial state (at rest) as new arrays."""
    return PeerState(x=scene.positions.copy(), v=np.zeros_like(scene.positions))


class _Network(ctypes.Structure):
    """ctypes mirror of the variants' ``network`` struct (pointers as addresses)."""

    _fields_ = [
        ("nnode", ctypes.c_int64),
        ("nspring", ctypes.c_int64),
        ("mass", ctypes.c_void_p),
        ("inv_mass", ctypes.c_void_p),
        ("pinned", ctypes.c_void_p),
        ("springs", ctypes.c_void_p),
        ("order", ctypes.c_void_p),
        ("rest", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("c", ctypes.c_void_p),
        ("gravity", ctypes.c_void_p),
        ("h", ctypes.c_double),
        ("min_length", ctypes.c_double),
    ]


@dataclass
class _CArrays:
    """The scene's parameters as contiguous arrays of the C loops' types (kept alive here)."""

    mass: np.ndarray
    inv_mass: np.ndarray
    pinned: np.ndarray
    springs: np.ndarray
    order: np.ndarray
    rest: np.ndarray
    k: np.ndarray
    c: np.ndarray
    gravity: np.ndarray

    @classmethod
    def of(cls, scene: Scene) -> "_CArrays":
        """Converts a scene's parameters."""
        mass = np.ascontiguousarray(scene.mass, dtype=np.float64)
        springs = np.ascontiguousarray(scene.springs, dtype=np.int32)
        return cls(
            mass=mass,
            inv_mass=np.where(scene.pinned, 0.0, 1.0 / mass),
            pinned=scene.pinned.astype(np.uint8),
            springs=springs,
            order=node_sorted_order(springs),
            rest=np.ascontiguousarray(scene.rest, dtype=np.float64),
            k=np.ascontiguousarray(scene.k, dtype=np.float64),
            c=np.ascontiguousarray(scene.c, dtype=np.float64),
            gravity=np.array(GRAVITY, dtype=np.float64),
        )

    def network(self, scene: Scene) -> _Network:
        """The variants' network struct over these arrays."""
        return _Network(scene.n_nodes, scene.n_springs, self.mass.ctypes.data,
                        self.inv_mass.ctypes.data, self.pinned.ctypes.data,
                        self.springs.ctypes.data, self.order.ctypes.data, self.rest.ctypes.data,
                        self.k.ctypes.data, self.c.ctypes.data, self.gravity.ctypes.data,
                        TIME_STEP, MIN_LENGTH)


class PlainC:
    """The plain C loop and its design variants, compiled once into a temporary directory
    and called through ctypes."""

    def __init__(self, directory: Path, compiler: Sequence[str]) -> None:
        plain = directory / "plain_loop.c"
        variants = directory / "loop_variants.c"
        library = directory / "plain_loop.so"
        plain.write_text(PLAIN_C_SOURCE)
        variants.write_text(VARIANTS_C_SOURCE)
        command = [*compiler, *C_FLAGS, *C_THREAD_FLAGS, "-o", str(library), str(plain),
                   str(variants), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"compiling the C loops failed: {shlex.join(command)}\n"
                               f"{done.stderr}")
        self.command = command
        doubles = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
        network = ctypes.POINTER(_Network)
        lib = ctypes.CDLL(str(library))
        signatures: dict[str, tuple[object, list[object]]] = {
            "cloth_run": (None, [
                ctypes.c_int64, ctypes.c_int64,
                doubles, doubles, doubles,
                doubles, doubles, np.ctypeslib.ndpointer(dtype=np.uint8, flags="C_CONTIGUOUS"),
                np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS"), doubles, doubles,
                doubles, doubles, ctypes.c_double, ctypes.c_double, ctypes.c_int64]),
            "sorted_run": (None, [network, doubles, doubles, doubles, ctypes.c_int64]),
            "double_buffer_run": (None, [network, doubles, doubles, doubles, doubles, doubles,
                                         ctypes.c_int64]),
            "all_terms_run": (None, [network, doubles, doubles, doubles, doubles, ctypes.c_double,
                                     ctypes.c_int64]),
            "threaded_run": (ctypes.c_int, [network, doubles, doubles, ctypes.c_int, ctypes.c_int,
                                            ctypes.c_int64]),
            "stream_read": (ctypes.c_double, [doubles, ctypes.c_int64, ctypes.c_int, ctypes.c_int]),
            "add_throughput": (ctypes.c_double, [ctypes.c_int, ctypes.c_int64]),
        }
        self._functions = {}
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
            self._functions[name] = function

    def read_bandwidth(self, megabytes: int, threads: int, repeats: int) -> float:
        """Median bytes per second of reading an array of that size with that many threads
        (several passes per timing), over `repeats` timings."""
        data = np.ones(megabytes * 2**20 // 8)
        passes = 4
        function = self._functions["stream_read"]
        function(data, data.size, threads, 1)  # first touch and warm-up
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            total = function(data, data.size, threads, passes)
            seconds.append(time.perf_counter() - start)
            if total != passes * data.size:
                raise RuntimeError(f"the bandwidth probe could not start {threads} threads")
        return passes * data.nbytes / statistics.median(seconds)

    def add_rate(self, iterations: int, threads: int) -> float:
        """Floating-point additions per second of `threads` threads running `iterations`
        rounds of twelve independent additions each (one timing)."""
        start = time.perf_counter()
        total = self._functions["add_throughput"](threads, iterations)
        elapsed = time.perf_counter() - start
        if not math.isfinite(total):
            raise RuntimeError(f"the throughput probe could not start {threads} threads")
        return 12.0 * iterations * threads / elapsed

    def stepper(self, scene: Scene) -> Callable[[PeerState, int], None]:
        """A function that advances a state of this scene by n steps with the plain loop."""
        arrays = _CArrays.of(scene)
        force = np.zeros_like(scene.positions)
        function = self._functions["cloth_run"]

        def run(state: PeerState, n: int) -> None:
            function(scene.n_nodes, scene.n_springs, state.x, state.v, force, arrays.mass,
                     arrays.inv_mass, arrays.pinned, arrays.springs, arrays.rest, arrays.k,
                     arrays.c, arrays.gravity, TIME_STEP, MIN_LENGTH, n)

        return run

    def variant_steppers(self, scene: Scene) -> dict[str, Callable[[PeerState, int], None]]:
        """Steppers of the design variants (every entry of VARIANTS except the plain loop)."""
        variants = _VariantRunner(self._functions, scene)
        shuffle = np.random.default_rng(SHUFFLE_SEED).permutation(scene.n_springs)
        return {C_SHUFFLED: self.stepper(permuted(scene, shuffle)),
                C_SORTED: variants.node_sorted,
                C_STORED: self.stepper(permuted(scene, node_sorted_order(scene.springs))),
                C_DOUBLE: variants.double_buffered,
                C_ALL_TERMS: variants.all_terms, C_SPIN: variants.spinning_threads,
                C_SLEEP: variants.sleeping_threads}


class _VariantRunner:
    """The C design variants bound to one scene; its methods are (state, n) steppers.

    Holds the parameter arrays that the ctypes network struct points into, so they live as
    long as any of its steppers.
    """

    def __init__(self, functions: dict[str, Callable[..., object]], scene: Scene) -> None:
        self._functions = functions
        self._arrays = _CArrays.of(scene)
        self._network = self._arrays.network(scene)
        self._force = np.zeros_like(scene.positions)
        self._other_x = np.zeros_like(scene.positions)
        self._other_v = np.zeros_like(scene.positions)
        self._external = np.zeros_like(scene.positions)

    def node_sorted(self, state: PeerState, n: int) -> None:
        """The plain loop with springs in node-sorted order."""
        self._functions["sorted_run"](ctypes.byref(self._network), state.x, state.v,
                                      self._force, n)

    def double_buffered(self, state: PeerState, n: int) -> None:
        """Node-sorted, writing each step into a second pair of arrays."""
        self._functions["double_buffer_run"](ctypes.byref(self._network), state.x, state.v,
                                             self._force, self._other_x, self._other_v, n)

    def all_terms(self, state: PeerState, n: int) -> None:
        """Node-sorted, node forces reading drag (0) times v and an all-zero external force."""
        self._functions["all_terms_run"](ctypes.byref(self._network), state.x, state.v,
                                         self._force, self._external, 0.0, n)

    def _threaded(self, state: PeerState, n: int, spinning: int) -> None:
        status = self._functions["threaded_run"](ctypes.byref(self._network), state.x, state.v,
                                                 CORES, spinning, n)
        if status != 0:
            raise RuntimeError(f"the threaded C loop could not start {CORES} threads")

    def spinning_threads(self, state: PeerState, n: int) -> None:
        """Node-sorted on CORES threads with a spinning barrier."""
        self._threaded(state, n, 1)

    def sleeping_threads(self, state: PeerState, n: int) -> None:
        """Node-sorted on CORES threads with pthread_barrier_t."""
        self._threaded(state, n, 0)


def numpy_stepper(scene: Scene) -> Callable[[PeerState, int], None]:
    """A vectorised NumPy symplectic Euler step for the scene, as a function of (state, n)."""
    nnode = scene.n_nodes
    first = scene.springs[:, 0].astype(np.intp)
    second = scene.springs[:, 1].astype(np.intp)
    # Flat force-component index of each (spring end, axis): the first ends get +f, the
    # second ends -f, all scattered by a single bincount.
    axes = np.arange(3)
    scatter_index = np.concatenate((3 * first[:, None] + axes, 3 * second[:, None] + axes)).ravel()
    weight = scene.mass[:, None] * np.asarray(GRAVITY)
    inv_mass = np.where(scene.pinned, 0.0, 1.0 / scene.mass)[:, None]
    rest, k, c = scene.rest, scene.k, scene.c
    h = TIME_STEP

    def step(state: PeerState) -> None:
        x, v = state.x, state.v
        # take() gathers rows several times faster than x[second] fancy indexing
        d = x.take(second, axis=0) - x.take(first, axis=0)
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        inv_length = np.divide(1.0, length, out=np.zeros_like(length), where=length > MIN_LENGTH)
        direction = d * inv_length[:, None]
        closing = np.einsum("ij,ij->i", v.take(second, axis=0) - v.take(first, axis=0), direction)
        tension = k * (length - rest) + c * closing
        pull = direction * tension[:, None]
        spring_force = np.bincount(scatter_index, weights=np.concatenate((pull, -pull)).ravel(),
                                   minlength=3 * nnode)
        force = weight + spring_force.reshape(nnode, 3)
        v += h * force * inv_mass  # pinned nodes: inv_mass 0, velocity stays 0
        x += h * v

    def run(state: PeerState, n: int) -> None:
        for _ in range(n):
            step(state)

    return run


# ---------------------------------------------------------------------------------------------
# timing


@dataclass
class Timing:
    """Median wall time of several equal runs."""

    steps_per_run: int
    seconds: list[float]

    @property
    def median(self) -> float:
        """Median seconds per run."""
        return statistics.median(self.seconds)

    @property
    def steps_per_second(self) -> float:
        """Steps per second of the median run."""
        return self.steps_per_run / self.median


@dataclass
class Contender:
    """One implementation to time: how to make a fresh state and how to run n steps on it."""

    name: str
    fresh: Callable[[], object]
    run: Callable[[object, int], None]
    steps_like: str | None = None  # take the step count of this (earlier) contender


def _timed_run(contender: Contender, n: int) -> tuple[float, object]:
    """Wall time (s) of n steps on a fresh state, and that state after them.

    One untimed step comes first, so one-time work of a system's first step (reported
    separately by :func:`time_setup`) stays out of the stepping rate.  Every contender
    does it, so all runs cover the same n + 1 steps.
    """
    state = contender.fresh()
    contender.run(state, 1)
    start = time.perf_counter()
    contender.run(state, n)
    return time.perf_counter() - start, state


def calibrate(contender: Contender, run_seconds: float) -> int:
    """A step count that makes one run take about run_seconds.

    On one primed state, n doubles until a run takes a tenth of the target; one run at the
    estimated count then refines it, so a slow first run (page faults, cold caches) does not
    skew the count.
    """
    state = contender.fresh()
    contender.run(state, 1)

    def seconds_for(n: int) -> float:
        start = time.perf_counter()
        contender.run(state, n)
        return time.perf_counter() - start

    n = 1
    while (elapsed := seconds_for(n)) < 0.1 * run_seconds:
        n *= 2
    n = round_steps(n * run_seconds / elapsed)
    return round_steps(n * run_seconds / seconds_for(n))


def time_interleaved(contenders: Sequence[Contender], run_seconds: float,
                     repeats: int) -> list[tuple[Timing, object]]:
    """Times every contender repeats times, in turn (one run of each per round).

    Interleaving exposes all contenders to the same background load, which keeps their
    ratios meaningful on a busy machine.  Returns, per contender, the timing and the state
    after its last run.
    """
    counts: list[int] = []
    for contender in contenders:
        if contender.steps_like is None:
            counts.append(calibrate(contender, run_seconds))
        else:
            names = [other.name for other in contenders]
            counts.append(counts[names.index(contender.steps_like)])
    seconds: list[list[float]] = [[] for _ in contenders]
    last: list[object] = [None] * len(contenders)
    for _ in range(repeats):
        for index, contender in enumerate(contenders):
            elapsed, last[index] = _timed_run(contender, counts[index])
            seconds[index].append(elapsed)
    return [(Timing(counts[index], seconds[index]), last[index])
            for index in range(len(contenders))]


# ---------------------------------------------------------------------------------------------
# memory


class _MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (every field a size_t)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _allocated_bytes_counter() -> Callable[[], int] | None:
    """A function returning the bytes malloc has handed out and not had back (all arenas and
    mmapped blocks, from glibc's mallinfo2), or None where mallinfo2 is not available."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    mallinfo2 = getattr(ctypes.CDLL(name), "mallinfo2", None)
    if mallinfo2 is None:
        return None
    mallinfo2.restype = _MallInfo2
    mallinfo2.argtypes = []

    def allocated() -> int:
        info = mallinfo2()
        return int(info.uordblks + info.hblkhd)

    return allocated


def _resident_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


#: Environment of the memory probe: a fixed mmap threshold turns off glibc's sliding one, so
#: every large temporary goes back to the system when freed and the resident set measures
#: only what is kept.
MEMORY_PROBE_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}


def _probe_systems(quick: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, positions, springs) of the systems the memory probe builds: one with nodes and
    no springs, one with many springs between few nodes, and a cloth to check the fit on."""
    rng = np.random.default_rng(7)
    many = 100_000 if quick else 1_000_000
    nodes_only = ("nodes only", rng.random((many, 3)), np.zeros((0, 2), dtype=np.int32))
    few = 1_000
    first = rng.integers(0, few, size=2 * many)
    second = (first + rng.integers(1, few, size=2 * many)) % few  # never a node to itself
    springs_heavy = ("springs between few nodes", rng.random((few, 3)),
                     np.stack((first, second), axis=1).astype(np.int32))
    cloth = cloth_scene(64 if quick else 256)
    return [nodes_only, springs_heavy, (cloth.name, cloth.positions, cloth.springs)]


def memory_probe(quick: bool) -> dict[str, object]:
    """Builds each probe system, steps it once with symplectic Euler (all cores) and records
    how much memory that kept: malloc's count and the resident set, after building and after
    the step.  Meant to run in a fresh process (see :func:`measure_memory`)."""
    import gc

    msprings = import_msprings()
    allocated = _allocated_bytes_counter()
    systems = []
    for name, positions, springs in _probe_systems(quick):
        gc.collect()
        before = (allocated() if allocated else 0, _resident_bytes())
        system = msprings.System(positions, springs, k=1.0, c=0.1, pinned=[0],
                                 integrator="symplectic_euler")
        built = (allocated() if allocated else 0, _resident_bytes())
        system.step(TIME_STEP)
        stepped = (allocated() if allocated else 0, _resident_bytes())
        systems.append({
            "name": name,
            "nodes": int(positions.shape[0]),
            "springs": int(springs.shape[0]),
            "allocated_built": built[0] - before[0],
            "allocated_stepped": stepped[0] - before[0],
            "resident_built": built[1] - before[1],
            "resident_stepped": stepped[1] - before[1],
        })
        del system
    return {"mallinfo2": allocated is not None, "systems": systems}


@dataclass
class MemoryRow:
    """Memory kept by one probe system after construction and one step (bytes)."""

    name: str
    nodes: int
    springs: int
    allocated_built: int
    allocated_stepped: int
    resident_built: int
    resident_stepped: int


@dataclass
class MemoryResult:
    """The probe's systems and the per-node and per-spring costs fitted to them."""

    rows: list[MemoryRow]
    counted: bool  # malloc's counters were available (else the fit uses the resident set)
    node_bytes: float
    spring_bytes: float
    node_bytes_resident: float
    spring_bytes_resident: float

    def predicted(self, row: MemoryRow) -> float:
        """Bytes a system of that size should keep by the fitted costs."""
        return self.node_bytes * row.nodes + self.spring_bytes * row.springs


def measure_memory(quick: bool) -> MemoryResult:
    """Runs the memory probe in a child process and fits bytes per node and per spring.

    Bytes per node come from the nodes-only system, bytes per spring from the
    springs-between-few-nodes system after subtracting its nodes; the cloth checks the fit.
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-probe"]
    if quick:
        command.append("--quick")
    env = {**os.environ, **MEMORY_PROBE_ENV}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the memory probe failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    rows = [MemoryRow(**system) for system in report["systems"]]
    counted = bool(report["mallinfo2"])

    def fit(field: str) -> tuple[float, float]:
        nodes_only, springs_heavy = rows[0], rows[1]
        per_node = getattr(nodes_only, field) / nodes_only.nodes
        per_spring = ((getattr(springs_heavy, field) - per_node * springs_heavy.nodes)
                      / springs_heavy.springs)
        return per_node, per_spring

    resident = fit("resident_stepped")
    allocated = fit("allocated_stepped") if counted else resident
    return MemoryResult(rows, counted, allocated[0], allocated[1], resident[0], resident[1])


# ---------------------------------------------------------------------------------------------
# report


@dataclass
class ClothRow:
    """One implementation's result on one cloth scene."""

    scene: Scene
    implementation: str
    timing: Timing
    watched_after_run: np.ndarray  # (3,) position of the watched node after the last run


@dataclass
class CheckRow:
    """Agreement of one implementation with single-threaded msprings after CHECK_STEPS steps."""

    scene: str
    implementation: str
    watched: np.ndarray  # (3,)
    watched_error: float  # m
    max_error: float  # m

    @property
    def passed(self) -> bool:
        """True when the watched node and every node agree to CHECK_TOLERANCE."""
        return self.watched_error <= CHECK_TOLERANCE and self.max_error <= CHECK_TOLERANCE


@dataclass
class RepeatRow:
    """Two all-core msprings runs of the same scene, compared bit for bit."""

    scene: str
    steps: int
    identical: bool  # positions, velocities and forces equal bit for bit
    max_distance: float  # m, largest node distance between the two runs (0 when identical)
    one_thread_distance: float  # m, largest node distance from a single-threaded run


@dataclass
class ChainRow:
    """Per-call and batched stepping cost of msprings on one chain scene."""

    scene: Scene
    call_seconds: float  # median wall time of one s.step(h) call
    batch_step_seconds: float  # median wall time per step inside s.step(h, CHAIN_BATCH)


@dataclass
class SetupRow:
    """One-time costs of msprings on one scene (median seconds)."""

    scene: Scene
    construct: float  # msprings.System(...) from the scene's arrays
    copy: float  # s.copy()
    first_step: float  # the first s.step(h) on a copy
    later_step: float  # the second s.step(h) on the same copy


def _millions(value: float) -> str:
    """A rate in millions with three significant digits."""
    return f"{value / 1e6:,.1f}" if value >= 1e8 else f"{value / 1e6:.3g}"


def _compiler_version(compiler: Sequence[str]) -> str:
    """First line of the compiler's --version output."""
    try:
        done = subprocess.run([*compiler, "--version"], capture_output=True, text=True,
                              check=False)
    except OSError as error:
        return f"unavailable ({error})"
    lines = done.stdout.strip().splitlines()
    return lines[0] if lines else "unknown"


@dataclass
class CpuUse:
    """Processor time of the whole machine and of this process (with its children), in
    seconds, from a starting point: what other programs took while the benchmark ran."""

    wall: float
    machine_busy: float  # every process, all CPUs (non-idle time in /proc/stat, without steal)
    steal: float  # time the hypervisor gave this machine's CPUs to something else
    own: float  # this process and its waited-for children (compiler, memory probe)

    @property
    def others(self) -> float:
        """CPU seconds that other processes used."""
        return max(0.0, self.machine_busy - self.own)


def _cpu_counters() -> tuple[float, float, float, float] | None:
    """(wall, machine busy, steal, own) CPU seconds now, or None without /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return (time.perf_counter(), (user + nice + system + irq + softirq) / tick, steal / tick, own)


def cpu_use_since(start: tuple[float, float, float, float] | None) -> CpuUse | None:
    """The machine's and this process's CPU use since `start` (from :func:`_cpu_counters`)."""
    end = _cpu_counters()
    if start is None or end is None:
        return None
    return CpuUse(*(after - before for after, before in zip(end, start)))


def machine_lines(msprings: ModuleType, compiler: Sequence[str]) -> list[str]:
    """Markdown bullet lines describing the machine and the software measured."""
    version = getattr(msprings, "__version__", "unknown")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else CORES
    usable = "" if affinity == CORES else f"; this process may use {affinity} of them"
    return [
        f"- CPU: {cpu_model()} ({CORES} logical CPUs{usable}; the all-core rows and the "
        f"threaded C loops use {CORES} threads, every other row one)",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Python {platform.python_version()}, NumPy {np.__version__}, msprings {version} "
        f"({Path(msprings.__file__).parent})",
        f"- C compiler: {_compiler_version(compiler)}; C loops built with "
        f"`{' '.join([*compiler, *C_FLAGS])}` (and `{' '.join(C_THREAD_FLAGS)}`)",
        f"- Date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}; "
        f"load average at the start: {load_average()}",
    ]


def check_table(rows: list[CheckRow]) -> list[str]:
    """Markdown table of the agreement checks."""
    lines = [
        f"| scene | implementation | node (N-1, N-1) after {CHECK_STEPS} steps (m) "
        f"| distance to {MSPRINGS_ONE} (m) | max distance, all nodes (m) | check |",
        "|---|---|---|---:|---:|---|",
    ]
    for row in rows:
        verdict = "reference" if row.implementation == MSPRINGS_ONE else (
            "pass" if row.passed else "**FAIL**")
        lines.append(f"| {row.scene} | {row.implementation} | {format_vector(row.watched)} "
                     f"| {row.watched_error:.1e} | {row.max_error:.1e} | {verdict} |")
    return lines


def _rates(cloth: list[ClothRow]) -> dict[tuple[str, str], float]:
    """Steps per second by (scene name, implementation)."""
    return {(row.scene.name, row.implementation): row.timing.steps_per_second for row in cloth}


def cloth_table(rows: list[ClothRow]) -> list[str]:
    """Markdown table of the headline cloth timings, with ratios to the plain C loop and
    NumPy."""
    rates = _rates(rows)
    lines = [
        "| scene | springs | implementation | steps/run | steps/s | spring evals/s (M) "
        "| x plain C loop | x NumPy | node (N-1, N-1) after run (m) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if row.implementation not in (MSPRINGS_ONE, MSPRINGS_ALL, PLAIN_C, NUMPY):
            continue
        rate = row.timing.steps_per_second
        name = row.scene.name
        lines.append(
            f"| {name} | {row.scene.n_springs:,} | {row.implementation} "
            f"| {row.timing.steps_per_run:,} | {format_rate(rate)} "
            f"| {_millions(rate * row.scene.n_springs)} | {rate / rates[(name, PLAIN_C)]:.2f} "
            f"| {rate / rates[(name, NUMPY)]:.1f} | {format_vector(row.watched_after_run)} |")
    return lines


def speedup_table(cloth: list[ClothRow], repeats: list[RepeatRow]) -> list[str]:
    """Markdown table of the multicore speed-ups and the all-core repeatability check."""
    rates = _rates(cloth)
    variants = any(implementation == C_SORTED for _, implementation in rates)
    header = f"| scene | msprings: all {CORES} cores / 1 thread "
    rule = "|---|---:"
    if variants:
        header += "| C loop: spinning barrier / 1 thread | C loop: pthread barrier / 1 thread "
        rule += "|---:|---:"
    header += "| two all-core msprings runs | all cores vs 1 thread, max node distance (m) |"
    rule += "|---|---:|"
    lines = [header, rule]
    repeat_by_scene = {row.scene: row for row in repeats}
    for name in sorted({row.scene.name for row in cloth}, key=lambda s: int(s.split("-")[1])):
        line = f"| {name} | {rates[(name, MSPRINGS_ALL)] / rates[(name, MSPRINGS_ONE)]:.2f}x "
        if variants:
            single = rates[(name, C_SORTED)]
            line += (f"| {rates[(name, C_SPIN)] / single:.2f}x "
                     f"| {rates[(name, C_SLEEP)] / single:.2f}x ")
        repeat = repeat_by_scene[name]
        verdict = (f"bitwise identical after {repeat.steps} steps" if repeat.identical else
                   f"**DIFFER** after {repeat.steps} steps (max {repeat.max_distance:.1e} m)")
        line += f"| {verdict} | {repeat.one_thread_distance:.1e} |"
        lines.append(line)
    return lines


def variants_table(rows: list[ClothRow]) -> list[str]:
    """Markdown table of the C design variants (and msprings), relative to the node-sorted
    single-threaded C loop."""
    rates = _rates(rows)
    lines = [
        "| scene | implementation | what differs | steps/s | spring evals/s (M) "
        f"| x {C_SORTED} |",
        "|---|---|---|---:|---:|---:|",
    ]
    order = [*VARIANTS, MSPRINGS_ONE, MSPRINGS_ALL]
    described = {**VARIANTS,
                 MSPRINGS_ONE: "the library (node-sorted through an index, in place), one thread",
                 MSPRINGS_ALL: f"the library on {CORES} threads"}
    for name in sorted({row.scene.name for row in rows}, key=lambda s: int(s.split("-")[1])):
        scene_rows = {row.implementation: row for row in rows if row.scene.name == name}
        reference = rates[(name, C_SORTED)]
        for implementation in order:
            row = scene_rows[implementation]
            rate = row.timing.steps_per_second
            lines.append(f"| {name} | {implementation} | {described[implementation]} "
                         f"| {format_rate(rate)} | {_millions(rate * row.scene.n_springs)} "
                         f"| {rate / reference:.2f} |")
    return lines


def chain_table(rows: list[ChainRow]) -> list[str]:
    """Markdown table of msprings' per-call and batched cost on the chain scenes."""
    lines = [
        f"| scene | springs | `s.step(h)` per call (us) | `s.step(h, {CHAIN_BATCH})` per step (us) "
        "| steps/s (batched) | spring evals/s (M, batched) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        rate = 1.0 / row.batch_step_seconds
        lines.append(
            f"| {row.scene.name} | {row.scene.n_springs} | {row.call_seconds * 1e6:.3f} "
            f"| {row.batch_step_seconds * 1e6:.4f} | {format_rate(rate)} "
            f"| {_millions(rate * row.scene.n_springs)} |")
    return lines


def setup_table(rows: list[SetupRow]) -> list[str]:
    """Markdown table of msprings' one-time costs per system."""
    lines = [
        "| scene | `msprings.System(...)` | `s.copy()` | first `s.step(h)` on a copy "
        "| second `s.step(h)` |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row.scene.name} | {format_seconds(row.construct)} | {format_seconds(row.copy)} "
                     f"| {format_seconds(row.first_step)} | {format_seconds(row.later_step)} |")
    return lines


def _mib(value: float) -> str:
    """Bytes in MiB with one decimal."""
    return f"{value / 2**20:,.1f}"


def memory_table(memory: MemoryResult) -> list[str]:
    """Markdown table of the memory probe and the fitted per-node and per-spring costs."""
    lines = [
        "| system | nodes | springs | malloc'd after build (MiB) | malloc'd after one step (MiB) "
        "| resident growth after one step (MiB) | predicted by the fit (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in memory.rows:
        allocated = ((_mib(row.allocated_built), _mib(row.allocated_stepped)) if memory.counted
                     else ("n/a", "n/a"))
        lines.append(f"| {row.name} | {row.nodes:,} | {row.springs:,} | {allocated[0]} "
                     f"| {allocated[1]} | {_mib(row.resident_stepped)} "
                     f"| {_mib(memory.predicted(row))} |")
    source = "malloc's counters (mallinfo2)" if memory.counted else "the resident set"
    lines += [
        "",
        f"- Fit ({source}, after one step): **{memory.node_bytes:.0f} B per node**, "
        f"**{memory.spring_bytes:.1f} B per spring** (from the resident set: "
        f"{memory.node_bytes_resident:.0f} B per node, {memory.spring_bytes_resident:.1f} B "
        "per spring)",
    ]
    return lines


def _met(passed: bool) -> str:
    return "met" if passed else "MISSED"


def target_lines(cloth: list[ClothRow], chains: list[ChainRow],
                 memory: MemoryResult | None) -> list[str]:
    """Markdown bullets comparing the measured figures with the project's targets."""
    rates = _rates(cloth)
    lines = []
    for name in sorted({row.scene.name for row in cloth}, key=lambda s: int(s.split("-")[1])):
        one, every = rates[(name, MSPRINGS_ONE)], rates[(name, MSPRINGS_ALL)]
        ratio = one / rates[(name, PLAIN_C)]
        lines.append(f"- {name}: {MSPRINGS_ONE} / plain C loop = {ratio:.2f} (target >= 1): "
                     f"{_met(ratio >= 1.0)}")
        ratio = every / rates[(name, NUMPY)]
        lines.append(f"- {name}: {MSPRINGS_ALL} / NumPy = {ratio:.1f} (target >= 10): "
                     f"{_met(ratio >= 10.0)}")
        ratio = one / rates[(name, NUMPY)]
        lines.append(f"- {name}: {MSPRINGS_ONE} / NumPy = {ratio:.1f} (target >= 10 on one thread too): "
                     f"{_met(ratio >= 10.0)}")
        if name == f"cloth-{max(CLOTH_SIZES)}":
            speedup = every / one
            if CORES == 2:
                verdict = _met(speedup >= 1.7)
            else:
                verdict = f"the target is set for 2 cores; this machine has {CORES}"
            lines.append(f"- {name}: multicore speed-up (all {CORES} cores / 1 thread) = "
                         f"{speedup:.3f}x (target >= 1.7x on 2 cores): {verdict}")
    for row in chains:
        if row.scene.n_nodes == 2:
            micro = row.call_seconds * 1e6
            lines.append(f"- {row.scene.name}: one `s.step(h)` call = {micro:.3f} us "
                         f"(target < 2 us): {_met(micro < 2.0)}")
    if memory is not None:
        lines.append(f"- memory: {memory.node_bytes:.0f} B per node (target ~"
                     f"{TARGET_BYTES_PER_NODE:.0f}): "
                     f"{_met(memory.node_bytes <= MEMORY_SLACK * TARGET_BYTES_PER_NODE)}")
        lines.append(f"- memory: {memory.spring_bytes:.1f} B per spring (target ~"
                     f"{TARGET_BYTES_PER_SPRING:.0f}): "
                     f"{_met(memory.spring_bytes <= MEMORY_SLACK * TARGET_BYTES_PER_SPRING)}")
    return lines


# ---------------------------------------------------------------------------------------------
# driver


def _compiler_command() -> list[str]:
    """The C compiler command: $CC if set, else cc."""
    return shlex.split(os.environ.get("CC", "cc")) or ["cc"]


@dataclass
class Scaling:
    """What CORES threads achieve against one on this machine: memory reads (bytes/s) and
    floating-point additions (per second)."""

    megabytes: int
    read_one: float
    read_all: float
    add_one: float
    add_all: float


def measure_scaling(plain_c: PlainC, megabytes: int, add_iterations: int,
                    repeats: int) -> Scaling:
    """Reads an array far larger than the caches, and runs a loop of independent additions,
    on one thread and on CORES threads, taking turns; keeps the median of each."""
    samples: dict[str, list[float]] = {"read_one": [], "read_all": [], "add_one": [],
                                       "add_all": []}
    for _ in range(repeats):
        samples["read_one"].append(plain_c.read_bandwidth(megabytes, 1, 1))
        samples["read_all"].append(plain_c.read_bandwidth(megabytes, CORES, 1))
        samples["add_one"].append(plain_c.add_rate(add_iterations, 1))
        samples["add_all"].append(plain_c.add_rate(add_iterations, CORES))
    return Scaling(megabytes, **{key: statistics.median(values)
                                 for key, values in samples.items()})


def run_checks(msprings: ModuleType, scene: Scene,
               peers: dict[str, Callable[[PeerState, int], None]]) -> list[CheckRow]:
    """Runs every implementation CHECK_STEPS steps and compares positions with
    single-threaded msprings."""
    node = scene.watched_node
    system = build_system(msprings, scene, threads=1)
    system.step(TIME_STEP, CHECK_STEPS)
    expected = np.array(system.x)
    rows = [CheckRow(scene.name, MSPRINGS_ONE, expected[node], 0.0, 0.0)]
    system = build_system(msprings, scene, threads=0)
    system.step(TIME_STEP, CHECK_STEPS)
    states = {MSPRINGS_ALL: np.array(system.x)}
    for name, run in peers.items():
        state = fresh_state(scene)
        run(state, CHECK_STEPS)
        states[name] = state.x
    for name, x in states.items():
        distance = np.linalg.norm(x - expected, axis=1)
        rows.append(CheckRow(scene.name, name, x[node].copy(), float(distance[node]),
                             float(distance.max())))
    return rows


def check_repeatability(msprings: ModuleType, scene: Scene, steps: int) -> RepeatRow:
    """Steps two all-core copies of the scene and one single-threaded copy; the all-core
    runs must agree bit for bit."""
    base = build_system(msprings, scene, threads=0)
    runs = []
    for threads in (0, 0, 1):
        system = base.copy()
        system.threads = threads
        system.step(TIME_STEP, steps)
        runs.append((np.array(system.x), np.array(system.v), np.array(system.f)))
    first, second, single = runs
    identical = all(np.array_equal(a, b) for a, b in zip(first, second))
    return RepeatRow(
        scene.name, steps, identical,
        float(np.linalg.norm(first[0] - second[0], axis=1).max()),
        float(np.linalg.norm(first[0] - single[0], axis=1).max()),
    )


def time_cloth(msprings: ModuleType, scene: Scene,
               peers: dict[str, Callable[[PeerState, int], None]],
               run_seconds: float, repeats: int) -> list[ClothRow]:
    """Times msprings' s.step(h, n) on one thread and on all cores, and every peer, on the
    scene, interleaved."""
    one_thread = build_system(msprings, scene, threads=1)
    all_cores = build_system(msprings, scene, threads=0)

    def run_system(system: object, n: int) -> None:
        system.step(TIME_STEP, n)

    # Every C loop and the all-core run take as many steps as single-threaded msprings, so
    # their end positions can be compared too; NumPy gets its own count.
    contenders = [Contender(MSPRINGS_ONE, one_thread.copy, run_system),
                  Contender(MSPRINGS_ALL, all_cores.copy, run_system, steps_like=MSPRINGS_ONE)]
    contenders += [Contender(name, lambda: fresh_state(scene), run,
                             steps_like=None if name == NUMPY else MSPRINGS_ONE)
                   for name, run in peers.items()]
    rows = []
    for contender, (timing, state) in zip(contenders, time_interleaved(contenders, run_seconds,
                                                                       repeats)):
        watched = np.array(state.x[scene.watched_node])
        rows.append(ClothRow(scene, contender.name, timing, watched))
    return rows


def time_setup(msprings: ModuleType, scene: Scene, repeats: int) -> SetupRow:
    """Times building a system, copying it, and its first and second s.step(h) calls."""
    samples: dict[str, list[float]] = {"construct": [], "copy": [], "first": [], "later": []}
    for _ in range(repeats):
        start = time.perf_counter()
        base = build_system(msprings, scene)
        samples["construct"].append(time.perf_counter() - start)
        start = time.perf_counter()
        system = base.copy()
        samples["copy"].append(time.perf_counter() - start)
        for key in ("first", "later"):
            start = time.perf_counter()
            system.step(TIME_STEP)
            samples[key].append(time.perf_counter() - start)
    median = {key: statistics.median(values) for key, values in samples.items()}
    return SetupRow(scene, median["construct"], median["copy"], median["first"], median["later"])


def time_chain(msprings: ModuleType, scene: Scene, run_seconds: float,
               repeats: int) -> ChainRow:
    """Times one s.step(h) call and s.step(h, CHAIN_BATCH) per step on a chain scene."""
    base = build_system(msprings, scene)
    statements = {"call": "s.step(h)", "batch": f"s.step(h, {CHAIN_BATCH})"}
    steps_per_call = {"call": 1, "batch": CHAIN_BATCH}

    def timer(statement: str) -> timeit.Timer:
        system = base.copy()
        system.step(TIME_STEP)  # first-step work stays out of the timing, as for the cloth
        return timeit.Timer(statement, globals={"s": system, "h": TIME_STEP})

    numbers = {}
    for key, statement in statements.items():
        # autorange also warms up: it picks a count that makes one timing take >= 0.2 s
        count, _ = timer(statement).autorange()
        numbers[key] = max(1, int(count * run_seconds / 0.2))
    per_step: dict[str, list[float]] = {key: [] for key in statements}
    for _ in range(repeats):
        for key, statement in statements.items():
            elapsed = timer(statement).timeit(numbers[key])
            per_step[key].append(elapsed / (numbers[key] * steps_per_call[key]))
    return ChainRow(scene, statistics.median(per_step["call"]),
                    statistics.median(per_step["batch"]))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        description="Benchmark msprings against a plain C loop and a vectorised NumPy step.")
    parser.add_argument("--quick", action="store_true",
                        help="short runs and fewer repeats (a smoke test, not a measurement)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per measurement; the median is reported "
                             "(default 5, or 2 with --quick)")
    parser.add_argument("--skip-variants", action="store_true",
                        help="leave out the C design variants (a shorter run)")
    parser.add_argument("--skip-memory", action="store_true",
                        help="leave out the memory measurement")
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 5
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark and prints a Markdown report; returns the exit status."""
    args = parse_args(argv)
    if args.memory_probe:
        print(json.dumps(memory_probe(args.quick)))
        return 0
    run_seconds = 0.05 if args.quick else 1.0
    chain_seconds = 0.02 if args.quick else 0.2
    repeat_steps = 20 if args.quick else REPEAT_STEPS
    allocator = keep_freed_memory()  # NumPy's temporaries: see common.keep_freed_memory
    msprings = import_msprings()
    compiler = _compiler_command()
    machine = machine_lines(msprings, compiler)  # before the run, for its load average
    machine.append(f"- Memory allocator: {allocator}, so that the NumPy step's temporaries do not cost page "
                   "faults in some runs and not in others")
    counters = _cpu_counters()
    out: list[str] = []

    with tempfile.TemporaryDirectory(prefix="msprings-bench-") as directory:
        try:
            plain_c = PlainC(Path(directory), compiler)
        except (OSError, RuntimeError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1

        scenes = [cloth_scene(n) for n in CLOTH_SIZES]
        peers: dict[str, dict[str, Callable[[PeerState, int], None]]] = {}
        for scene in scenes:
            peers[scene.name] = {PLAIN_C: plain_c.stepper(scene), NUMPY: numpy_stepper(scene)}
            if not args.skip_variants:
                peers[scene.name].update(plain_c.variant_steppers(scene))
        checks: list[CheckRow] = []
        for scene in scenes:
            checks.extend(run_checks(msprings, scene, peers[scene.name]))
        repeats = [check_repeatability(msprings, scene, repeat_steps) for scene in scenes]
        cloth: list[ClothRow] = []
        for scene in scenes:
            cloth.extend(time_cloth(msprings, scene, peers[scene.name], run_seconds,
                                    args.repeats))
        scaling = measure_scaling(plain_c, 16 if args.quick else 128,
                                  10_000_000 if args.quick else 100_000_000, args.repeats)

    chains = [time_chain(msprings, chain_scene(n), chain_seconds, args.repeats)
              for n in CHAIN_SIZES]
    setup_repeats = min(args.repeats, 3)
    setups = [time_setup(msprings, scene, setup_repeats) for scene in scenes]
    memory = None if args.skip_memory else measure_memory(args.quick)
    cpu_use = cpu_use_since(counters)

    out.append("# msprings core benchmark" + (" (--quick: smoke run, not a measurement)"
                                              if args.quick else ""))
    out.append("")
    out.extend(machine)
    out.append(f"- Timing: median of {args.repeats} runs per row, each on a fresh copy of the "
               "initial state after one untimed step, implementations taking turns; "
               f"symplectic Euler, h = {TIME_STEP:g} s; load average at the end: "
               f"{load_average()}")
    if cpu_use is not None:
        out.append(f"- Other programs used {cpu_use.others:.1f} CPU-seconds during the "
                   f"{cpu_use.wall:.0f} s run (on average {cpu_use.others / cpu_use.wall:.2f} of "
                   f"{CORES} CPUs; this benchmark used {cpu_use.own:.0f}); hypervisor steal: "
                   f"{cpu_use.steal:.1f} CPU-seconds")
    out.append("")
    out.append(f"## Agreement after {CHECK_STEPS} steps (tolerance {CHECK_TOLERANCE:g} m)")
    out.append("")
    out.extend(check_table(checks))
    out.append("")
    out.append("## Cloth")
    out.append("")
    out.append("'x plain C loop' and 'x NumPy' are the row's rate divided by that peer's rate "
               "on the same scene (above 1: faster than the peer).")
    out.append("")
    out.extend(cloth_table(cloth))
    out.append("")
    out.append("## Multicore speed-up and repeatability")
    out.append("")
    out.extend(speedup_table(cloth, repeats))
    out.append("")
    out.append(f"What {CORES} threads can gain on this machine, measured in C beside the "
               "steps:")
    out.append("")
    out.append(f"- memory reads (summing a {scaling.megabytes} MiB array): "
               f"{scaling.read_one / 1e9:.1f} GB/s on one thread, {scaling.read_all / 1e9:.1f} "
               f"GB/s on {CORES} ({scaling.read_all / scaling.read_one:.2f}x): the ceiling for a "
               "step whose time goes into memory traffic;")
    out.append(f"- floating-point additions (twelve independent chains per thread): "
               f"{scaling.add_one / 1e9:.2f} G/s on one thread, {scaling.add_all / 1e9:.2f} G/s "
               f"on {CORES} ({scaling.add_all / scaling.add_one:.2f}x): the ceiling for a step "
               "whose time goes into arithmetic.")
    if not args.skip_variants:
        out.append("")
        out.append("## Design variants of the C loop")
        out.append("")
        out.append(f"Each variant changes one thing relative to '{C_SORTED}' (the plain loop "
                   "visiting springs in order of their lower node through an index array, as "
                   "the msprings core does); the last column is the row's rate divided by that "
                   "loop's.  msprings' own rows are repeated for comparison.")
        out.append("")
        out.extend(variants_table(cloth))
    out.append("")
    out.append("## Chains (msprings only: per-call overhead)")
    out.append("")
    out.extend(chain_table(chains))
    out.append("")
    out.append(f"## One-time costs of a msprings system (median of {setup_repeats})")
    out.append("")
    out.append("Not part of the stepping rates above: every timed run starts with one untimed "
               "step.  Default `s.threads` (all cores).")
    out.append("")
    out.extend(setup_table(setups))
    if memory is not None:
        out.append("")
        out.append("## Memory of a symplectic-Euler system")
        out.append("")
        out.append("Each system is built and stepped once in a fresh process; the columns are "
                   "what that kept (model, state and Python object; temporaries excluded).")
        out.append("")
        out.extend(memory_table(memory))
    out.append("")
    out.append("## Targets")
    out.append("")
    out.extend(target_lines(cloth, chains, memory))
    print("\n".join(out))
    passed = all(row.passed for row in checks) and all(row.identical for row in repeats)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
