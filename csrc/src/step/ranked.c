/* A step call on a network whose numbering does not keep the nodes of a spring close
 * together (ms_rank_nodes, layout.h) runs on a copy of the model and the state renumbered
 * by rank, and so do its forces outside a step (ms_state_forces).
 *
 * Copying x and v into rank order and the forces back at every step costs about as much
 * as the springs themselves on a large network with its nodes numbered at random, so the
 * copy is made once per call instead: the call copies x, v and the external force in, runs
 * every step on the copy, where the nodes of a spring sit close together and the step's
 * arrays are read in order, and copies x, v and f back.  x and v are not copied in again
 * while the caller vouches that it did not write them (ms_step_options.motion_unchanged)
 * and no call was undone since.  The renumbered model shares the springs' rest lengths,
 * stiffnesses and dampers with the model (the springs keep their order; only their ends are
 * renumbered) and holds its own masses and pins, refreshed when the parameters may have
 * changed.  The copy's storage (its layout, the solvers' storage) lives as long as the
 * state; none of it carries anything from one call to the next but the state itself and
 * what the model and the step size determine, so a state and a fresh copy of it step alike.
 */
#include <stdlib.h>
#include <string.h>

#include "step/ranked.h"

static void ranked_free(void* ranked) {
    ms_ranked* r = ranked;
    if (r == NULL) return;
    ms_state_destroy(r->s);
    free(r->node_order);
    free(r->buffer);
    free(r);
}

int ms_ranked_filled(const ms_state* s) { return ms_step_layout(ms_ranked_of(s)->s)->filled; }

void ms_ranked_forget(ms_state* s) {
    ms_ranked* r = ms_ranked_of(s);
    if (r != NULL) r->current = 0;
}

/* to[q] = from[order[q]] for n 3-vectors. */
static void gather_vectors(const int32_t* order, const double* from, int64_t n, double* to) {
    for (int64_t q = 0; q < n; ++q) memcpy(to + 3 * q, from + 3 * (int64_t)order[q], sizeof(double) * 3);
}

int ms_ranked_create(const ms_model* m, ms_state* s, int32_t* node_order, ms_error* err) {
    const int64_t n = m->nnode, ns = m->nspring, nf = m->nface;
    ms_ranked* r = calloc(1, sizeof *r);
    void* buffer = malloc(sizeof(double) * (size_t)n + sizeof(int32_t) * (size_t)(n + 2 * ns + 3 * nf) + (size_t)n + 1);
    if (r == NULL || buffer == NULL) {
        free(r);
        free(buffer);
        free(node_order);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory renumbering %lld nodes for the step", (long long)n);
    }
    r->node_order = node_order;
    r->buffer = buffer;
    r->m = *m;
    r->m.buffer = NULL;
    r->m.mass = buffer;
    r->rank = (int32_t*)(r->m.mass + n);
    r->m.springs = r->rank + n;
    r->m.faces = r->m.springs + 2 * ns;
    r->m.pinned = (uint8_t*)(r->m.faces + 3 * nf);
    for (int64_t q = 0; q < n; ++q) r->rank[node_order[q]] = (int32_t)q;
    for (int64_t e = 0; e < 2 * ns; ++e) r->m.springs[e] = r->rank[m->springs[e]];
    for (int64_t e = 0; e < 3 * nf; ++e) r->m.faces[e] = r->rank[m->faces[e]];
    /* the copy starts from the model's initial state (in the user's order), which every
       call overwrites before it steps; its layout keeps its numbering */
    r->s = ms_state_create(&r->m, err);
    if (r->s != NULL) {
        ms_layout* layout = ms_layout_create(&r->m, err);
        if (layout == NULL || ms_step_storage_make(&r->m, r->s, layout, err) != MS_OK) {
            ms_state_destroy(r->s);
            r->s = NULL;
        }
    }
    if (r->s == NULL) {
        ranked_free(r);
        return MS_ERR_MEMORY;
    }
    ms_workspace_set(s, MS_WORK_RANKED, r, ranked_free);
    return MS_OK;
}

/* Brings the copy up to date with the model and the state: the masses and pins if the
   parameters may have changed, x and v if they may have been written (motion) or the copy
   does not hold them, the external force, the clock, the ledger and the colliders.
   Returns MS_OK or MS_ERR_MEMORY. */
static int copy_in(const ms_model* m, const ms_state* s, ms_ranked* r, int parameters, int motion, ms_error* err) {
    ms_state* rs = r->s;
    r->m.opt = m->opt;
    r->m.rest = m->rest;
    r->m.k = m->k;
    r->m.c = m->c;
    r->m.colliders = m->colliders;
    r->m.ncollider = m->ncollider;
    r->m.collider_capacity = m->collider_capacity;
    r->m.next_collider_id = m->next_collider_id;
    if (parameters)
        for (int64_t q = 0; q < m->nnode; ++q) {
            r->m.mass[q] = m->mass[r->node_order[q]];
            r->m.pinned[q] = m->pinned[r->node_order[q]];
        }
    if (motion || !r->current) {
        gather_vectors(r->node_order, s->x, m->nnode, rs->x);
        gather_vectors(r->node_order, s->v, m->nnode, rs->v);
        r->current = 1;
    }
    if (s->external != NULL) {
        if (ms_state_external(&r->m, rs, err) == NULL) return MS_ERR_MEMORY;
        gather_vectors(r->node_order, s->external, m->nnode, rs->external);
    } else if (rs->external != NULL) {
        free(rs->external);
        rs->external = NULL;
    }
    if (ms_state_reserve_colliders(rs, s->collider_count, err)) return MS_ERR_MEMORY;
    rs->collider_count = s->collider_count;
    if (s->collider_count > 0) {
        memcpy(rs->collider_center, s->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
        memcpy(rs->collider_id, s->collider_id, sizeof(int64_t) * (size_t)s->collider_count);
    }
    rs->t = s->t;
    rs->steps = s->steps;
    rs->ledger = s->ledger;
    rs->solver = s->solver;
    rs->default_threads = s->default_threads;
    rs->cores = s->cores;
    return MS_OK;
}

int ms_ranked_step(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, int motion,
                   const ms_step_options* options, ms_error* err) {
    ms_ranked* r = ms_ranked_of(s);
    ms_state* rs = r->s;
    if (copy_in(m, s, r, parameters, motion, err)) return MS_ERR_MEMORY;
    /* the state before contact, in the copy's numbering, then in the caller's */
    ms_step_options renumbered = *options;
    double* before = NULL;
    if (options->before_contact != NULL && m->ncollider > 0) {
        before = malloc(sizeof(double) * 6 * (size_t)m->nnode);
        if (before == NULL)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the state before contact of %lld nodes",
                                (long long)m->nnode);
        gather_vectors(r->node_order, options->before_contact, m->nnode, before);
        gather_vectors(r->node_order, options->before_contact + 3 * m->nnode, m->nnode, before + 3 * m->nnode);
        renumbered.before_contact = before;
    }
    const int status = ms_step_call(&r->m, rs, h, n, parameters, &renumbered, err);
    if (before != NULL) {
        gather_vectors(r->rank, before, m->nnode, options->before_contact);
        gather_vectors(r->rank, before + 3 * m->nnode, m->nnode, options->before_contact + 3 * m->nnode);
        free(before);
    }
    /* a failed (diverged or interrupted) call left the copy at its last finite state and f
       as it found it (s->f as it is); ms_step puts the call's start back and has the copy
       copied in again */
    gather_vectors(r->rank, rs->x, m->nnode, s->x);
    gather_vectors(r->rank, rs->v, m->nnode, s->v);
    /* a caller that will not read f (forces_unread) finds it as it was */
    if (status == MS_OK && !options->forces_unread) gather_vectors(r->rank, rs->f, m->nnode, s->f);
    if (s->collider_count > 0)
        memcpy(s->collider_center, rs->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    s->t = rs->t;
    s->steps = rs->steps;
    s->ledger = rs->ledger;
    s->solver = rs->solver;
    s->workers = rs->workers;
    /* the energies of the state the call started from (options->start_energy) are sums: the
       same in either numbering */
    return status;
}

int ms_ranked_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err) {
    ms_ranked* r = ms_ranked_of(s);
    if (copy_in(m, s, r, 1, 1, err)) return MS_ERR_MEMORY;
    ms_run_forces(&r->m, r->s, flow);
    gather_vectors(r->rank, r->s->f, m->nnode, s->f);
    return MS_OK;
}
