/* Integrators and the step driver.
 *
 * A step reads the current (x, v) and writes the next one into the other half of a
 * double buffer, so the last finite state is always intact: when a step produces a
 * non-finite value the driver keeps the previous half and reports the divergence.  The
 * Euler methods without constraints step in place instead, checking each update before
 * writing it.
 * Pinned nodes have inverse mass 0, so every integrator below moves them with their own
 * velocity and never changes it, without a branch.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Accumulates (value - value), which stays 0 exactly while every value is finite. */
#define PROBE(probe, value) ((probe) += (value) - (value))

/* The Euler update of nodes [begin, end) from x, v and the force f, written to x_out and
   v_out (which may be x and v themselves: each value is read before it is written), or,
   with x_out NULL, only checked.  Returns 1 if every new value is finite.  A step in place
   checks first and commits only a finite update, so the state before it needs no copy: a
   divergence leaves it untouched.  Check and write evaluate the same expressions, so the
   check speaks for the values written. */
static inline int euler_update(const double* restrict inv_mass, const double* x, const double* v,
                               const double* restrict f, double h, int explicit_euler, int64_t begin, int64_t end,
                               double* x_out, double* v_out) {
    /* independent probes per component keep the finiteness check off the critical path */
    double probe[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int64_t i = begin; i < end; ++i) {
        const double w = h * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            double position, velocity;
            if (explicit_euler) {
                position = x[q] + h * v[q]; /* x' = x + h v;  v' = v + h a(x, v) */
                velocity = v[q] + w * f[q];
            } else {
                velocity = v[q] + w * f[q]; /* v' = v + h a(x, v);  x' = x + h v' */
                position = x[q] + h * velocity;
            }
            if (x_out != NULL) {
                x_out[q] = position;
                v_out[q] = velocity;
            }
            PROBE(probe[a], position);
            PROBE(probe[3 + a], velocity);
        }
    }
    return probe[0] + probe[1] + probe[2] + probe[3] + probe[4] + probe[5] == 0.0;
}

#if defined(MS_AVX2_CODE)
/* euler_update four nodes (twelve doubles, three vectors) at a time: the same expressions
   in the same order, so the same values bit for bit. */
MS_AVX2 static int euler_update_avx2(const double* restrict inv_mass, const double* x, const double* v,
                                     const double* restrict f, double h, int explicit_euler, int64_t begin,
                                     int64_t end, double* x_out, double* v_out) {
    const __m256d step = _mm256_set1_pd(h);
    __m256d probe = _mm256_setzero_pd();
    int64_t i = begin;
    for (; i + 4 <= end; i += 4) {
        /* h / m of nodes i..i+3, spread over their twelve components */
        const __m256d w = _mm256_mul_pd(step, _mm256_loadu_pd(inv_mass + i));
        const __m256d spread[3] = {_mm256_permute4x64_pd(w, 0x40), _mm256_permute4x64_pd(w, 0xA5),
                                   _mm256_permute4x64_pd(w, 0xFE)};
        __m256d position[3], velocity[3];
        for (int part = 0; part < 3; ++part) {
            const int64_t q = 3 * i + 4 * part;
            const __m256d xq = _mm256_loadu_pd(x + q), vq = _mm256_loadu_pd(v + q);
            const __m256d fq = _mm256_loadu_pd(f + q);
            if (explicit_euler) {
                position[part] = _mm256_add_pd(xq, _mm256_mul_pd(step, vq));
                velocity[part] = _mm256_add_pd(vq, _mm256_mul_pd(spread[part], fq));
            } else {
                velocity[part] = _mm256_add_pd(vq, _mm256_mul_pd(spread[part], fq));
                position[part] = _mm256_add_pd(xq, _mm256_mul_pd(step, velocity[part]));
            }
            probe = _mm256_add_pd(probe, _mm256_sub_pd(position[part], position[part]));
            probe = _mm256_add_pd(probe, _mm256_sub_pd(velocity[part], velocity[part]));
        }
        if (x_out != NULL)
            for (int part = 0; part < 3; ++part) {
                _mm256_storeu_pd(x_out + 3 * i + 4 * part, position[part]);
                _mm256_storeu_pd(v_out + 3 * i + 4 * part, velocity[part]);
            }
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, probe);
    const int tail = euler_update(inv_mass, x, v, f, h, explicit_euler, i, end, x_out, v_out);
    return tail && lanes[0] + lanes[1] + lanes[2] + lanes[3] == 0.0;
}
#endif

int ms_euler_into(const double* inv_mass, const double* x, const double* v, const double* f, double h,
                  int explicit_euler, int64_t begin, int64_t end, double* x_out, double* v_out) {
#if defined(MS_AVX2_CODE)
    if (ms_avx2_supported()) return euler_update_avx2(inv_mass, x, v, f, h, explicit_euler, begin, end, x_out, v_out);
#endif
    return euler_update(inv_mass, x, v, f, h, explicit_euler, begin, end, x_out, v_out);
}

int ms_euler_check(const double* inv_mass, const double* x, const double* v, const double* f, double h,
                   int explicit_euler, int64_t begin, int64_t end) {
    return ms_euler_into(inv_mass, x, v, f, h, explicit_euler, begin, end, NULL, NULL);
}

void ms_euler_commit(const double* inv_mass, double* x, double* v, const double* f, double h, int explicit_euler,
                     int64_t begin, int64_t end) {
    ms_euler_into(inv_mass, x, v, f, h, explicit_euler, begin, end, x, v);
}

/* The two Euler methods as double-buffered steps, for steps with constraints, colliders or
   energy loss; without them the driver steps in place (euler_in_place below).  Both take
   the power at the start of the step, as they take the force. */

int ms_step_explicit_euler(const ms_model* m, ms_state* s, const double* x, const double* v, double* x_out,
                           double* v_out, double h, ms_flow* flow) {
    ms_flow rate;
    ms_step_forces(m, s, x, v, s->t, s->f, &rate);
    ms_flow_add(flow, &rate, h);
    return ms_euler_into(s->inv_mass, x, v, s->f, h, 1, 0, m->nnode, x_out, v_out);
}

int ms_step_symplectic_euler(const ms_model* m, ms_state* s, const double* x, const double* v, double* x_out,
                             double* v_out, double h, ms_flow* flow) {
    ms_flow rate;
    ms_step_forces(m, s, x, v, s->t, s->f, &rate);
    ms_flow_add(flow, &rate, h);
    return ms_euler_into(s->inv_mass, x, v, s->f, h, 0, 0, m->nnode, x_out, v_out);
}

/* One Euler step in place (no constraints, colliders or energy loss).  Returns 1 if it
   was taken, 0 if it would have left a non-finite value, and then x and v are as they
   were (s->f holds the forces that would have been applied). */
static int euler_in_place(const ms_model* m, ms_state* s, double h, ms_flow* flow) {
    const int explicit_euler = m->opt.integrator == MS_EXPLICIT_EULER;
    ms_flow rate;
    ms_step_forces(m, s, s->x, s->v, s->t, s->f, &rate);
    ms_flow_add(flow, &rate, h);
    if (!ms_flow_finite(flow) || !ms_euler_check(s->inv_mass, s->x, s->v, s->f, h, explicit_euler, 0, m->nnode))
        return 0;
    ms_euler_commit(s->inv_mass, s->x, s->v, s->f, h, explicit_euler, 0, m->nnode);
    return 1;
}

/* Returns non-zero if some force depends on velocity (a damper or drag). */
static int has_velocity_forces(const ms_model* m) {
    if (m->opt.drag > 0.0) return 1;
    const ms_air* air = &m->opt.air;
    if (m->nface > 0 && air->density > 0.0 && (air->drag_coefficient > 0.0 || air->lift_coefficient > 0.0)) return 1;
    for (int64_t s = 0; s < m->nspring; ++s)
        if (m->c[s] > 0.0) return 1;
    return 0;
}

int ms_step_velocity_verlet(const ms_model* m, ms_state* s, const double* restrict x,
                            const double* restrict v, double* restrict x_out, double* restrict v_out,
                            double h, ms_flow* flow) {
    /* v1/2 = v + h/2 a(x, v);  x' = x + h v1/2;  v' = v1/2 + h/2 a(x', v~), where
       v~ = v1/2 + h/2 a(x', v1/2) predicts the end velocity for the dampers and drag.
       Without that prediction velocity-dependent forces would see v1/2 and the method
       would drop to first order.  The flows use the trapezoid rule on (start, v~). */
    const int64_t n3 = 3 * m->nnode;
    const double half = 0.5 * h;
    const double* restrict inv_mass = s->inv_mass;
    double* restrict v_predicted = s->work;
    double* restrict f_end = s->work + n3;

    ms_flow rate_start, rate_end;
    ms_step_forces(m, s, x, v, s->t, s->f, &rate_start);
    const double* restrict f = s->f;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double w = half * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            v_out[q] = v[q] + w * f[q]; /* v1/2 */
            x_out[q] = x[q] + h * v_out[q];
        }
    }
    ms_step_forces(m, s, x_out, v_out, s->t + h, f_end, &rate_end);
    if (s->velocity_forces) {
        for (int64_t i = 0; i < m->nnode; ++i) {
            const double w = half * inv_mass[i];
            for (int a = 0; a < 3; ++a) v_predicted[3 * i + a] = v_out[3 * i + a] + w * f_end[3 * i + a];
        }
        ms_step_forces(m, s, x_out, v_predicted, s->t + h, f_end, &rate_end);
    }
    double probe = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double w = half * inv_mass[i];
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            v_out[q] += w * f_end[q];
            PROBE(probe, x_out[q]);
            PROBE(probe, v_out[q]);
        }
    }
    /* The external force's power at the end is taken with the end velocity itself (the
       forces above saw v1/2 or the prediction): the work of a constant force is then exact. */
    if (ms_active_external(s) != NULL) rate_end.external = ms_external_power(m, s->external, v_out);
    ms_flow_add(flow, &rate_start, half);
    ms_flow_add(flow, &rate_end, half);
    return probe == 0.0 && ms_flow_finite(flow);
}

int ms_step_rk4(const ms_model* m, ms_state* s, const double* restrict x, const double* restrict v,
                double* restrict x_out, double* restrict v_out, double h, ms_flow* flow) {
    /* Classical RK4 on (x, v) with slopes (v, a):  stage k evaluates a at
       (x + c_k h v_{k-1}, v + c_k h a_{k-1}) with c = (0, 1/2, 1/2, 1), and the update
       weights the four slopes by (1, 2, 2, 1) / 6.  The flows are integrated with the same
       weights. */
    const int64_t nnode = m->nnode, n3 = 3 * nnode;
    const double* restrict inv_mass = s->inv_mass;
    double* restrict x_stage = s->work;
    double* restrict v_stage = s->work + n3;
    double* restrict f_stage = s->work + 2 * n3;

    ms_flow rate;
    ms_step_forces(m, s, x, v, s->t, s->f, &rate);
    ms_flow_add(flow, &rate, h / 6.0);
    const double* restrict f = s->f;
    for (int64_t i = 0; i < nnode; ++i) {
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
    static const double stage_weight[3] = {2.0, 2.0, 1.0}; /* slopes 2, 3, 4 */
    static const double next_offset[3] = {0.5, 1.0, 0.0};  /* where slope k+1 is taken */
    static const double stage_time[3] = {0.5, 0.5, 1.0};   /* when slopes 2, 3, 4 are taken */
    for (int stage = 0; stage < 3; ++stage) {
        const double weight = stage_weight[stage] * h / 6.0;
        ms_step_forces(m, s, x_stage, v_stage, s->t + stage_time[stage] * h, f_stage, &rate);
        ms_flow_add(flow, &rate, weight);
        const double offset = next_offset[stage] * h;
        for (int64_t i = 0; i < nnode; ++i) {
            const double im = inv_mass[i];
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                const double acceleration = im * f_stage[q];
                const double velocity = v_stage[q];
                x_out[q] += weight * velocity;
                v_out[q] += weight * acceleration;
                x_stage[q] = x[q] + offset * velocity;
                v_stage[q] = v[q] + offset * acceleration;
            }
        }
    }
    double probe = 0.0;
    for (int64_t q = 0; q < n3; ++q) {
        PROBE(probe, x_out[q]);
        PROBE(probe, v_out[q]);
    }
    return probe == 0.0 && ms_flow_finite(flow);
}

static const ms_step_function step_functions[MS_INTEGRATOR_COUNT] = {
    ms_step_explicit_euler, ms_step_symplectic_euler, ms_step_velocity_verlet, ms_step_rk4,
    ms_step_implicit_euler};

/* The references' "energy loss": free velocities scaled by (1 - loss) after a step.  It
   is not a physical force and its effect depends on the step size.  Returns the kinetic
   energy it removed (J). */
static double apply_energy_loss(const ms_model* m, const ms_state* s, double* restrict v, double loss) {
    const double keep = 1.0 - loss;
    const double removed_fraction = 1.0 - keep * keep;
    double removed = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        if (s->inv_mass[i] == 0.0) continue;
        double* vi = v + 3 * i;
        removed += 0.5 * m->mass[i] * removed_fraction * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        vi[0] *= keep;
        vi[1] *= keep;
        vi[2] *= keep;
    }
    return removed;
}

/* One full step: the integrator, energy loss, then the constraints (strain limiting,
   self-collision, contacts: contacts last, so no node ends a step inside a collider).
   *booked receives what the step adds to the ledger.  Returns 1 if the new state is
   finite, 0 if not, -1 if memory ran out. */
static int advance(const ms_model* m, ms_state* s, ms_step_function step, const double* x, const double* v,
                   double* x_next, double* v_next, double h, ms_ledger* booked) {
    ms_flow flow = {0.0, 0.0, 0.0, 0.0, 0.0};
    int finite = step(m, s, x, v, x_next, v_next, h, &flow);
    ms_ledger_add_flow(booked, &flow);
    if (finite && m->opt.energy_loss > 0.0) booked->energy_loss += apply_energy_loss(m, s, v_next, m->opt.energy_loss);
    if (finite && (m->opt.strain_limiting || m->opt.self_collision > 0.0)) {
        /* Position corrections are not forces: what they change of the mechanical energy
           is booked as their work, less the approach velocity that self-collision removes
           (dissipated as contact), so the ledger stays exact. */
        const double before = ms_mechanical_energy(m, x_next, v_next);
        double removed = 0.0;
        if (m->opt.strain_limiting) ms_limit_strain(m, s->inv_mass, x_next, v_next, h);
        if (m->opt.self_collision > 0.0) {
            removed = ms_self_collide(m, s, x_next, v_next);
            if (removed < 0.0) return -1;
        }
        booked->contact += removed;
        booked->constraints += ms_mechanical_energy(m, x_next, v_next) - before + removed;
    }
    if (finite && m->ncollider > 0) {
        const ms_contact contact = ms_collide(m, s, x, x_next, v_next, h);
        booked->contact += contact.dissipated;
        booked->colliders += contact.work;
    }
    if (finite && (m->opt.strain_limiting || m->ncollider > 0 || m->opt.self_collision > 0.0))
        finite = ms_all_finite(x_next, 3 * (size_t)m->nnode) && ms_all_finite(v_next, 3 * (size_t)m->nnode);
    return finite && ms_ledger_finite(booked);
}

void ms_state_prepare(const ms_model* m, ms_state* s) {
    for (int64_t i = 0; i < m->nnode; ++i) s->inv_mass[i] = m->pinned[i] ? 0.0 : 1.0 / m->mass[i];
    s->velocity_forces = has_velocity_forces(m);
    s->external_active = 0;
    for (int64_t q = 0; s->external != NULL && q < 3 * m->nnode && !s->external_active; ++q)
        s->external_active = s->external[q] != 0.0;
    s->moving_pins = 0;
    for (int64_t i = 0; i < m->nnode && !s->moving_pins; ++i)
        s->moving_pins = m->pinned[i] && (s->v[3 * i] != 0.0 || s->v[3 * i + 1] != 0.0 || s->v[3 * i + 2] != 0.0);
}

int ms_step(ms_model* m, ms_state* s, double h, int64_t n, ms_error* err) {
    if (!isfinite(h) || h <= 0.0)
        return ms_error_set(err, MS_ERR_VALUE, "dt = %g must be a finite time step > 0 (s)", h);
    if (n < 1) return ms_error_set(err, MS_ERR_VALUE, "n = %lld must be >= 1 (number of steps)", (long long)n);
    if (ms_model_check_values(m, err)) return MS_ERR_VALUE;
    if (ms_state_check(m, s, err)) return MS_ERR_VALUE;
    const ms_integrator integrator = m->opt.integrator;
    ms_model_refresh_sorted(m);
    if (integrator == MS_VELOCITY_VERLET || integrator == MS_RK4)
        if (ms_state_ensure_work(m, s, err)) return MS_ERR_MEMORY;
    if (integrator == MS_IMPLICIT_EULER)
        if (ms_state_ensure_implicit_work(m, s, err)) return MS_ERR_MEMORY;
    /* The Euler methods step in place unless something acts on the state after the
       integrator: the other integrators and those steps use the double buffer. */
    const int in_place = (integrator == MS_SYMPLECTIC_EULER || integrator == MS_EXPLICIT_EULER) &&
                         m->ncollider == 0 && !m->opt.strain_limiting && m->opt.self_collision == 0.0 &&
                         m->opt.energy_loss == 0.0;
    if (!in_place && ms_state_ensure_next(m, s, err)) return MS_ERR_MEMORY;
    if (m->ncollider > 0) {
        if (ms_state_ensure_pushes(m, s, err)) return MS_ERR_MEMORY;
        memset(s->pushed, 0, (size_t)m->nnode); /* a diverged step may have left marks */
        ms_state_clearance(m, s);
    }
    ms_state_prepare(m, s);
    /* What the caller changed since the state was watched (not before the first step,
       which is the set-up of the initial state). */
    if (s->watched) {
        if (s->steps > 0) s->ledger.user += ms_mechanical_energy(m, s->x, s->v) - s->watched_energy;
        s->watched = 0;
    }

    const ms_step_function step = step_functions[integrator];
    const size_t bytes = sizeof(double) * 3 * (size_t)m->nnode;
    /* Every step overwrites f before it knows whether it diverges: a diverged call puts
       back the f it found, so nothing it returns with is non-finite. */
    memcpy(s->f_saved, s->f, bytes);
    int status = MS_OK;
    int64_t failed = -1; /* index within this call of a step that diverged */

    /* Large Euler networks step on the worker threads (in place, or through the double
       buffer when there are colliders); the loops below are for everything else, or for
       when no threads could be started. */
    int parallel = ms_parallel_eligible(m);
    if (parallel) {
        int unavailable = 0;
        const int64_t completed = ms_parallel_euler(m, s, h, n, &unavailable);
        if (unavailable)
            parallel = 0; /* no threads to be had: one thread below */
        else if (completed < n)
            failed = completed;
    }

    if (in_place) {
        /* Each step checks its update before writing it, so no copy of the state is
           kept: touching only x, v and f is what makes the Euler methods fast and small. */
        for (int64_t done = 0; done < n && !parallel; ++done) {
            ms_flow flow = {0.0, 0.0, 0.0, 0.0, 0.0};
            if (!euler_in_place(m, s, h, &flow)) {
                failed = done;
                break;
            }
            s->t += h;
            s->steps += 1;
            ms_ledger_add_flow(&s->ledger, &flow);
        }
    } else {
        /* Double-buffered: a step reads one half and writes the other, so the last
           finite state is always intact (these integrators read x and v after writing). */
        double* x = s->x;
        double* v = s->v;
        double* x_next = s->x_next;
        double* v_next = s->v_next;
        for (int64_t done = 0; done < n && !parallel; ++done) {
            ms_ledger booked = {0};
            int advanced = advance(m, s, step, x, v, x_next, v_next, h, &booked);
            if (advanced < 0) {
                status = ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating the self-collision grid");
                failed = done;
                break;
            }
            if (!advanced) {
                failed = done;
                break;
            }
            double* swap = x;
            x = x_next;
            x_next = swap;
            swap = v;
            v = v_next;
            v_next = swap;
            s->t += h;
            s->steps += 1;
            ms_ledger_add(&s->ledger, &booked);
            if (m->ncollider > 0) ms_move_colliders(m, h);
        }
        if (x != s->x) {
            /* The newest finite state is in the other half of the buffer: bring it home. */
            memcpy(s->x, x, bytes);
            memcpy(s->v, v, bytes);
        }
    }
    if (failed >= 0) memcpy(s->f, s->f_saved, bytes);
    if (failed >= 0 && status == MS_OK) {
        status = ms_error_set(err, MS_ERR_DIVERGED,
                              "the simulation diverged at step %lld (t = %g s): a position or velocity "
                              "became non-finite; the state was rolled back to the step before. "
                              "Use a smaller dt, more damping, or a more stable integrator",
                              (long long)(s->steps + 1), s->t);
        if (err != NULL) {
            err->step = s->steps + 1;
            err->time = s->t;
        }
    }
    if (s->watch_after_step) {
        s->watched_energy = ms_mechanical_energy(m, s->x, s->v);
        s->watched = 1;
    }
    if (status == MS_OK) ms_error_clear(err);
    return status;
}
