/* The batched path of an ensemble's step call: small members of the Euler methods stepped
 * MS_BATCH_WIDTH at a time, one member per vector lane (kernels/batch.h).
 *
 * A member is taken when its step on its own would run in place on one block of springs
 * and one of nodes, in its own numbering, with nothing but gravity and its springs acting
 * (no drag, air, external force, moving pins, colliders, constraints or energy loss): the
 * step that the batched kernel repeats operation for operation.  Its spring stage is read
 * off the layout the member's own step would build (the same for every member, since
 * they share the topology) as a program of operations.  Everything else such a step does
 * to the state is done here as ms_step does it: the inverse masses, the booking of the
 * caller's changes, time and step count, the ledger, the last forces; and, for a member
 * whose step blows up, putting it back where the call began.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/batch.h"
#include "kernels/kernels.h"
#include "step/ensemble_batch.h"

enum { W = MS_BATCH_WIDTH };

/* The spring kernel's walk over a block, written out as operations in its order. */
enum { OP_SPRING = 0, OP_FLUSH = 1 };
typedef struct batch_op {
    int32_t kind;
    int32_t a, b;   /* the spring's ends (owner first); OP_FLUSH: the node in a */
    int32_t spring; /* the spring's index in the model */
    int32_t slot;   /* power accumulator: 0 the single springs', 1 + q lane q's */
    int32_t reg;    /* sum register 0..3 the owner's force is added to (flushed into a's force by OP_FLUSH) */
    int32_t target; /* the node whose force loses the spring's force */
} batch_op;

/* Where a taken member's call began (as ms_step keeps it). */
typedef struct member_start {
    double t;
    int64_t steps;
    ms_ledger ledger;
    int watched;
    double watched_energy;
} member_start;

typedef struct batch {
    int examined;           /* the topology was examined (program made if it suits) */
    int suits;              /* the topology suits the batched path */
    ms_batch_program program; /* the spring stage (its arrays in program_storage) */
    void* program_storage;
    ms_batch_kernel kernel;
    /* the call made in parts under way */
    int active;             /* a call holds taken members */
    int explicit_euler[2];  /* per kind of group: 0 symplectic, 1 explicit */
    uint8_t* taken;         /* (nmember) */
    int64_t* lane_member;   /* the member in each lane of each group, -1 for none (ngroup x W) */
    int64_t ngroup;
    int64_t part_steps;     /* steps of the current part */
    int64_t* part_start;    /* each group lane's step count as the part began    (ngroup x W) */
    ms_batch_lanes* lanes;  /* (ngroup) */
    void* lane_storage;     /* the lanes' arrays, from the first 64-byte boundary in it: whole
                               cache lines, so that no vector straddles two */
    member_start* start;    /* (nmember) */
    double* start_motion;   /* x, v, f of each taken member as the call began (nmember x 3 x nnode x 3) */
} batch;

static void batch_clear_call(batch* b) {
    free(b->taken);
    free(b->lane_member);
    free(b->part_start);
    free(b->lanes);
    free(b->lane_storage);
    free(b->start);
    free(b->start_motion);
    b->taken = NULL;
    b->lane_member = NULL;
    b->part_start = NULL;
    b->lanes = NULL;
    b->lane_storage = NULL;
    b->start = NULL;
    b->start_motion = NULL;
    b->ngroup = 0;
    b->active = 0;
}

void ms_batch_destroy(ms_ensemble* e) {
    batch* b = e->batch;
    if (b == NULL) return;
    batch_clear_call(b);
    free(b->program_storage);
    free(b);
    e->batch = NULL;
}

static void push(batch_op* ops, int64_t* nop, int32_t kind, int64_t a, int64_t other, int64_t spring, int slot,
                 int reg, int64_t target) {
    const batch_op op = {kind, (int32_t)a, (int32_t)other, (int32_t)spring, slot, reg, (int32_t)target};
    ops[(*nop)++] = op;
}

/* The spring kernel's walk over block 0 of the layout (spring_kernel.h, MS_KERNEL(block)),
   written out as operations.  Returns the count. */
static int64_t write_program(const ms_layout* layout, batch_op* ops) {
    const int32_t* pairs = layout->pairs;
    const int32_t* dest = layout->dest;
    const int32_t* order = layout->order;
    int64_t nop = 0;
    const int64_t end = layout->spring_start[1];
    for (int64_t s = layout->spring_start[0]; s < end;) {
        const int64_t a = pairs[2 * s];
        const int64_t kind = layout->lanes[a], k = kind & MS_MAX_LANE_SPRINGS;
        if (k > 0) { /* a lane or gathered group: lane q's springs in order of j */
            for (int64_t j = 0; j < k; ++j)
                for (int q = 0; q < MS_LANES; ++q) {
                    const int64_t r = s + MS_LANES * j + q;
                    push(ops, &nop, OP_SPRING, pairs[2 * r], pairs[2 * r + 1], order[r], 1 + q, q, dest[r]);
                }
            for (int q = 0; q < MS_LANES; ++q) push(ops, &nop, OP_FLUSH, pairs[2 * (s + q)], 0, 0, 0, q, 0);
            s += MS_LANES * k;
            continue;
        }
        int64_t e = s;
        for (; e < end && pairs[2 * e] == a; ++e)
            push(ops, &nop, OP_SPRING, a, pairs[2 * e + 1], order[e], 0, 0, dest[e]);
        push(ops, &nop, OP_FLUSH, a, 0, 0, 0, 0, 0);
        s = e;
    }
    return nop;
}

/* The kernel's program (batch.h) of the operations ops[0 .. nop) on nnode nodes: the
   springs in their order, and each node's terms in the order the operations add to its
   force.  Returns 0, or -1 if memory runs out. */
static int compile_program(batch* b, const batch_op* ops, int64_t nop, int64_t nnode) {
    int64_t nspring = 0, nterm = 0;
    for (int64_t o = 0; o < nop; ++o) nspring += ops[o].kind == OP_SPRING;
    /* a spring: its subtraction and its place in a sum; a flush: a clear and an add at most */
    const int64_t most = 2 * nspring + 2 * (nop - nspring);
    const size_t bytes = sizeof(ms_batch_spring) * (size_t)(nspring + 1) + sizeof(ms_batch_shape) * (size_t)nnode +
                         sizeof(ms_batch_term) * (size_t)(most + 1) +
                         sizeof(int32_t) * (size_t)(nnode + 1) + sizeof(int64_t) * (size_t)(nnode + 4 * nop + 8);
    char* storage = malloc(bytes);
    if (storage == NULL) return -1;
    ms_batch_spring* springs = (ms_batch_spring*)storage;
    ms_batch_shape* shapes = (ms_batch_shape*)(springs + nspring + 1);
    ms_batch_term* terms = (ms_batch_term*)(shapes + nnode);
    int32_t* term_start = (int32_t*)(terms + most + 1);
    /* scratch: each node's term count, then the springs in each sum register */
    int64_t* count = (int64_t*)(((uintptr_t)(term_start + nnode + 1) + 7) & ~(uintptr_t)7);
    int64_t* held = count + nnode;      /* (4 x nop): sum register r holds held[nop r ..] */
    int64_t held_count[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < nnode; ++i) count[i] = 0;
    /* first the term counts, then the terms in their places */
    for (int pass = 0; pass < 2; ++pass) {
        int64_t s = 0;
        for (int r = 0; r < 4; ++r) held_count[r] = 0;
        if (pass == 1) {
            int64_t at = 0;
            for (int64_t i = 0; i < nnode; ++i) {
                term_start[i] = (int32_t)at;
                at += count[i];
                count[i] = term_start[i]; /* now: where node i's next term goes */
            }
            term_start[nnode] = (int32_t)at;
            nterm = at;
        }
        for (int64_t o = 0; o < nop; ++o) {
            const batch_op* op = &ops[o];
            if (op->kind == OP_SPRING) {
                if (pass == 0) {
                    const ms_batch_spring spring = {op->a,         op->b,         op->spring,        op->slot,
                                                     3 * W * op->a, 3 * W * op->b, 3 * W * op->spring};
                    springs[s] = spring;
                    count[op->target] += 1;
                } else {
                    const ms_batch_term term = {MS_BATCH_SUBTRACT, (int32_t)s};
                    terms[count[op->target]++] = term;
                }
                held[nop * op->reg + held_count[op->reg]++] = s;
                ++s;
                continue;
            }
            const int64_t r = op->reg, held_by = held_count[r];
            if (pass == 0) {
                count[op->a] += held_by > 0 ? held_by + 1 : 2;
            } else if (held_by == 0) {
                const ms_batch_term clear = {MS_BATCH_CLEAR, 0}, add = {MS_BATCH_ADD, 0};
                terms[count[op->a]++] = clear;
                terms[count[op->a]++] = add;
            } else {
                for (int64_t j = 0; j < held_by; ++j) {
                    const ms_batch_term term = {j == 0 ? MS_BATCH_FIRST : MS_BATCH_NEXT, (int32_t)held[nop * r + j]};
                    terms[count[op->a]++] = term;
                }
                const ms_batch_term add = {MS_BATCH_ADD, 0};
                terms[count[op->a]++] = add;
            }
            held_count[r] = 0;
        }
    }
    (void)nterm;
    for (int64_t i = 0; i < nnode; ++i) {
        const ms_batch_term* t = terms + term_start[i];
        const int64_t length = term_start[i + 1] - term_start[i];
        ms_batch_shape shape = {MS_BATCH_LISTED, 0, 0};
        if (length == 0) {
            shape.kind = MS_BATCH_ALONE;
        } else if (length == 1 && t[0].kind == MS_BATCH_SUBTRACT) {
            shape.kind = MS_BATCH_LESS;
            shape.subtracted = t[0].spring;
        } else if (length == 2 && t[0].kind == MS_BATCH_FIRST && t[1].kind == MS_BATCH_ADD) {
            shape.kind = MS_BATCH_MORE;
            shape.added = t[0].spring;
        } else if (length == 3 && t[0].kind == MS_BATCH_SUBTRACT && t[1].kind == MS_BATCH_FIRST &&
                   t[2].kind == MS_BATCH_ADD) {
            shape.kind = MS_BATCH_LESS_MORE;
            shape.subtracted = t[0].spring;
            shape.added = t[1].spring;
        }
        shapes[i] = shape;
    }
    b->program.shapes = shapes;
    b->program.nspring = nspring;
    b->program.springs = springs;
    b->program.nnode = nnode;
    b->program.term_start = term_start;
    b->program.terms = terms;
    b->program_storage = storage;
    return 0;
}

/* Whether the members' topology suits the batched path, with its program made if so.
   Returns 0, or -1 if memory runs out. */
static int examine(ms_ensemble* e, batch* b) {
    b->examined = 1;
    const ms_model* m = e->models[0];
    if (m->nnode > 256 || m->nspring > 8192) return 0; /* one node block and one spring block */
    int32_t* node_order = NULL;
    if (ms_rank_nodes(m, &node_order) != 0) return -1;
    if (node_order != NULL) { /* it would step renumbered */
        free(node_order);
        return 0;
    }
    ms_error err;
    ms_layout* layout = ms_layout_create(m, &err);
    if (layout == NULL) return -1;
    int single = layout->nblock == 1 && layout->nnode_block == 1 && layout->halo_start[1] == 0;
    for (int64_t r = 0; single && r < layout->nspring; ++r) single = layout->dest[r] >= 0;
    if (single) {
        /* a spring each, and a flush per owner at most */
        batch_op* ops = malloc(sizeof(batch_op) * (size_t)(2 * layout->nspring + 1));
        if (ops == NULL) {
            ms_layout_destroy(layout);
            return -1;
        }
        const int64_t nop = write_program(layout, ops);
        const int made = compile_program(b, ops, nop, m->nnode);
        free(ops);
        if (made != 0) {
            ms_layout_destroy(layout);
            return -1;
        }
        b->suits = 1;
    }
    ms_layout_destroy(layout);
    return 0;
}

/* Whether member i's step would be the one the batched kernel repeats. */
static int member_suits(const ms_ensemble* e, int64_t i) {
    const ms_model* m = e->models[i];
    const ms_state* s = e->states[i];
    const ms_options* opt = &m->opt;
    if (opt->integrator != MS_SYMPLECTIC_EULER && opt->integrator != MS_EXPLICIT_EULER) return 0;
    if (m->ncollider > 0 || opt->strain_limiting || opt->self_collision != 0.0 || opt->energy_loss != 0.0 ||
        opt->drag != 0.0)
        return 0;
    const ms_air* air = &opt->air;
    if (m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0)) return 0;
    for (int64_t q = 0; s->external != NULL && q < 3 * m->nnode; ++q)
        if (s->external[q] != 0.0) return 0;
    for (int64_t n = 0; n < m->nnode; ++n)
        if (m->pinned[n] && (s->v[3 * n] != 0.0 || s->v[3 * n + 1] != 0.0 || s->v[3 * n + 2] != 0.0)) return 0;
    return 1;
}

/* Takes the members of a new call, keeps where they start and books the caller's changes
   (ms_step's keep_call_start and book_watched).  Returns 0 or -1 (out of memory). */
static int start_call(ms_ensemble* e, batch* b) {
    const int64_t count = e->nmember, n = e->nnode;
    b->taken = calloc((size_t)count, 1);
    b->start = malloc(sizeof(member_start) * (size_t)count);
    if (b->taken == NULL || b->start == NULL) return -1;
    int64_t taken[2] = {0, 0};
    for (int64_t i = 0; i < count; ++i)
        if (!e->diverged[i] && member_suits(e, i)) {
            b->taken[i] = 1;
            taken[e->models[i]->opt.integrator == MS_EXPLICIT_EULER] += 1;
        }
    if (taken[0] + taken[1] == 0) return 0;
    /* groups of one integrator each: the symplectic members first */
    b->ngroup = (taken[0] + W - 1) / W + (taken[1] + W - 1) / W;
    b->lane_member = malloc(sizeof(int64_t) * W * (size_t)b->ngroup);
    b->part_start = malloc(sizeof(int64_t) * W * (size_t)b->ngroup);
    b->lanes = calloc((size_t)b->ngroup, sizeof(ms_batch_lanes));
    /* x, v, f (3 x nnode x 3 x W), inv_mass (nnode x W), m g (nnode x 3 x W), params (nspring x 3 x W), the
       program springs' forces (nspring x 3 x W) */
    const size_t per_group = W * (13 * (size_t)n + 3 * (size_t)e->nspring + 3 * (size_t)b->program.nspring);
    b->lane_storage = malloc(sizeof(double) * per_group * (size_t)b->ngroup + 64);
    b->start_motion = malloc(sizeof(double) * 9 * (size_t)n * (size_t)count);
    if (b->lane_member == NULL || b->part_start == NULL || b->lanes == NULL || b->lane_storage == NULL ||
        b->start_motion == NULL)
        return -1;
    int64_t g = 0;
    for (int kind = 0; kind < 2; ++kind) {
        int64_t lane = 0;
        for (int64_t i = 0; i < count; ++i) {
            if (!b->taken[i] || (e->models[i]->opt.integrator == MS_EXPLICIT_EULER) != kind) continue;
            b->lane_member[W * g + lane] = i;
            if (++lane == W) {
                lane = 0;
                ++g;
            }
        }
        if (lane > 0) {
            for (; lane < W; ++lane) b->lane_member[W * g + lane] = -1;
            ++g;
        }
    }
    double* storage = (double*)(void*)((char*)b->lane_storage + (64 - (uintptr_t)b->lane_storage % 64) % 64);
    for (g = 0; g < b->ngroup; ++g) {
        ms_batch_lanes* lanes = &b->lanes[g];
        double* d = storage + per_group * (size_t)g;
        lanes->nnode = n;
        lanes->nspring = e->nspring;
        lanes->x = d;
        lanes->v = d + 3 * W * n;
        lanes->f = d + 6 * W * n;
        lanes->inv_mass = d + 9 * W * n;
        lanes->weight = d + 10 * W * n;
        lanes->params = d + 13 * W * n;
        lanes->spring_force = d + 13 * W * n + 3 * W * e->nspring;
    }
    const size_t bytes = sizeof(double) * 3 * (size_t)n;
    for (int64_t i = 0; i < count; ++i) {
        if (!b->taken[i]) continue;
        ms_state* s = e->states[i];
        const member_start start = {s->t, s->steps, s->ledger, s->watched, s->watched_energy};
        b->start[i] = start;
        double* motion = b->start_motion + 9 * (size_t)n * (size_t)i;
        memcpy(motion, s->x, bytes);
        memcpy(motion + 3 * n, s->v, bytes);
        memcpy(motion + 6 * n, s->f, bytes);
        if (s->watched) {
            if (s->steps > 0) s->ledger.user += ms_mechanical_energy(e->models[i], s->x, s->v) - s->watched_energy;
            s->watched = 0;
        }
    }
    b->active = 1;
    return 0;
}

/* Copies the members of every group into its lanes (a lane without a member repeats the
   group's first member, and is never written back). */
static void gather(const ms_ensemble* e, batch* b) {
    const int64_t n = e->nnode, m = e->nspring;
    for (int64_t g = 0; g < b->ngroup; ++g) {
        ms_batch_lanes* lanes = &b->lanes[g];
        double* inv_mass = (double*)lanes->inv_mass;
        double* weight = (double*)lanes->weight;
        double* params = (double*)lanes->params;
        for (int q = 0; q < W; ++q) {
            const int64_t member = b->lane_member[W * g + q];
            const int64_t i = member >= 0 ? member : b->lane_member[W * g];
            const ms_model* model = e->models[i];
            const ms_state* s = e->states[i];
            for (int64_t node = 0; node < n; ++node) {
                for (int c = 0; c < 3; ++c) {
                    lanes->x[W * (3 * node + c) + q] = s->x[3 * node + c];
                    lanes->v[W * (3 * node + c) + q] = s->v[3 * node + c];
                }
                /* as ms_team_init has them */
                inv_mass[W * node + q] = model->pinned[node] ? 0.0 : 1.0 / model->mass[node];
                /* as a step sets each force first */
                for (int c = 0; c < 3; ++c) weight[W * (3 * node + c) + q] = model->mass[node] * model->opt.gravity[c];
            }
            for (int64_t r = 0; r < m; ++r) {
                params[3 * W * r + q] = model->rest[r];
                params[3 * W * r + W + q] = model->k[r];
                params[3 * W * r + 2 * W + q] = model->c[r];
            }
            lanes->t[q] = s->t;
            lanes->dampers[q] = s->ledger.dampers;
            lanes->failed[q] = member >= 0 && !e->diverged[member] ? -1 : 0;
            lanes->failed_time[q] = NAN;
            b->part_start[W * g + q] = s->steps;
        }
    }
}

int ms_batch_prepare(ms_ensemble* e, int continuing, ms_error* err) {
    batch* b = e->batch;
    if (b == NULL) {
        b = calloc(1, sizeof *b);
        if (b == NULL) goto out_of_memory;
        e->batch = b;
    }
    if (!b->examined && examine(e, b) != 0) goto out_of_memory;
    if (!continuing) {
        batch_clear_call(b);
        if (!b->suits) return 0;
        if (start_call(e, b) != 0) {
            batch_clear_call(b);
            goto out_of_memory;
        }
        b->kernel = ms_batch_kernel_path();
    }
    if (!b->active) return 0;
    gather(e, b);
    int64_t count = 0;
    for (int64_t q = 0; q < W * b->ngroup; ++q) count += b->lane_member[q] >= 0;
    return (int)(count < 1 << 30 ? count : 1 << 30);
out_of_memory:
    ms_error_set(err, MS_ERR_MEMORY, "out of memory preparing the batched step of %lld members",
                 (long long)e->nmember);
    return -1;
}

int ms_batch_takes(const ms_ensemble* e, int64_t i) {
    const batch* b = e->batch;
    return b != NULL && b->active && b->taken[i];
}

int64_t ms_batch_groups(const ms_ensemble* e) {
    const batch* b = e->batch;
    return b != NULL && b->active ? b->ngroup : 0;
}

void ms_batch_run(ms_ensemble* e, double h, int64_t n, int worker, int workers) {
    batch* b = e->batch;
    if (b == NULL || !b->active) return;
    if (worker == 0) b->part_steps = n; /* read after the workers */
    const int64_t first = b->ngroup * worker / workers, last = b->ngroup * (worker + 1) / workers;
    /* the share's runs of groups of one integrator, each in one kernel call (which may step
       neighbouring groups together) */
    for (int64_t g = first; g < last;) {
        const int explicit_euler = e->models[b->lane_member[W * g]]->opt.integrator == MS_EXPLICIT_EULER;
        int64_t end = g + 1;
        while (end < last &&
               (e->models[b->lane_member[W * end]]->opt.integrator == MS_EXPLICIT_EULER) == explicit_euler)
            ++end;
        b->kernel(&b->program, &b->lanes[g], end - g, h, n, explicit_euler);
        g = end;
    }
}

/* Puts member i back where the call began. */
static void restore(ms_ensemble* e, const batch* b, int64_t i) {
    const int64_t n = e->nnode;
    const size_t bytes = sizeof(double) * 3 * (size_t)n;
    ms_state* s = e->states[i];
    const double* motion = b->start_motion + 9 * (size_t)n * (size_t)i;
    memcpy(s->x, motion, bytes);
    memcpy(s->v, motion + 3 * n, bytes);
    memcpy(s->f, motion + 6 * n, bytes);
    const member_start* start = &b->start[i];
    s->t = start->t;
    s->steps = start->steps;
    s->ledger = start->ledger;
    s->watched = start->watched;
    s->watched_energy = start->watched_energy;
    e->t[i] = s->t;
    e->steps[i] = s->steps;
}

void ms_batch_finish(ms_ensemble* e) {
    batch* b = e->batch;
    if (b == NULL || !b->active) return;
    const int64_t n = e->nnode;
    for (int64_t g = 0; g < b->ngroup; ++g) {
        const ms_batch_lanes* lanes = &b->lanes[g];
        for (int q = 0; q < W; ++q) {
            const int64_t i = b->lane_member[W * g + q];
            if (i < 0 || e->diverged[i]) continue;
            ms_state* s = e->states[i];
            if (lanes->failed[q] >= 0) {
                /* as ms_step reports it: the step that blew up, counted as steps counts */
                e->diverged[i] = 1;
                e->divergence_step[i] = b->part_start[W * g + q] + lanes->failed[q] + 1;
                e->divergence_time[i] = lanes->failed_time[q];
                restore(e, b, i);
                continue;
            }
            for (int64_t node = 0; node < n; ++node) {
                for (int c = 0; c < 3; ++c) {
                    s->x[3 * node + c] = lanes->x[W * (3 * node + c) + q];
                    s->v[3 * node + c] = lanes->v[W * (3 * node + c) + q];
                    s->f[3 * node + c] = lanes->f[W * (3 * node + c) + q];
                }
                s->inv_mass[node] = lanes->inv_mass[W * node + q];
            }
            s->workers = 1;
            s->t = lanes->t[q];
            s->steps += b->part_steps;
            s->ledger.dampers = lanes->dampers[q];
            /* the flows that are zero on this path, added as a step adds them */
            s->ledger.drag += 0.0;
            s->ledger.wind += 0.0;
            s->ledger.external += 0.0;
            s->ledger.pins += 0.0;
            e->t[i] = s->t;
            e->steps[i] = s->steps;
        }
    }
}

void ms_batch_roll_back(ms_ensemble* e) {
    batch* b = e->batch;
    if (b == NULL || !b->active) return;
    for (int64_t i = 0; i < e->nmember; ++i)
        if (b->taken[i]) restore(e, b, i);
    batch_clear_call(b);
}
