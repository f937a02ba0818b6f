/* The workers of a step call: their barrier and interruption decisions, the forces stage
 * every solver starts from, and the end of a step for each node block (energy loss,
 * contact, the finiteness check).  See team.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/team.h"

void ms_sync(ms_worker* w) {
    if (w->team->barrier != NULL) ms_barrier_wait(w->team->barrier, &w->sense);
}

/* Decision points come about every MS_DECISION_PERIOD of work, so their barrier and clock
   cost nothing beside it, and the caller's check runs about every MS_CHECK_PERIOD. */
#define MS_DECISION_PERIOD 1e-3
#define MS_MAX_STRIDE ((int64_t)1 << 40)

int ms_should_stop(ms_worker* w) {
    ms_team* tm = w->team;
    if (tm->interrupt == NULL || w->stopped) return w->stopped;
    if (--w->countdown > 0) return 0;
    /* two slots: worker 0 writes this one before the barrier, and writes it again only two
       decision points later, after the next barrier, which every reader passes after it
       has read it */
    const int slot = w->decisions++ & 1;
    if (w->id == 0) {
        const double now = ms_clock_seconds();
        const double elapsed = now - tm->paced_at;
        int64_t stride = tm->stride[!slot];
        if (elapsed < 0.5 * MS_DECISION_PERIOD)
            stride = stride < MS_MAX_STRIDE ? 2 * stride : stride;
        else if (elapsed > 2.0 * MS_DECISION_PERIOD)
            stride = (int64_t)((double)stride * (MS_DECISION_PERIOD / elapsed)) + 1;
        tm->paced_at = now;
        if (!tm->stopping && now - tm->checked_at >= MS_CHECK_PERIOD) {
            tm->checked_at = now;
            tm->stopping = tm->interrupt->check(tm->interrupt->context) != 0;
        }
        tm->stop[slot] = tm->stopping;
        tm->stride[slot] = stride;
    }
    ms_sync(w);
    w->countdown = tm->stride[slot];
    w->stopped = tm->stop[slot];
    return w->stopped;
}

void ms_node_block(const ms_team* tm, int64_t b, int64_t* begin, int64_t* end) {
    const int64_t size = tm->layout->node_block;
    *begin = b * size;
    *end = *begin + size < tm->m->nnode ? *begin + size : tm->m->nnode;
}

int ms_any_bad(const ms_team* tm) {
    int bad = 0;
    for (int64_t b = 0; b < tm->nnode_block; ++b) bad |= tm->nodes[b].bad;
    return bad;
}

static const ms_flow no_flow = {0.0, 0.0, 0.0, 0.0, 0.0};

/* The forces into f; own (or NULL) receives those other than the springs', copied from f
   before the springs add to it (the air on the triangles is added to both).  The worker's
   first evaluation in a call with w->start_energy also sums the mechanical energy of (x, v)
   by blocks (sum_energies adds them up). */
static int stage_forces(ms_worker* w, const double* x, const double* v, double t, double* f, double* own) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    const ms_state* s = tm->s;
    const ms_layout* layout = tm->layout;
    const double* external = tm->external;
    const int energy = (w->start_energy & MS_START_FORCES) && w->tickets == 0;
    const int nodes = energy && !(w->start_energy & MS_START_UPDATE);
    const int ticket = w->tickets++ & 1;
    ms_flow* flows = tm->block_flow + ticket * layout->nblock;
    /* block by block: the owned nodes' own forces (gravity, drag, external) start their
       sums, then the springs add to them and to the block's halo */
    for (int64_t b = w->spring_first; b < w->spring_last; ++b) {
        flows[b] = no_flow;
        const int64_t first = layout->node_start[b], last = layout->node_start[b + 1];
        ms_node_forces(m, x, v, external, t, first, last, f, &flows[b]);
        if (own != NULL) memcpy(own + 3 * first, f + 3 * first, sizeof(double) * 3 * (size_t)(last - first));
        ms_block_energy* sums = energy ? &tm->block_energy[b] : NULL;
        if (nodes)
            tm->node_energy(m->mass, s->inv_mass, m->opt.gravity, x, v, first, last, &sums->kinetic, &sums->gravity);
        flows[b].dampers = tm->springs(layout, b, x, v, f, sums != NULL ? &sums->spring : NULL);
    }
    ms_sync(w);
    if (w->node_first < w->node_last) { /* the halos, for the worker's nodes at once */
        int64_t begin, end, ignored;
        ms_node_block(tm, w->node_first, &begin, &ignored);
        ms_node_block(tm, w->node_last - 1, &ignored, &end);
        ms_layout_gather(layout, begin, end, f);
    }
    if (tm->face_forces) {
        ms_sync(w);
        if (w->id == 0) {
            tm->face_flow[ticket] = no_flow;
            ms_face_forces(m, x, v, t, f, &tm->face_flow[ticket]);
            if (own != NULL) ms_face_forces(m, x, v, t, own, NULL);
        }
        ms_sync(w);
    }
    MS_FOR_MY_NODES(w, b, begin, end)
    tm->nodes[b].pins[ticket] = tm->moving_pins ? ms_pin_power(m, x, v, external, t, f, begin, end) : 0.0;
    return ticket;
}

const ms_energy_request* ms_start_request(const ms_worker* w, int64_t b, ms_energy_request* request) {
    if (!(w->start_energy & MS_START_UPDATE) || w->tickets != 1) return NULL;
    ms_team* tm = w->team;
    request->mass = tm->m->mass;
    request->gravity = tm->m->opt.gravity;
    request->kinetic = &tm->nodes[b].kinetic;
    request->potential = &tm->nodes[b].gravity;
    return request;
}

int ms_stage_forces(ms_worker* w, const double* x, const double* v, double t, double* f) {
    return stage_forces(w, x, v, t, f, NULL);
}

int ms_stage_forces_and_own(ms_worker* w, const double* x, const double* v, double t, double* f, double* own) {
    return stage_forces(w, x, v, t, f, own);
}

ms_flow ms_forces_flow(const ms_team* tm, int ticket) {
    ms_flow rate = no_flow;
    const ms_flow* flows = tm->block_flow + ticket * tm->layout->nblock;
    for (int64_t b = 0; b < tm->layout->nblock; ++b) ms_flow_add(&rate, &flows[b], 1.0);
    for (int64_t b = 0; b < tm->nnode_block; ++b) rate.pins += tm->nodes[b].pins[ticket];
    if (tm->face_forces) ms_flow_add(&rate, &tm->face_flow[ticket], 1.0);
    return rate;
}

void ms_worker_init(ms_team* tm, ms_worker* w, int id) {
    memset(w, 0, sizeof *w);
    w->team = tm;
    w->id = id;
    w->node_first = tm->nnode_block * id / tm->count;
    w->node_last = tm->nnode_block * (id + 1) / tm->count;
    w->spring_first = tm->layout->nblock * id / tm->count;
    w->spring_last = tm->layout->nblock * (id + 1) / tm->count;
    w->countdown = 1; /* the first check is a decision point */
}

/* The references' "energy loss": free velocities scaled by (1 - loss) after a step.  It
   is not a physical force and its effect depends on the step size.  Returns the kinetic
   energy it removed (J). */
static double apply_energy_loss(const ms_model* m, const double* inv_mass, double* MS_RESTRICT v, double loss,
                                int64_t begin, int64_t end) {
    const double keep = 1.0 - loss;
    const double removed_fraction = 1.0 - keep * keep;
    double removed = 0.0;
    for (int64_t i = begin; i < end; ++i) {
        if (inv_mass[i] == 0.0) continue;
        double* vi = v + 3 * i;
        removed += 0.5 * m->mass[i] * removed_fraction * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        vi[0] *= keep;
        vi[1] *= keep;
        vi[2] *= keep;
    }
    return removed;
}

void ms_keep_before_contact(const ms_team* tm, const double* x, const double* v, int64_t begin, int64_t end) {
    const size_t bytes = sizeof(double) * 3 * (size_t)(end - begin);
    memcpy(tm->before_contact + 3 * begin, x + 3 * begin, bytes);
    memcpy(tm->before_contact + 3 * (tm->m->nnode + begin), v + 3 * begin, bytes);
}

void ms_finish_nodes(ms_worker* w, int64_t b, int64_t begin, int64_t end, int bad, const double* x_old,
                     double* x_next, double* v_next) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_node_sums* sums = &tm->nodes[b];
    const ms_contact none = {0.0, 0.0, 0, 0};
    sums->bad = bad;
    sums->contact = none;
    if (bad) return;
    if (tm->energy_loss) sums->removed = apply_energy_loss(m, tm->s->inv_mass, v_next, m->opt.energy_loss, begin, end);
    if (tm->contact_now) {
        if (tm->before_contact != NULL) ms_keep_before_contact(tm, x_next, v_next, begin, end);
        /* contact at each node on its own (so it does not matter which worker does it);
           the rest was finite, so the values it changed say whether the result is */
        sums->contact = ms_collide_nodes(m, tm->s, x_old, x_next, v_next, tm->h, begin, end);
        sums->bad = sums->contact.bad;
    }
}

/* Returns non-zero if some force depends on velocity (a damper, as of the layout's last
   refresh, or drag). */
static int has_velocity_forces(const ms_model* m, const ms_layout* layout) {
    if (m->opt.drag > 0.0) return 1;
    const ms_air* air = &m->opt.air;
    if (m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0)) return 1;
    return layout->dampers;
}

void ms_team_init(ms_team* tm, const ms_model* m, ms_state* s, const ms_layout* layout, ms_node_sums* nodes,
                  ms_flow* block_flow, ms_block_energy* block_energy, int parameters) {
    memset(tm, 0, sizeof *tm);
    tm->m = m;
    tm->s = s;
    tm->layout = layout;
    tm->springs = ms_spring_kernel_path();
    tm->euler = ms_euler_kernel_path();
    tm->node_energy = ms_node_energy_kernel_path();
    tm->count = 1;
    tm->nnode_block = layout->nnode_block;
    tm->nodes = nodes;
    tm->block_flow = block_flow;
    tm->block_energy = block_energy;
    const ms_air* air = &m->opt.air;
    tm->face_forces = m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0);
    tm->energy_loss = m->opt.energy_loss > 0.0;
    tm->contact_now = m->ncollider > 0 && !m->opt.strain_limiting && m->opt.self_collision == 0.0;
    if (parameters)
        for (int64_t i = 0; i < m->nnode; ++i) s->inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
    tm->velocity_forces = has_velocity_forces(m, layout);
    int external = 0;
    for (int64_t q = 0; s->external != NULL && q < 3 * m->nnode && !external; ++q) external = s->external[q] != 0.0;
    tm->external = external ? s->external : NULL;
    tm->moving_pins = 0;
    for (int64_t i = 0; i < m->nnode && !tm->moving_pins; ++i)
        tm->moving_pins = m->pinned[i] && (s->v[3 * i] != 0.0 || s->v[3 * i + 1] != 0.0 || s->v[3 * i + 2] != 0.0);
}
