/* The step driver: validation, the stages of a step, rollback and the clock.
 *
 * A step reads the current (x, v) and writes the next one into the other half of a double
 * buffer, so the last finite state is always intact: when a step produces a non-finite
 * value the driver keeps the previous half and reports the divergence.  The Euler methods
 * with nothing acting after the integrator step in place instead, checking each update
 * before writing it.  A failed call is then undone as a whole (see "all or nothing"
 * below).  Every decision to leave the step loop is taken from values that every worker
 * reads after a barrier, so all workers leave together.  The stages of one step:
 *
 *   forces -> integrate -> energy loss -> constraints -> contact -> checks -> ledger -> clock
 *
 * where the ledger stage books, for the large-step solvers, what the step removed beyond
 * what its forces, contact and constraints booked (ledger.numerical).
 *
 * run on one worker, or on several for large networks (step.h): the thread layer only
 * starts workers and gives them a barrier.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"
#include "projective.h"
#include "xpbd.h"

/* Networks with at least this many springs step on several workers. */
#define MS_PARALLEL_MIN_SPRINGS 10000

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
    const double* external = ms_active_external(s);
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
    tm->nodes[b].pins[ticket] = s->moving_pins ? ms_pin_power(m, x, v, external, t, f, begin, end) : 0.0;
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

/* Gives worker id its share of the node and spring blocks. */
static void share(ms_team* tm, ms_worker* w, int id) {
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

void ms_finish_nodes(ms_worker* w, int64_t b, int64_t begin, int64_t end, int bad, const double* x_old,
                     double* x_next, double* v_next) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_node_sums* sums = &tm->nodes[b];
    const ms_contact none = {0.0, 0.0, 0};
    sums->bad = bad;
    sums->contact = none;
    if (bad) return;
    if (tm->energy_loss) sums->removed = apply_energy_loss(m, tm->s->inv_mass, v_next, m->opt.energy_loss, begin, end);
    if (tm->contact_now) {
        /* contact at each node on its own (so it does not matter which worker does it),
           then the finiteness of the result */
        sums->contact = ms_collide_nodes(m, tm->s, x_old, x_next, v_next, tm->h, begin, end);
        sums->bad = !ms_all_finite(x_next + 3 * begin, 3 * (size_t)(end - begin)) ||
                    !ms_all_finite(v_next + 3 * begin, 3 * (size_t)(end - begin));
    }
}

/* Contact for the worker's nodes, as ms_finish_nodes does it, with the finiteness check. */
static void contact_stage(ms_worker* w, const double* x_old, double* x_next, double* v_next) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    MS_FOR_MY_NODES(w, b, begin, end) {
        const ms_contact none = {0.0, 0.0, 0};
        tm->nodes[b].contact = m->ncollider > 0 ? ms_collide_nodes(m, tm->s, x_old, x_next, v_next, tm->h, begin, end)
                                                : none;
        tm->nodes[b].bad = !ms_all_finite(x_next + 3 * begin, 3 * (size_t)(end - begin)) ||
                           !ms_all_finite(v_next + 3 * begin, 3 * (size_t)(end - begin));
    }
    ms_sync(w);
}

/* What comes after the integrator (and its ms_finish_nodes) on (x_next, v_next), which
   the step reached from x: the energy loss's and contact's sums, the constraints (strain
   limiting, self-collision) and then contact when there are constraints (contact last,
   so no node ends a step inside a collider).  *booked receives what they add to the
   ledger.  Returns 1 if the state is finite, 0 if not, -1 if memory ran out (the same on
   every worker). */
static int after_integrator(ms_worker* w, const double* x, double* x_next, double* v_next, ms_ledger* booked) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    if (tm->energy_loss)
        for (int64_t b = 0; b < tm->nnode_block; ++b) booked->energy_loss += tm->nodes[b].removed;
    if (m->opt.strain_limiting || m->opt.self_collision > 0.0) {
        /* Position corrections are not forces: what they change of the mechanical energy
           is booked as their work, less the approach velocity that self-collision removes
           (dissipated as contact), so the ledger stays exact.  One worker, in node order. */
        if (w->id == 0) {
            const double before = ms_mechanical_energy(m, x_next, v_next);
            double removed = 0.0;
            tm->serial_ok = 1;
            if (m->opt.strain_limiting) ms_limit_strain(m, s->inv_mass, x_next, v_next, tm->h);
            if (m->opt.self_collision > 0.0)
                tm->serial_ok = ms_self_collide(m, s, x_next, v_next, &removed) == MS_OK;
            tm->serial_value = removed;
            tm->serial_work = ms_mechanical_energy(m, x_next, v_next) - before + removed;
        }
        ms_sync(w);
        if (!tm->serial_ok) return -1;
        booked->contact += tm->serial_value;
        booked->constraints += tm->serial_work;
        contact_stage(w, x, x_next, v_next);
    }
    if (m->ncollider > 0) {
        int64_t pushes = 0;
        double change = 0.0;
        for (int64_t b = 0; b < tm->nnode_block; ++b) {
            change += tm->nodes[b].contact.change;
            booked->colliders += tm->nodes[b].contact.work;
            pushes += tm->nodes[b].contact.pushes;
        }
        if (ms_any_bad(tm)) return 0;
        if (pushes > 0) {
            /* the springs' share of the pushes, in spring order, by worker 0; every worker
               adds it after the barrier, so all book the same and take the same decision
               below.  The marks it clears are set again only after the next step's
               barriers. */
            if (w->id == 0) tm->push_energy = ms_push_spring_energy(m, s, x_next);
            ms_sync(w);
            change += tm->push_energy;
        }
        ms_book_contact(booked, change);
    }
    return !ms_any_bad(tm) && ms_ledger_finite(booked);
}

/* The mechanical energy of (x, v) (J), run by every worker: each sums its node and spring
   blocks, then every worker adds the blocks' sums in block order, so every worker gets the
   same bits for any number of workers.  Reads every node, so it must follow a barrier
   after they were written. */
static double stage_energy(ms_worker* w, const double* x, const double* v) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    const ms_layout* layout = tm->layout;
    MS_FOR_MY_NODES(w, b, begin, end)
    ms_node_energy(m, x, v, begin, end, &tm->nodes[b].kinetic, &tm->nodes[b].gravity);
    for (int64_t b = w->spring_first; b < w->spring_last; ++b)
        tm->block_energy[b].spring = ms_layout_spring_energy(layout, b, x);
    ms_sync(w);
    double energy = 0.0;
    for (int64_t b = 0; b < tm->nnode_block; ++b) energy += tm->nodes[b].kinetic + tm->nodes[b].gravity;
    for (int64_t b = 0; b < layout->nblock; ++b) energy += tm->block_energy[b].spring;
    return energy;
}

/* The kinetic, spring and gravitational energy (J) whose sums by block stage_energy or a
   forces evaluation with w->start_energy left (the nodes' by node block if node_blocks,
   else by spring block), added up in block order into out. */
static void sum_energies(const ms_team* tm, int node_blocks, double out[3]) {
    double kinetic = 0.0, spring = 0.0, gravity = 0.0;
    for (int64_t b = 0; b < tm->layout->nblock; ++b) {
        spring += tm->block_energy[b].spring;
        if (!node_blocks) {
            kinetic += tm->block_energy[b].kinetic;
            gravity += tm->block_energy[b].gravity;
        }
    }
    for (int64_t b = 0; node_blocks && b < tm->nnode_block; ++b) {
        kinetic += tm->nodes[b].kinetic;
        gravity += tm->nodes[b].gravity;
    }
    out[0] = kinetic;
    out[1] = spring;
    out[2] = gravity;
}

/* Worker 0 keeps the energy of the state the call started from in the state, once the
   sums by block of w->start_energy are complete (after a barrier). */
static void keep_start_energy(ms_worker* w) {
    if (w->id != 0) return;
    ms_state* s = w->team->s;
    const int node_blocks = (w->start_energy & MS_START_UPDATE) != 0;
    sum_energies(w->team, node_blocks, s->start_energy);
    s->start_energy_valid = 1;
}

/* What one step call needs beyond the state. */
typedef struct call {
    ms_team team;
    int64_t n;
    int keep_start;    /* keep the energy of the state the call starts from (ms_state) */
    int in_place;
    int write_forces;  /* an in-place call writes its last forces into f */
    int explicit_euler;
    int book_numerical; /* the step's residual of the ledger is booked as numerical */
    ms_integrator_stages stages;
    int64_t completed; /* steps taken (written by worker 0) */
    int out_of_memory;
    int interrupted;   /* the caller's check stopped the call (written by worker 0) */
    double* x_final;   /* where the newest state is (written by worker 0) */
    double* v_final;
} call;

/* The Euler methods in place: each step checks its update before writing it, so no copy
   of the state is kept (touching only x, v and f is what makes them fast and small).  The
   forces go to s->f_saved, and the last step's to f as well (unless the caller will not
   read them: ms_state.forces_unread), block by block as it writes them, so f holds the
   force the call found until then: a diverged call leaves it so. */
static void run_in_place(call* c, ms_worker* w) {
    ms_team* tm = &c->team;
    ms_state* s = tm->s;
    double* force = s->f_saved;
    double t = s->t;
    for (int64_t step = 0; step < c->n; ++step) {
        if (ms_should_stop(w)) return;
        const int ticket = ms_stage_forces(w, s->x, s->v, t, force);
        MS_FOR_MY_NODES(w, b, begin, end) {
            ms_energy_request request;
            tm->nodes[b].bad = !tm->euler(s->inv_mass, s->x, s->v, force, tm->h, c->explicit_euler, begin, end, NULL,
                                          NULL, ms_start_request(w, b, &request));
        }
        ms_sync(w);
        if (step == 0 && w->start_energy) keep_start_energy(w);
        const ms_flow rate = ms_forces_flow(tm, ticket);
        ms_flow flow = no_flow;
        ms_flow_add(&flow, &rate, tm->h);
        if (ms_any_bad(tm) || !ms_flow_finite(&flow)) return;
        const int last = step + 1 == c->n && c->write_forces;
        MS_FOR_MY_NODES(w, b, begin, end) {
            tm->euler(s->inv_mass, s->x, s->v, force, tm->h, c->explicit_euler, begin, end, s->x, s->v, NULL);
            if (last) memcpy(s->f + 3 * begin, force + 3 * begin, sizeof(double) * 3 * (size_t)(end - begin));
        }
        t += tm->h;
        if (w->id == 0) {
            s->t += tm->h;
            s->steps += 1;
            ms_ledger_add_flow(&s->ledger, &flow);
            c->completed = step + 1;
        }
        ms_sync(w); /* the next step's forces read every node */
    }
}

/* Every other step: through the double buffer. */
static void run_buffered(call* c, ms_worker* w) {
    ms_team* tm = &c->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    double t = s->t;
    double *x = s->x, *v = s->v, *x_next = s->x_next, *v_next = s->v_next;
    /* the mechanical energy of (x, v), carried from step to step when numerical is booked */
    double energy = c->book_numerical ? stage_energy(w, x, v) : 0.0;
    if (c->book_numerical && c->keep_start && w->id == 0) {
        sum_energies(tm, 1, s->start_energy);
        s->start_energy_valid = 1;
    }
    for (int64_t step = 0; step < c->n; ++step) {
        if (ms_should_stop(w)) break;
        ms_flow flow = no_flow;
        ms_ledger booked = {0};
        int finite = c->stages(w, x, v, x_next, v_next, t, &flow);
        if (step == 0 && w->start_energy) keep_start_energy(w);
        if (w->stopped) break; /* within the step: the step before is the last one taken */
        ms_ledger_add_flow(&booked, &flow);
        if (finite) finite = after_integrator(w, x, x_next, v_next, &booked);
        if (finite > 0 && c->book_numerical) {
            /* What the mechanical energy lost that no other part booked:
               E - E' = (dissipated' - dissipated) - (work' - work) + numerical. */
            const double energy_next = stage_energy(w, x_next, v_next);
            booked.numerical = energy - energy_next - ms_ledger_dissipated(&booked) + ms_ledger_work(&booked);
            energy = energy_next;
            finite = ms_ledger_finite(&booked);
        }
        if (finite < 0 && w->id == 0) c->out_of_memory = 1;
        if (finite <= 0) break;
        double* swap = x;
        x = x_next;
        x_next = swap;
        swap = v;
        v = v_next;
        v_next = swap;
        t += tm->h;
        if (w->id == 0) {
            s->t += tm->h;
            s->steps += 1;
            ms_ledger_add(&s->ledger, &booked);
            c->completed = step + 1;
            /* the colliders are read again only by the next step's contact stage */
            ms_state_move_colliders(m, s, tm->h);
        }
        /* the integrator's and the contact stage's last barriers passed: every node is
           written, and nothing the next step writes before its first barrier is read */
    }
    if (w->id == 0) {
        c->x_final = x;
        c->v_final = v;
    }
}

static void run_worker(void* context, int id) {
    call* c = context;
    const ms_fp_mode found = ms_flush_subnormals(); /* every worker's thread, for the call */
    ms_worker w;
    share(&c->team, &w, id);
    /* the large-step solvers sum the energy anyway (stage_energy); the Euler updates read
       every node's x and v */
    const ms_integrator integrator = c->team.m->opt.integrator;
    const int euler = integrator == MS_SYMPLECTIC_EULER || integrator == MS_EXPLICIT_EULER;
    if (c->keep_start && !c->book_numerical) w.start_energy = MS_START_FORCES | (euler ? MS_START_UPDATE : 0);
    if (c->in_place)
        run_in_place(c, &w);
    else
        run_buffered(c, &w);
    if (id == 0) c->interrupted = w.stopped;
    ms_restore_fp(found);
}

/* Returns non-zero if some force depends on velocity (a damper, as of the layout's last
   refresh, or drag). */
static int has_velocity_forces(const ms_model* m, const ms_layout* layout) {
    if (m->opt.drag > 0.0) return 1;
    const ms_air* air = &m->opt.air;
    if (m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0)) return 1;
    return layout->dampers;
}

/* ms_state_prepare; the inverse masses only if the parameters may have changed. */
static void prepare(const ms_model* m, ms_state* s, int parameters) {
    if (parameters)
        for (int64_t i = 0; i < m->nnode; ++i) s->inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
    s->velocity_forces = has_velocity_forces(m, s->layout);
    s->external_active = 0;
    for (int64_t q = 0; s->external != NULL && q < 3 * m->nnode && !s->external_active; ++q)
        s->external_active = s->external[q] != 0.0;
    s->moving_pins = 0;
    for (int64_t i = 0; i < m->nnode && !s->moving_pins; ++i)
        s->moving_pins = m->pinned[i] && (s->v[3 * i] != 0.0 || s->v[3 * i + 1] != 0.0 || s->v[3 * i + 2] != 0.0);
}

void ms_state_prepare(const ms_model* m, ms_state* s) { prepare(m, s, 1); }

/* A team of one worker for forces outside a step call (ms_state_forces): the same
   blocks, so the same sums. */
static void solo_team(const ms_model* m, ms_state* s, ms_team* tm) {
    memset(tm, 0, sizeof *tm);
    tm->m = m;
    tm->s = s;
    tm->layout = s->layout;
    tm->springs = ms_spring_kernel_path();
    tm->euler = ms_euler_kernel_path();
    tm->node_energy = ms_node_energy_kernel_path();
    tm->count = 1;
    tm->nnode_block = s->layout->nnode_block;
    tm->nodes = s->node_sums;
    tm->block_flow = s->block_flow;
    tm->block_energy = s->block_energy;
    const ms_air* air = &m->opt.air;
    tm->face_forces = m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0);
    tm->energy_loss = m->opt.energy_loss > 0.0;
    tm->contact_now = m->ncollider > 0 && !m->opt.strain_limiting && m->opt.self_collision == 0.0;
}

void ms_step_forces(const ms_model* m, ms_state* s, const double* x, const double* v, double t, double* f,
                    ms_flow* flow) {
    ms_team tm;
    solo_team(m, s, &tm);
    ms_worker w;
    share(&tm, &w, 0);
    *flow = ms_forces_flow(&tm, ms_stage_forces(&w, x, v, t, f));
}

int ms_state_forces(const ms_model* m, ms_state* s, ms_flow* flow, ms_error* err) {
    if (ms_state_ensure_step(m, s, err)) return MS_ERR_MEMORY;
    if (s->ranked != NULL) return ms_ranked_forces(m, s, flow, err);
    ms_layout_refresh(m, s->layout);
    ms_state_prepare(m, s); /* as ms_step decides what is active */
    const ms_fp_mode found = ms_flush_subnormals(); /* as the steps compute (portable.h) */
    ms_flow flows;
    ms_step_forces(m, s, s->x, s->v, s->t, s->f, &flows);
    ms_restore_fp(found);
    if (flow != NULL) *flow = flows;
    return MS_OK;
}

/* A thread request (0: every core, the state's count of them) as a number of workers. */
static int workers_for(int request, int cores) {
    const int threads = request > 0 ? request : cores > 0 ? cores : 1;
    return threads < MS_MAX_THREADS ? threads : MS_MAX_THREADS;
}

int ms_thread_count(const ms_model* m, const ms_state* s) {
    return workers_for(m->opt.threads > 0 ? m->opt.threads : s->default_threads, s->cores);
}

int ms_resolve_threads(int n) { return workers_for(n, n > 0 ? 0 : ms_cpu_count()); }

/* Storage a step call needs, allocated on first use. */
static int ensure_storage(const ms_model* m, ms_state* s, int in_place, ms_error* err) {
    const ms_integrator integrator = m->opt.integrator;
    if (ms_state_ensure_step(m, s, err)) return MS_ERR_MEMORY;
    if ((integrator == MS_VELOCITY_VERLET || integrator == MS_RK4 || integrator == MS_XPBD ||
         integrator == MS_PROJECTIVE) &&
        ms_state_ensure_work(m, s, err))
        return MS_ERR_MEMORY;
    if (integrator == MS_IMPLICIT_EULER && ms_state_ensure_implicit_work(m, s, err)) return MS_ERR_MEMORY;
    if (!in_place && ms_state_ensure_next(m, s, err)) return MS_ERR_MEMORY;
    if (m->ncollider > 0 && ms_state_ensure_pushes(m, s, err)) return MS_ERR_MEMORY;
    if (integrator == MS_XPBD && ms_state_ensure_colours(m, s, err)) return MS_ERR_MEMORY;
    return MS_OK;
}

/* The values of the model a step depends on: all of them if the parameters (mass,
   pinned, rest, k, c) may have changed, else the colliders and the options. */
static int check_values(const ms_model* m, int parameters, ms_error* err) {
    if (parameters) return ms_model_check_values(m, err);
    for (int64_t k = 0; k < m->ncollider; ++k)
        if (ms_collider_check(&m->colliders[k], err)) return MS_ERR_VALUE;
    return ms_options_check(&m->opt, err);
}

/* The state's values a step depends on: all of them, or, if x and v are as the last step
   left them (finite), the external force and the colliders. */
static int check_state(const ms_model* m, const ms_state* s, int motion, ms_error* err) {
    if (motion) return ms_state_check(m, s, err);
    if (s->external != NULL && ms_check_finite_vectors(s->external, m->nnode, "external", err)) return MS_ERR_VALUE;
    if (ms_state_same_colliders(m, s, err)) return MS_ERR_VALUE;
    return ms_check_finite_vectors(s->collider_center, s->collider_count, "collider positions", err);
}

/* What the caller changed since the state was watched (not before the first step, which
   is the set-up of the initial state) goes to the ledger. */
static void book_watched(const ms_model* m, ms_state* s) {
    if (!s->watched) return;
    if (s->steps > 0) s->ledger.user += ms_mechanical_energy(m, s->x, s->v) - s->watched_energy;
    s->watched = 0;
}

int ms_step_call(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, const ms_interrupt* interrupt,
                 ms_error* err) {
    /* the caller's word holds for this call only */
    const int keep_start = s->keep_start_energy;
    const int forces_unread = s->forces_unread;
    s->keep_start_energy = s->start_energy_valid = s->forces_unread = 0;
    const ms_integrator integrator = m->opt.integrator;
    /* The Euler methods step in place unless something acts on the state after the
       integrator: the other integrators and those steps use the double buffer. */
    const int in_place = (integrator == MS_SYMPLECTIC_EULER || integrator == MS_EXPLICIT_EULER) &&
                         m->ncollider == 0 && !m->opt.strain_limiting && m->opt.self_collision == 0.0 &&
                         m->opt.energy_loss == 0.0;
    if (ensure_storage(m, s, in_place, err)) return MS_ERR_MEMORY;
    if (integrator == MS_PROJECTIVE) {
        const int status = ms_state_ensure_projective(m, s, h, interrupt, err);
        if (status != MS_OK) return status;
    }
    if (parameters) ms_layout_refresh(m, s->layout);
    if (m->ncollider > 0) ms_state_clear_contact(m, s);
    prepare(m, s, parameters);
    if (integrator == MS_XPBD && (parameters || ((const ms_colouring*)s->constraints)->h != h))
        ms_xpbd_prepare(m, s, h);

    call c;
    memset(&c, 0, sizeof c);
    solo_team(m, s, &c.team);
    c.team.h = h;
    c.n = n;
    c.keep_start = keep_start;
    c.in_place = in_place;
    c.write_forces = !forces_unread;
    c.explicit_euler = integrator == MS_EXPLICIT_EULER;
    /* The large-step solvers damp by themselves, and the ledger books it; the explicit
       integrators' drift is their error, left in sight. */
    c.book_numerical = integrator == MS_IMPLICIT_EULER || integrator == MS_PROJECTIVE || integrator == MS_XPBD;
    c.stages = ms_integrator_table[integrator];
    if (interrupt != NULL && interrupt->check != NULL) {
        c.team.interrupt = interrupt;
        c.team.stride[0] = c.team.stride[1] = 1;
        c.team.paced_at = c.team.checked_at = ms_clock_seconds();
    }
    /* Large networks step on several workers; projective dynamics on one. */
    const int count_matters = m->nspring >= MS_PARALLEL_MIN_SPRINGS && integrator != MS_PROJECTIVE;
    int count = count_matters ? ms_thread_count(m, s) : 1;
    if (count > 1) {
        c.team.barrier = ms_barrier_create(count);
        if (c.team.barrier == NULL) count = 1;
    }
    c.team.count = count;

    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    /* Every step but an in-place one overwrites f before it knows whether it diverges: a
       diverged call puts back the f it found, so nothing it returns with is non-finite. */
    if (!in_place) memcpy(s->f_saved, s->f, bytes);
    if (ms_threads_run(count, run_worker, &c) != 0) {
        /* no threads to be had: one worker */
        ms_barrier_destroy(c.team.barrier);
        c.team.barrier = NULL;
        c.team.count = 1;
        ms_threads_run(1, run_worker, &c);
    }
    ms_barrier_destroy(c.team.barrier);
    s->workers = c.team.count;
    if (!in_place && c.x_final != s->x) {
        /* The newest finite state is in the other half of the buffer: bring it home. */
        memcpy(s->x, c.x_final, bytes);
        memcpy(s->v, c.v_final, bytes);
    }
    if (c.completed == n) return MS_OK;
    if (!in_place) memcpy(s->f, s->f_saved, bytes);
    if (c.out_of_memory) return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the self-collision grid");
    /* ms_step says what happened, once it knows where the call began */
    if (c.interrupted) return ms_error_set(err, MS_ERR_INTERRUPTED, "the call was interrupted");
    return ms_error_set(err, MS_ERR_DIVERGED, "a position or velocity became non-finite");
}

/* ---- all or nothing ------------------------------------------------------------------
 *
 * A step call that fails after its checks (a divergence, memory running out, or anything a
 * later status adds) leaves the state as it found it: everything a call changes is kept
 * as the call begins and put back on the one way out of a failed call (ms_step).  A call
 * of one step needs no copy of x, v and f: its step writes the next state into the other
 * half of the double buffer, or in place only once it is known to be finite, and a
 * diverged call puts f back itself (ms_step_call).  Longer calls copy x and v once, into
 * storage made on first use; f they put back themselves as well.  A call that others
 * continue (ms_state.call_continues) copies f too: the parts after it write it. */

typedef struct call_start {
    int kept;                /* holds the start of the state's last call, which a failure of
                                that call (or of one continuing it) goes back to */
    int motion;              /* x and v are in motion_copy (else the call's one step keeps them) */
    int forces;              /* f is in motion_copy (else the call puts it back itself) */
    double t;
    int64_t steps;
    ms_ledger ledger;        /* before the call booked the caller's changes (ledger.user) */
    int watched;
    double watched_energy;
    ms_solver_stats solver;
    int64_t collider_count;
    int64_t collider_capacity;
    double* collider_center; /* where the colliders were          (collider_capacity x 3) */
    double* motion_copy;     /* x, v and f                         (3 x nnode x 3)         */
} call_start;

void ms_call_start_free(void* start) {
    call_start* kept = start;
    if (kept == NULL) return;
    free(kept->collider_center);
    free(kept->motion_copy);
    free(kept);
}

/* Keeps what a step call may change, with copies of x and v if copies, and of f too if
   continued.  Returns MS_OK or MS_ERR_MEMORY (nothing changed but the storage). */
static int keep_call_start(const ms_model* m, ms_state* s, int copies, int continued, ms_error* err) {
    call_start* start = s->call_start;
    if (start == NULL) {
        start = calloc(1, sizeof *start);
        if (start == NULL) return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the state a step starts from");
        s->call_start = start;
    }
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    if (s->collider_count > start->collider_capacity) {
        double* center = realloc(start->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
        if (center == NULL)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the positions of %lld colliders",
                                (long long)s->collider_count);
        start->collider_center = center;
        start->collider_capacity = s->collider_count;
    }
    if (copies && start->motion_copy == NULL) {
        start->motion_copy = malloc(3 * bytes);
        if (start->motion_copy == NULL)
            return ms_error_set(err, MS_ERR_MEMORY, "out of memory keeping the state of %lld nodes a step starts from",
                                (long long)m->nnode);
    }
    start->kept = 1;
    start->motion = copies;
    start->forces = continued;
    start->t = s->t;
    start->steps = s->steps;
    start->ledger = s->ledger;
    start->watched = s->watched;
    start->watched_energy = s->watched_energy;
    start->solver = s->solver;
    start->collider_count = s->collider_count;
    if (s->collider_count > 0)
        memcpy(start->collider_center, s->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    if (copies) {
        memcpy(start->motion_copy, s->x, bytes);
        memcpy(start->motion_copy + 3 * m->nnode, s->v, bytes);
    }
    if (continued) memcpy(start->motion_copy + 6 * m->nnode, s->f, bytes);
    return MS_OK;
}

/* Puts back what keep_call_start kept, and forgets it. */
static void roll_back(const ms_model* m, ms_state* s) {
    call_start* start = s->call_start;
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    if (start->motion) {
        memcpy(s->x, start->motion_copy, bytes);
        memcpy(s->v, start->motion_copy + 3 * m->nnode, bytes);
    }
    if (start->forces) memcpy(s->f, start->motion_copy + 6 * m->nnode, bytes);
    s->t = start->t;
    s->steps = start->steps;
    s->ledger = start->ledger;
    s->watched = start->watched;
    s->watched_energy = start->watched_energy;
    s->solver = start->solver;
    if (s->collider_count == start->collider_count && s->collider_count > 0)
        memcpy(s->collider_center, start->collider_center, sizeof(double) * 3 * (size_t)s->collider_count);
    /* the renumbered copy holds where the failed call got to: copied in again next call */
    if (s->ranked != NULL) ((ms_ranked*)s->ranked)->current = 0;
    start->kept = 0;
}

int ms_step_roll_back(const ms_model* m, ms_state* s) {
    const call_start* start = s->call_start;
    if (start == NULL || !start->kept || !start->forces) return 0;
    roll_back(m, s);
    if (s->watch_after_step) ms_state_watch(m, s);
    return 1;
}

void ms_step_end_call(ms_state* s) {
    call_start* start = s->call_start;
    if (start != NULL) start->kept = 0;
}

/* The message of a call that diverged or was interrupted (status), while s is at its last
   finite (completed) step. */
static void describe_failure(const ms_state* s, int status, double h, ms_error* err) {
    const call_start* start = s->call_start;
    const int64_t step = s->steps + 1;
    const double time = s->t + h;
    if (status == MS_ERR_INTERRUPTED)
        ms_error_set(err, MS_ERR_INTERRUPTED,
                     "the step call was interrupted in its step %lld (t = %g s). The system is as it was "
                     "before the call (t = %g s)",
                     (long long)(step - start->steps), time, start->t);
    else
        ms_error_set(err, MS_ERR_DIVERGED,
                     "the motion blew up at t = %g s (step %lld of this call, dt = %g s): a position or "
                     "velocity became non-finite. The system is as it was before the call (t = %g s). "
                     "Use a smaller dt, more damping or a more stable integrator",
                     time, (long long)(step - start->steps), h, start->t);
    if (err != NULL) {
        err->step = step;
        err->time = time;
        err->call_step = step - start->steps;
    }
}

/* The parameters were checked and read by an earlier step call: into the layout, or into
   the renumbered copy's. */
static int parameters_read(const ms_state* s) {
    if (s->ranked != NULL) return ms_ranked_filled(s);
    return s->layout != NULL && s->layout->filled;
}

int ms_time_step_check(double h, ms_error* err) {
    if (!isfinite(h) || h <= 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "dt = %g must be a finite time step > 0 (s)", h);
    return MS_OK;
}

int ms_step(const ms_model* m, ms_state* s, double h, int64_t n, ms_error* err) {
    return ms_step_checked(m, s, h, n, NULL, err);
}

int ms_step_checked(const ms_model* m, ms_state* s, double h, int64_t n, const ms_interrupt* interrupt,
                    ms_error* err) {
    /* the caller's word holds for this call only, even one refused below */
    const int parameters = !s->parameters_unchanged || !parameters_read(s);
    const int motion = !s->motion_unchanged;
    const int keep_start = s->keep_start_energy, forces_unread = s->forces_unread;
    const int continues = s->continues_call, continued = s->call_continues;
    s->parameters_unchanged = s->motion_unchanged = s->keep_start_energy = s->forces_unread = 0;
    s->start_energy_valid = 0; /* kept only by a call that steps */
    s->continues_call = s->call_continues = 0;
    /* a part of a longer call goes back to where its first part began */
    const call_start* kept = s->call_start;
    const int continuing = continues && kept != NULL && kept->kept && kept->forces;
    int refused = MS_OK;
    if (ms_time_step_check(h, err))
        refused = MS_ERR_VALUE;
    else if (n < 1)
        refused = ms_error_set(err, MS_ERR_VALUE, "n = %lld must be >= 1 (number of steps)", (long long)n);
    else if (check_values(m, parameters, err) || check_state(m, s, motion, err))
        refused = MS_ERR_VALUE;
    else if (ms_state_ensure_step(m, s, err))
        refused = MS_ERR_MEMORY;
    if (refused != MS_OK) {
        /* a part refused after others stepped (a value written through a view between
           them): the whole call is refused, and undone */
        if (continuing) ms_step_roll_back(m, s);
        return refused;
    }
    if (!continuing && keep_call_start(m, s, n > 1 || continued, continued, err)) return MS_ERR_MEMORY;
    book_watched(m, s);
    s->keep_start_energy = keep_start;
    s->forces_unread = forces_unread;
    /* A network whose numbering is not local steps on a copy renumbered by rank. */
    const int status = s->ranked != NULL ? ms_ranked_step(m, s, h, n, parameters, motion, interrupt, err)
                                         : ms_step_call(m, s, h, n, parameters, interrupt, err);
    s->keep_start_energy = s->forces_unread = 0; /* also where the copy could not be made */
    if (status != MS_OK) {
        /* the one way out of a failed call: everything back as the call found it */
        if (status == MS_ERR_DIVERGED || status == MS_ERR_INTERRUPTED) describe_failure(s, status, h, err);
        roll_back(m, s);
    } else if (!continued) {
        ms_step_end_call(s);
    }
    /* a change the caller made before a failed call is pending again: the energy to
       compare with is the one before that change */
    if (s->watch_after_step) ms_state_watch(m, s);
    if (status == MS_OK) ms_error_clear(err);
    return status;
}
