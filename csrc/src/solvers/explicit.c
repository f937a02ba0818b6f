/* The explicit integrators (explicit and symplectic Euler, velocity Verlet, RK4), as stages
 * over node blocks (kernels/team.h): each evaluates forces with ms_stage_forces, updates
 * its worker's nodes and finishes each of them with ms_finish_nodes.  Pinned nodes have
 * inverse mass 0, so every integrator moves them with their own velocity and never
 * changes it, without a branch.
 */
#include <math.h>
#include <string.h>

#include "solvers/solvers.h"

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

int ms_explicit_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                          ms_flow* flow) {
    return euler_stages(w, x, v, x_out, v_out, t, flow, 1);
}

int ms_symplectic_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                            ms_flow* flow) {
    return euler_stages(w, x, v, x_out, v_out, t, flow, 0);
}

int ms_velocity_verlet_stages(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v,
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
    const double* external = tm->external;

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
    if (tm->velocity_forces) {
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

int ms_rk4_stages(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
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
