/* Extended position-based dynamics (Macklin, Mueller and Chentanez 2016) for springs.
 *
 * Each spring s = (i, j) of rest length L, stiffness k and damping c is a compliant
 * distance constraint C = |x_i - x_j| - L with compliance alpha = 1/k and damping
 * beta = c, so that its force is -k C - c dC/dt as for the other integrators.  Within a
 * step of size h, with alpha~ = alpha / h^2 and gamma = alpha~ beta h = c / (k h), each
 * projection adds to the spring's multiplier lambda
 *   d lambda = (-C - alpha~ lambda - gamma grad C.(x - x_prev)) / ((1 + gamma)(w_i + w_j) + alpha~)
 * (alpha~, gamma and the inverse of the denominator are taken once per step call, in
 * colour order, beside the rest length)
 * and moves x_i by w_i d lambda n and x_j by -w_j d lambda n (w = 1/m, 0 for pinned
 * nodes, n the unit vector from j to i).  The springs are coloured so that no two of one
 * colour share a node: Gauss-Seidel over colours, and any split of a colour among
 * workers gives the same bits.  A spring with k = 0 constrains nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/solvers.h"

static void colouring_free(void* colouring) {
    ms_colouring* c = colouring;
    if (c == NULL) return;
    free(c->start);
    free(c->springs);
    free(c->pairs);
    free(c->params);
    free(c->lambda);
    free(c->rows);
    free(c->held);
    free(c);
}

/* The lowest colour below 64 that neither of two nodes has used (used: their bits
   together, not all set). */
static int64_t lowest_free(uint64_t used) {
    int64_t colour = 0;
    while (used & 1u) {
        used >>= 1;
        ++colour;
    }
    return colour;
}

/* Greedy colouring in spring order: each spring takes the lowest colour that no earlier
   spring at either of its nodes took (first fit), looked up in a word of the 64 lowest
   colours per node, so a spring costs the same however many springs its nodes have (a
   hub of a million springs, a spring given a million times).  Where its nodes have used
   all 64 between them, it takes the colour after the highest one either node has used:
   still no two springs of a colour share a node, and networks whose nodes have fewer than
   33 springs each never get there.  The springs are then listed by colour, in spring
   order within each. */
static int colour_springs(const ms_model* m, ms_colouring* c) {
    const int64_t ns = m->nspring;
    const size_t nodes = (size_t)(m->nnode > 0 ? m->nnode : 1), count = (size_t)(ns > 0 ? ns : 1);
    uint64_t* low = calloc(nodes, sizeof(uint64_t)); /* colours 0 .. 63 used at each node */
    int64_t* above = calloc(nodes, sizeof(int64_t)); /* 1 + the highest colour used at each node */
    int64_t* colour = malloc(sizeof(int64_t) * count);
    int ok = low != NULL && above != NULL && colour != NULL;
    int64_t ncolour = 0;
    for (int64_t s = 0; ok && s < ns; ++s) {
        const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const uint64_t used = low[i] | low[j];
        const int64_t q = ~used != 0 ? lowest_free(used) : (above[i] > above[j] ? above[i] : above[j]);
        if (q < 64) {
            low[i] |= (uint64_t)1 << q;
            low[j] |= (uint64_t)1 << q;
        }
        if (above[i] < q + 1) above[i] = q + 1;
        if (above[j] < q + 1) above[j] = q + 1;
        if (ncolour < q + 1) ncolour = q + 1;
        colour[s] = q;
    }
    if (ok) {
        c->start = malloc(sizeof(int64_t) * (size_t)(ncolour + 1));
        ok = c->start != NULL;
    }
    if (ok) {
        ms_counting_sort(colour, NULL, ns, ncolour, c->start, c->springs);
        c->ncolour = ncolour;
    }
    free(low);
    free(above);
    free(colour);
    return ok ? 0 : -1;
}

/* Groups the coloured springs by region: the nodes are cut into c->nregion ranges of
   consecutive indices, a spring whose ends share a region belongs to it, the others to the
   boundary group (number nregion); within a group the springs keep their colour order.
   c->start turns from colour starts into segment starts. */
static int group_by_region(const ms_model* m, ms_colouring* c) {
    const int64_t ns = m->nspring, ncolour = c->ncolour, nregion = c->nregion;
    const size_t count = (size_t)(ns > 0 ? ns : 1);
    int64_t* start = malloc(sizeof(int64_t) * (size_t)((nregion + 1) * ncolour + 1));
    int64_t* segment = malloc(sizeof(int64_t) * count); /* each spring's segment, by spring */
    int32_t* order = malloc(sizeof(int32_t) * count);
    const int ok = start != NULL && segment != NULL && order != NULL;
    if (ok) {
        for (int64_t q = 0; q < ncolour; ++q)
            for (int64_t r = c->start[q]; r < c->start[q + 1]; ++r) {
                const int64_t sp = c->springs[r];
                const int64_t gi = (int64_t)m->springs[2 * sp] * nregion / m->nnode;
                const int64_t gj = (int64_t)m->springs[2 * sp + 1] * nregion / m->nnode;
                segment[sp] = (gi == gj ? gi : nregion) * ncolour + q;
            }
        ms_counting_sort(segment, c->springs, ns, (nregion + 1) * ncolour, start, order);
        memcpy(c->springs, order, sizeof(int32_t) * (size_t)ns);
        free(c->start);
        c->start = start;
    } else {
        free(start);
    }
    free(segment);
    free(order);
    return ok ? 0 : -1;
}

/* Regions: a power of two, at most 64, of at least MS_XPBD_REGION_SPRINGS springs each,
   and few enough that the segments ((regions + 1) x ncolour) stay within four per spring
   where the colours are many (a node with thousands of springs needs as many colours). */
static int64_t region_count(int64_t nspring, int64_t ncolour) {
    int64_t regions = 1;
    while (regions < 64 && nspring / (2 * regions) >= MS_XPBD_REGION_SPRINGS &&
           (2 * regions + 1) * ncolour <= 4 * nspring)
        regions *= 2;
    return regions;
}

int ms_xpbd_ensure_colours(const ms_model* m, ms_state* s, ms_error* err) {
    ms_colouring* made = ms_workspace_get(s, MS_WORK_XPBD);
    if (made != NULL) {
        /* a collider added since the colours were made: the resting nodes' normals too */
        if (m->ncollider > 0 && made->held == NULL) {
            made->held = malloc(sizeof(double) * 3 * (size_t)(m->nnode > 0 ? m->nnode : 1));
            if (made->held == NULL)
                return ms_error_set(err, MS_ERR_MEMORY, "out of memory for xpbd's contact with %lld nodes",
                                    (long long)m->nnode);
        }
        return MS_OK;
    }
    ms_colouring* c = calloc(1, sizeof *c);
    const size_t count = (size_t)(m->nspring > 0 ? m->nspring : 1);
    if (c != NULL) {
        c->springs = malloc(sizeof(int32_t) * count);
        c->pairs = malloc(sizeof(int32_t) * 2 * count);
        c->params = malloc(sizeof(double) * MS_XPBD_PARAMS * count);
        c->lambda = calloc(count, sizeof(double));
        c->rows = calloc(8 * (size_t)(m->nnode > 0 ? m->nnode : 1), sizeof(double));
        if (m->ncollider > 0) c->held = malloc(sizeof(double) * 3 * (size_t)(m->nnode > 0 ? m->nnode : 1));
    }
    int ok = c != NULL && c->springs != NULL && c->pairs != NULL && c->params != NULL && c->lambda != NULL &&
             c->rows != NULL && (m->ncollider == 0 || c->held != NULL) && colour_springs(m, c) == 0;
    if (ok) {
        c->nregion = region_count(m->nspring, c->ncolour);
        ok = group_by_region(m, c) == 0;
    }
    if (!ok) {
        colouring_free(c);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory colouring %lld springs", (long long)m->nspring);
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        c->pairs[2 * r] = m->springs[2 * (int64_t)c->springs[r]];
        c->pairs[2 * r + 1] = m->springs[2 * (int64_t)c->springs[r] + 1];
    }
    c->nspring = m->nspring;
    c->project = MS_FASTEST_KERNEL(ms_xpbd_project);
    ms_workspace_set(s, MS_WORK_XPBD, c, colouring_free);
    return MS_OK;
}

void ms_xpbd_prepare(const ms_model* m, const ms_state* s, double h, int parameters) {
    ms_colouring* c = ms_workspace_get(s, MS_WORK_XPBD);
    if (!parameters && c->h == h) return;
    c->h = h;
    const double* inv_mass = s->inv_mass;
    const int64_t ns = m->nspring;
    double* rest = c->params;
    double* alpha = rest + ns;
    double* gamma = alpha + ns;
    double* scale = gamma + ns;
    double* w_i = scale + ns;
    double* w_j = w_i + ns;
    for (int64_t r = 0; r < ns; ++r) {
        const int64_t sp = c->springs[r];
        const double k = m->k[sp];
        rest[r] = m->rest[sp];
        w_i[r] = inv_mass[c->pairs[2 * r]];
        w_j[r] = inv_mass[c->pairs[2 * r + 1]];
        if (k > 0.0 && w_i[r] + w_j[r] > 0.0) {
            alpha[r] = 1.0 / (k * h * h);
            gamma[r] = m->c[sp] / (k * h);
            scale[r] = 1.0 / ((1.0 + gamma[r]) * (w_i[r] + w_j[r]) + alpha[r]);
        } else {
            alpha[r] = gamma[r] = scale[r] = 0.0; /* constrains nothing: every change is 0 */
        }
    }
}

/* Accumulates (value - value), which stays 0 exactly while every value is finite. */
#define PROBE(probe, value) ((probe) += (value) - (value))

/* Extended position-based dynamics (Macklin et al. 2016): the forces other than the springs' kick the
   velocities and predict the positions; the springs then act as compliant constraints
   on the positions, m->opt.iterations sweeps over their colours (default 1); the
   velocity is the step's displacement over h.  s->f receives the total force at the start
   (springs included, as for every integrator), and the flows are its power at the start
   times h (the dampers' too: a first-order estimate of what the constraints' damping
   removes). */
int ms_xpbd_stages(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
                double* MS_RESTRICT v_out, double t, ms_flow* flow) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    const double h = tm->h;
    const double* MS_RESTRICT inv_mass = s->inv_mass;
    ms_colouring* colours = ms_workspace_get(s, MS_WORK_XPBD);
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
    /* The nodes resting on a collider keep their velocity along its normal (kernels.h): their
       prediction loses its component along the normal, and so does what each sweep moved
       them, as PBD projects contact constraints within its iterations (the collider's
       side of the constraint does not move). */
    if (colours->held != NULL && m->ncollider > 0) {
        if (w->id == 0) colours->holding = ms_find_held(m, s, x, v, s->f, h, colours->held);
        ms_sync(w);
    }
    const int held = colours->held != NULL && m->ncollider > 0 && colours->holding;
    if (held) {
        MS_FOR_MY_NODES(w, b, begin, end)
        for (int64_t i = begin; i < end; ++i) {
            const double* n = colours->held + 3 * i;
            if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
            const double* vi = v + 3 * i;
            const double along = (rows[4 * i] - start_rows[4 * i]) * n[0] + (rows[4 * i + 1] - start_rows[4 * i + 1]) * n[1] +
                                 (rows[4 * i + 2] - start_rows[4 * i + 2]) * n[2] -
                                 h * (vi[0] * n[0] + vi[1] * n[1] + vi[2] * n[2]);
            for (int a = 0; a < 3; ++a) {
                rows[4 * i + a] -= along * n[a];
                v_out[3 * i + a] = (rows[4 * i + a] - x[3 * i + a]) / h;
            }
        }
        ms_sync(w);
    }
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
        if (held) {
            MS_FOR_MY_NODES(w, b, begin, end)
            for (int64_t i = begin; i < end; ++i) {
                const double* n = colours->held + 3 * i;
                if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
                const double* vi = v + 3 * i;
                const double along = (rows[4 * i] - start_rows[4 * i]) * n[0] +
                                     (rows[4 * i + 1] - start_rows[4 * i + 1]) * n[1] +
                                     (rows[4 * i + 2] - start_rows[4 * i + 2]) * n[2] -
                                     h * (vi[0] * n[0] + vi[1] * n[1] + vi[2] * n[2]);
                for (int a = 0; a < 3; ++a) rows[4 * i + a] -= along * n[a];
            }
            ms_sync(w);
        }
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
