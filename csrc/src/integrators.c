/* The integrators, as stages over node blocks (step.h): each evaluates forces with
 * ms_stage_forces, updates its worker's nodes and finishes each of them with
 * ms_finish_nodes.  Pinned nodes have inverse mass 0, so every integrator moves them with
 * their own velocity and never changes it, without a branch.
 */
#include <math.h>
#include <string.h>

#include "step.h"
#include "projective.h"
#include "xpbd.h"

/* Accumulates (value - value), which stays 0 exactly while every value is finite. */
#define PROBE(probe, value) ((probe) += (value) - (value))

static int euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                        ms_flow* flow, int explicit_euler) {
    ms_team* tm = w->team;
    ms_state* s = tm->s;
    const int ticket = ms_stage_forces(w, x, v, t, s->f);
    MS_FOR_MY_NODES(w, b, begin, end) {
        ms_energy_request request;
        const int finite = tm->euler(s->inv_mass, x, v, s->f, tm->h, explicit_euler, begin, end, x_out, v_out,
                                     ms_start_request(w, b, &request));
        ms_finish_nodes(w, b, begin, end, !finite, x, x_out, v_out);
    }
    ms_sync(w);
    const ms_flow rate = ms_forces_flow(tm, ticket);
    ms_flow_add(flow, &rate, tm->h); /* the power at the start, as the force */
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}

static int explicit_euler(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                          ms_flow* flow) {
    return euler_stages(w, x, v, x_out, v_out, t, flow, 1);
}

static int symplectic_euler(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                            ms_flow* flow) {
    return euler_stages(w, x, v, x_out, v_out, t, flow, 0);
}

static int velocity_verlet(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
                           double* MS_RESTRICT x_out, double* MS_RESTRICT v_out, double t, ms_flow* flow) {
    /* v1/2 = v + h/2 a(x, v);  x' = x + h v1/2;  v' = v1/2 + h/2 a(x', v~), where
       v~ = v1/2 + h/2 a(x', v1/2) predicts the end velocity for the dampers and drag.
       Without that prediction velocity-dependent forces would see v1/2 and the method
       would drop to first order.  The flows use the trapezoid rule on (start, v~). */
    ms_team* tm = w->team;
    ms_state* s = tm->s;
    const double h = tm->h, half = 0.5 * h;
    const int64_t n3 = 3 * tm->m->nnode;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    double* MS_RESTRICT v_predicted = s->work;
    double* MS_RESTRICT f_end = s->work + n3;
    const double* external = ms_active_external(s);

    const int start = ms_stage_forces(w, x, v, t, s->f);
    const double* MS_RESTRICT f = s->f;
    MS_FOR_MY_NODES(w, b, begin, end)
    for (int64_t i = begin; i < end; ++i) {
        const double wi = half * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            v_out[q] = v[q] + wi * f[q]; /* v1/2 */
            x_out[q] = x[q] + h * v_out[q];
        }
    }
    ms_sync(w);
    const ms_flow rate_start = ms_forces_flow(tm, start);
    int ending = ms_stage_forces(w, x_out, v_out, t + h, f_end);
    if (s->velocity_forces) {
        MS_FOR_MY_NODES(w, b, begin, end)
        for (int64_t i = begin; i < end; ++i) {
            const double wi = half * inv_mass[i];
            for (int a = 0; a < 3; ++a) v_predicted[3 * i + a] = v_out[3 * i + a] + wi * f_end[3 * i + a];
        }
        ms_sync(w);
        ending = ms_stage_forces(w, x_out, v_predicted, t + h, f_end);
    }
    MS_FOR_MY_NODES(w, b, begin, end) {
        double probe = 0.0;
        for (int64_t i = begin; i < end; ++i) {
            const double wi = half * inv_mass[i];
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                v_out[q] += wi * f_end[q];
                PROBE(probe, x_out[q]);
                PROBE(probe, v_out[q]);
            }
        }
        /* The external force's power at the end is taken with the end velocity itself (the
           forces above saw v1/2 or the prediction): the work of a constant force is then exact. */
        if (external != NULL) tm->nodes[b].power = ms_external_power(tm->m, external, v_out, begin, end);
        ms_finish_nodes(w, b, begin, end, probe != 0.0, x, x_out, v_out);
    }
    ms_sync(w);
    ms_flow rate_end = ms_forces_flow(tm, ending);
    if (external != NULL) {
        rate_end.external = 0.0;
        for (int64_t b = 0; b < tm->nnode_block; ++b) rate_end.external += tm->nodes[b].power;
    }
    ms_flow_add(flow, &rate_start, half);
    ms_flow_add(flow, &rate_end, half);
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}

static int rk4(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
               double* MS_RESTRICT v_out, double t, ms_flow* flow) {
    /* Classical RK4 on (x, v) with slopes (v, a):  stage k evaluates a at
       (x + c_k h v_{k-1}, v + c_k h a_{k-1}) with c = (0, 1/2, 1/2, 1), and the update
       weights the four slopes by (1, 2, 2, 1) / 6.  The flows are integrated with the same
       weights. */
    ms_team* tm = w->team;
    ms_state* s = tm->s;
    const double h = tm->h;
    const int64_t n3 = 3 * tm->m->nnode;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    double* MS_RESTRICT x_stage = s->work;
    double* MS_RESTRICT v_stage = s->work + n3;
    double* MS_RESTRICT f_stage = s->work + 2 * n3;

    int ticket = ms_stage_forces(w, x, v, t, s->f);
    const double* MS_RESTRICT f = s->f;
    MS_FOR_MY_NODES(w, b, begin, end)
    for (int64_t i = begin; i < end; ++i) {
        const double im = inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            const double acceleration = im * f[q];
            x_out[q] = x[q] + (h / 6.0) * v[q];
            v_out[q] = v[q] + (h / 6.0) * acceleration;
            x_stage[q] = x[q] + 0.5 * h * v[q];
            v_stage[q] = v[q] + 0.5 * h * acceleration;
        }
    }
    ms_sync(w);
    ms_flow rate = ms_forces_flow(tm, ticket);
    ms_flow_add(flow, &rate, h / 6.0);
    static const double stage_weight[3] = {2.0, 2.0, 1.0}; /* slopes 2, 3, 4 */
    static const double next_offset[3] = {0.5, 1.0, 0.0};  /* where slope k+1 is taken */
    static const double stage_time[3] = {0.5, 0.5, 1.0};   /* when slopes 2, 3, 4 are taken */
    for (int stage = 0; stage < 3; ++stage) {
        const double weight = stage_weight[stage] * h / 6.0;
        ticket = ms_stage_forces(w, x_stage, v_stage, t + stage_time[stage] * h, f_stage);
        const double offset = next_offset[stage] * h;
        MS_FOR_MY_NODES(w, b, begin, end) {
            double probe = 0.0;
            for (int64_t i = begin; i < end; ++i) {
                const double im = inv_mass[i];
                for (int a = 0; a < 3; ++a) {
                    const int64_t q = 3 * i + a;
                    const double acceleration = im * f_stage[q];
                    const double velocity = v_stage[q];
                    x_out[q] += weight * velocity;
                    v_out[q] += weight * acceleration;
                    x_stage[q] = x[q] + offset * velocity;
                    v_stage[q] = v[q] + offset * acceleration;
                    PROBE(probe, x_out[q]);
                    PROBE(probe, v_out[q]);
                }
            }
            if (stage == 2) ms_finish_nodes(w, b, begin, end, probe != 0.0, x, x_out, v_out);
        }
        ms_sync(w);
        rate = ms_forces_flow(tm, ticket);
        ms_flow_add(flow, &rate, weight);
    }
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}

/* Extended position-based dynamics (xpbd.c): the forces other than the springs' kick the
   velocities and predict the positions; the springs then act as compliant constraints
   on the positions, m->opt.iterations sweeps over their colours (default 1); the
   velocity is the step's displacement over h.  s->f receives the total force at the start
   (springs included, as for every integrator), and the flows are its power at the start
   times h (the dampers' too: a first-order estimate of what the constraints' damping
   removes). */
static int xpbd(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
                double* MS_RESTRICT v_out, double t, ms_flow* flow) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    const double h = tm->h;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    const ms_colouring* colours = s->constraints;
    const int ticket = ms_stage_forces_and_own(w, x, v, t, s->f, s->work);
    const double* MS_RESTRICT f = s->work;
    double* rows = colours->rows; /* the projected positions as rows (x, y, z, 0) */
    double* start_rows = rows + 4 * m->nnode;
    MS_FOR_MY_NODES(w, b, begin, end)
    for (int64_t i = begin; i < end; ++i) {
        const double wi = h * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            v_out[q] = v[q] + wi * f[q];
            rows[4 * i + a] = x[q] + h * v_out[q];
            start_rows[4 * i + a] = x[q];
        }
    }
    ms_sync(w);
    const ms_flow rate = ms_forces_flow(tm, ticket);
    const int iterations = m->opt.iterations > 0 ? m->opt.iterations : 1;
    const int64_t ncolour = colours->ncolour, nregion = colours->nregion;
    const int64_t* boundary = colours->start + nregion * ncolour; /* the boundary's colour segments */
    /* a small boundary, or one of many small colours (a node with many springs), is one
       worker's: two barriers per sweep, not one per colour */
    const int64_t boundary_springs = boundary[ncolour] - boundary[0];
    const int split_boundary = tm->count > 1 && 8 * boundary_springs > colours->nspring &&
                               boundary_springs >= 64 * ncolour;
    for (int iteration = 0; iteration < iterations && !ms_should_stop(w); ++iteration) {
        const int first_sweep = iteration == 0;
        for (int64_t g = nregion * w->id / tm->count; g < nregion * (w->id + 1) / tm->count; ++g)
            for (int64_t q = 0; q < ncolour; ++q)
                colours->project(colours, colours->start[g * ncolour + q], colours->start[g * ncolour + q + 1],
                                 start_rows, rows, first_sweep);
        ms_sync(w);
        for (int64_t q = 0; q < ncolour; ++q) {
            /* the springs of one colour share no node: any split gives the same bits */
            const int64_t first = boundary[q], count = boundary[q + 1] - first;
            if (split_boundary) {
                colours->project(colours, first + count * w->id / tm->count,
                                 first + count * (w->id + 1) / tm->count, start_rows, rows, first_sweep);
                ms_sync(w);
            } else if (w->id == 0) {
                colours->project(colours, first, first + count, start_rows, rows, first_sweep);
            }
        }
        if (!split_boundary) ms_sync(w);
    }
    MS_FOR_MY_NODES(w, b, begin, end) {
        double probe = 0.0;
        for (int64_t i = begin; i < end; ++i)
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                x_out[q] = rows[4 * i + a];
                /* v' = (x' - x) / h, as the kick's velocity plus what the projections moved
                   beyond the prediction x + h v^: exactly v^ where nothing moved (pins too) */
                v_out[q] += (x_out[q] - (x[q] + h * v_out[q])) / h;
                PROBE(probe, x_out[q]);
                PROBE(probe, v_out[q]);
            }
        ms_finish_nodes(w, b, begin, end, probe != 0.0, x, x_out, v_out);
    }
    ms_sync(w);
    ms_flow_add(flow, &rate, h);
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}

/* Projective dynamics (projective.c), on one worker (the driver gives it no others): the
   node forces, the dampers and the air at the start form f_ext; the local/global
   iterations do the springs.  s->f and the flows as for xpbd. */
static int projective(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                      ms_flow* flow) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    const int ticket = ms_stage_forces_and_own(w, x, v, t, s->f, s->work);
    ms_sync(w); /* s->f and the flows complete */
    const ms_flow rate = ms_forces_flow(tm, ticket);
    double* f_ext = s->work;
    for (int64_t sp = 0; sp < m->nspring; ++sp) {
        if (!(m->c[sp] > 0.0)) continue;
        const int64_t i = m->springs[2 * sp], j = m->springs[2 * sp + 1];
        double force[3]; /* the damper alone: the spring's formula with k = 0 */
        ms_spring_force(x + 3 * i, x + 3 * j, v + 3 * i, v + 3 * j, m->rest[sp], 0.0, m->c[sp], force);
        for (int a = 0; a < 3; ++a) {
            f_ext[3 * i + a] += force[a];
            f_ext[3 * j + a] -= force[a];
        }
    }
    const int finite = ms_projective_step(w, m, s, f_ext, x, v, x_out, v_out, tm->h);
    MS_FOR_MY_NODES(w, b, begin, end)
    ms_finish_nodes(w, b, begin, end, !finite, x, x_out, v_out);
    ms_sync(w);
    ms_flow_add(flow, &rate, tm->h);
    return !ms_any_bad(tm) && ms_flow_finite(flow);
}

/* Backward Euler (implicit.c). */
static int implicit_euler(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                          ms_flow* flow) {
    ms_team* tm = w->team;
    const int finite = ms_implicit_stages(w, x, v, x_out, v_out, t, flow);
    MS_FOR_MY_NODES(w, b, begin, end)
    ms_finish_nodes(w, b, begin, end, !finite, x, x_out, v_out);
    ms_sync(w);
    return !ms_any_bad(tm);
}

const ms_integrator_stages ms_integrator_table[MS_INTEGRATOR_COUNT] = {
    explicit_euler, symplectic_euler, velocity_verlet, rk4, implicit_euler, projective, xpbd};
