/* State allocation, copying, reset and validation. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* x, v, f (nnode x 3 each), inv_mass (nnode), then f_saved (nnode x 3).  The external
   force and the second half of the double buffer are separate allocations made on first use. */
static size_t state_bytes(int64_t nnode) { return sizeof(double) * 13 * (size_t)nnode; }

static size_t work_bytes(int64_t nnode) { return sizeof(double) * 9 * (size_t)nnode; }

static size_t implicit_work_bytes(int64_t nnode, int64_t nspring) {
    return sizeof(double) * (MS_IMPLICIT_NODE_DOUBLES * (size_t)nnode + MS_IMPLICIT_SPRING_DOUBLES * (size_t)nspring);
}

ms_state* ms_state_create(const ms_model* m, ms_error* err) {
    ms_state* s = calloc(1, sizeof *s);
    double* buffer = calloc(1, state_bytes(m->nnode));
    if (s == NULL || buffer == NULL) {
        free(s);
        free(buffer);
        ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the state of %lld nodes",
                     (long long)m->nnode);
        return NULL;
    }
    size_t n3 = 3 * (size_t)m->nnode;
    s->buffer = buffer;
    s->x = buffer;
    s->v = buffer + n3;
    s->f = buffer + 2 * n3;
    s->inv_mass = buffer + 3 * n3;
    s->f_saved = buffer + 3 * n3 + (size_t)m->nnode;
    s->external = NULL;
    s->x_next = NULL;
    s->v_next = NULL;
    s->work = NULL;
    s->implicit_work = NULL;
    s->self_work = NULL;
    s->clearance = NULL;
    s->clearance_count = 0;
    ms_state_reset(m, s);
    ms_error_clear(err);
    return s;
}

ms_state* ms_state_copy(const ms_model* m, const ms_state* s, ms_error* err) {
    ms_state* copy = ms_state_create(m, err);
    if (copy == NULL) return NULL;
    memcpy(copy->buffer, s->buffer, state_bytes(m->nnode));
    if (s->external != NULL) {
        double* external = ms_state_external(m, copy, err);
        if (external == NULL) {
            ms_state_destroy(copy);
            return NULL;
        }
        memcpy(external, s->external, sizeof(double) * 3 * (size_t)m->nnode);
    }
    copy->t = s->t;
    copy->steps = s->steps;
    copy->ledger = s->ledger;
    copy->watched = s->watched;
    copy->watched_energy = s->watched_energy;
    copy->solver = s->solver;
    return copy;
}

void ms_state_destroy(ms_state* s) {
    if (s == NULL) return;
    free(s->work);
    free(s->implicit_work);
    free(s->external);
    free(s->x_next); /* v_next shares its allocation */
    ms_self_work_free(s->self_work);
    free(s->clearance);
    free(s->push_from); /* pushed and the node-spring lists share its allocation */
    free(s->buffer);
    free(s);
}

void ms_state_reset(const ms_model* m, ms_state* s) {
    size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    memcpy(s->x, m->x_initial, bytes);
    memcpy(s->v, m->v_initial, bytes);
    memset(s->f, 0, bytes);
    s->t = 0.0;
    s->steps = 0;
    memset(&s->ledger, 0, sizeof s->ledger);
    s->watched = 0;
    memset(&s->solver, 0, sizeof s->solver);
}

void ms_state_watch(const ms_model* m, ms_state* s) {
    if (s->watched) return; /* the energy before the first change is the one to compare with */
    s->watched_energy = ms_mechanical_energy(m, s->x, s->v);
    s->watched = 1;
}

int ms_state_ensure_pushes(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->push_from != NULL) return MS_OK;
    const size_t count = (size_t)m->nnode, springs = (size_t)m->nspring;
    /* push_from, node_spring_start, node_springs, pushed: widest first, so each is aligned */
    s->push_from = malloc(sizeof(double) * 3 * count + sizeof(int64_t) * (count + 1) +
                          sizeof(int32_t) * 2 * springs + count);
    if (s->push_from == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the contact storage of %lld nodes",
                            (long long)m->nnode);
    s->node_spring_start = (int64_t*)(s->push_from + 3 * count);
    s->node_springs = (int32_t*)(s->node_spring_start + count + 1);
    s->pushed = (uint8_t*)(s->node_springs + 2 * springs);
    memset(s->pushed, 0, count);
    /* counting sort of the spring ends by node */
    int64_t* start = s->node_spring_start;
    memset(start, 0, sizeof(int64_t) * (count + 1));
    for (size_t e = 0; e < 2 * springs; ++e) start[m->springs[e] + 1] += 1;
    for (size_t i = 0; i < count; ++i) start[i + 1] += start[i];
    for (size_t e = 0; e < 2 * springs; ++e) {
        const int32_t node = m->springs[e];
        s->node_springs[start[node]++] = (int32_t)(e / 2);
    }
    for (size_t i = count; i > 0; --i) start[i] = start[i - 1];
    start[0] = 0;
    return MS_OK;
}

int ms_state_check(const ms_model* m, const ms_state* s, ms_error* err) {
    if (ms_check_finite_vectors(s->x, m->nnode, "x", err)) return MS_ERR_VALUE;
    if (ms_check_finite_vectors(s->v, m->nnode, "v", err)) return MS_ERR_VALUE;
    if (s->external != NULL && ms_check_finite_vectors(s->external, m->nnode, "external", err))
        return MS_ERR_VALUE;
    ms_error_clear(err);
    return MS_OK;
}

const double* ms_active_external(const ms_state* s) { return s->external_active ? s->external : NULL; }

double* ms_state_external(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->external == NULL) {
        s->external = calloc(3 * (size_t)m->nnode, sizeof(double));
        if (s->external == NULL) {
            ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the external force of %lld nodes",
                         (long long)m->nnode);
            return NULL;
        }
    }
    ms_error_clear(err);
    return s->external;
}

int ms_state_ensure_next(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->x_next != NULL) return MS_OK;
    s->x_next = calloc(6 * (size_t)m->nnode, sizeof(double));
    if (s->x_next == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the step buffers of %lld nodes",
                            (long long)m->nnode);
    s->v_next = s->x_next + 3 * (size_t)m->nnode;
    return MS_OK;
}

double* ms_state_clearance(const ms_model* m, ms_state* s) {
    const int64_t count = m->nnode * m->ncollider;
    if (count != s->clearance_count) {
        free(s->clearance);
        s->clearance = count > 0 ? malloc(sizeof(double) * (size_t)count) : NULL;
        s->clearance_count = s->clearance != NULL ? count : 0;
    }
    if (s->clearance != NULL) memset(s->clearance, 0, sizeof(double) * (size_t)count);
    return s->clearance;
}

int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->work != NULL) return MS_OK;
    s->work = calloc(1, work_bytes(m->nnode));
    if (s->work == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating integrator storage for %lld nodes",
                            (long long)m->nnode);
    return MS_OK;
}

int ms_state_ensure_implicit_work(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->implicit_work != NULL) return MS_OK;
    s->implicit_work = calloc(1, implicit_work_bytes(m->nnode, m->nspring));
    if (s->implicit_work == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating implicit solver storage for %lld nodes",
                            (long long)m->nnode);
    return MS_OK;
}
