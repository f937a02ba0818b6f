/* Ensembles: many members of one topology stepped by one call (msprings.h, ms_ensemble).
 *
 * Each member is a model and a state of its own, whose mass, rest, k, c, x and v are
 * pointed at its rows of the ensemble's member-major arrays, so a caller sees each of them
 * as one (members x ...) array.  A member steps with ms_step on its own model and state,
 * which the core guarantees gives the bits it would give alone; members are shared out
 * among the call's workers, one worker per member.  Members of the explicit Euler methods
 * with nothing but springs, gravity and pins step together instead, four or (AVX-512) eight
 * to a vector, on the batched path (ensemble_batch.c), which repeats the single-member
 * arithmetic lane by lane.  Each member's step call is a part of a call made in parts (its ms_call), so a
 * member that diverges in any part goes back to where the first part began, alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platform/thread.h"
#include "step/ensemble_batch.h"
#include "step/step.h"

/* Networks with at least this many springs step on several workers of their own
   (as run.c decides). */
#define MS_ENSEMBLE_MEMBER_THREADS_MIN_SPRINGS 10000

/* Bytes of the ensemble's buffer: doubles, then int64, then ints, then pointers, then flags,
   each section naturally aligned. */
static size_t ensemble_doubles(int64_t b, int64_t n, int64_t m) {
    return (size_t)b * (6 * (size_t)n + (size_t)n + 3 * (size_t)m + 3 + 1 + 1);
}

static void ensemble_bind(ms_ensemble* e) {
    const size_t b = (size_t)e->nmember, n = (size_t)e->nnode, m = (size_t)e->nspring;
    double* d = e->buffer;
    e->x = d;
    d += b * 3 * n;
    e->v = d;
    d += b * 3 * n;
    e->mass = d;
    d += b * n;
    e->rest = d;
    d += b * m;
    e->k = d;
    d += b * m;
    e->c = d;
    d += b * m;
    e->gravity = d;
    d += b * 3;
    e->t = d;
    d += b;
    e->divergence_time = d;
    d += b;
    e->steps = (int64_t*)d;
    e->divergence_step = e->steps + b;
    e->member_threads = (int*)(e->divergence_step + b);
    e->models = (ms_model**)(void*)(e->member_threads + b + (b & 1)); /* 8-byte aligned */
    e->states = (ms_state**)(e->models + b);
    e->calls = (ms_call**)(e->states + b);
    e->diverged = (uint8_t*)(e->calls + b);
}

static size_t ensemble_bytes(int64_t b, int64_t n, int64_t m) {
    const size_t count = (size_t)b;
    return sizeof(double) * ensemble_doubles(b, n, m) + sizeof(int64_t) * 2 * count + sizeof(int) * (count + 1) +
           sizeof(void*) * 3 * count + count;
}

/* Whether member i has the topology of the first member; if not, err says how it differs. */
static int same_topology(const ms_model* first, const ms_model* other, int64_t i, ms_error* err) {
    static const char* const share = "members must share one topology";
    if (other->nnode != first->nnode)
        return ms_error_set(err, MS_ERR_VALUE, "member %lld has %lld nodes, the first member has %lld: %s",
                            (long long)i, (long long)other->nnode, (long long)first->nnode, share);
    if (other->nspring != first->nspring)
        return ms_error_set(err, MS_ERR_VALUE, "member %lld has %lld springs, the first member has %lld: %s",
                            (long long)i, (long long)other->nspring, (long long)first->nspring, share);
    if (other->nface != first->nface)
        return ms_error_set(err, MS_ERR_VALUE, "member %lld has %lld faces, the first member has %lld: %s",
                            (long long)i, (long long)other->nface, (long long)first->nface, share);
    for (int64_t s = 0; s < first->nspring; ++s)
        if (other->springs[2 * s] != first->springs[2 * s] || other->springs[2 * s + 1] != first->springs[2 * s + 1])
            return ms_error_set(err, MS_ERR_VALUE,
                                "member %lld's spring %lld joins nodes (%d, %d), the first member's joins (%d, %d): "
                                "members must share one springs array",
                                (long long)i, (long long)s, (int)other->springs[2 * s], (int)other->springs[2 * s + 1],
                                (int)first->springs[2 * s], (int)first->springs[2 * s + 1]);
    for (int64_t q = 0; q < first->nnode; ++q)
        if ((other->pinned[q] != 0) != (first->pinned[q] != 0))
            return ms_error_set(err, MS_ERR_VALUE,
                                "member %lld's node %lld is %s, the first member's is %s: members must share one "
                                "pinned mask",
                                (long long)i, (long long)q, other->pinned[q] ? "pinned" : "free",
                                first->pinned[q] ? "pinned" : "free");
    for (int64_t f = 0; f < 3 * first->nface; ++f)
        if (other->faces[f] != first->faces[f])
            return ms_error_set(err, MS_ERR_VALUE,
                                "member %lld's face %lld differs from the first member's: members must share one "
                                "faces array",
                                (long long)i, (long long)(f / 3));
    return MS_OK;
}

ms_ensemble* ms_ensemble_create(const ms_model* const* models, const ms_state* const* states, int64_t count,
                                ms_error* err) {
    if (count < 1) {
        ms_error_set(err, MS_ERR_VALUE, "an ensemble needs at least one member, got %lld", (long long)count);
        return NULL;
    }
    for (int64_t i = 1; i < count; ++i)
        if (same_topology(models[0], models[i], i, err)) return NULL;
    const int64_t n = models[0]->nnode, m = models[0]->nspring;
    ms_ensemble* e = calloc(1, sizeof *e);
    void* buffer = e != NULL ? calloc(1, ensemble_bytes(count, n, m)) : NULL;
    if (buffer == NULL) {
        free(e);
        ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating an ensemble of %lld members of %lld nodes",
                     (long long)count, (long long)n);
        return NULL;
    }
    e->nmember = count;
    e->nnode = n;
    e->nspring = m;
    e->buffer = buffer;
    ensemble_bind(e);
    for (int64_t i = 0; i < count; ++i) {
        ms_model* model = ms_model_copy(models[i], err);
        ms_state* state = model != NULL ? ms_state_copy(models[i], states[i], err) : NULL;
        ms_call* call = state != NULL ? ms_call_create() : NULL;
        e->models[i] = model;
        e->states[i] = state;
        e->calls[i] = call;
        if (call == NULL) {
            if (state != NULL)
                ms_error_set(err, MS_ERR_MEMORY, "out of memory making ensemble member %lld", (long long)i);
            ms_ensemble_destroy(e);
            return NULL;
        }
        const size_t n3 = 3 * (size_t)n;
        double* x = e->x + (size_t)i * n3;
        double* v = e->v + (size_t)i * n3;
        double* mass = e->mass + (size_t)i * (size_t)n;
        double* rest = e->rest + (size_t)i * (size_t)m;
        double* k = e->k + (size_t)i * (size_t)m;
        double* c = e->c + (size_t)i * (size_t)m;
        memcpy(x, state->x, sizeof(double) * n3);
        memcpy(v, state->v, sizeof(double) * n3);
        memcpy(mass, model->mass, sizeof(double) * (size_t)n);
        memcpy(rest, model->rest, sizeof(double) * (size_t)m);
        memcpy(k, model->k, sizeof(double) * (size_t)m);
        memcpy(c, model->c, sizeof(double) * (size_t)m);
        state->x = x;
        state->v = v;
        model->mass = mass;
        model->rest = rest;
        model->k = k;
        model->c = c;
        memcpy(e->gravity + 3 * i, model->opt.gravity, sizeof(double) * 3);
        e->member_threads[i] = model->opt.threads;
        e->t[i] = state->t;
        e->steps[i] = state->steps;
        e->divergence_time[i] = NAN;
        e->divergence_step[i] = -1;
        ms_state_watch(model, state);
    }
    ms_error_clear(err);
    return e;
}

void ms_ensemble_destroy(ms_ensemble* e) {
    if (e == NULL) return;
    for (int64_t i = 0; i < e->nmember; ++i) {
        ms_call_destroy(e->calls[i]);
        ms_state_destroy(e->states[i]);
        ms_model_destroy(e->models[i]);
    }
    ms_batch_destroy(e);
    free(e->buffer);
    free(e);
}

/* err's message, for member i. */
static int member_error(ms_error* err, int status, int64_t i) {
    if (err == NULL) return status;
    char message[sizeof err->message];
    memcpy(message, err->message, sizeof message);
    return ms_error_set(err, (ms_status)status, "member %lld: %s", (long long)i, message);
}

int ms_ensemble_check(const ms_ensemble* e, ms_error* err) {
    for (int64_t i = 0; i < e->nmember; ++i) {
        if (e->diverged[i]) continue;
        ms_options opt = e->models[i]->opt;
        memcpy(opt.gravity, e->gravity + 3 * i, sizeof opt.gravity);
        if (ms_options_check(&opt, err) || ms_model_check_values(e->models[i], err) ||
            ms_state_check(e->models[i], e->states[i], err))
            return member_error(err, MS_ERR_VALUE, i);
    }
    ms_error_clear(err);
    return MS_OK;
}

/* One step call of the ensemble, shared out among its workers. */
typedef struct ensemble_call {
    ms_ensemble* e;
    double h;
    int64_t n;
    int workers;
    int member_threads;     /* each member's workers */
    int64_t* order;         /* the members the per-member path steps, in order (count)   */
    int64_t count;
    int status[MS_MAX_THREADS];   /* each worker's first failure other than a divergence */
    int64_t failed[MS_MAX_THREADS]; /* the member it failed on */
    ms_error error[MS_MAX_THREADS];
} ensemble_call;

static void step_member(ensemble_call* c, int worker, int64_t i) {
    ms_ensemble* e = c->e;
    ms_model* model = e->models[i];
    ms_state* state = e->states[i];
    ms_step_options options;
    memset(&options, 0, sizeof options);
    options.call = e->calls[i];
    ms_error err;
    const int threads = model->opt.threads;
    model->opt.threads = c->member_threads;
    const int status = ms_step(model, state, c->h, c->n, &options, &err);
    model->opt.threads = threads;
    if (status == MS_ERR_DIVERGED) {
        e->diverged[i] = 1;
        e->divergence_time[i] = err.time;
        e->divergence_step[i] = err.step;
    } else if (status != MS_OK && c->status[worker] == MS_OK) {
        c->status[worker] = status;
        c->failed[worker] = i;
        c->error[worker] = err;
    }
    e->t[i] = state->t;
    e->steps[i] = state->steps;
}

static void run_members(void* context, int worker) {
    ensemble_call* c = context;
    const ms_fp_mode found = ms_flush_subnormals(); /* as a step's workers run */
    const int64_t begin = c->count * worker / c->workers, end = c->count * (worker + 1) / c->workers;
    for (int64_t q = begin; q < end; ++q) step_member(c, worker, c->order[q]);
    ms_batch_run(c->e, c->h, c->n, worker, c->workers);
    ms_restore_fp(found);
}

int ms_ensemble_step(ms_ensemble* e, double h, int64_t n, const ms_ensemble_options* options, ms_error* err) {
    if (ms_time_step_check(h, err)) return MS_ERR_VALUE;
    if (n < 1) return ms_error_set(err, MS_ERR_VALUE, "n = %lld must be >= 1 (number of steps)", (long long)n);
    if (ms_ensemble_check(e, err)) return MS_ERR_VALUE;
    for (int64_t i = 0; i < e->nmember; ++i) {
        memcpy(e->models[i]->opt.gravity, e->gravity + 3 * i, sizeof(double) * 3);
        if (!options->continuing) ms_call_end(e->calls[i]);
        if (!options->continuing && !e->diverged[i]) { /* a member cleared to go on: its last blow-up forgotten */
            e->divergence_time[i] = NAN;
            e->divergence_step[i] = -1;
        }
    }
    ensemble_call* c = calloc(1, sizeof *c);
    int64_t* order = c != NULL ? malloc(sizeof(int64_t) * (size_t)e->nmember) : NULL;
    if (order == NULL) {
        free(c);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory starting a step of %lld members",
                            (long long)e->nmember);
    }
    c->e = e;
    c->h = h;
    c->n = n;
    c->order = order;
    /* the members the batched path takes are its own; the others step one by one */
    const int batched = ms_batch_prepare(e, options->continuing, err);
    if (batched < 0) {
        free(order);
        free(c);
        return MS_ERR_MEMORY;
    }
    e->nbatched = batched;
    for (int64_t i = 0; i < e->nmember; ++i)
        if (!e->diverged[i] && !ms_batch_takes(e, i)) order[c->count++] = i;
    int workers = options->threads < 1 ? 1 : options->threads > MS_MAX_THREADS ? MS_MAX_THREADS : options->threads;
    /* large members with fewer members than workers: one member at a time on every worker */
    const int64_t units = c->count + ms_batch_groups(e);
    if (e->nspring >= MS_ENSEMBLE_MEMBER_THREADS_MIN_SPRINGS && units < workers) {
        c->member_threads = workers;
        workers = 1;
    } else {
        c->member_threads = 1;
        if (units < workers) workers = units < 1 ? 1 : (int)units;
    }
    c->workers = workers;
    if (ms_threads_run(workers, run_members, c) != 0) {
        c->workers = 1;
        ms_threads_run(1, run_members, c);
    }
    ms_batch_finish(e);
    int status = MS_OK;
    for (int w = 0; w < c->workers && status == MS_OK; ++w)
        if (c->status[w] != MS_OK) {
            if (err != NULL) *err = c->error[w];
            status = member_error(err, c->status[w], c->failed[w]);
        }
    free(order);
    free(c);
    if (status == MS_OK) ms_error_clear(err);
    return status;
}

void ms_ensemble_end_call(ms_ensemble* e) {
    for (int64_t i = 0; i < e->nmember; ++i) {
        ms_call_end(e->calls[i]);
        ms_state_watch(e->models[i], e->states[i]);
    }
}

void ms_ensemble_roll_back(ms_ensemble* e) {
    ms_batch_roll_back(e);
    for (int64_t i = 0; i < e->nmember; ++i) {
        ms_call_roll_back(e->models[i], e->states[i], e->calls[i]);
        e->t[i] = e->states[i]->t;
        e->steps[i] = e->states[i]->steps;
    }
    ms_ensemble_end_call(e);
}

int ms_ensemble_member_copy(const ms_ensemble* e, int64_t i, ms_model** model, ms_state** state, ms_error* err) {
    *model = NULL;
    *state = NULL;
    if (i < 0 || i >= e->nmember)
        return ms_error_set(err, MS_ERR_VALUE, "member %lld is out of range (0 .. %lld)", (long long)i,
                            (long long)e->nmember - 1);
    const ms_model* mine = e->models[i];
    const ms_state* own = e->states[i];
    ms_model* m = ms_model_copy(mine, err);
    ms_state* s = m != NULL ? ms_state_copy(mine, own, err) : NULL;
    if (s == NULL) {
        ms_model_destroy(m);
        return MS_ERR_MEMORY;
    }
    const size_t n = (size_t)e->nnode, springs = (size_t)e->nspring;
    memcpy(m->mass, mine->mass, sizeof(double) * n);
    memcpy(m->rest, mine->rest, sizeof(double) * springs);
    memcpy(m->k, mine->k, sizeof(double) * springs);
    memcpy(m->c, mine->c, sizeof(double) * springs);
    memcpy(m->opt.gravity, e->gravity + 3 * i, sizeof(double) * 3);
    m->opt.threads = e->member_threads[i];
    memcpy(s->x, own->x, sizeof(double) * 3 * n);
    memcpy(s->v, own->v, sizeof(double) * 3 * n);
    *model = m;
    *state = s;
    ms_error_clear(err);
    return MS_OK;
}
