/* State allocation, copying, reset and validation. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout.h"
#include "step.h"
#include "projective.h"
#include "xpbd.h"

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
    s->x_next = NULL;
    s->v_next = NULL;
    s->work = NULL;
    s->implicit = NULL;
    s->self_work = NULL;
    s->clearance = NULL;
    s->clearance_count = 0;
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
    copy->start_energy_valid = s->start_energy_valid;
    memcpy(copy->start_energy, s->start_energy, sizeof copy->start_energy);
    copy->solver = s->solver;
    return copy;
}

void ms_state_destroy(ms_state* s) {
    if (s == NULL) return;
    free(s->work);
    ms_implicit_free(s->implicit);
    free(s->external);
    free(s->x_next); /* v_next shares its allocation */
    ms_self_work_free(s->self_work);
    free(s->clearance);
    free(s->push_from); /* pushed and the node-spring lists share its allocation */
    ms_layout_destroy(s->layout);
    free(s->node_sums);
    free(s->block_flow);
    free(s->block_energy);
    ms_colouring_free(s->constraints);
    ms_projective_free(s->projective);
    ms_ranked_free(s->ranked);
    ms_call_start_free(s->call_start);
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
    if (s->ranked != NULL) ((ms_ranked*)s->ranked)->current = 0;
    ms_step_end_call(s);
    for (int64_t k = 0; k < s->collider_count && k < m->ncollider; ++k)
        memcpy(s->collider_center + 3 * k, m->colliders[k].center, sizeof(double) * 3);
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
    if (ms_node_springs(m, s->node_spring_start, s->node_springs) != 0) {
        free(s->push_from);
        s->push_from = NULL;
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the contact storage of %lld nodes",
                            (long long)m->nnode);
    }
    return MS_OK;
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

void ms_state_clear_contact(const ms_model* m, ms_state* s) {
    const int64_t count = m->nnode * m->ncollider;
    if (count != s->clearance_count) {
        free(s->clearance);
        s->clearance = count > 0 ? malloc(sizeof(double) * (size_t)count) : NULL;
        s->clearance_count = s->clearance != NULL ? count : 0;
    }
    if (s->clearance != NULL) memset(s->clearance, 0, sizeof(double) * (size_t)count);
    if (s->pushed != NULL) memset(s->pushed, 0, (size_t)m->nnode); /* a diverged step may have left marks */
}

void ms_state_move_colliders(const ms_model* m, ms_state* s, double h) {
    for (int64_t k = 0; k < s->collider_count; ++k)
        for (int a = 0; a < 3; ++a) s->collider_center[3 * k + a] += h * m->colliders[k].velocity[a];
}

int ms_state_ensure_step(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->ranked != NULL) return MS_OK;
    if (s->layout == NULL) {
        int32_t* node_order;
        if (ms_rank_nodes(m, &node_order) != 0)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory ordering %lld nodes for the step",
                                (long long)m->nnode);
        if (node_order != NULL) return ms_ranked_create(m, s, node_order, err);
        s->layout = ms_layout_create(m, err);
        if (s->layout == NULL) return MS_ERR_MEMORY;
    }
    if (s->node_sums == NULL) s->node_sums = calloc((size_t)s->layout->nnode_block, sizeof(ms_node_sums));
    if (s->block_flow == NULL) s->block_flow = calloc(2 * (size_t)s->layout->nblock, sizeof(ms_flow));
    if (s->block_energy == NULL) s->block_energy = calloc((size_t)s->layout->nblock, sizeof(ms_block_energy));
    if (s->node_sums == NULL || s->block_flow == NULL || s->block_energy == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the step storage of %lld nodes",
                            (long long)m->nnode);
    return MS_OK;
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
    if (s->implicit != NULL) return MS_OK;
    s->implicit = ms_implicit_create(m);
    if (s->implicit == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating implicit solver storage for %lld nodes",
                            (long long)m->nnode);
    return MS_OK;
}
