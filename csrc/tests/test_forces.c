/* Forces and diagnostics: hand-computed two-node values, Newton's third law, zero-length
   springs, the largest eigenvalues (stability limits) and the vector spring blocks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"
#include "step/ranked.h"

/* Two nodes: node 0 at (0, 1, 0) with mass 2 and velocity (1, 0, 0); node 1 at (3, 5, 0)
   with mass 1 and velocity (0, 2, 0).  One spring: l = 5, L = 4, k = 10, c = 2, so
   n = (0.6, 0.8, 0), (v1 - v0).n = 1 and the tension is 10 * 1 + 2 * 1 = 12 N.
   Gravity (0, -10, 0). */
static ms_model* make_two_node_example(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    if (m == NULL) return NULL;
    m->mass[0] = 2.0;
    m->mass[1] = 1.0;
    m->x_initial[1] = 1.0;
    m->x_initial[3] = 3.0;
    m->x_initial[4] = 5.0;
    m->v_initial[0] = 1.0;
    m->v_initial[4] = 2.0;
    m->springs[0] = 0;
    m->springs[1] = 1;
    m->rest[0] = 4.0;
    m->k[0] = 10.0;
    m->c[0] = 2.0;
    m->opt.gravity[1] = -10.0;
    return m;
}

static int test_diagnostics_two_nodes(void) {
    ms_model* m = make_two_node_example();
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ENSURE(ms_model_check(m, &err) == MS_OK);
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    ENSURE(err.status == MS_OK);
    ENSURE(s->t == 0.0 && s->steps == 0 && ms_ledger_dissipated(&s->ledger) == 0.0);
    ENSURE(memcmp(s->x, m->x_initial, 6 * sizeof(double)) == 0);
    ENSURE(memcmp(s->v, m->v_initial, 6 * sizeof(double)) == 0);

    ms_energy e = ms_state_energy(m, s);
    ENSURE_NEAR(e.kinetic, 0.5 * 2.0 * 1.0 + 0.5 * 1.0 * 4.0, 1e-12);
    ENSURE_NEAR(e.spring, 0.5 * 10.0 * 1.0, 1e-12);
    ENSURE_NEAR(e.gravity, 2.0 * 10.0 * 1.0 + 1.0 * 10.0 * 5.0, 1e-12);
    ENSURE(e.dissipated == 0.0);

    double p[3];
    ms_state_momentum(m, s, p);
    ENSURE_NEAR(p[0], 2.0, 1e-12);
    ENSURE_NEAR(p[1], 2.0, 1e-12);
    ENSURE_NEAR(p[2], 0.0, 1e-12);

    double out[1];
    ms_spring_lengths(m, s, out);
    ENSURE_NEAR(out[0], 5.0, 1e-12);
    ms_spring_strain(m, s, out);
    ENSURE_NEAR(out[0], 0.25, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], 12.0, 1e-12);

    /* Total force: tension along n on node 0, the opposite on node 1, plus m g, minus
       drag * v, plus the external force on node 1.  Dissipated power is
       c ((v1 - v0).n)^2 + drag (|v0|^2 + |v1|^2) = 2 + 0.5 * 5. */
    m->opt.drag = 0.5;
    EXTERNAL(m, s)[3] = 1.0;
    EXTERNAL(m, s)[4] = 2.0;
    EXTERNAL(m, s)[5] = 3.0;
    double f[6];
    double power = forces_power(m, s->x, s->v, s->external, 0.0, f);
    ENSURE_NEAR(power, 4.5, 1e-12);
    const double expected_f[6] = {12.0 * 0.6 - 0.5, 12.0 * 0.8 - 20.0, 0.0,
                                  -12.0 * 0.6 + 1.0, -12.0 * 0.8 - 10.0 - 1.0 + 2.0, 3.0};
    for (int a = 0; a < 6; ++a) ENSURE_NEAR(f[a], expected_f[a], 1e-12);

    /* Pinning node 0 removes it from kinetic, gravity and momentum, not from the spring. */
    m->pinned[0] = 1;
    e = ms_state_energy(m, s);
    ENSURE_NEAR(e.kinetic, 2.0, 1e-12);
    ENSURE_NEAR(e.spring, 5.0, 1e-12);
    ENSURE_NEAR(e.gravity, 50.0, 1e-12);
    ms_state_momentum(m, s, p);
    ENSURE_NEAR(p[0], 0.0, 1e-12);
    ENSURE_NEAR(p[1], 2.0, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], 12.0, 1e-12);
    /* Drag on a pinned node does no work: only node 1 counts, c * 1 + 0.5 * |v1|^2. */
    power = forces_power(m, s->x, s->v, s->external, 0.0, f);
    ENSURE_NEAR(power, 2.0 + 0.5 * 4.0, 1e-12);
    for (int a = 3; a < 6; ++a) ENSURE_NEAR(f[a], expected_f[a], 1e-12);

    /* A compressed spring pushes: negative strain and tension. */
    m->rest[0] = 6.0;
    s->v[0] = s->v[4] = 0.0;
    ms_spring_strain(m, s, out);
    ENSURE_NEAR(out[0], -1.0 / 6.0, 1e-12);
    ms_spring_tension(m, s, out);
    ENSURE_NEAR(out[0], -10.0, 1e-12);

    /* Zero rest length: infinite strain when stretched, zero when also of zero length. */
    m->rest[0] = 0.0;
    ms_spring_strain(m, s, out);
    ENSURE(isinf(out[0]) && out[0] > 0.0);
    memcpy(s->x + 3, s->x, 3 * sizeof(double));
    ms_spring_strain(m, s, out);
    ENSURE(out[0] == 0.0);
    ms_spring_lengths(m, s, out);
    ENSURE(out[0] == 0.0);

    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_newton_third_law(void) {
    ms_model* m = make_cloth(5, 0, 12345u);
    ENSURE(m != NULL);
    m->opt.gravity[1] = 0.0;
    m->opt.drag = 0.0;
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 99u;
    for (int64_t i = 0; i < 3 * m->nnode; ++i) {
        s->x[i] += 0.02 * lcg_uniform(&seed);
        s->v[i] = lcg_uniform(&seed);
    }
    double* f = malloc(3 * (size_t)m->nnode * sizeof(double));
    ENSURE(f != NULL);
    double power = forces_power(m, s->x, s->v, s->external, 0.0, f);

    double total[3] = {0.0, 0.0, 0.0}, torque[3] = {0.0, 0.0, 0.0}, scale = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const double* x = s->x + 3 * i;
        const double* fi = f + 3 * i;
        for (int a = 0; a < 3; ++a) {
            total[a] += fi[a];
            scale += fabs(fi[a]);
        }
        torque[0] += x[1] * fi[2] - x[2] * fi[1];
        torque[1] += x[2] * fi[0] - x[0] * fi[2];
        torque[2] += x[0] * fi[1] - x[1] * fi[0];
    }
    ENSURE(scale > 1.0);
    for (int a = 0; a < 3; ++a) {
        ENSURE_NEAR(total[a], 0.0, 1e-13 * scale);
        /* Spring and damper forces are central, so they exert no net torque either. */
        ENSURE_NEAR(torque[a], 0.0, 1e-13 * scale);
    }

    /* The returned power is the damper dissipation, computed here independently. */
    double expected_power = 0.0;
    for (int64_t sp = 0; sp < m->nspring; ++sp) {
        const double* xi = s->x + 3 * m->springs[2 * sp];
        const double* xj = s->x + 3 * m->springs[2 * sp + 1];
        const double* vi = s->v + 3 * m->springs[2 * sp];
        const double* vj = s->v + 3 * m->springs[2 * sp + 1];
        double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        double l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        double rate = ((vj[0] - vi[0]) * d[0] + (vj[1] - vi[1]) * d[1] + (vj[2] - vi[2]) * d[2]) / l;
        expected_power += m->c[sp] * rate * rate;
    }
    ENSURE(expected_power > 0.0);
    ENSURE_NEAR(power, expected_power, 1e-12 * expected_power);

    free(f);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

static int test_zero_length_spring(void) {
    ms_error err = fresh_error();
    ms_model* m = ms_model_create(2, 1, 0, &err);
    ENSURE(m != NULL);
    for (int i = 0; i < 2; ++i) {
        m->mass[i] = 1.0;
        m->x_initial[3 * i + 0] = 1.0;
        m->x_initial[3 * i + 1] = 2.0;
        m->x_initial[3 * i + 2] = 3.0;
    }
    m->v_initial[0] = 1.0;
    m->v_initial[4] = -1.0;
    m->springs[1] = 1;
    m->rest[0] = 0.5;
    m->k[0] = 10.0;
    m->c[0] = 1.0;
    m->opt.gravity[1] = 0.0;
    ENSURE(ms_model_check(m, &err) == MS_OK);

    for (int integrator = 0; integrator < MS_INTEGRATOR_COUNT; ++integrator) {
        m->opt.integrator = (ms_integrator)integrator;
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double f[6];
        double power = forces_power(m, s->x, s->v, s->external, 0.0, f);
        for (int a = 0; a < 6; ++a) ENSURE(f[a] == 0.0);
        ENSURE(isfinite(power));
        double out[1];
        ms_spring_lengths(m, s, out);
        ENSURE(out[0] == 0.0);
        ms_spring_strain(m, s, out);
        ENSURE_NEAR(out[0], -1.0, 1e-15);
        ms_spring_tension(m, s, out);
        ENSURE(isfinite(out[0]));
        ms_energy e = ms_state_energy(m, s);
        ENSURE_NEAR(e.spring, 0.5 * 10.0 * 0.25, 1e-15);

        /* The first step starts from zero force: the nodes move apart ballistically. */
        ENSURE(ms_step(m, s, 1e-3, 1, NULL, &err) == MS_OK);
        for (int a = 0; a < 6; ++a) ENSURE(s->f[a] == 0.0);
        ENSURE(ms_step(m, s, 1e-3, 200, NULL, &err) == MS_OK);
        ENSURE(all_finite(s->x, 6) && all_finite(s->v, 6) && all_finite(s->f, 6));
        ENSURE(isfinite(ms_ledger_dissipated(&s->ledger)));
        ms_state_destroy(s);
    }
    ms_model_destroy(m);
    return 0;
}

static int test_max_eigenvalues_pair(void) {
    /* One free node on a spring from a pinned node: M^-1 K has k / m along the spring and
       k (1 - L / l) / m across it, so its largest eigenvalue is k / m; M^-1 C is c / m
       along the spring, plus drag / m in every direction. */
    const double k = 40.0, mass = 0.25, c = 0.6;
    const double stretches[2] = {0.0, 0.3};
    for (int r = 0; r < 2; ++r) {
        ms_model* m = make_oscillator(k, mass, c, stretches[r], MS_SYMPLECTIC_EULER);
        ENSURE(m != NULL);
        ms_error err = fresh_error();
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        double omega2 = -1.0, gamma = -1.0;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE(err.status == MS_OK);
        ENSURE_NEAR(omega2, k / mass, 1e-8 * k / mass);
        ENSURE_NEAR(gamma, c / mass, 1e-8 * c / mass);
        m->opt.drag = 0.05;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE_NEAR(omega2, k / mass, 1e-8 * k / mass);
        ENSURE_NEAR(gamma, (c + 0.05) / mass, 1e-8 * (c + 0.05) / mass);
        /* Pinning the free node leaves nothing to vibrate. */
        m->pinned[1] = 1;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE(omega2 == 0.0 && gamma == 0.0);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

static int test_max_eigenvalues_chain(void) {
    /* A uniform chain of N free nodes hanging off a pinned one, springs at rest length
       along x.  Along the chain K / k is tridiagonal (2 on the diagonal but 1 at the free
       end, -1 beside it): the fixed-free chain, whose modes sin(j' (2 q - 1) pi / (2 (2N + 1)))
       give the eigenvalues 4 (k / m) sin^2((2 q - 1) pi / (2 (2 N + 1))), q = 1..N; the
       largest is q = N.  Across the chain the springs at rest length are slack (zero
       transverse stiffness).  The dampers form the same matrix with c in place of k. */
    const double k = 3.0, c = 0.4, mass = 0.7, pi = 3.14159265358979323846;
    const int sizes[4] = {1, 2, 7, 40};
    for (int r = 0; r < 4; ++r) {
        const int free_nodes = sizes[r];
        ms_error err = fresh_error();
        ms_model* m = ms_model_create(free_nodes + 1, free_nodes, 0, &err);
        ENSURE(m != NULL);
        for (int i = 0; i <= free_nodes; ++i) {
            m->mass[i] = mass;
            m->x_initial[3 * i] = 0.1 * i;
        }
        m->pinned[0] = 1;
        for (int q = 0; q < free_nodes; ++q) {
            m->springs[2 * q] = q;
            m->springs[2 * q + 1] = q + 1;
            m->rest[q] = 0.1;
            m->k[q] = k;
            m->c[q] = c;
        }
        ENSURE(ms_model_check(m, &err) == MS_OK);
        ms_state* s = ms_state_create(m, &err);
        ENSURE(s != NULL);
        const double sine = sin((2.0 * free_nodes - 1.0) * pi / (2.0 * (2.0 * free_nodes + 1.0)));
        const double expected_omega2 = 4.0 * k / mass * sine * sine;
        const double expected_gamma = 4.0 * c / mass * sine * sine;
        double omega2 = -1.0, gamma = -1.0;
        ENSURE(ms_max_eigenvalues(m, s, &omega2, &gamma, &err) == MS_OK);
        ENSURE_NEAR(omega2, expected_omega2, 1e-8 * expected_omega2);
        ENSURE_NEAR(gamma, expected_gamma, 1e-8 * expected_gamma);
        /* The estimate only reads the state. */
        ENSURE(memcmp(s->x, m->x_initial, 3 * (size_t)m->nnode * sizeof(double)) == 0);
        ms_state_destroy(s);
        ms_model_destroy(m);
    }
    return 0;
}

/* s->f and flow (from ms_state_forces) agree with ms_forces, which sums the springs one
   by one in the user's order, to tolerance times the largest force (and power). */
static int same_as_plain_forces(const ms_model* m, const ms_state* s, const ms_flow* flow, double tolerance) {
    double* f = malloc(sizeof(double) * 3 * (size_t)m->nnode);
    ENSURE(f != NULL);
    const double reference_power = forces_power(m, s->x, s->v, NULL, s->t, f);
    double scale = 0.0;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) scale = fmax(scale, fabs(f[q]));
    int bad = 0;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) bad |= !(fabs(s->f[q] - f[q]) <= tolerance * scale);
    free(f);
    ENSURE(!bad);
    ENSURE_NEAR(flow->dampers + flow->drag - flow->wind, reference_power, 10.0 * tolerance * reference_power);
    return 0;
}

static int test_spring_layout(void) {
    /* A 12 x 12 cloth: in rows 0..9 the nodes of columns 1..9 have the same six springs up
       the numbering (+1, +2, +11, +12, +13, +24), so columns 1-4 and 5-8 form lane groups
       (on every processor: the vector path only changes how a group is computed); in row
       10 the same columns, without the +24; in row 11 columns 0-3 and 4-7 with +1 and +2. */
    const int side = 12;
    ms_model* m = make_cloth(side, 1, 5u);
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 77u;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) {
        s->x[q] += 0.02 * lcg_uniform(&seed);
        s->v[q] = lcg_uniform(&seed);
    }
    ms_flow flow;
    ENSURE(ms_state_forces(m, s, &flow, &err) == MS_OK); /* lays out the springs */
    const ms_layout* layout = ms_step_layout(s);
    ENSURE(ms_ranked_of(s) == NULL && layout != NULL); /* a grid's rows are local already */
    int groups = 0, gathered = 0;
    for (int64_t a = 0; a < m->nnode; ++a) {
        if (layout->lanes[a] == 0) continue;
        if (layout->lanes[a] & MS_GATHERED) {
            ++gathered;
            continue;
        }
        ++groups;
        const int64_t row = a / side, col = a % side;
        if (row < side - 1) {
            ENSURE(col == 1 || col == 5);
            ENSURE(layout->lanes[a] == (row < side - 2 ? 6 : 5));
        } else {
            ENSURE(col == 0 || col == 4);
            ENSURE(layout->lanes[a] == 2);
        }
    }
    ENSURE(groups == 2 * side);
    ENSURE(gathered > 0); /* the other nodes with springs up the numbering, four at a time */
    /* in a group, spring j of the four owners sits at 4 j + q; in a lane group the owners
       are a..a+3 and their springs reach equally far */
    for (int64_t r = 0; r < m->nspring;) {
        const int64_t a = layout->pairs[2 * r], kind = layout->lanes[a], k = kind & MS_MAX_LANE_SPRINGS;
        if (k == 0) {
            ++r;
            continue;
        }
        for (int64_t j = 0; j < k; ++j)
            for (int64_t q = 0; q < 4; ++q) {
                const int32_t* pair = layout->pairs + 2 * (r + 4 * j + q);
                ENSURE(pair[0] < pair[1]); /* owner first: the lower node in the user's numbering */
                if (kind & MS_GATHERED)
                    ENSURE(pair[0] == layout->pairs[2 * (r + q)]);
                else
                    ENSURE(pair[0] == a + q && pair[1] - pair[0] == layout->pairs[2 * (r + 4 * j) + 1] - a);
                const int32_t* user = m->springs + 2 * (int64_t)layout->order[r + 4 * j + q];
                ENSURE((user[0] == pair[0] && user[1] == pair[1]) || (user[0] == pair[1] && user[1] == pair[0]));
            }
        r += 4 * k;
    }
    /* the step's forces equal the forces summed spring by spring in the user's order */
    ENSURE(same_as_plain_forces(m, s, &flow, 1e-13) == 0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* A network cut into several blocks, with springs reaching far past each block's nodes
   (into its halo): the blocked sums equal the plain ones,
   and every block's nodes and springs are where the layout says. */
static int test_spring_blocks_and_halos(void) {
    ms_model* m = make_cloth(60, 1, 6u); /* about 20,000 springs: several blocks */
    ENSURE(m != NULL);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 78u;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) s->v[q] = lcg_uniform(&seed);
    ms_flow flow;
    ENSURE(ms_state_forces(m, s, &flow, &err) == MS_OK);
    const ms_layout* layout = ms_step_layout(s);
    ENSURE(layout->nblock >= 3);
    ENSURE(layout->node_start[0] == 0 && layout->node_start[layout->nblock] == m->nnode);
    ENSURE(layout->spring_start[0] == 0 && layout->spring_start[layout->nblock] == m->nspring);
    int64_t halo = 0;
    for (int64_t b = 0; b < layout->nblock; ++b) {
        for (int64_t r = layout->spring_start[b]; r < layout->spring_start[b + 1]; ++r) {
            const int32_t* pair = layout->pairs + 2 * r;
            ENSURE(pair[0] >= layout->node_start[b] && pair[0] < layout->node_start[b + 1]); /* owned lower end */
            ENSURE(pair[1] < layout->node_start[b + 1] + (layout->halo_start[b + 1] - layout->halo_start[b]));
        }
        halo += layout->halo_start[b + 1] - layout->halo_start[b];
    }
    ENSURE(halo > 0);
    ENSURE(same_as_plain_forces(m, s, &flow, 1e-12) == 0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

/* The same cloth with its nodes numbered at random: it steps on a copy renumbered by
   rank (each spring's ends close in rank), the ranks are a permutation, the copy's springs
   are the model's with their ends renumbered, almost all of them in groups of four in the
   copy's layout, and the forces are the plain sums in the user's numbering. */
static int test_ranked_layout(void) {
    ms_model* m = make_cloth(60, 1, 6u);
    ENSURE(m != NULL);
    ENSURE(shuffle_nodes(m, 79u) == 0);
    ms_error err = fresh_error();
    ms_state* s = ms_state_create(m, &err);
    ENSURE(s != NULL);
    uint64_t seed = 80u;
    for (int64_t q = 0; q < 3 * m->nnode; ++q) s->v[q] = lcg_uniform(&seed);
    ms_flow flow;
    ENSURE(ms_state_forces(m, s, &flow, &err) == MS_OK);
    ENSURE(ms_step_layout(s) == NULL && ms_ranked_of(s) != NULL);
    const ms_ranked* ranked = ms_ranked_of(s);
    const ms_layout* layout = ms_step_layout(ranked->s);
    ENSURE(layout != NULL && layout->nblock >= 3);
    for (int64_t i = 0; i < m->nnode; ++i) ENSURE(ranked->node_order[ranked->rank[i]] == i);
    int64_t spread = 0, grouped = 0;
    for (int64_t e = 0; e < m->nspring; ++e) {
        const int32_t* pair = ranked->m.springs + 2 * e;
        ENSURE(ranked->node_order[pair[0]] == m->springs[2 * e] && ranked->node_order[pair[1]] == m->springs[2 * e + 1]);
        spread += pair[1] > pair[0] ? pair[1] - pair[0] : pair[0] - pair[1];
    }
    for (int64_t r = 0; r < m->nspring;) {
        const int64_t k = layout->lanes[layout->pairs[2 * r]] & MS_MAX_LANE_SPRINGS;
        grouped += 4 * k;
        r += k > 0 ? 4 * k : 1;
    }
    ENSURE(spread < 4 * 60 * m->nspring); /* a random numbering spreads them over 1/3 of 3600 */
    ENSURE(grouped > 95 * m->nspring / 100);
    ENSURE(same_as_plain_forces(m, s, &flow, 1e-12) == 0);
    ms_state_destroy(s);
    ms_model_destroy(m);
    return 0;
}

const test_case forces_tests[] = {
    TEST(test_diagnostics_two_nodes),
    TEST(test_newton_third_law),
    TEST(test_zero_length_spring),
    TEST(test_max_eigenvalues_pair),
    TEST(test_max_eigenvalues_chain),
    TEST(test_spring_layout),
    TEST(test_spring_blocks_and_halos),
    TEST(test_ranked_layout),
    {NULL, NULL},
};
