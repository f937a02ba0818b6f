/* Self-contact sweep: a surface that starts a step without crossing itself ends it without.
 *
 * After the step (and after self-collision's proximity pass and the colliders), every node
 * of a system with triangles moves on the straight line from its start-of-step position x0
 * to its end position x1.  A mesh edge can only come to cross a triangle it does not share
 * a node with if, at some time of that motion, a node touches a triangle (point-triangle)
 * or an edge touches an edge (edge-edge).  Such contacts are found continuously:
 *
 *  - broad phase: the box each node sweeps over the step (in a frame moving with the
 *    nodes' mean displacement where that halves their paths, else at rest), padded by the
 *    gap, gives the boxes of the triangles and edges; they are hashed into a grid of levels
 *    (a level per factor 8 of box size, each with cells of about twice its triangles' mean
 *    box along each axis), so the cost grows linearly with the node count even when part
 *    of the surface sweeps long boxes through the rest.  A box over too many cells is
 *    tested against every primitive instead.  Each pair is taken once: by its member of
 *    lower level, in the cell holding the lowest corner of the two boxes' overlap.
 *  - narrow phase: the four points are coplanar where the cubic
 *    f(t) = ((x_b - x_a) x (x_c - x_a)) . (x_p - x_a) (point-triangle) or
 *    ((x_b - x_a) x (x_d - x_c)) . (x_c - x_a) (edge-edge) vanishes.  [0, 1] is cut at the
 *    roots of f' into pieces where f is monotone; a piece whose ends differ in sign is
 *    bisected to its root; there, at every critical point and at t = 1, the pair's distance
 *    is measured, and a distance below the gap is a contact.  A piece where |f| stays at
 *    rounding level (coplanar motion) is sampled at 9 times, and counts as a contact if a
 *    sample is closer than the gap plus the most the distance can change between samples,
 *    so near-degenerate motion is handled conservatively.  That change is bounded by the
 *    pair's relative motion (the largest motion of a point of one primitive relative to a
 *    point of the other), so a common translation, however long, adds no margin.  A pair
 *    that starts closer than the gap counts only if it comes to half its start distance
 *    (it cannot cross meanwhile), and a pair that starts touching not at all: resting or
 *    coincident nodes are not held back step after step.
 *  - fail-safe: every node of a pair in contact goes back to its start-of-step position
 *    (it rests there for the step), and the pairs with a node that went back are tested
 *    again, until no pair is in contact.  Each round sends back at least one more node, so
 *    the loop ends; if every node went back the state is the start of the step, which did
 *    not cross itself.  A free node sent back loses its velocity (an inelastic stop): the
 *    kinetic energy it had is booked as dissipated by contact, and what the positions
 *    change of the spring and gravitational energy as the constraints' work.  A pinned
 *    node is sent back too (a prescribed motion that would drive the surface through itself
 *    waits a step) and keeps the velocity it was given.
 *
 * Everything runs on one worker, in a fixed order, so the bits do not depend on the number
 * of workers.  That worker is the caller's thread: the loops of the broad phase and of the
 * fail-safe run the caller's interruption check (if any) every MS_CHECK_PERIOD at most, and
 * a sweep it stops returns MS_ERR_INTERRUPTED having changed neither x1 nor v.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "platform/thread.h"

/* A primitive's box over more than this many cells along one axis is not hashed: it is
   tested against every primitive. */
#define SC_SPAN_LIMIT 8
/* The grid's levels: a box's level is the binary exponent of its largest side, counted from
   the smallest node box's in steps of 2^SC_LEVEL_BITS (a factor 8), at most SC_LEVELS - 1. */
#define SC_LEVELS 32
#define SC_LEVEL_BITS 3
/* |f| below this times L^3 (L: the pair's largest length over the step) is rounding noise:
   the points are coplanar to working precision. */
#define SC_FLAT 1e-10
/* Bisection steps for a root of the cubic: the root is then known to 2^-60 of the step. */
#define SC_BISECT 60
/* Work between two readings of the clock (for the caller's interruption check), counted in
   box tests or pairs: some tens of microseconds of the broad phase, a few milliseconds of
   the narrow phase. */
#define SC_PACE 8192

typedef struct sc_pair {
    int32_t kind; /* 0: node a and triangle b; 1: edges a < b */
    int32_t a, b;
} sc_pair;

struct ms_sweep_work {
    int64_t nedge;
    int32_t* edges;      /* (nedge, 2): the triangles' edges, lower node first, sorted */
    double* node_box;    /* (nnode, 6): lo[3], hi[3] of each node's swept box, padded */
    double* edge_box;    /* (nedge, 6) */
    double* face_box;    /* (nface, 6) */
    int64_t* node_level; /* (nnode): each box's level in the grid */
    int64_t* edge_level; /* (nedge) */
    int64_t* face_level; /* (nface) */
    double inv_cell[SC_LEVELS][3]; /* 1 / the cells' sides (1/m) at each level */
    int64_t level_start[SC_LEVELS + 1]; /* the hashed kind's items of level L: */
    int32_t* level_order;               /* level_order[level_start[L] .. level_start[L + 1]) */
    double* end;         /* (nnode, 3): where each node ends (x0 once sent back) */
    unsigned char* back; /* (nnode): 1 once the node went back to x0 */
    unsigned char* fresh; /* (nnode): 1 if it went back in the last round */
    int32_t* pending;    /* (nnode): nodes to send back at the end of a round */
    unsigned char* big;  /* (max(nface, nedge, nnode)): box over too many cells */
    /* the grid's entries: a primitive in a cell */
    int64_t entry_cap, nentry;
    int64_t* entry_bucket;
    int64_t* entry_cell; /* (cap, 3) */
    int32_t* entry_prim;
    int32_t* entry_order;
    unsigned char* entry_first; /* bit q: the entry is its box's first cell along axis q */
    /* the entries in bucket order, for the queries to read in a row */
    int64_t* sorted_cell; /* (cap, 3) */
    int32_t* sorted_prim;
    unsigned char* sorted_first;
    int64_t buckets;
    int64_t* bucket_start; /* (buckets + 1) */
    int64_t pair_cap, npair;
    sc_pair* pairs;
    /* the caller's interruption check (NULL: none), run every MS_CHECK_PERIOD at most */
    const ms_interrupt* interrupt;
    int64_t countdown;  /* inner passes until the clock is read again */
    double checked_at;  /* the clock when the check last ran (s) */
    int stopped;        /* the check asked to stop */
};

const unsigned char* ms_sweep_sent_back(const ms_sweep_work* w) { return w->back; }

/* Whether the caller's check asks the sweep to stop, before work of about the given count of
   box tests or pairs; called in the loops that can run long, outside their innermost ones
   (on worker 0, which runs the sweep: the caller's thread).  Most calls only count down;
   every SC_PACE of work they read the clock, and the check runs if it last ran
   MS_CHECK_PERIOD ago or more. */
static int sc_stop(ms_sweep_work* w, int64_t work) {
    if (w->interrupt == NULL || (w->countdown -= work) > 0) return w->stopped;
    w->countdown = SC_PACE;
    const double now = ms_clock_seconds();
    if (!w->stopped && now - w->checked_at >= MS_CHECK_PERIOD) {
        w->checked_at = now;
        w->stopped = w->interrupt->check(w->interrupt->context) != 0;
    }
    return w->stopped;
}

const int32_t* ms_sweep_edges(const ms_sweep_work* w, int64_t* nedge) {
    *nedge = w->nedge;
    return w->edges;
}

void ms_sweep_work_free(ms_sweep_work* w) {
    if (w == NULL) return;
    free(w->edges);
    free(w->node_box);
    free(w->edge_box);
    free(w->face_box);
    free(w->node_level);
    free(w->edge_level);
    free(w->face_level);
    free(w->level_order);
    free(w->end);
    free(w->back);
    free(w->fresh);
    free(w->pending);
    free(w->big);
    free(w->entry_bucket);
    free(w->entry_cell);
    free(w->entry_prim);
    free(w->entry_order);
    free(w->entry_first);
    free(w->sorted_cell);
    free(w->sorted_prim);
    free(w->sorted_first);
    free(w->bucket_start);
    free(w->pairs);
    free(w);
}

static int compare_int64(const void* a, const void* b) {
    const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return (x > y) - (x < y);
}

ms_sweep_work* ms_sweep_work_new(const ms_model* m) {
    const int64_t n = m->nnode, nf = m->nface;
    ms_sweep_work* w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    int64_t* keys = malloc(sizeof(int64_t) * (size_t)(3 * nf > 0 ? 3 * nf : 1));
    if (keys == NULL) {
        free(w);
        return NULL;
    }
    for (int64_t f = 0; f < nf; ++f)
        for (int e = 0; e < 3; ++e) {
            const int64_t a = m->faces[3 * f + e], b = m->faces[3 * f + (e + 1) % 3];
            keys[3 * f + e] = a < b ? a * n + b : b * n + a;
        }
    qsort(keys, (size_t)(3 * nf), sizeof(int64_t), compare_int64);
    int64_t nedge = 0;
    for (int64_t k = 0; k < 3 * nf; ++k)
        if (k == 0 || keys[k] != keys[k - 1]) keys[nedge++] = keys[k];
    w->nedge = nedge;
    const int64_t nprim = nf > nedge ? nf : nedge;
    const int64_t nbig = nprim > n ? nprim : n;
    w->edges = malloc(sizeof(int32_t) * (size_t)(2 * nedge > 0 ? 2 * nedge : 1));
    w->node_box = malloc(sizeof(double) * 6 * (size_t)(n > 0 ? n : 1));
    w->edge_box = malloc(sizeof(double) * 6 * (size_t)(nedge > 0 ? nedge : 1));
    w->face_box = malloc(sizeof(double) * 6 * (size_t)(nf > 0 ? nf : 1));
    w->node_level = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    w->edge_level = malloc(sizeof(int64_t) * (size_t)(nedge > 0 ? nedge : 1));
    w->face_level = malloc(sizeof(int64_t) * (size_t)(nf > 0 ? nf : 1));
    w->level_order = malloc(sizeof(int32_t) * (size_t)(nbig > 0 ? nbig : 1));
    w->end = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    w->back = calloc((size_t)(n > 0 ? n : 1), 1);
    w->fresh = calloc((size_t)(n > 0 ? n : 1), 1);
    w->pending = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    w->big = calloc((size_t)(nbig > 0 ? nbig : 1), 1);
    int64_t buckets = 1;
    while (buckets < 2 * nbig) buckets *= 2;
    w->buckets = buckets;
    w->bucket_start = malloc(sizeof(int64_t) * (size_t)(buckets + 1));
    if (!w->edges || !w->node_box || !w->edge_box || !w->face_box || !w->node_level || !w->edge_level ||
        !w->face_level || !w->level_order || !w->end || !w->back || !w->fresh || !w->pending || !w->big ||
        !w->bucket_start) {
        free(keys);
        ms_sweep_work_free(w);
        return NULL;
    }
    for (int64_t e = 0; e < nedge; ++e) {
        w->edges[2 * e] = (int32_t)(keys[e] / n);
        w->edges[2 * e + 1] = (int32_t)(keys[e] % n);
    }
    free(keys);
    return w;
}

/* ---- the narrow phase --------------------------------------------------------------------------- */

#define DOT(u, w) ((u)[0] * (w)[0] + (u)[1] * (w)[1] + (u)[2] * (w)[2])

static void cross(const double* u, const double* w, double* out) {
    out[0] = u[1] * w[2] - u[2] * w[1];
    out[1] = u[2] * w[0] - u[0] * w[2];
    out[2] = u[0] * w[1] - u[1] * w[0];
}

static double clamp01(double value) { return value < 0.0 ? 0.0 : (value > 1.0 ? 1.0 : value); }

/* Closest point of triangle (a, b, c) to p (Ericson, Real-Time Collision Detection, 5.1.5),
   as barycentric weights (wa, wb, wc) summing to 1. */
void ms_closest_on_triangle(const double* p, const double* a, const double* b, const double* c, double weight[3]) {
    double ab[3], ac[3], ap[3];
    for (int q = 0; q < 3; ++q) ab[q] = b[q] - a[q], ac[q] = c[q] - a[q], ap[q] = p[q] - a[q];
    const double d1 = DOT(ab, ap), d2 = DOT(ac, ap);
    if (d1 <= 0.0 && d2 <= 0.0) { weight[0] = 1, weight[1] = 0, weight[2] = 0; return; }
    double bp[3];
    for (int q = 0; q < 3; ++q) bp[q] = p[q] - b[q];
    const double d3 = DOT(ab, bp), d4 = DOT(ac, bp);
    if (d3 >= 0.0 && d4 <= d3) { weight[0] = 0, weight[1] = 1, weight[2] = 0; return; }
    const double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
        const double t = d1 / (d1 - d3);
        weight[0] = 1 - t, weight[1] = t, weight[2] = 0;
        return;
    }
    double cp[3];
    for (int q = 0; q < 3; ++q) cp[q] = p[q] - c[q];
    const double d5 = DOT(ab, cp), d6 = DOT(ac, cp);
    if (d6 >= 0.0 && d5 <= d6) { weight[0] = 0, weight[1] = 0, weight[2] = 1; return; }
    const double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
        const double t = d2 / (d2 - d6);
        weight[0] = 1 - t, weight[1] = 0, weight[2] = t;
        return;
    }
    const double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
        const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        weight[0] = 0, weight[1] = 1 - t, weight[2] = t;
        return;
    }
    const double denominator = 1.0 / (va + vb + vc);
    weight[1] = vb * denominator;
    weight[2] = vc * denominator;
    weight[0] = 1.0 - weight[1] - weight[2];
}

/* Squared distance (m^2) between the segments [p1, q1] and [p2, q2], and the parameters
   (s, t) of their closest points p1 + s (q1 - p1), p2 + t (q2 - p2): the closest pair is
   found for the lines and clamped to the segments, one after the other, which also serves
   parallel and point-like segments. */
double ms_segment_closest(const double* p1, const double* q1, const double* p2, const double* q2, double* s_out,
                          double* t_out) {
    double d1[3], d2[3], r[3];
    for (int q = 0; q < 3; ++q) d1[q] = q1[q] - p1[q], d2[q] = q2[q] - p2[q], r[q] = p1[q] - p2[q];
    const double a = DOT(d1, d1), e = DOT(d2, d2), f = DOT(d2, r);
    double s, t;
    if (a <= 1e-300 && e <= 1e-300) {
        s = 0.0, t = 0.0;
    } else if (a <= 1e-300) {
        s = 0.0, t = clamp01(f / e);
    } else {
        const double c = DOT(d1, r);
        if (e <= 1e-300) {
            t = 0.0, s = clamp01(-c / a);
        } else {
            const double b = DOT(d1, d2), denominator = a * e - b * b;
            s = denominator > 0.0 ? clamp01((b * f - c * e) / denominator) : 0.0;
            t = (b * s + f) / e;
            if (t < 0.0)
                t = 0.0, s = clamp01(-c / a);
            else if (t > 1.0)
                t = 1.0, s = clamp01((b - c) / a);
        }
    }
    double gap[3];
    for (int q = 0; q < 3; ++q) gap[q] = p1[q] + s * d1[q] - (p2[q] + t * d2[q]);
    *s_out = s;
    *t_out = t;
    return DOT(gap, gap);
}

/* Distance (m) at time t between the pair's primitives, points start + t motion. */
static double pair_distance(double start[4][3], double motion[4][3], int edge_edge, double t) {
    double p[4][3];
    for (int k = 0; k < 4; ++k)
        for (int q = 0; q < 3; ++q) p[k][q] = start[k][q] + t * motion[k][q];
    if (edge_edge) {
        double s, u;
        return sqrt(ms_segment_closest(p[0], p[1], p[2], p[3], &s, &u));
    }
    double weight[3];
    ms_closest_on_triangle(p[0], p[1], p[2], p[3], weight);
    double d[3];
    for (int q = 0; q < 3; ++q) d[q] = p[0][q] - (weight[0] * p[1][q] + weight[1] * p[2][q] + weight[2] * p[3][q]);
    return sqrt(DOT(d, d));
}

static double cubic(const double c[4], double t) { return ((c[3] * t + c[2]) * t + c[1]) * t + c[0]; }

/* Whether the pair (point 0 and triangle 1 2 3, or edges 0 1 and 2 3) comes closer than gap
   at some time of the linear motion start -> start + motion (see the file's comment). */
static int pair_contact(double start[4][3], double motion[4][3], int edge_edge, double gap) {
    /* f = (U x W) . R with U, W, R differences of the points, each linear in t */
    static const int vt[6] = {1, 2, 1, 3, 1, 0}, ee[6] = {0, 1, 2, 3, 0, 2};
    const int* ends = edge_edge ? ee : vt;
    double u0[3], du[3], w0[3], dw[3], r0[3], dr[3];
    for (int q = 0; q < 3; ++q) {
        u0[q] = start[ends[1]][q] - start[ends[0]][q], du[q] = motion[ends[1]][q] - motion[ends[0]][q];
        w0[q] = start[ends[3]][q] - start[ends[2]][q], dw[q] = motion[ends[3]][q] - motion[ends[2]][q];
        r0[q] = start[ends[5]][q] - start[ends[4]][q], dr[q] = motion[ends[5]][q] - motion[ends[4]][q];
    }
    double a[3], b1[3], b2[3], c[3];
    cross(u0, w0, a);
    cross(u0, dw, b1);
    cross(du, w0, b2);
    cross(du, dw, c);
    const double b[3] = {b1[0] + b2[0], b1[1] + b2[1], b1[2] + b2[2]};
    const double coef[4] = {DOT(a, r0), DOT(a, dr) + DOT(b, r0), DOT(b, dr) + DOT(c, r0), DOT(c, dr)};
    const double lu = sqrt(DOT(u0, u0)) + sqrt(DOT(du, du)), lw = sqrt(DOT(w0, w0)) + sqrt(DOT(dw, dw)),
                 lr = sqrt(DOT(r0, r0)) + sqrt(DOT(dr, dr));
    const double length = lu > lw ? (lu > lr ? lu : lr) : (lw > lr ? lw : lr);
    const double flat = SC_FLAT * length * length * length;
    /* the pair's relative speed (m per step): the closest points' difference is a weighted
       mean of the differences between a point of one primitive and a point of the other, so
       the distance changes at most by the largest of those differences' motions (a common
       translation of the four points does not change it) */
    static const int side[2][4] = {{0, 1, 1, 1}, {0, 0, 1, 1}};
    double speed = 0.0;
    for (int k = 0; k < 4; ++k)
        for (int l = k + 1; l < 4; ++l) {
            if (side[edge_edge][k] == side[edge_edge][l]) continue;
            const double d[3] = {motion[k][0] - motion[l][0], motion[k][1] - motion[l][1], motion[k][2] - motion[l][2]};
            const double sp = sqrt(DOT(d, d));
            if (!(sp <= speed)) speed = sp;
        }
    if (!(speed >= 0.0) || !(length >= 0.0) || !isfinite(flat) || !isfinite(speed))
        return 1; /* non-finite: let the step's checks see it */
    /* a pair already closer than the gap at the start of the step is a contact only if it
       comes to half its start distance: it does not cross over the step, and a pair resting
       in contact (or coincident, which the proximity pass cannot part) is not held back */
    {
        const double initial = pair_distance(start, motion, edge_edge, 0.0);
        if (!(initial > 0.0)) return 0; /* touching already: it can come no closer */
        if (initial < gap) gap = 0.5 * initial;
    }

    /* the pieces of [0, 1] where f is monotone: cut at the roots of f' = 3 c3 t^2 + 2 c2 t + c1 */
    double cut[4];
    int ncut = 0;
    cut[ncut++] = 0.0;
    {
        const double qa = 3.0 * coef[3], qb = 2.0 * coef[2], qc = coef[1];
        double roots[2];
        int nroot = 0;
        if (qa != 0.0) {
            const double disc = qb * qb - 4.0 * qa * qc;
            if (disc >= 0.0) {
                const double sq = sqrt(disc);
                /* the stable pair of formulas */
                const double qq = -0.5 * (qb + (qb >= 0.0 ? sq : -sq));
                if (qq != 0.0) {
                    roots[nroot++] = qq / qa;
                    roots[nroot++] = qc / qq;
                } else {
                    roots[nroot++] = 0.0;
                }
            }
        } else if (qb != 0.0) {
            roots[nroot++] = -qc / qb;
        }
        if (nroot == 2 && roots[0] > roots[1]) {
            const double swap = roots[0];
            roots[0] = roots[1];
            roots[1] = swap;
        }
        for (int k = 0; k < nroot; ++k)
            if (roots[k] > 0.0 && roots[k] < 1.0 && roots[k] > cut[ncut - 1]) cut[ncut++] = roots[k];
    }
    cut[ncut++] = 1.0;

    for (int piece = 0; piece + 1 < ncut; ++piece) {
        double lo = cut[piece], hi = cut[piece + 1];
        double flo = cubic(coef, lo);
        const double fhi = cubic(coef, hi);
        if (fabs(flo) <= flat && fabs(fhi) <= flat) {
            /* coplanar to working precision over the piece: sample it */
            const double slack = speed * (hi - lo) / 16.0;
            for (int k = 0; k <= 8; ++k)
                if (pair_distance(start, motion, edge_edge, lo + (hi - lo) * k / 8.0) < gap + slack) return 1;
            continue;
        }
        if (pair_distance(start, motion, edge_edge, hi) < gap) return 1; /* critical point or t = 1 */
        if (flo == 0.0) {
            if (pair_distance(start, motion, edge_edge, lo) < gap) return 1;
            continue;
        }
        if ((flo < 0.0) == (fhi < 0.0) || fhi == 0.0) continue;
        for (int k = 0; k < SC_BISECT; ++k) {
            const double mid = 0.5 * (lo + hi);
            const double fmid = cubic(coef, mid);
            if (fmid == 0.0) {
                lo = hi = mid;
                break;
            }
            if ((fmid < 0.0) == (flo < 0.0))
                lo = mid, flo = fmid;
            else
                hi = mid;
        }
        /* the root lies in [lo, hi]: the distance there is at most the one at either end
           plus the change over the bracket */
        const double slack = speed * (hi - lo);
        if (pair_distance(start, motion, edge_edge, lo) < gap + slack) return 1;
    }
    return 0;
}

/* ---- the broad phase ---------------------------------------------------------------------------- */

/* The grid is one hash table of levels.  A box's level says how large it is (its largest
   side, in steps of a factor 8), and each level has its own cells, of twice the mean side of
   its triangles' boxes along each axis (never smaller than the level below's): a cloth thrown
   through a still one puts the still one's boxes on a fine level and the thrown one's long
   boxes on a coarse level whose cells are long along the motion and fine across it, so no cell
   holds many boxes.  A pair is found by the member of lower level (the lower index, or the
   node of a node and a triangle, on a tie), which looks into the other's level: there its box
   spans a few cells (else it is tested against the level's boxes one by one). */

#define SC_CELL_LIMIT 4503599627370496.0
static int64_t sc_cell(double coordinate, double inv_cell) {
    const double cell = floor(coordinate * inv_cell);
    if (!(cell > -SC_CELL_LIMIT)) return -(int64_t)SC_CELL_LIMIT;
    if (!(cell < SC_CELL_LIMIT)) return (int64_t)SC_CELL_LIMIT;
    return (int64_t)cell;
}

static int64_t sc_bucket(const int64_t c[3], int64_t level, int64_t buckets) {
    const uint64_t h = (uint64_t)c[0] * 73856093ull ^ (uint64_t)c[1] * 19349663ull ^ (uint64_t)c[2] * 83492791ull ^
                       (uint64_t)level * 2654435761ull;
    return (int64_t)(h & (uint64_t)(buckets - 1));
}

static int boxes_overlap(const double* a, const double* b) {
    return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] && b[2] <= a[5];
}

/* The cells [lo, hi] of a box; returns 0 if it spans more than SC_SPAN_LIMIT along an axis. */
static int box_cells(const double* box, const double inv_cell[3], int64_t lo[3], int64_t hi[3]) {
    for (int q = 0; q < 3; ++q) {
        lo[q] = sc_cell(box[q], inv_cell[q]);
        hi[q] = sc_cell(box[3 + q], inv_cell[q]);
        if (hi[q] - lo[q] >= SC_SPAN_LIMIT) return 0;
    }
    return 1;
}

/* The binary exponent of a box's largest side (0 if the side is not positive). */
static int box_exponent(const double* box) {
    double most = 0.0;
    for (int q = 0; q < 3; ++q)
        if (box[3 + q] - box[q] > most) most = box[3 + q] - box[q];
    int exponent = 0;
    if (most > 0.0) (void)frexp(most, &exponent);
    return exponent;
}

static int64_t box_level(const double* box, int lowest) {
    const int exponent = box_exponent(box);
    if (exponent <= lowest) return 0;
    const int level = (exponent - lowest) >> SC_LEVEL_BITS;
    return level < SC_LEVELS ? level : SC_LEVELS - 1;
}

/* The levels of every box and each level's cells; returns 0 if a box is not finite. */
static int set_levels(ms_sweep_work* w, int64_t n, int64_t nedge, int64_t nf) {
    int lowest = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double* box = w->node_box + 6 * i;
        for (int q = 0; q < 6; ++q)
            if (!isfinite(box[q])) return 0;
        const int exponent = box_exponent(box);
        if (i == 0 || exponent < lowest) lowest = exponent;
    }
    for (int64_t i = 0; i < n; ++i) w->node_level[i] = box_level(w->node_box + 6 * i, lowest);
    for (int64_t e = 0; e < nedge; ++e) w->edge_level[e] = box_level(w->edge_box + 6 * e, lowest);
    double side[SC_LEVELS][3];
    int64_t count[SC_LEVELS];
    memset(side, 0, sizeof side);
    memset(count, 0, sizeof count);
    for (int64_t f = 0; f < nf; ++f) {
        const double* box = w->face_box + 6 * f;
        const int64_t level = box_level(box, lowest);
        w->face_level[f] = level;
        count[level] += 1;
        for (int q = 0; q < 3; ++q) side[level][q] += box[3 + q] - box[q];
    }
    double below[3] = {0.0, 0.0, 0.0};
    for (int level = 0; level < SC_LEVELS; ++level)
        for (int q = 0; q < 3; ++q) {
            double cell = count[level] > 0 ? 2.0 * side[level][q] / (double)count[level] : 0.0;
            if (cell < below[q]) cell = below[q];
            /* no triangle this small: the level's largest side */
            if (!(cell > 0.0)) cell = ldexp(1.0, lowest + SC_LEVEL_BITS * (level + 1));
            below[q] = cell;
            w->inv_cell[level][q] = 1.0 / cell;
            if (!(w->inv_cell[level][q] > 0.0) || !isfinite(w->inv_cell[level][q])) return 0;
        }
    return 1;
}

static int grow(void** data, int64_t* cap, int64_t need, size_t size) {
    if (need <= *cap) return 0;
    int64_t next = *cap > 0 ? *cap : 1024;
    while (next < need) next *= 2;
    void* grown = realloc(*data, size * (size_t)next);
    if (grown == NULL) return -1;
    *data = grown;
    *cap = next;
    return 0;
}

static int add_pair(ms_sweep_work* w, int kind, int32_t a, int32_t b) {
    if (grow((void**)&w->pairs, &w->pair_cap, w->npair + 1, sizeof(sc_pair))) return -1;
    w->pairs[w->npair].kind = kind;
    w->pairs[w->npair].a = a;
    w->pairs[w->npair].b = b;
    w->npair += 1;
    return 0;
}

/* Hashes the boxes (count of them, of the given levels) into the grid, each in the cells
   of its level; those over too many cells are marked big and left out.  level_start and
   level_order list the boxes by level. */
static int hash_primitives(ms_sweep_work* w, const double* boxes, const int64_t* levels, int64_t count) {
    int64_t entries = 0;
    for (int64_t p = 0; p < count; ++p) {
        int64_t lo[3], hi[3];
        w->big[p] = !box_cells(boxes + 6 * p, w->inv_cell[levels[p]], lo, hi);
        if (!w->big[p]) entries += (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1);
    }
    int64_t cap = w->entry_cap;
    if (entries > cap) {
        int64_t next = cap > 0 ? cap : 1024;
        while (next < entries) next *= 2;
        int64_t* bucket = realloc(w->entry_bucket, sizeof(int64_t) * (size_t)next);
        if (bucket != NULL) w->entry_bucket = bucket;
        int64_t* cell = realloc(w->entry_cell, sizeof(int64_t) * 3 * (size_t)next);
        if (cell != NULL) w->entry_cell = cell;
        int32_t* prim = realloc(w->entry_prim, sizeof(int32_t) * (size_t)next);
        if (prim != NULL) w->entry_prim = prim;
        int32_t* order = realloc(w->entry_order, sizeof(int32_t) * (size_t)next);
        if (order != NULL) w->entry_order = order;
        unsigned char* first = realloc(w->entry_first, (size_t)next);
        if (first != NULL) w->entry_first = first;
        int64_t* sorted_cell = realloc(w->sorted_cell, sizeof(int64_t) * 3 * (size_t)next);
        if (sorted_cell != NULL) w->sorted_cell = sorted_cell;
        int32_t* sorted_prim = realloc(w->sorted_prim, sizeof(int32_t) * (size_t)next);
        if (sorted_prim != NULL) w->sorted_prim = sorted_prim;
        unsigned char* sorted_first = realloc(w->sorted_first, (size_t)next);
        if (sorted_first != NULL) w->sorted_first = sorted_first;
        if (bucket == NULL || cell == NULL || prim == NULL || order == NULL || first == NULL || sorted_cell == NULL ||
            sorted_prim == NULL || sorted_first == NULL)
            return -1;
        w->entry_cap = next;
    }
    int64_t e = 0;
    for (int64_t p = 0; p < count; ++p) {
        if (w->big[p]) continue;
        int64_t lo[3], hi[3];
        box_cells(boxes + 6 * p, w->inv_cell[levels[p]], lo, hi);
        int64_t c[3];
        for (c[2] = lo[2]; c[2] <= hi[2]; ++c[2])
            for (c[1] = lo[1]; c[1] <= hi[1]; ++c[1])
                for (c[0] = lo[0]; c[0] <= hi[0]; ++c[0]) {
                    w->entry_bucket[e] = sc_bucket(c, levels[p], w->buckets);
                    for (int q = 0; q < 3; ++q) w->entry_cell[3 * e + q] = c[q];
                    w->entry_prim[e] = (int32_t)p;
                    w->entry_first[e] = (unsigned char)((c[0] == lo[0]) | (c[1] == lo[1]) << 1 | (c[2] == lo[2]) << 2);
                    ++e;
                }
    }
    w->nentry = e;
    ms_counting_sort(w->entry_bucket, NULL, e, w->buckets, w->bucket_start, w->entry_order);
    for (int64_t k = 0; k < e; ++k) {
        const int64_t from = w->entry_order[k];
        for (int q = 0; q < 3; ++q) w->sorted_cell[3 * k + q] = w->entry_cell[3 * from + q];
        w->sorted_prim[k] = w->entry_prim[from];
        w->sorted_first[k] = w->entry_first[from];
    }
    ms_counting_sort(levels, NULL, count, SC_LEVELS, w->level_start, w->level_order);
    return 0;
}

/* Whether node i is one of triangle f's corners, or edges e and g share a node. */
static int node_in_face(const ms_model* m, int64_t i, int64_t f) {
    const int32_t* face = m->faces + 3 * f;
    return face[0] == i || face[1] == i || face[2] == i;
}
static int edges_touch(const ms_sweep_work* w, int64_t e, int64_t g) {
    const int32_t* a = w->edges + 2 * e;
    const int32_t* b = w->edges + 2 * g;
    return a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1];
}

/* What is queried against what: edges against edges, nodes against triangles, triangles
   against nodes. */
enum { SC_EDGES, SC_NODES_FACES, SC_FACES_NODES };

/* Whether query item i (of level li) is the one that finds its pair with hashed item p (of
   level lp): the one of lower level; on a tie the lower edge, or the node. */
static int finds(int mode, int64_t i, int64_t li, int64_t p, int64_t lp) {
    if (mode == SC_EDGES) return li < lp || (li == lp && i < p);
    if (mode == SC_NODES_FACES) return li <= lp;
    return li < lp;
}

/* The candidate pair (query item i, hashed item p) unless excluded. */
static int consider(const ms_model* m, ms_sweep_work* w, int mode, int64_t i, int64_t p) {
    if (mode == SC_EDGES) {
        if (edges_touch(w, i, p)) return 0;
        return add_pair(w, 1, (int32_t)(i < p ? i : p), (int32_t)(i < p ? p : i));
    }
    const int64_t node = mode == SC_NODES_FACES ? i : p, face = mode == SC_NODES_FACES ? p : i;
    if (node_in_face(m, node, face)) return 0;
    return add_pair(w, 0, (int32_t)node, (int32_t)face);
}

/* The pairs of the query boxes (count of them, of levels qlevels) with the hashed boxes
   (nprim of them, of levels plevels), each pair once. */
static int query(const ms_model* m, ms_sweep_work* w, int mode, const double* qboxes, const int64_t* qlevels,
                 int64_t count, const double* pboxes, const int64_t* plevels, int64_t nprim) {
    for (int64_t i = 0; i < count; ++i) {
        const double* box = qboxes + 6 * i;
        const int64_t li = qlevels[i];
        for (int64_t level = li; level < SC_LEVELS; ++level) {
            if (w->level_start[level] == w->level_start[level + 1]) continue; /* none there */
            if (mode == SC_FACES_NODES && level == li) continue;
            const double* inv_cell = w->inv_cell[level];
            int64_t lo[3], hi[3];
            if (!box_cells(box, inv_cell, lo, hi)) {
                /* over too many of the level's cells: against each of its boxes */
                if (sc_stop(w, w->level_start[level + 1] - w->level_start[level])) return -1;
                for (int64_t k = w->level_start[level]; k < w->level_start[level + 1]; ++k) {
                    const int64_t p = w->level_order[k];
                    if (w->big[p] || !finds(mode, i, li, p, level)) continue;
                    if (boxes_overlap(box, pboxes + 6 * p) && consider(m, w, mode, i, p)) return -1;
                }
                continue;
            }
            int64_t c[3];
            for (c[2] = lo[2]; c[2] <= hi[2]; ++c[2])
                for (c[1] = lo[1]; c[1] <= hi[1]; ++c[1])
                    for (c[0] = lo[0]; c[0] <= hi[0]; ++c[0]) {
                        const int64_t b = sc_bucket(c, level, w->buckets);
                        if (sc_stop(w, 1 + w->bucket_start[b + 1] - w->bucket_start[b])) return -1;
                        for (int64_t k = w->bucket_start[b]; k < w->bucket_start[b + 1]; ++k) {
                            const int64_t* cell = w->sorted_cell + 3 * k;
                            if (cell[0] != c[0] || cell[1] != c[1] || cell[2] != c[2]) continue;
                            const int64_t p = w->sorted_prim[k];
                            if (plevels[p] != level || !finds(mode, i, li, p, level)) continue;
                            const double* other = pboxes + 6 * p;
                            if (!boxes_overlap(box, other)) continue;
                            /* once: in the cell of the overlap's lowest corner, the larger of
                               the two boxes' first cells along each axis (the cells grow with
                               the coordinate), so c is it where c is one box's first cell */
                            const unsigned first = w->sorted_first[k];
                            const int here = (c[0] == lo[0] || (first & 1u)) && (c[1] == lo[1] || (first & 2u)) &&
                                             (c[2] == lo[2] || (first & 4u));
                            if (here && consider(m, w, mode, i, p)) return -1;
                        }
                    }
        }
    }
    /* the big hashed boxes against every query box that finds them */
    for (int64_t p = 0; p < nprim; ++p) {
        if (!w->big[p]) continue;
        if (sc_stop(w, count)) return -1;
        const double* other = pboxes + 6 * p;
        for (int64_t i = 0; i < count; ++i) {
            if (!finds(mode, i, qlevels[i], p, plevels[p])) continue;
            if (boxes_overlap(qboxes + 6 * i, other) && consider(m, w, mode, i, p)) return -1;
        }
    }
    return 0;
}

static void union_box(const double* node_box, const int32_t* nodes, int count, double* out) {
    for (int q = 0; q < 3; ++q) out[q] = INFINITY, out[3 + q] = -INFINITY;
    for (int k = 0; k < count; ++k) {
        const double* b = node_box + 6 * (int64_t)nodes[k];
        for (int q = 0; q < 3; ++q) {
            if (b[q] < out[q]) out[q] = b[q];
            if (b[3 + q] > out[3 + q]) out[3 + q] = b[3 + q];
        }
    }
}

static void pair_nodes(const ms_model* m, const ms_sweep_work* w, const sc_pair* pair, int32_t nodes[4]) {
    if (pair->kind == 0) {
        nodes[0] = pair->a;
        for (int k = 0; k < 3; ++k) nodes[1 + k] = m->faces[3 * (int64_t)pair->b + k];
    } else {
        nodes[0] = w->edges[2 * (int64_t)pair->a], nodes[1] = w->edges[2 * (int64_t)pair->a + 1];
        nodes[2] = w->edges[2 * (int64_t)pair->b], nodes[3] = w->edges[2 * (int64_t)pair->b + 1];
    }
}

int ms_self_contact_sweep(const ms_model* m, ms_state* s, ms_sweep_work* w, const double* x0, double* x1, double* v,
                          double gap, const ms_interrupt* interrupt, int64_t* sent_back, double* removed) {
    *sent_back = 0;
    *removed = 0.0;
    w->interrupt = interrupt != NULL && interrupt->check != NULL ? interrupt : NULL;
    w->countdown = SC_PACE;
    w->checked_at = w->interrupt != NULL ? ms_clock_seconds() : 0.0;
    w->stopped = 0;
    const int64_t n = m->nnode, nf = m->nface, nedge = w->nedge;
    const double* inv_mass = s->inv_mass;
    if (nf == 0) return MS_OK;
    /* the gap: a fraction of the thickness, and of the mean edge at the start of the step
       (so a thickness beyond the mesh's scale does not hold every neighbour of a flat sheet) */
    {
        double mean = 0.0;
        for (int64_t e = 0; e < nedge; ++e) {
            const double* a = x0 + 3 * (int64_t)w->edges[2 * e];
            const double* b = x0 + 3 * (int64_t)w->edges[2 * e + 1];
            const double d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
            mean += sqrt(DOT(d, d));
        }
        mean /= (double)(nedge > 0 ? nedge : 1);
        if (MS_SELF_CONTACT_GAP * mean < gap) gap = MS_SELF_CONTACT_GAP * mean;
    }
    for (int attempt = 0;; ++attempt) {
        /* The boxes are swept in a frame moving with the nodes' mean displacement: a common
           translation of all the points does not change their distances at any time, so a pair
           that touches in one frame touches in the other, and a cloth moving as a whole keeps
           small boxes (and a fine grid) however far it goes in one step.  If the step sends a
           node back, the search runs again in the frame at rest.  The moving frame is taken
           only where it at least halves the nodes' paths: a cloth thrown into a still one
           has paths as long in either frame, and contact is likely, so the search is made
           once, at rest. */
        double shift[3] = {0.0, 0.0, 0.0};
        for (int64_t i = 0; i < n; ++i)
            for (int q = 0; q < 3; ++q) shift[q] += x1[3 * i + q] - x0[3 * i + q];
        for (int q = 0; q < 3; ++q) {
            shift[q] /= (double)(n > 0 ? n : 1);
            if (!isfinite(shift[q]) || attempt > 0) shift[q] = 0.0;
        }
        {
            double at_rest = 0.0, moving = 0.0;
            for (int64_t i = 0; i < n; ++i)
                for (int q = 0; q < 3; ++q) {
                    const double d = x1[3 * i + q] - x0[3 * i + q];
                    at_rest += fabs(d);
                    moving += fabs(d - shift[q]);
                }
            if (!(moving < 0.5 * at_rest))
                for (int q = 0; q < 3; ++q) shift[q] = 0.0;
        }
        const int shifted = shift[0] != 0.0 || shift[1] != 0.0 || shift[2] != 0.0;
        int retry = 0;
        for (int64_t i = 0; i < n; ++i) {
            double* box = w->node_box + 6 * i;
            for (int q = 0; q < 3; ++q) {
                const double a = x0[3 * i + q], b = x1[3 * i + q] - shift[q];
                box[q] = (a < b ? a : b) - gap;
                box[3 + q] = (a < b ? b : a) + gap;
            }
            w->back[i] = 0;
            w->fresh[i] = 0;
        }
        for (int64_t e = 0; e < nedge; ++e) union_box(w->node_box, w->edges + 2 * e, 2, w->edge_box + 6 * e);
        for (int64_t f = 0; f < nf; ++f) union_box(w->node_box, m->faces + 3 * f, 3, w->face_box + 6 * f);
        if (!set_levels(w, n, nedge, nf)) return MS_OK; /* non-finite: the step's checks see it */

        w->npair = 0;
        if (hash_primitives(w, w->edge_box, w->edge_level, nedge)) return MS_ERR_MEMORY;
        if (query(m, w, SC_EDGES, w->edge_box, w->edge_level, nedge, w->edge_box, w->edge_level, nedge))
            return w->stopped ? MS_ERR_INTERRUPTED : MS_ERR_MEMORY;
        if (hash_primitives(w, w->face_box, w->face_level, nf)) return MS_ERR_MEMORY;
        if (query(m, w, SC_NODES_FACES, w->node_box, w->node_level, n, w->face_box, w->face_level, nf))
            return w->stopped ? MS_ERR_INTERRUPTED : MS_ERR_MEMORY;
        /* a node of higher level than a triangle (faster than the triangle is large) is
           found by the triangle: only if there is one are the nodes hashed */
        int64_t node_top = 0, face_bottom = SC_LEVELS;
        for (int64_t i = 0; i < n; ++i)
            if (w->node_level[i] > node_top) node_top = w->node_level[i];
        for (int64_t f = 0; f < nf; ++f)
            if (w->face_level[f] < face_bottom) face_bottom = w->face_level[f];
        if (node_top > face_bottom) {
            if (hash_primitives(w, w->node_box, w->node_level, n)) return MS_ERR_MEMORY;
            if (query(m, w, SC_FACES_NODES, w->face_box, w->face_level, nf, w->node_box, w->node_level, n))
                return w->stopped ? MS_ERR_INTERRUPTED : MS_ERR_MEMORY;
        }

        memcpy(w->end, x1, sizeof(double) * 3 * (size_t)n);
        for (int round = 0;; ++round) {
            int64_t npending = 0;
            for (int64_t k = 0; k < w->npair; ++k) {
                if (sc_stop(w, 1)) return MS_ERR_INTERRUPTED;
                int32_t nodes[4];
                pair_nodes(m, w, w->pairs + k, nodes);
                if (round > 0 && !(w->fresh[nodes[0]] || w->fresh[nodes[1]] || w->fresh[nodes[2]] || w->fresh[nodes[3]]))
                    continue;
                int movable = 0;
                for (int q = 0; q < 4; ++q) movable |= !w->back[nodes[q]];
                if (!movable) continue; /* nothing left to send back */
                double start[4][3], motion[4][3];
                for (int q = 0; q < 4; ++q)
                    for (int a = 0; a < 3; ++a) {
                        start[q][a] = x0[3 * (int64_t)nodes[q] + a];
                        motion[q][a] = w->end[3 * (int64_t)nodes[q] + a] - start[q][a];
                    }
                if (!pair_contact(start, motion, w->pairs[k].kind, gap)) continue;
                if (shifted) {
                    /* a node sent back leaves the path its box was swept along in the moving
                       frame: the pairs are found again in the frame at rest, where x0 lies in
                       every node's box (the first contact decides it) */
                    retry = 1;
                    break;
                }
                for (int q = 0; q < 4; ++q) {
                    const int32_t i = nodes[q];
                    if (!w->back[i]) {
                        w->back[i] = 2; /* pending */
                        w->pending[npending++] = i;
                    }
                }
            }
            for (int64_t i = 0; i < n; ++i) w->fresh[i] = 0;
            if (npending == 0 || retry) break;
            for (int64_t k = 0; k < npending; ++k) {
                const int32_t i = w->pending[k];
                w->back[i] = 1;
                w->fresh[i] = 1;
                for (int a = 0; a < 3; ++a) w->end[3 * (int64_t)i + a] = x0[3 * (int64_t)i + a];
            }
            *sent_back += npending;
        }
        if (!retry) break;
    }
    if (*sent_back == 0) return MS_OK;
    double lost = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (!w->back[i]) continue;
        double* vi = v + 3 * i;
        for (int a = 0; a < 3; ++a) x1[3 * i + a] = x0[3 * i + a];
        if (inv_mass[i] == 0.0) continue; /* a pinned node keeps the velocity it is given */
        lost += 0.5 * DOT(vi, vi) / inv_mass[i];
        for (int a = 0; a < 3; ++a) vi[a] = 0.0;
    }
    *removed = lost;
    return MS_OK;
}
