/* A step call's run: n steps of a state, by one worker or several, each step as its stages.
 *
 * A step reads the current (x, v) and writes the next one into the other half of a double
 * buffer, so the last finite state is always intact: when a step produces a non-finite
 * value the run keeps the previous half and reports the divergence.  The Euler methods
 * with nothing acting after the integrator step in place instead, checking each update
 * before writing it.  Every decision to leave the step loop is taken from values that
 * every worker reads after a barrier, so all workers leave together.  The stages of one
 * step:
 *
 *   forces -> integrate -> energy loss -> constraints -> contact -> checks -> ledger -> clock
 *
 * where integrate is the integrator's solver (solvers/), and the ledger stage books, for
 * the large-step solvers, what the step removed beyond what its forces, contact and
 * constraints booked (ledger.numerical).  ms_step (step.c) checks the call first and
 * undoes it if it fails.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/solvers.h"
#include "step/step.h"

/* Networks with at least this many springs step on several workers. */
#define MS_PARALLEL_MIN_SPRINGS 10000

/* Networks with at least this many nodes prefetch the springs of the nodes their colliders
   pushed (ms_push_prefetch); smaller ones' springs are mostly in cache, where the rounds of
   prefetching cost more than they hide. */
#define MS_PUSH_PREFETCH_NODES 16384

/* Each integrator's step, as stages run by every worker (solvers.h). */
static const ms_integrator_stages integrator_stages[MS_INTEGRATOR_COUNT] = {
    [MS_EXPLICIT_EULER] = ms_explicit_euler_stages,
    [MS_SYMPLECTIC_EULER] = ms_symplectic_euler_stages,
    [MS_VELOCITY_VERLET] = ms_velocity_verlet_stages,
    [MS_RK4] = ms_rk4_stages,
    [MS_IMPLICIT_EULER] = ms_implicit_euler_stages,
    [MS_PROJECTIVE] = ms_projective_stages,
    [MS_XPBD] = ms_xpbd_stages,
};

static void step_storage_free(void* data) {
    step_storage* storage = data;
    ms_layout_destroy(storage->layout);
    free(storage->node_sums);
    free(storage->block_flow);
    free(storage->block_energy);
    free(storage);
}

int ms_step_storage_make(const ms_model* m, ms_state* s, ms_layout* layout, ms_error* err) {
    step_storage* storage = calloc(1, sizeof *storage);
    if (storage == NULL) {
        ms_layout_destroy(layout);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the step storage of %lld nodes",
                            (long long)m->nnode);
    }
    storage->layout = layout;
    ms_workspace_set(s, MS_WORK_STEP, storage, step_storage_free);
    if (storage->layout == NULL) {
        storage->layout = ms_layout_create(m, err);
        if (storage->layout == NULL) {
            ms_workspace_set(s, MS_WORK_STEP, NULL, NULL);
            return MS_ERR_MEMORY;
        }
    }
    storage->node_sums = calloc((size_t)storage->layout->nnode_block, sizeof(ms_node_sums));
    storage->block_flow = calloc(2 * (size_t)storage->layout->nblock, sizeof(ms_flow));
    storage->block_energy = calloc((size_t)storage->layout->nblock, sizeof(ms_block_energy));
    if (storage->node_sums == NULL || storage->block_flow == NULL || storage->block_energy == NULL) {
        ms_workspace_set(s, MS_WORK_STEP, NULL, NULL);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the step storage of %lld nodes",
                            (long long)m->nnode);
    }
    return MS_OK;
}

static const ms_flow no_flow = {0.0, 0.0, 0.0, 0.0, 0.0};

/* Contact for the worker's nodes, as ms_finish_nodes does it, with the finiteness check. */
static void contact_stage(ms_worker* w, const double* x_old, double* x_next, double* v_next) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    MS_FOR_MY_NODES(w, b, begin, end) {
        const ms_contact none = {0.0, 0.0, 0, 0};
        if (tm->before_contact != NULL && m->ncollider > 0) ms_keep_before_contact(tm, x_next, v_next, begin, end);
        tm->nodes[b].contact = m->ncollider > 0 ? ms_collide_nodes(m, tm->s, x_old, x_next, v_next, tm->h, begin, end)
                                                : none;
        tm->nodes[b].bad = !ms_all_finite(x_next + 3 * begin, 3 * (size_t)(end - begin)) ||
                           !ms_all_finite(v_next + 3 * begin, 3 * (size_t)(end - begin));
    }
    ms_sync(w);
}

/* Sweeps of a step at most: the first, and one after the colliders' pass on the nodes it
   sent back (more rounds, tried on a pile plowed by a sphere, left no fewer nodes inside). */
#define MS_SWEEP_ROUNDS 2

/* The self-contact sweep of the step x -> (x_next, v_next), by worker 0, with what it books
   in tm->serial_value (contact), serial_work (constraints) and serial_colliders, and its
   status in serial_ok (1, 0: out of memory, -1: interrupted).  A node the sweep sends back
   rests where the step started it, where a collider that moved during the step may now
   be: the colliders act again on the nodes it sent back (only those), and if that moves
   any, the sweep runs again over the step, so that the surface still ends the step without
   crossing itself; up to MS_SWEEP_ROUNDS times.  A node the last sweep sends back (a
   collider driving it through the surface, which the sweep does not let it cross) stays
   where it started for this step, and the next step's contact takes it up again. */
static void sweep_serial(ms_team* tm, const double* x, double* x_next, double* v_next) {
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    double contact = 0.0, work = 0.0, colliders = 0.0;
    double energy = ms_mechanical_energy(m, x_next, v_next);
    int status = MS_OK;
    for (int round = 0; round < MS_SWEEP_ROUNDS; ++round) {
        int64_t sent_back = 0;
        double removed = 0.0;
        const unsigned char* back = NULL;
        status = ms_self_contact(m, s, x, x_next, v_next, tm->interrupt, &sent_back, &removed, &back);
        if (status != MS_OK || sent_back == 0) break;
        const double sent = ms_mechanical_energy(m, x_next, v_next);
        contact += removed;
        work += sent - energy + removed;
        energy = sent;
        if (m->ncollider == 0 || round + 1 == MS_SWEEP_ROUNDS) break;
        /* a push's change in the colliders' frame is the change of the mechanical energy
           less the colliders' work (contact.c), springs included */
        const ms_contact again = ms_collide_again(m, s, x, x_next, v_next, tm->h, back);
        const double pushed = ms_mechanical_energy(m, x_next, v_next);
        ms_ledger share = {0};
        ms_book_contact(&share, pushed - energy - again.work);
        contact += share.contact;
        work += share.constraints;
        colliders += again.work;
        energy = pushed;
        if (again.pushes == 0) break;
    }
    tm->serial_ok = status == MS_OK ? 1 : status == MS_ERR_INTERRUPTED ? -1 : 0;
    tm->serial_value = contact;
    tm->serial_work = work;
    tm->serial_colliders = colliders;
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
            /* the springs' share of the pushes, by node block on every worker; every
               worker adds the blocks' sums in block order after the barrier, so all book
               the same and take the same decision below.  The marks it reads are cleared
               by the next step's contact, after the next step's barriers. */
            /* the prefetching pays only where the springs' lines are likely out of cache */
            const int rounds = m->nnode >= MS_PUSH_PREFETCH_NODES ? 3 : 0;
            for (int64_t b = w->node_first - 3; b < w->node_last; ++b) {
                /* the three rounds of prefetching for the blocks one to three ahead */
                for (int round = 0; round < rounds; ++round) {
                    const int64_t ahead = b + 3 - round;
                    int64_t begin, end;
                    if (ahead < w->node_first || ahead >= w->node_last || tm->nodes[ahead].contact.pushes == 0)
                        continue;
                    ms_node_block(tm, ahead, &begin, &end);
                    ms_push_prefetch(m, s, x_next, begin, end, round);
                }
                if (b < w->node_first) continue;
                int64_t begin, end;
                ms_node_block(tm, b, &begin, &end);
                tm->nodes[b].push_energy =
                    tm->nodes[b].contact.pushes > 0 ? ms_push_spring_energy(m, s, x_next, begin, end) : 0.0;
            }
            ms_sync(w);
            for (int64_t b = 0; b < tm->nnode_block; ++b) change += tm->nodes[b].push_energy;
        }
        ms_book_contact(booked, change);
    }
    if (m->opt.self_collision > 0.0 && m->nface > 0 && m->opt.self_contact_sweep) {
        /* The self-contact sweep, last, over the whole step x -> x_next (see selfcontact.c):
           what it sends back changes the mechanical energy; the kinetic energy the nodes
           lose is dissipated by contact, the rest is the constraints' work.  One worker
           (worker 0, the caller's thread, which also runs the caller's check in it). */
        if (ms_any_bad(tm)) return 0;
        if (w->id == 0) sweep_serial(tm, x, x_next, v_next);
        ms_sync(w);
        if (tm->serial_ok < 0) {
            w->stopped = 1; /* the caller's check stopped the sweep: the step is not taken */
            return 0;
        }
        if (!tm->serial_ok) return -1;
        booked->contact += tm->serial_value;
        booked->constraints += tm->serial_work;
        booked->colliders += tm->serial_colliders;
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

/* What one step call needs beyond the state. */
typedef struct call {
    ms_team team;
    int64_t n;
    double* start_energy; /* receives the energy of the state the call starts from, or NULL */
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

/* Worker 0 writes the energy of the state the call started from, once the sums by block of
   w->start_energy are complete (after a barrier). */
static void keep_start_energy(call* c, const ms_worker* w) {
    if (w->id != 0) return;
    const int node_blocks = (w->start_energy & MS_START_UPDATE) != 0;
    sum_energies(&c->team, node_blocks, c->start_energy);
}

/* The Euler methods in place: each step checks its update before writing it, so no copy
   of the state is kept (touching only x, v and f is what makes them fast and small).  The
   forces go to s->f_saved, and the last step's to f as well (unless the caller will not
   read them: ms_step_options.forces_unread), block by block as it writes them, so f holds the
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
        if (step == 0 && w->start_energy) keep_start_energy(c, w);
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
    if (c->book_numerical && c->start_energy != NULL && w->id == 0) sum_energies(tm, 1, c->start_energy);
    for (int64_t step = 0; step < c->n; ++step) {
        if (ms_should_stop(w)) break;
        ms_flow flow = no_flow;
        ms_ledger booked = {0};
        int finite = c->stages(w, x, v, x_next, v_next, t, &flow);
        if (step == 0 && w->start_energy) keep_start_energy(c, w);
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
    ms_worker_init(&c->team, &w, id);
    /* the large-step solvers sum the energy anyway (stage_energy); the Euler updates read
       every node's x and v */
    const ms_integrator integrator = c->team.m->opt.integrator;
    const int euler = integrator == MS_SYMPLECTIC_EULER || integrator == MS_EXPLICIT_EULER;
    if (c->start_energy != NULL && !c->book_numerical) w.start_energy = MS_START_FORCES | (euler ? MS_START_UPDATE : 0);
    if (c->in_place)
        run_in_place(c, &w);
    else
        run_buffered(c, &w);
    if (id == 0) c->interrupted = w.stopped;
    ms_restore_fp(found);
}

void ms_run_forces(const ms_model* m, ms_state* s, ms_flow* flow) {
    step_storage* storage = ms_workspace_get(s, MS_WORK_STEP);
    ms_layout_refresh(m, storage->layout);
    ms_team tm;
    ms_team_init(&tm, m, s, storage->layout, storage->node_sums, storage->block_flow, storage->block_energy, 1);
    ms_worker w;
    ms_worker_init(&tm, &w, 0);
    const ms_fp_mode found = ms_flush_subnormals(); /* as the steps compute (portable.h) */
    const ms_flow flows = ms_forces_flow(&tm, ms_stage_forces(&w, s->x, s->v, s->t, s->f));
    ms_restore_fp(found);
    if (flow != NULL) *flow = flows;
}

/* A thread request (0: every core, the state's count of them) as a number of workers. */
static int workers_for(int request, int cores) {
    const int threads = request > 0 ? request : cores > 0 ? cores : 1;
    return threads < MS_MAX_THREADS ? threads : MS_MAX_THREADS;
}

int ms_thread_count(const ms_model* m, const ms_state* s) {
    return workers_for(m->opt.threads > 0 ? m->opt.threads : s->default_threads, s->cores);
}

int ms_step_workers(const ms_model* m, const ms_state* s) {
    return m->nspring >= MS_PARALLEL_MIN_SPRINGS && m->opt.integrator != MS_PROJECTIVE ? ms_thread_count(m, s) : 1;
}

int ms_resolve_threads(int n) { return workers_for(n, n > 0 ? 0 : ms_cpu_count()); }

/* Storage a step call needs, allocated on first use. */
static int ensure_storage(const ms_model* m, ms_state* s, int in_place, ms_error* err) {
    const ms_integrator integrator = m->opt.integrator;
    if ((integrator == MS_VELOCITY_VERLET || integrator == MS_RK4 || integrator == MS_XPBD ||
         integrator == MS_PROJECTIVE) &&
        ms_state_ensure_work(m, s, err))
        return MS_ERR_MEMORY;
    if (integrator == MS_IMPLICIT_EULER && ms_implicit_prepare(m, s, err)) return MS_ERR_MEMORY;
    if (!in_place && ms_state_ensure_next(m, s, err)) return MS_ERR_MEMORY;
    if (m->ncollider > 0 && ms_contact_prepare(m, s, err)) return MS_ERR_MEMORY;
    if (integrator == MS_XPBD && ms_xpbd_ensure_colours(m, s, err)) return MS_ERR_MEMORY;
    return MS_OK;
}

int ms_step_call(const ms_model* m, ms_state* s, double h, int64_t n, int parameters, const ms_step_options* options,
                 ms_error* err) {
    const ms_interrupt* interrupt = options->interrupt;
    step_storage* storage = ms_workspace_get(s, MS_WORK_STEP);
    const ms_integrator integrator = m->opt.integrator;
    /* The Euler methods step in place unless something acts on the state after the
       integrator: the other integrators and those steps use the double buffer. */
    const int in_place = (integrator == MS_SYMPLECTIC_EULER || integrator == MS_EXPLICIT_EULER) &&
                         m->ncollider == 0 && !m->opt.strain_limiting && m->opt.self_collision == 0.0 &&
                         m->opt.energy_loss == 0.0;
    if (ensure_storage(m, s, in_place, err)) return MS_ERR_MEMORY;
    if (integrator == MS_PROJECTIVE) {
        const int status = ms_projective_prepare(m, s, h, interrupt, err);
        if (status != MS_OK) return status;
    }
    if (parameters) ms_layout_refresh(m, storage->layout);

    call c;
    memset(&c, 0, sizeof c);
    ms_team_init(&c.team, m, s, storage->layout, storage->node_sums, storage->block_flow, storage->block_energy,
                 parameters);
    if (integrator == MS_XPBD) ms_xpbd_prepare(m, s, h, parameters);
    c.team.h = h;
    c.team.before_contact = m->ncollider > 0 ? options->before_contact : NULL;
    c.n = n;
    c.start_energy = options->start_energy;
    c.in_place = in_place;
    c.write_forces = !options->forces_unread;
    c.explicit_euler = integrator == MS_EXPLICIT_EULER;
    /* The large-step solvers damp by themselves, and the ledger books it; the explicit
       integrators' drift is their error, left in sight. */
    c.book_numerical = integrator == MS_IMPLICIT_EULER || integrator == MS_PROJECTIVE || integrator == MS_XPBD;
    c.stages = integrator_stages[integrator];
    if (interrupt != NULL && interrupt->check != NULL) {
        c.team.interrupt = interrupt;
        c.team.stride[0] = c.team.stride[1] = 1;
        c.team.paced_at = c.team.checked_at = ms_clock_seconds();
    }
    /* Large networks step on several workers; projective dynamics on one. */
    int count = ms_step_workers(m, s);
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
