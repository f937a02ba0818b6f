/* State allocation, copying, reset and validation. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "platform/thread.h"

/* x, v, f (nnode x 3 each), inv_mass (nnode), then f_saved (nnode x 3).  The external
   force and the second half of the double buffer are separate allocations made on first use. */
static size_t state_bytes(int64_t nnode) { return sizeof(double) * 13 * (size_t)nnode; }

static size_t work_bytes(int64_t nnode) { return sizeof(double) * 9 * (size_t)nnode; }

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
    s->cores = ms_cpu_count();
    s->external = NULL;
    if (ms_state_reserve_colliders(s, m->ncollider, err)) {
        ms_state_destroy(s);
        return NULL;
    }
    s->collider_count = m->ncollider;
    for (int64_t k = 0; k < m->ncollider; ++k) s->collider_id[k] = m->colliders[k].id;
    ms_state_reset(m, s);
    ms_error_clear(err);
    return s;
}

int ms_state_reserve_colliders(ms_state* s, int64_t count, ms_error* err) {
    if (count <= s->collider_capacity) return MS_OK;
    const int64_t capacity = count > 2 * s->collider_capacity ? count : 2 * s->collider_capacity;
    double* center = realloc(s->collider_center, sizeof(double) * 3 * (size_t)capacity);
    if (center != NULL) s->collider_center = center;
    int64_t* id = center != NULL ? realloc(s->collider_id, sizeof(int64_t) * (size_t)capacity) : NULL;
    if (id != NULL) s->collider_id = id;
    if (center == NULL || id == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory for %lld colliders", (long long)count);
    s->collider_capacity = capacity;
    return MS_OK;
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
    if (s->collider_count > 0)
        memcpy(copy->collider_center, s->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    copy->default_threads = s->default_threads;
    copy->cores = s->cores;
    copy->workers = s->workers;
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
    /* in the opposite order of the slots, so what depends on another slot goes first */
    for (int slot = MS_WORKSPACE_COUNT - 1; slot >= 0; --slot) ms_workspace_set(s, slot, NULL, NULL);
    free(s->work);
    free(s->external);
    free(s->x_next); /* v_next shares its allocation */
    free(s->collider_center);
    free(s->collider_id);
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
    for (int64_t k = 0; k < s->collider_count && k < m->ncollider; ++k)
        memcpy(s->collider_center + 3 * k, m->colliders[k].center, sizeof(double) * 3);
}

int ms_state_check(const ms_model* m, const ms_state* s, ms_error* err) {
    if (ms_check_finite_vectors(s->x, m->nnode, "x", err)) return MS_ERR_VALUE;
    if (ms_check_finite_vectors(s->v, m->nnode, "v", err)) return MS_ERR_VALUE;
    if (s->external != NULL && ms_check_finite_vectors(s->external, m->nnode, "external", err))
        return MS_ERR_VALUE;
    if (ms_state_same_colliders(m, s, err)) return MS_ERR_VALUE;
    if (ms_check_finite_vectors(s->collider_center, s->collider_count, "collider positions", err)) return MS_ERR_VALUE;
    ms_error_clear(err);
    return MS_OK;
}

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

void ms_state_move_colliders(const ms_model* m, ms_state* s, double h) {
    for (int64_t k = 0; k < s->collider_count; ++k)
        for (int a = 0; a < 3; ++a) s->collider_center[3 * k + a] += h * m->colliders[k].velocity[a];
}

int ms_state_ensure_work(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->work != NULL) return MS_OK;
    s->work = calloc(1, work_bytes(m->nnode));
    if (s->work == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating integrator storage for %lld nodes",
                            (long long)m->nnode);
    return MS_OK;
}

void ms_workspace_set(ms_state* s, int slot, void* data, void (*destroy)(void* data)) {
    ms_workspace* w = &s->workspace[slot];
    if (w->data != NULL && w->destroy != NULL) w->destroy(w->data);
    w->data = data;
    w->destroy = destroy;
}

int ms_state_same_colliders(const ms_model* m, const ms_state* s, ms_error* err) {
    int same = s->collider_count == m->ncollider;
    for (int64_t k = 0; same && k < m->ncollider; ++k) same = s->collider_id[k] == m->colliders[k].id;
    if (!same)
        return ms_error_set(err, MS_ERR_VALUE,
                            "the state's colliders are not the model's: add, change and remove colliders "
                            "through this state");
    return MS_OK;
}
