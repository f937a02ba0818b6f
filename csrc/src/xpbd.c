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

#include "internal.h"
#include "layout.h"
#include "xpbd.h"

void ms_colouring_free(void* colouring) {
    ms_colouring* c = colouring;
    if (c == NULL) return;
    free(c->start);
    free(c->springs);
    free(c->pairs);
    free(c->params);
    free(c->lambda);
    free(c->rows);
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

int ms_state_ensure_colours(const ms_model* m, ms_state* s, ms_error* err) {
    if (s->constraints != NULL) return MS_OK;
    ms_colouring* c = calloc(1, sizeof *c);
    const size_t count = (size_t)(m->nspring > 0 ? m->nspring : 1);
    if (c != NULL) {
        c->springs = malloc(sizeof(int32_t) * count);
        c->pairs = malloc(sizeof(int32_t) * 2 * count);
        c->params = malloc(sizeof(double) * MS_XPBD_PARAMS * count);
        c->lambda = calloc(count, sizeof(double));
        c->rows = calloc(8 * (size_t)(m->nnode > 0 ? m->nnode : 1), sizeof(double));
    }
    int ok = c != NULL && c->springs != NULL && c->pairs != NULL && c->params != NULL && c->lambda != NULL &&
             c->rows != NULL && colour_springs(m, c) == 0;
    if (ok) {
        c->nregion = region_count(m->nspring, c->ncolour);
        ok = group_by_region(m, c) == 0;
    }
    if (!ok) {
        ms_colouring_free(c);
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory colouring %lld springs", (long long)m->nspring);
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        c->pairs[2 * r] = m->springs[2 * (int64_t)c->springs[r]];
        c->pairs[2 * r + 1] = m->springs[2 * (int64_t)c->springs[r] + 1];
    }
    c->nspring = m->nspring;
    c->project = MS_FASTEST_KERNEL(ms_xpbd_project);
    s->constraints = c;
    return MS_OK;
}

void ms_xpbd_prepare(const ms_model* m, ms_state* s, double h) {
    ms_colouring* c = s->constraints;
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
