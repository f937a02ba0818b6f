/* Implicit (backward) Euler: M (v' - v) = h f(x + h v', v'),  x' = x + h v'.
 *
 * Newton's method on the velocity change dv = v' - v.  Iteration k linearises the force
 * about a point (x_k, v_k):  f(x', v') ~ f_k - K_k (x' - x_k) - C_k (v' - v_k), with
 * K = -df/dx and C = -df/dv, which gives the linear system
 *
 *     A_k dv = h [f_k - K_k (x + h v - x_k) - C_k (v - v_k)] + (terms in dv_k),
 *     A_k = M + h C_k + h^2 K_k.
 *
 * The first iteration linearises about the start (x, v) itself, so its right-hand side is
 * h (f_0 - h K_0 v): exactly Baraff & Witkin's (1998) linearised step.  Later iterations
 * linearise about the current iterate (x + h v'_k, v'_k), where the system reduces to the
 * Newton update A_k delta = -g_k with the residual g_k = M dv_k - h f_k.  Where v' = v
 * already leaves a residual below cg_tol (a body ringing or at rest on its supports) and
 * more than one iteration is allowed, the first iteration is such a Newton update too,
 * about (x + h v, v).  Each system is
 * solved by conjugate gradients, matrix-free over the springs' 3x3 blocks, with pinned nodes
 * filtered out so they keep their own velocity exactly.
 *
 * Where the network's matrix factors with little fill-in (chains, trees, strands: a sparse
 * Cholesky factor, fill-reducing ordering, with at most FILL_LIMIT times the entries of A's
 * lower triangle), A itself is factored at every Newton iteration (the pattern analysed
 * once per set of pins) and CG, preconditioned by that factor, converges in one iteration:
 * a direct solve that keeps CG's residual check.  Elsewhere (cloth, solids) the factor
 * fills in so much that its factorisation and solves cost more than the CG iterations
 * they save, and the preconditioner is the inverse of each node's 3 x 3 diagonal block of A
 * (block Jacobi: a third fewer CG iterations than the scalar diagonal on stiff cloth, as
 * it sees each node's springs' directions) plus a coarse correction over aggregates of
 * neighbouring nodes (additive two-level Schwarz, see precondition), which takes the
 * smooth error block Jacobi is slow on.  The coarse level moves each aggregate rigidly (a
 * translation and a small rotation about its nodes' centre at the step's start): a bent
 * or twisted solid's error is mostly such motions, which translations alone leave to
 * block Jacobi; on tetrahedral solids at h = 1/60 s it takes 3 to 4 times fewer CG
 * iterations than aggregates' translations and 4 to 5 times fewer than block Jacobi alone.
 * The aggregates depend on the springs and pins only, and the coarse matrix is made
 * within each step from the step's start, so a fresh copy of a state steps to the same
 * bits.
 *
 * In Baraff and Witkin's first iteration the transverse stiffness k (1 - L/l) is clamped at
 * zero for compressed springs so A stays symmetric positive definite; the others take the exact
 * value while A stays positive definite (see implicit_stages).  The dampers' dependence on
 * position is left out of K (it is not symmetric); Newton then converges linearly rather
 * than quadratically when dampers are strong, but to the same solution.  The linear solves'
 * tolerance tightens as Newton converges (Eisenstat and Walker's forcing term), so that an
 * inexact solve does not hold Newton to a linear rate either.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cholesky.h"
#include "kernels/pattern.h"
#include "kernels/tangent.h"
#include "solvers/solvers.h"

/* Per node: dv, rhs, r, z, p, Ap (3 each), the inverse of its diagonal block (6), forces,
   delta, the normal of the collider holding it (3 each); per spring its tangent block
   (kernels/tangent.h) and its damping c, in the order of the springs' layout
   (kernels/layout.h), which the matrix products visit. */
#define MS_IMPLICIT_NODE_DOUBLES 33
#define BLOCK_DOUBLES MS_PRODUCT_BLOCK_DOUBLES

/* A matrix over groups of nodes (each free node on its own, or the aggregates of the
   coarse level) with 3 unknowns per group, interleaved: its pattern (the groups and the
   pairs of them joined by springs), its lower triangle by columns with each pair a 3 x 3
   block, its values and factor. */
typedef struct block_system {
    ms_node_pattern node; /* free_index: each node's group, -1 for none */
    int width;            /* unknowns per group: 3 (translations), or 6 (and rotations) */
    double* offsets;      /* width 6: each node's offset from its group's centre (3 nnode), then
                             each node's share of the coarse matrix as a 3 x 3 block (6 nnode) */
    int64_t* start3;      /* (width nfree + 1) */
    int32_t* rows3;
    double* values3;
    double* gathered;     /* a vector on the groups (nfree x 3) */
    ms_cholesky* factor;
} block_system;

/* The solver's storage (slot MS_WORK_IMPLICIT): what it keeps for the factorisations, then
   its per-node and per-spring arrays. */
typedef struct implicit_solver {
    uint8_t* pinned;    /* the pins the patterns were made for (nnode), NULL until they are made */
    int direct;         /* A fills in little: each Newton iteration's A is factored */
    int two_level;      /* else: block Jacobi with the coarse level's correction on stiff steps */
    int gentle_level;   /* and with the gentle level's on the others */
    block_system fine;  /* A over the free nodes */
    block_system coarse; /* A restricted to the aggregates' rigid motions (or translations) */
    block_system gentle; /* A restricted to the translations of smaller aggregates */
    block_system* active; /* worker 0's, for the step: the coarse level in use, or NULL */
    int holding;        /* worker 0's, for the step: some node is held by a collider */
    double work[];
} implicit_solver;

static void release_system(block_system* b) {
    ms_cholesky_destroy(b->factor);
    ms_node_pattern_release(&b->node);
    free(b->start3);
    free(b->rows3);
    free(b->values3);
    free(b->gathered);
    free(b->offsets);
    memset(b, 0, sizeof *b);
}

static void release_pattern(implicit_solver* p) {
    free(p->pinned);
    release_system(&p->fine);
    release_system(&p->coarse);
    release_system(&p->gentle);
    memset(p, 0, offsetof(implicit_solver, work));
}

static void implicit_free(void* solver) {
    if (solver == NULL) return;
    release_pattern(solver);
    free(solver);
}

int ms_implicit_prepare(const ms_model* m, ms_state* s, ms_error* err) {
    if (ms_workspace_get(s, MS_WORK_IMPLICIT) != NULL) return MS_OK;
    const size_t doubles =
        MS_IMPLICIT_NODE_DOUBLES * (size_t)m->nnode + BLOCK_DOUBLES * (size_t)m->nspring;
    implicit_solver* solver = calloc(1, sizeof(implicit_solver) + sizeof(double) * doubles);
    if (solver == NULL)
        return ms_error_set(err, MS_ERR_MEMORY, "out of memory allocating implicit solver storage for %lld nodes",
                            (long long)m->nnode);
    ms_workspace_set(s, MS_WORK_IMPLICIT, solver, implicit_free);
    return MS_OK;
}

/* The width x width blocks' pattern from the group pattern (width 3 unless set): scalar
   column w j + a of group column j holds the rows w j + a .. w j + w - 1 of the diagonal
   block, then w r .. w r + w - 1 for each group row r below; then the analysis of it. */
static int build_system_pattern(block_system* p) {
    const int64_t nf = p->node.nfree;
    if (p->width == 0) p->width = 3;
    const int w = p->width;
    p->start3 = malloc(sizeof(int64_t) * (size_t)(w * nf + 1));
    if (p->start3 == NULL) return -1;
    p->start3[0] = 0;
    for (int64_t j = 0; j < nf; ++j) {
        const int64_t below = p->node.column_start[j + 1] - p->node.column_start[j] - 1;
        for (int a = 0; a < w; ++a) p->start3[w * j + a + 1] = p->start3[w * j + a] + (w - a) + w * below;
    }
    const size_t total = (size_t)p->start3[w * nf];
    p->rows3 = malloc(sizeof(int32_t) * (total > 0 ? total : 1));
    p->values3 = malloc(sizeof(double) * (total > 0 ? total : 1));
    p->gathered = malloc(sizeof(double) * (size_t)(w * nf > 0 ? w * nf : 1));
    if (p->rows3 == NULL || p->values3 == NULL || p->gathered == NULL) return -1;
    for (int64_t j = 0; j < nf; ++j)
        for (int a = 0; a < w; ++a) {
            int64_t q = p->start3[w * j + a];
            for (int b = a; b < w; ++b) p->rows3[q++] = (int32_t)(w * j + b);
            for (int64_t e = p->node.column_start[j] + 1; e < p->node.column_start[j + 1]; ++e)
                for (int b = 0; b < w; ++b) p->rows3[q++] = w * p->node.rows[e] + b;
        }
    p->factor = ms_cholesky_analyse(w * nf, p->start3, p->rows3, NULL);
    return p->factor != NULL ? 0 : -1;
}

/* Where the entry (w r + b, w j + a) is kept, for the group entry e = (r, j) of column j
   (b >= a on the diagonal block). */
static int64_t system_entry(const block_system* p, int64_t e, int64_t j, int a, int b) {
    const int w = p->width;
    const int64_t below = e - p->node.column_start[j];
    return p->start3[w * j + a] + (below == 0 ? b - a : (w - a) + w * (below - 1) + b);
}

/* Aggregates of the free nodes for the coarse level, from the node pattern's graph (np):
   each free node whose neighbours are all still free of an aggregate starts one with
   them and with the nodes up to rings - 1 steps further that are not yet in one, in node
   order; the nodes left join the aggregate of their first neighbour in one, or start
   their own.  group receives each node's aggregate (-1 pinned); returns the number of
   aggregates, or -1 if out of memory. */
static int64_t aggregate_nodes(const ms_model* m, const ms_node_pattern* np, int rings, int32_t* group) {
    const int64_t nf = np->nfree, entries = np->column_start[nf];
    int64_t* start = calloc((size_t)nf + 1, sizeof(int64_t));
    int32_t* adjacent = malloc(sizeof(int32_t) * (size_t)(2 * (entries - nf) > 0 ? 2 * (entries - nf) : 1));
    int32_t* of_free = malloc(sizeof(int32_t) * (size_t)(nf > 0 ? nf : 1));
    int32_t* ring = malloc(sizeof(int32_t) * (size_t)(nf > 0 ? nf : 1));
    int64_t count = -1;
    if (start == NULL || adjacent == NULL || of_free == NULL || ring == NULL) goto done;
    /* the symmetric graph of the lower triangle, without the diagonal */
    for (int64_t j = 0; j < nf; ++j)
        for (int64_t e = np->column_start[j] + 1; e < np->column_start[j + 1]; ++e) {
            start[j + 1] += 1;
            start[np->rows[e] + 1] += 1;
        }
    for (int64_t j = 0; j < nf; ++j) start[j + 1] += start[j];
    {
        int64_t* cursor = malloc(sizeof(int64_t) * (size_t)(nf > 0 ? nf : 1));
        if (cursor == NULL) goto done;
        memcpy(cursor, start, sizeof(int64_t) * (size_t)nf);
        for (int64_t j = 0; j < nf; ++j)
            for (int64_t e = np->column_start[j] + 1; e < np->column_start[j + 1]; ++e) {
                adjacent[cursor[j]++] = np->rows[e];
                adjacent[cursor[np->rows[e]]++] = (int32_t)j;
            }
        free(cursor);
    }
    for (int64_t j = 0; j < nf; ++j) of_free[j] = -1;
    count = 0;
    for (int64_t j = 0; j < nf; ++j) {
        if (of_free[j] >= 0) continue;
        int taken = 0;
        for (int64_t q = start[j]; q < start[j + 1] && !taken; ++q) taken = of_free[adjacent[q]] >= 0;
        if (taken) continue;
        of_free[j] = (int32_t)count;
        for (int64_t q = start[j]; q < start[j + 1]; ++q) of_free[adjacent[q]] = (int32_t)count;
        /* the further rings: the neighbours of the last ring's nodes not yet in one */
        int64_t ring_begin = 0, ring_end = 0;
        for (int64_t q = start[j]; q < start[j + 1]; ++q) ring[ring_end++] = adjacent[q];
        for (int k = 1; k < rings && ring_begin < ring_end; ++k) {
            const int64_t last = ring_end;
            for (int64_t t = ring_begin; t < last; ++t)
                for (int64_t u = start[ring[t]]; u < start[ring[t] + 1]; ++u)
                    if (of_free[adjacent[u]] < 0) {
                        of_free[adjacent[u]] = (int32_t)count;
                        ring[ring_end++] = adjacent[u];
                    }
            ring_begin = last;
        }
        count += 1;
    }
    for (int64_t j = 0; j < nf; ++j) {
        if (of_free[j] >= 0) continue;
        for (int64_t q = start[j]; q < start[j + 1] && of_free[j] < 0; ++q)
            if (of_free[adjacent[q]] >= 0) of_free[j] = of_free[adjacent[q]];
        if (of_free[j] < 0) of_free[j] = (int32_t)count++;
    }
    for (int64_t i = 0; i < m->nnode; ++i) group[i] = np->free_index[i] >= 0 ? of_free[np->free_index[i]] : -1;
done:
    free(start);
    free(adjacent);
    free(of_free);
    free(ring);
    return count;
}

/* Makes the patterns for the model's pins unless they are held, and picks the
   preconditioner.  A is factored only where its factor has at most FILL_LIMIT times A's
   entries (chains, trees, strands), since where it fills in (cloth, solids) a
   factorisation and its solves cost more than the CG iterations they save.  The node
   pattern (a ninth of A's entries, a third of its unknowns) is analysed first: A's factor
   has about nine entries for each of the node factor's, so where that one already fills
   in beyond the limit A's (whose analysis takes seconds on a solid of 50,000 nodes) is not
   analysed.  Elsewhere the preconditioner is block Jacobi with a coarse correction over
   aggregates: the rigid motions (6 unknowns) of aggregates of a node and two rings of
   neighbours (some 35 to 45 nodes in a tetrahedral solid) where their factor has at most
   RIGID_SMALL times A's entries, else of three rings (some 70 to 90) where it has at most
   that, else of four where it has at most RIGID_LIMIT times: where the coarse factor is a
   sizeable part of A, its solves cost more than the CG iterations that smaller aggregates
   save (at 9,000 nodes two rings give 212 aggregates, a factor of a third of A's entries
   and 72 CG iterations per step at h = 1/60 s; three rings 87 iterations in about a fifth
   less time).  Else the translations of aggregates of a node and its neighbours (some 15
   to 20 nodes) where the coarse factor has at most COARSE_LIMIT times A's entries (the
   rigid motions of those aggregates fill 10 times more), else those of two rings, and
   none if its factor still has more: the coarse level of stiff steps.  Networks of fewer
   than TWO_LEVEL_NODES free nodes keep block Jacobi alone: their solves take few
   iterations.  Steps that are not stiff (see implicit_stages) take the gentle level, the
   translations of aggregates of one ring or two as above, on networks of at least
   GENTLE_NODES free nodes (block Jacobi alone below: as these steps were measured before
   the rigid level was made). */
#define FILL_LIMIT 2.0
#define COARSE_LIMIT 0.25
#define RIGID_SMALL 0.2
#define RIGID_LIMIT 1.5
#define TWO_LEVEL_NODES 200
#define COARSE_STIFFNESS 500.0
#define GENTLE_NODES 1000
static void ensure_pattern(const ms_model* m, implicit_solver* p) {
    if (p->pinned != NULL && memcmp(p->pinned, m->pinned, (size_t)m->nnode) == 0) return;
    release_pattern(p);
    p->pinned = malloc((size_t)(m->nnode > 0 ? m->nnode : 1));
    if (p->pinned == NULL) return;
    memcpy(p->pinned, m->pinned, (size_t)m->nnode);
    block_system* fine = &p->fine;
    if (ms_node_pattern_build(m, &fine->node) != 0) return;
    const int64_t nf = fine->node.nfree, node_entries = fine->node.column_start[nf];
    ms_cholesky* node_factor = ms_cholesky_analyse(nf, fine->node.column_start, fine->node.rows, NULL);
    const int sparse =
        node_factor != NULL && (double)ms_cholesky_nonzeros(node_factor) <= FILL_LIMIT * (double)node_entries;
    ms_cholesky_destroy(node_factor);
    if (sparse && build_system_pattern(fine) == 0)
        p->direct = (double)ms_cholesky_nonzeros(fine->factor) <= FILL_LIMIT * (double)fine->start3[3 * nf];
    if (p->direct || nf < TWO_LEVEL_NODES) return;
    block_system* coarse = &p->coarse;
    block_system* gentle = &p->gentle;
    int32_t* group = malloc(sizeof(int32_t) * (size_t)(m->nnode > 0 ? m->nnode : 1));
    const double entries = (double)(9 * (node_entries - nf) + 6 * nf);
    /* rigid motions of aggregates of two rings, three, four; translations of one ring, of two */
    const struct {
        int rings, width;
        double limit;
    } choices[5] = {{2, 6, RIGID_SMALL}, {3, 6, RIGID_SMALL}, {4, 6, RIGID_LIMIT}, {1, 3, COARSE_LIMIT},
                    {2, 3, COARSE_LIMIT}};
    for (int c = 0; c < 5 && group != NULL && !p->two_level; ++c) {
        release_system(coarse);
        coarse->width = choices[c].width;
        const int64_t count = aggregate_nodes(m, &fine->node, choices[c].rings, group);
        if (count > 0 && count < nf && ms_group_pattern_build(m, group, count, &coarse->node) == 0 &&
            build_system_pattern(coarse) == 0)
            p->two_level = (double)ms_cholesky_nonzeros(coarse->factor) <= choices[c].limit * entries;
        if (p->two_level && coarse->width == 6) {
            coarse->offsets = malloc(sizeof(double) * 9 * (size_t)(m->nnode > 0 ? m->nnode : 1));
            p->two_level = coarse->offsets != NULL;
        }
    }
    if (!p->two_level) release_system(coarse);
    for (int rings = 1; rings <= 2 && group != NULL && nf >= GENTLE_NODES && !p->gentle_level; ++rings) {
        release_system(gentle);
        const int64_t count = aggregate_nodes(m, &fine->node, rings, group);
        if (count > 0 && count < nf && ms_group_pattern_build(m, group, count, &gentle->node) == 0 &&
            build_system_pattern(gentle) == 0)
            p->gentle_level = (double)ms_cholesky_nonzeros(gentle->factor) <= COARSE_LIMIT * entries;
    }
    if (!p->gentle_level) release_system(gentle);
    free(group);
}

/* Factors a block system's matrix: A = M + h C + h^2 K summed over each group (spring
   blocks at hand, in the layout's order; the springs inside a group cancel); returns
   whether it could. */
static int factor_system(const ms_model* m, const ms_layout* layout, block_system* p, const double* blocks,
                         double h) {
    memset(p->values3, 0, sizeof(double) * (size_t)p->start3[3 * p->node.nfree]);
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t j = p->node.free_index[i];
        if (j >= 0)
            for (int a = 0; a < 3; ++a) p->values3[p->start3[3 * j + a]] += m->mass[i] + h * m->opt.drag;
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        const int64_t s = layout->order[r];
        const double* b = blocks + BLOCK_DOUBLES * r;
        const double beta = h * h * b[3], alpha = h * h * b[4] + h * b[5];
        const int64_t ends[2] = {p->node.free_index[m->springs[2 * s]], p->node.free_index[m->springs[2 * s + 1]]};
        const int64_t e = p->node.spring_entry[s], j = ends[0] < ends[1] ? ends[0] : ends[1];
        if (ends[0] == ends[1]) continue; /* between two pinned nodes, or inside a group */
        for (int a = 0; a < 3; ++a)
            for (int c = a; c < 3; ++c) {
                const double value = (a == c ? beta : 0.0) + alpha * b[a] * b[c];
                for (int end = 0; end < 2; ++end) {
                    const int64_t i = ends[end];
                    if (i >= 0) p->values3[system_entry(p, p->node.column_start[i], i, a, c)] += value;
                }
                if (e < 0) continue;
                p->values3[system_entry(p, e, j, a, c)] -= value;
                if (c != a) p->values3[system_entry(p, e, j, c, a)] -= value;
            }
    }
    return ms_cholesky_factor(p->factor, p->values3, NULL) == MS_OK;
}

/* The 3 x 6 map P from a group's translation t and rotation theta to a node's displacement
   t + theta x d, for the node's offset d from the group's centre (all zero for none). */
static void rigid_map(const double* d, double scale, double P[3][6]) {
    for (int a = 0; a < 3; ++a)
        for (int c = 0; c < 3; ++c) P[a][c] = a == c ? scale : 0.0;
    const double dx = scale * d[0], dy = scale * d[1], dz = scale * d[2];
    P[0][3] = 0.0, P[1][3] = -dz, P[2][3] = dy;
    P[0][4] = dz, P[1][4] = 0.0, P[2][4] = -dx;
    P[0][5] = -dy, P[1][5] = dx, P[2][5] = 0.0;
}

/* Row r of Pa^T times the 3 x 6 matrix BQ, for Pa a rigid_map (its translations' columns
   scale times the identity's): the sum over a of Pa[a][r] BQ[a][c] without the products
   by Pa's zeros (adding them changes no value). */
static void rigid_row(double P[3][6], double BQ[3][6], int r, double out[6]) {
    switch (r) {
    case 0: case 1: case 2:
        for (int c = 0; c < 6; ++c) out[c] = P[r][r] * BQ[r][c];
        break;
    case 3: /* (0, -dz, dy) */
        for (int c = 0; c < 6; ++c) out[c] = P[1][3] * BQ[1][c] + P[2][3] * BQ[2][c];
        break;
    case 4: /* (dz, 0, -dx) */
        for (int c = 0; c < 6; ++c) out[c] = P[0][4] * BQ[0][c] + P[2][4] * BQ[2][c];
        break;
    default: /* (-dy, dx, 0) */
        for (int c = 0; c < 6; ++c) out[c] = P[0][5] * BQ[0][c] + P[1][5] * BQ[1][c];
        break;
    }
}

/* Adds sign Pa^T B Pb (6 x 6, B = beta I + alpha n n^T) to the block of groups (ga, gb)
   of a width-6 system: its lower triangle when ga = gb, else the block of the larger
   group's rows in the smaller group's columns (group entry e).  P and Q are rigid_maps. */
static void add_rigid(block_system* p, int64_t ga, int64_t gb, int64_t e, double P[3][6], double Q[3][6],
                      double beta, double alpha, const double* n, double sign) {
    double BQ[3][6];
    for (int c = 0; c < 6; ++c) {
        const double along = alpha * (n[0] * Q[0][c] + n[1] * Q[1][c] + n[2] * Q[2][c]);
        for (int a = 0; a < 3; ++a) BQ[a][c] = beta * Q[a][c] + along * n[a];
    }
    double X[6][6];
    for (int r = 0; r < 6; ++r) {
        rigid_row(P, BQ, r, X[r]);
        for (int c = 0; c < 6; ++c) X[r][c] *= sign;
    }
    if (ga == gb) {
        const int64_t column = p->node.column_start[ga];
        for (int a = 0; a < 6; ++a) {
            double* entry = p->values3 + system_entry(p, column, ga, a, a); /* b = a .. 5 follow it */
            for (int b = a; b < 6; ++b) entry[b - a] += X[b][a];
        }
    } else if (ga < gb) { /* rows of gb in the columns of ga: (Pa^T B Pb)^T */
        for (int a = 0; a < 6; ++a) {
            double* entry = p->values3 + system_entry(p, e, ga, a, 0);
            for (int b = 0; b < 6; ++b) entry[b] += X[a][b];
        }
    } else {
        for (int a = 0; a < 6; ++a) {
            double* entry = p->values3 + system_entry(p, e, gb, a, 0);
            for (int b = 0; b < 6; ++b) entry[b] += X[b][a];
        }
    }
}

/* Adds Pa^T S Pa to the diagonal block of group g of a width-6 system (its lower
   triangle), for S a symmetric 3 x 3 block given as its entries 00, 01, 02, 11, 12, 22. */
static void add_rigid_node(block_system* p, int64_t g, double P[3][6], const double* s) {
    const double S[3][3] = {{s[0], s[1], s[2]}, {s[1], s[3], s[4]}, {s[2], s[4], s[5]}};
    double BQ[3][6];
    for (int c = 0; c < 6; ++c)
        for (int a = 0; a < 3; ++a) BQ[a][c] = S[a][0] * P[0][c] + S[a][1] * P[1][c] + S[a][2] * P[2][c];
    double X[6][6];
    for (int r = 0; r < 6; ++r) rigid_row(P, BQ, r, X[r]);
    const int64_t column = p->node.column_start[g];
    for (int a = 0; a < 6; ++a) {
        double* entry = p->values3 + system_entry(p, column, g, a, a); /* b = a .. 5 follow it */
        for (int b = a; b < 6; ++b) entry[b - a] += X[b][a];
    }
}

/* Factors the coarse matrix of a width-6 system, P^T A P with P each group's rigid motions
   about its nodes' centre at positions x (translations and small rotations; the offsets are
   kept for the solves); the rotations of a group whose nodes are (nearly) collinear get a
   small mass of their own so that the matrix stays definite.  Returns whether it could. */
static int factor_rigid(const ms_model* m, const ms_layout* layout, block_system* p, const double* blocks, double h,
                        const double* x) {
    const int64_t nf = p->node.nfree;
    double* centre = p->gathered; /* 4 per group while the offsets are made: the sum and the count */
    memset(centre, 0, sizeof(double) * 4 * (size_t)nf);
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t g = p->node.free_index[i];
        if (g < 0) continue;
        for (int a = 0; a < 3; ++a) centre[4 * g + a] += x[3 * i + a];
        centre[4 * g + 3] += 1.0;
    }
    double spread = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t g = p->node.free_index[i];
        double* d = p->offsets + 3 * i;
        if (g < 0) {
            d[0] = d[1] = d[2] = 0.0;
            continue;
        }
        for (int a = 0; a < 3; ++a) d[a] = x[3 * i + a] - centre[4 * g + a] / centre[4 * g + 3];
        const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (d2 > spread) spread = d2;
    }
    const double guard = spread > 0.0 ? 1e-4 * spread : 1.0;
    memset(p->values3, 0, sizeof(double) * (size_t)p->start3[6 * nf]);
    double* rotations = p->gathered; /* 6 per group: the springs inside it (the centres are done with) */
    memset(rotations, 0, sizeof(double) * 6 * (size_t)nf);
    double P[3][6], Q[3][6];
    /* each node's mass and the blocks of its springs to other groups, summed per node and
       added once as P^T S P (with the guard on its rotations) after the springs */
    double* shares = p->offsets + 3 * m->nnode;
    for (int64_t i = 0; i < m->nnode; ++i) {
        double* share = shares + 6 * i;
        share[0] = share[3] = share[5] = m->mass[i] + h * m->opt.drag;
        share[1] = share[2] = share[4] = 0.0;
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        const int64_t s = layout->order[r];
        const double* b = blocks + BLOCK_DOUBLES * r;
        const double beta = h * h * b[3], alpha = h * h * b[4] + h * b[5];
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const int64_t gi = p->node.free_index[i], gj = p->node.free_index[j];
        if (gi < 0 && gj < 0) continue;
        if (gi == gj) {
            /* inside a group only the rotations strain it, by theta x e for e = d_i - d_j:
               its block is beta (|e|^2 I - e e^T) + alpha (e x n)(e x n)^T, summed per group
               (00, 01, 02, 11, 12, 22) and added once below */
            const double* di = p->offsets + 3 * i;
            const double* dj = p->offsets + 3 * j;
            const double e[3] = {di[0] - dj[0], di[1] - dj[1], di[2] - dj[2]};
            const double c[3] = {e[1] * b[2] - e[2] * b[1], e[2] * b[0] - e[0] * b[2], e[0] * b[1] - e[1] * b[0]};
            const double e2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
            double* sum = rotations + 6 * gi;
            sum[0] += beta * (e2 - e[0] * e[0]) + alpha * c[0] * c[0];
            sum[1] += alpha * c[0] * c[1] - beta * e[0] * e[1];
            sum[2] += alpha * c[0] * c[2] - beta * e[0] * e[2];
            sum[3] += beta * (e2 - e[1] * e[1]) + alpha * c[1] * c[1];
            sum[4] += alpha * c[1] * c[2] - beta * e[1] * e[2];
            sum[5] += beta * (e2 - e[2] * e[2]) + alpha * c[2] * c[2];
            continue;
        }
        const double add[6] = {beta + alpha * b[0] * b[0], alpha * b[0] * b[1], alpha * b[0] * b[2],
                               beta + alpha * b[1] * b[1], alpha * b[1] * b[2], beta + alpha * b[2] * b[2]};
        for (int q = 0; q < 6; ++q) {
            if (gi >= 0) shares[6 * i + q] += add[q];
            if (gj >= 0) shares[6 * j + q] += add[q];
        }
        const int64_t e = p->node.spring_entry[s];
        if (gi >= 0 && gj >= 0 && e >= 0) {
            rigid_map(p->offsets + 3 * i, 1.0, P);
            rigid_map(p->offsets + 3 * j, 1.0, Q);
            add_rigid(p, gi, gj, e, P, Q, beta, alpha, b, -1.0);
        }
    }
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t g = p->node.free_index[i];
        if (g < 0) continue;
        rigid_map(p->offsets + 3 * i, 1.0, P);
        add_rigid_node(p, g, P, shares + 6 * i);
        const double mass = m->mass[i] + h * m->opt.drag;
        for (int a = 3; a < 6; ++a) p->values3[system_entry(p, p->node.column_start[g], g, a, a)] += mass * guard;
    }
    for (int64_t g = 0; g < nf; ++g) {
        const int64_t column = p->node.column_start[g];
        const double* sum = rotations + 6 * g;
        for (int a = 0, q = 0; a < 3; ++a) {
            double* entry = p->values3 + system_entry(p, column, g, 3 + a, 3 + a); /* rows 3 + a .. 5 */
            for (int b = a; b < 3; ++b) entry[b - a] += sum[q++];
        }
    }
    return ms_cholesky_factor(p->factor, p->values3, NULL) == MS_OK;
}

/* The factor's solve on r summed over each group (restricted), spread back to the group's
   nodes (prolonged): z = that if add is 0 (0 on the nodes of no group), else z += that.
   A width-6 system restricts d x r to its rotations and prolongs t + theta x d. */
static void solve_system(const ms_model* m, block_system* p, const double* MS_RESTRICT r, double* MS_RESTRICT z,
                         int add) {
    const int w = p->width;
    memset(p->gathered, 0, sizeof(double) * (size_t)w * (size_t)p->node.nfree);
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t row = p->node.free_index[i];
        if (row < 0) continue;
        const double* ri = r + 3 * i;
        double* gi = p->gathered + w * row;
        for (int a = 0; a < 3; ++a) gi[a] += ri[a];
        if (w == 6) {
            const double* d = p->offsets + 3 * i;
            gi[3] += d[1] * ri[2] - d[2] * ri[1];
            gi[4] += d[2] * ri[0] - d[0] * ri[2];
            gi[5] += d[0] * ri[1] - d[1] * ri[0];
        }
    }
    ms_cholesky_solve(p->factor, p->gathered, 1);
    for (int64_t i = 0; i < m->nnode; ++i) {
        const int64_t row = p->node.free_index[i];
        double value[3] = {0.0, 0.0, 0.0};
        if (row >= 0) {
            const double* gi = p->gathered + w * row;
            for (int a = 0; a < 3; ++a) value[a] = gi[a];
            if (w == 6) {
                const double* d = p->offsets + 3 * i;
                value[0] += gi[4] * d[2] - gi[5] * d[1];
                value[1] += gi[5] * d[0] - gi[3] * d[2];
                value[2] += gi[3] * d[1] - gi[4] * d[0];
            }
        }
        for (int a = 0; a < 3; ++a) z[3 * i + a] = add ? z[3 * i + a] + value[a] : value[a];
    }
}

static double dot(const double* MS_RESTRICT a, const double* MS_RESTRICT b, int64_t count) {
    double sum = 0.0;
    for (int64_t q = 0; q < count; ++q) sum += a[q] * b[q];
    return sum;
}

/* Block Jacobi preconditioner: the inverse of each node's 3 x 3 diagonal block of A, as its
   6 entries 00, 01, 02, 11, 12, 22 (the identity on pinned nodes, which are filtered out).
   Returns the mean over the free nodes of the trace of the block over 3 times the node's
   mass (with the drag): 1 + about (omega h)^2 for the springs' frequencies omega. */
static double assemble_diagonal(const ms_model* m, const ms_layout* layout, const double* inv_mass,
                                const double* blocks, double h, double* MS_RESTRICT diagonal) {
    const double node = h * m->opt.drag;
    for (int64_t i = 0; i < m->nnode; ++i) {
        double* d = diagonal + 6 * i;
        d[0] = d[3] = d[5] = m->mass[i] + node;
        d[1] = d[2] = d[4] = 0.0;
    }
    for (int64_t r = 0; r < m->nspring; ++r) {
        const int64_t ends[2] = {layout->pairs[2 * r], layout->pairs[2 * r + 1]};
        const double* b = blocks + BLOCK_DOUBLES * r;
        const double beta = h * h * b[3];
        const double alpha = h * h * b[4] + h * b[5];
        const double add[6] = {beta + alpha * b[0] * b[0], alpha * b[0] * b[1], alpha * b[0] * b[2],
                               beta + alpha * b[1] * b[1], alpha * b[1] * b[2], beta + alpha * b[2] * b[2]};
        for (int end = 0; end < 2; ++end)
            for (int e = 0; e < 6; ++e) diagonal[6 * ends[end] + e] += add[e];
    }
    double ratio = 0.0;
    int64_t free_nodes = 0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        double* d = diagonal + 6 * i;
        if (inv_mass[i] == 0.0) {
            d[0] = d[3] = d[5] = 1.0;
            d[1] = d[2] = d[4] = 0.0;
            continue;
        }
        ratio += (d[0] + d[3] + d[5]) / (3.0 * (m->mass[i] + node));
        free_nodes += 1;
        /* the inverse of the symmetric block by its cofactors */
        const double c00 = d[3] * d[5] - d[4] * d[4], c01 = d[2] * d[4] - d[1] * d[5], c02 = d[1] * d[4] - d[2] * d[3];
        const double c11 = d[0] * d[5] - d[2] * d[2], c12 = d[1] * d[2] - d[0] * d[4], c22 = d[0] * d[3] - d[1] * d[1];
        const double inverse_determinant = 1.0 / (d[0] * c00 + d[1] * c01 + d[2] * c02);
        d[0] = c00 * inverse_determinant;
        d[1] = c01 * inverse_determinant;
        d[2] = c02 * inverse_determinant;
        d[3] = c11 * inverse_determinant;
        d[4] = c12 * inverse_determinant;
        d[5] = c22 * inverse_determinant;
    }
    return free_nodes > 0 ? ratio / (double)free_nodes : 1.0;
}

typedef struct cg_vectors {
    double* r;
    double* z;
    double* p;
    double* ap;
    double* diagonal;
} cg_vectors;

/* The step on the team's workers (kernels/team.h).  Every worker runs the same Newton and CG
   iterations: vectors are updated node block by node block, the matrix product spring
   block by spring block (each block starts its own nodes and writes past them into its
   halo, as the forces do), and every dot product is summed per node block, then over the
   blocks in block order by every worker, so all take the same decisions and any number
   of workers gives the same bits.  What factors or assembles over all springs (the direct
   factor, the diagonal blocks) is done by worker 0 between barriers. */

/* Slots of ms_node_sums.reduce: the CG's dot products, then the Newton residual's parts. */
enum { CG_PAP, CG_RR, CG_RZ, NEWTON_RESIDUAL, NEWTON_MOMENTUM, NEWTON_IMPULSE, NEWTON_WEIGHT };

static double block_sum(const ms_team* tm, int slot) {
    double sum = 0.0;
    for (int64_t b = 0; b < tm->nnode_block; ++b) sum += tm->nodes[b].reduce[slot];
    return sum;
}

/* y = (a M + b C + c K) p as ms_system_product, on the team, spring block by spring block
   (a block starts its own nodes' sums in y and writes past them into its halo), then
   gathered as the forces are: p must be complete (after a barrier); y is complete for the
   worker's node blocks on return (after a barrier of its own), for all after the next.
   Unless dot_slot is -1, each of the worker's node blocks' p.y goes to that slot of its
   reduce, summed as it is gathered. */
static void team_product(ms_worker* w, const double* MS_RESTRICT blocks, double mass_scale, double damping_scale,
                         double stiffness_scale, const double* MS_RESTRICT p, double* MS_RESTRICT y, int dot_slot) {
    const ms_team* tm = w->team;
    const ms_model* m = tm->m;
    const ms_layout* layout = tm->layout;
    const double node_scale = damping_scale * m->opt.drag;
    const ms_spring_product_kernel product = MS_FASTEST_KERNEL(ms_spring_product);
    for (int64_t b = w->spring_first; b < w->spring_last; ++b) {
        for (int64_t i = layout->node_start[b]; i < layout->node_start[b + 1]; ++i) {
            const double diagonal = mass_scale * m->mass[i] + node_scale;
            for (int a = 0; a < 3; ++a) y[3 * i + a] = diagonal * p[3 * i + a];
        }
        product(layout, b, blocks, stiffness_scale, damping_scale, p, y);
    }
    ms_sync(w);
    const double* inv_mass = tm->s->inv_mass;
    const implicit_solver* solver = ms_workspace_get(tm->s, MS_WORK_IMPLICIT);
    const double* held = solver->holding ? solver->work + 30 * m->nnode : NULL;
    MS_FOR_MY_NODES(w, b, begin, end) {
        ms_layout_gather(layout, begin, end, y);
        for (int64_t i = begin; i < end; ++i)
            if (inv_mass[i] == 0.0) y[3 * i] = y[3 * i + 1] = y[3 * i + 2] = 0.0;
        if (held != NULL) ms_filter_held(held, y, begin, end);
        if (dot_slot >= 0) tm->nodes[b].reduce[dot_slot] = dot(p + 3 * begin, y + 3 * begin, 3 * (end - begin));
    }
}

/* z = the preconditioner applied to r on node block [begin, end): each node's inverse
   diagonal block (6 entries per node in diagonal) times its part of r. */
static void block_jacobi(const double* diagonal, const double* r, double* z, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
        const double* d = diagonal + 6 * i;
        const double* ri = r + 3 * i;
        z[3 * i] = d[0] * ri[0] + d[1] * ri[1] + d[2] * ri[2];
        z[3 * i + 1] = d[1] * ri[0] + d[3] * ri[1] + d[4] * ri[2];
        z[3 * i + 2] = d[2] * ri[0] + d[4] * ri[1] + d[5] * ri[2];
    }
}

/* The preconditioners: block Jacobi; A's factor; block Jacobi plus the coarse level's
   correction P A_c^-1 P^T r, where P spreads each aggregate's 6 unknowns (a translation
   and a rotation; or 3, a translation) to its nodes and A_c = P^T A P (additive two-level
   Schwarz: the coarse level carries the smooth, long-wavelength error that block Jacobi
   takes hundreds of iterations over). */
enum { PRECONDITION_JACOBI = 0, PRECONDITION_FACTOR = 1, PRECONDITION_TWO_LEVEL = 2 };

/* z = M^-1 r by the preconditioner (r complete), and every worker's r.z on its blocks;
   with jacobi_done, z already holds the block Jacobi part on the worker's node blocks. */
static void precondition(ms_worker* w, implicit_solver* solver, int mode, const cg_vectors* v, int jacobi_done) {
    ms_team* tm = w->team;
    const double* held = solver->holding ? solver->work + 30 * tm->m->nnode : NULL;
    if (mode != PRECONDITION_FACTOR) {
        MS_FOR_MY_NODES(w, b, begin, end) {
            if (!jacobi_done) block_jacobi(v->diagonal, v->r, v->z, begin, end);
            if (mode != PRECONDITION_JACOBI) continue;
            if (held != NULL) ms_filter_held(held, v->z, begin, end);
            tm->nodes[b].reduce[CG_RZ] = dot(v->r + 3 * begin, v->z + 3 * begin, 3 * (end - begin));
        }
        if (mode == PRECONDITION_JACOBI) return;
    }
    /* the factor's part by worker 0, on all of r and z (complete after this barrier) */
    ms_sync(w);
    if (w->id == 0)
        solve_system(tm->m, mode == PRECONDITION_FACTOR ? &solver->fine : solver->active, v->r, v->z,
                     mode == PRECONDITION_TWO_LEVEL);
    ms_sync(w);
    MS_FOR_MY_NODES(w, b, begin, end) {
        if (held != NULL) ms_filter_held(held, v->z, begin, end);
        tm->nodes[b].reduce[CG_RZ] = dot(v->r + 3 * begin, v->z + 3 * begin, 3 * (end - begin));
    }
}

/* Solves A delta = rhs (rhs complete, pinned rows zero) from delta = 0 to |r| <= tolerance
   |rhs| (at most cg_tol) by CG preconditioned as mode says: with A's factor (which then
   converges in one iteration up to rounding), or with the inverses of A's diagonal blocks
   in v->diagonal, alone or with the coarse level's correction.  Returns the iterations used (the same on every worker);
   *converged says whether |r| <= cg_tol |rhs|; *relative_residual is |r| / |rhs| of the
   returned iterate, which is the last one (CG's error decreases monotonically in the A-norm, so it
   is the best one when the cap is hit).  *indefinite is set when A or the preconditioner
   showed a direction of non-positive curvature (then the iterate is not to be trusted).
   delta is complete after the next barrier. */
static int conjugate_gradient(ms_worker* w, const double* blocks, implicit_solver* solver, int mode, const double* rhs,
                              double tolerance, double* MS_RESTRICT delta, const cg_vectors* v,
                              double* relative_residual, int* converged, int* indefinite) {
    ms_team* tm = w->team;
    const double h = tm->h;
    const ms_implicit_options* opt = &tm->m->opt.implicit;
    MS_FOR_MY_NODES(w, b, begin, end) {
        const size_t bytes = sizeof(double) * 3 * (size_t)(end - begin);
        memset(delta + 3 * begin, 0, bytes);
        memcpy(v->r + 3 * begin, rhs + 3 * begin, bytes);
        tm->nodes[b].reduce[CG_RR] = dot(rhs + 3 * begin, rhs + 3 * begin, 3 * (end - begin));
    }
    precondition(w, solver, mode, v, 0);
    MS_FOR_MY_NODES(w, b, begin, end)
    memcpy(v->p + 3 * begin, v->z + 3 * begin, sizeof(double) * 3 * (size_t)(end - begin));
    ms_sync(w);
    const double rhs_norm = sqrt(block_sum(tm, CG_RR));
    *relative_residual = 0.0;
    *converged = 1;
    *indefinite = 0;
    if (rhs_norm == 0.0) return 0;
    if (!isfinite(rhs_norm)) {
        *relative_residual = NAN;
        *converged = 0;
        return 0;
    }
    double rz = block_sum(tm, CG_RZ);
    if (rz <= 0.0) {
        *indefinite = 1;
        *relative_residual = 1.0;
        *converged = 0;
        return 0;
    }
    const double target = tolerance * rhs_norm;
    int iteration = 0;
    double residual_norm = rhs_norm;
    while (iteration < opt->cg_max_iter && !ms_should_stop(w)) {
        team_product(w, blocks, 1.0, h, h * h, v->p, v->ap, CG_PAP);
        ms_sync(w);
        const double curvature = block_sum(tm, CG_PAP);
        ++iteration;
        if (!(curvature > 0.0)) { /* not positive definite (or not finite): keep the iterate */
            *indefinite = curvature <= 0.0;
            break;
        }
        const double step = rz / curvature;
        const int jacobi = mode != PRECONDITION_FACTOR;
        MS_FOR_MY_NODES(w, b, begin, end) {
            for (int64_t q = 3 * begin; q < 3 * end; ++q) {
                delta[q] += step * v->p[q];
                v->r[q] -= step * v->ap[q];
            }
            tm->nodes[b].reduce[CG_RR] = dot(v->r + 3 * begin, v->r + 3 * begin, 3 * (end - begin));
            if (jacobi) block_jacobi(v->diagonal, v->r, v->z, begin, end); /* while r is at hand */
        }
        precondition(w, solver, mode, v, jacobi);
        ms_sync(w);
        residual_norm = sqrt(block_sum(tm, CG_RR));
        if (residual_norm <= target) break;
        const double rz_next = block_sum(tm, CG_RZ);
        if (rz_next <= 0.0) { /* the preconditioner is not positive definite */
            *indefinite = 1;
            break;
        }
        const double beta = rz_next / rz;
        rz = rz_next;
        MS_FOR_MY_NODES(w, b, begin, end)
        for (int64_t q = 3 * begin; q < 3 * end; ++q) v->p[q] = v->z[q] + beta * v->p[q];
        ms_sync(w);
    }
    *relative_residual = residual_norm / rhs_norm;
    /* a tolerance above cg_tol (the last Newton iteration's) counts as met when reached */
    *converged = residual_norm <= opt->cg_tol * rhs_norm || residual_norm <= target;
    return iteration;
}

/* The tangent blocks (clamped or exact) and dampings of the worker's share of the springs
   at x, in the layout's order, then a barrier. */
static void team_spring_blocks(ms_worker* w, const double* x, double* blocks, int clamp) {
    const ms_team* tm = w->team;
    const ms_model* m = tm->m;
    const ms_layout* layout = tm->layout;
    const int64_t ns = m->nspring;
    for (int64_t r = ns * w->id / tm->count; r < ns * (w->id + 1) / tm->count; ++r) {
        const int64_t s = layout->order[r];
        double* b = blocks + BLOCK_DOUBLES * r;
        ms_spring_block(m, s, x + 3 * (int64_t)layout->pairs[2 * r], x + 3 * (int64_t)layout->pairs[2 * r + 1], b,
                        clamp);
        b[MS_SPRING_BLOCK_DOUBLES] = m->c[s];
    }
    ms_sync(w);
}

/* The first iteration's right-hand side h f_0 - h^2 K_0 v (s->f and the blocks complete),
   zero on pinned nodes, and dv = 0. */
static void first_rhs(ms_worker* w, const double* blocks, const double* v, double* rhs, double* dv) {
    ms_team* tm = w->team;
    const double h = tm->h;
    const double* inv_mass = tm->s->inv_mass;
    const double* f = tm->s->f;
    team_product(w, blocks, 0.0, 0.0, 1.0, v, rhs, -1);
    MS_FOR_MY_NODES(w, b, begin, end)
    for (int64_t i = begin; i < end; ++i)
        for (int a = 0; a < 3; ++a) {
            const int64_t q = 3 * i + a;
            rhs[q] = inv_mass[i] == 0.0 ? 0.0 : h * f[q] - h * h * rhs[q];
            dv[q] = 0.0;
        }
}

/* The Newton residual g = M dv - h f(x', v') at (x', v') = (x_out, v_out), its norm
   returned and its scale in *scale: the largest of |M dv|, |h f| and the impulse h |load|
   of the loads the springs hold (at rest under a load the net force is a cancellation of
   the load and the tensions, so the load's impulse sets the scale of its round-off too).
   force receives f(x', v'), minus_g receives -g (the held nodes' normal components
   removed: the collider's reaction), *rate the forces' flow at (x', v').  x_out and v_out
   must be complete (after a barrier); so are force and minus_g on return. */
static double newton_residual_at(ms_worker* w, const double* held, const double* dv, const double* x_out,
                                 const double* v_out, double t, double* force, double* minus_g, ms_flow* rate,
                                 double* scale) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    const implicit_solver* solver = ms_workspace_get(tm->s, MS_WORK_IMPLICIT);
    const double h = tm->h;
    const double* inv_mass = tm->s->inv_mass;
    const int ticket = ms_stage_forces(w, x_out, v_out, t + h, force);
    ms_sync(w);
    *rate = ms_forces_flow(tm, ticket);
    const double* g = m->opt.gravity;
    const double g_norm = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    const double* external = tm->external;
    MS_FOR_MY_NODES(w, b, begin, end) {
        double residual2 = 0.0, momentum2 = 0.0, impulse2 = 0.0, weight2 = 0.0;
        for (int64_t i = begin; i < end; ++i) {
            if (inv_mass[i] == 0.0) {
                minus_g[3 * i] = minus_g[3 * i + 1] = minus_g[3 * i + 2] = 0.0;
                continue;
            }
            /* the loads the springs hold: the weight and the external force */
            double load = m->mass[i] * g_norm;
            if (external != NULL) {
                const double* e = external + 3 * i;
                load += sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
            }
            weight2 += h * h * load * load;
            for (int a = 0; a < 3; ++a) {
                const int64_t q = 3 * i + a;
                const double momentum = m->mass[i] * dv[q], impulse = h * force[q];
                minus_g[q] = impulse - momentum;
                momentum2 += momentum * momentum;
                impulse2 += impulse * impulse;
            }
            if (solver->holding) ms_filter_held(held, minus_g, i, i + 1); /* the collider's reaction */
            for (int a = 0; a < 3; ++a) residual2 += minus_g[3 * i + a] * minus_g[3 * i + a];
        }
        double* reduce = tm->nodes[b].reduce;
        reduce[NEWTON_RESIDUAL] = residual2;
        reduce[NEWTON_MOMENTUM] = momentum2;
        reduce[NEWTON_IMPULSE] = impulse2;
        reduce[NEWTON_WEIGHT] = weight2;
    }
    ms_sync(w);
    const double residual2 = block_sum(tm, NEWTON_RESIDUAL), momentum2 = block_sum(tm, NEWTON_MOMENTUM);
    const double impulse2 = block_sum(tm, NEWTON_IMPULSE), weight2 = block_sum(tm, NEWTON_WEIGHT);
    double scale2 = momentum2 > impulse2 ? momentum2 : impulse2;
    if (weight2 > scale2) scale2 = weight2;
    *scale = sqrt(scale2);
    return sqrt(residual2);
}

/* The forcing term for a Newton residual R (relative) from Eisenstat and Walker's
   proposal: where that would leave the residual near newton_tol, finish in this
   iteration, 0.5 newton_tol / R; at most cg_tol, unless that floor is itself above it
   (R within 50 newton_tol), where reaching it needs fewer CG iterations than cg_tol asks
   (at most half of the residual is kept, so the iteration always gains). */
static double forcing_term(double forcing, double residual, const ms_implicit_options* opt) {
    const double floor = 0.5 * opt->newton_tol / residual;
    if (forcing < floor || forcing * residual < 10.0 * opt->newton_tol) forcing = floor;
    if (!(forcing < opt->cg_tol)) forcing = floor > opt->cg_tol ? (floor < 0.5 ? floor : 0.5) : opt->cg_tol;
    return forcing;
}

static int implicit_stages(ms_worker* w, const double* MS_RESTRICT x, const double* MS_RESTRICT v, double* MS_RESTRICT x_out,
                       double* MS_RESTRICT v_out, double t, ms_flow* flow) {
    ms_team* tm = w->team;
    const ms_model* m = tm->m;
    ms_state* s = tm->s;
    const double h = tm->h;
    const int64_t n3 = 3 * m->nnode;
    const double* inv_mass = s->inv_mass;
    implicit_solver* solver = ms_workspace_get(s, MS_WORK_IMPLICIT);
    double* work = solver->work;
    double* dv = work;
    double* rhs = work + n3;
    const cg_vectors vectors = {work + 2 * n3, work + 3 * n3, work + 4 * n3, work + 5 * n3, work + 6 * n3};
    double* force = work + 8 * n3;
    double* delta = work + 9 * n3;
    double* held = work + 10 * n3;
    double* blocks = work + 11 * n3;
    ms_solver_stats* stats = &s->solver;
    const ms_implicit_options* opt = &m->opt.implicit;
    if (w->id == 0) {
        ensure_pattern(m, solver);
        stats->newton_iterations = 0;
        stats->cg_iterations = 0;
        stats->cg_residual = 0.0;
        stats->cg_converged = 1;
        stats->newton_converged = 0;
    }

    /* Iteration 0 about (x, v): A_0 dv = h f_0 - h^2 K_0 v with the clamped tangent (Baraff
       and Witkin's step).  The later iterations use the exact tangent, so that Newton
       converges quadratically where springs are compressed (the clamp alone leaves a
       linear rate of about the springs' compression times (omega h)^2), until a matrix is
       found not positive definite (a compressed spring's negative transverse stiffness
       outweighing the mass and the rest) or Newton stops gaining; then the clamped tangent
       for the rest of the step. */
    int exact_ok = 1, blocks_exact = 0;
    ms_stage_forces(w, x, v, t, s->f);
    ms_sync(w); /* s->f and the patterns complete */
    if (w->id == 0) solver->holding = m->ncollider > 0 && ms_find_held(m, s, x, v, s->f, h, held);
    const int wanted = solver->direct      ? PRECONDITION_FACTOR
                       : solver->two_level || solver->gentle_level ? PRECONDITION_TWO_LEVEL
                                           : PRECONDITION_JACOBI;
    ms_flow rate = {0.0, 0.0, 0.0, 0.0, 0.0};
    /* Newton's iteration 0: where dv = 0 already solves the step to newton_tol (a body
       settled on its supports or hanging at rest), the step takes it with one force
       evaluation, where the CG iterations would chase a residual already below the
       tolerance (tens of them for a solid at rest at h = 1/60 s). */
    MS_FOR_MY_NODES(w, b, begin, end)
    for (int64_t q = 3 * begin; q < 3 * end; ++q) {
        dv[q] = 0.0;
        v_out[q] = v[q] + dv[q];
        x_out[q] = x[q] + h * v_out[q];
    }
    ms_sync(w); /* held too */
    double start_scale = 0.0;
    const double start_norm = newton_residual_at(w, held, dv, x_out, v_out, t, force, rhs, &rate, &start_scale);
    if (start_norm <= opt->newton_tol * start_scale) {
        if (w->id == 0) {
            stats->newton_residual = start_scale > 0.0 ? start_norm / start_scale : 0.0;
            stats->newton_converged = 1;
        }
        ms_flow_add(flow, &rate, h);
        return !w->stopped && ms_flow_finite(flow);
    }
    int newton_iterations = 0, cg_converged = 1;
    double newton_residual = 0.0, cg_residual = 0.0, previous_residual = INFINITY;
    /* The linear solves' relative tolerance (the forcing term of inexact Newton): cg_tol
       while Newton is far from the solution, then (Eisenstat and Walker 1996, choice 2)
       0.9 (R_k / R_k-1)^2 with R the Newton residual, so that the linear error shrinks as
       fast as Newton's own and convergence stays quadratic; never tighter than what takes
       the residual below half of newton_tol. */
    double forcing = opt->cg_tol;
    /* The first iteration.  Where v' = v leaves a residual below cg_tol (of the scale) and
       more than one iteration is allowed, Newton's own: about (x + h v, v), with the exact
       tangent, on that residual (now in rhs).  Its size being known, the forcing term's
       floor applies from the start: a body ringing or at rest on its supports is solved
       in one or two iterations.  (Baraff and Witkin's step linearises about x with the
       clamped tangent; near rest its right-hand side h f_0 - h^2 K_0 v misses the
       residual by the clamped terms, ten times the residual itself on a solid resting on
       the ground, so it cost an iteration and the two after it were needed to recover.)
       Elsewhere Baraff and Witkin's step, as newton_max_iter = 1 asks: about x, its
       clamped tangent positive definite, so a large step (an impact, a step of 50 times
       a spring's period) starts from where the motion was and not from a prediction. */
    if (opt->newton_max_iter > 1 && start_norm < opt->cg_tol * start_scale) {
        previous_residual = start_norm / start_scale;
        forcing = forcing_term(forcing, previous_residual, opt);
        blocks_exact = 1;
        team_spring_blocks(w, x_out, blocks, 0); /* its barrier completes rhs */
    } else {
        team_spring_blocks(w, x, blocks, 1);
        first_rhs(w, blocks, v, rhs, dv);
        if (solver->holding) {
            MS_FOR_MY_NODES(w, b, begin, end)
            ms_filter_held(held, rhs, begin, end);
        }
    }
    int coarse_ready = 0; /* worker 0's: the coarse factor is made for this step */
    while (!ms_should_stop(w)) {
        ms_sync(w); /* rhs complete; worker 0 has read the latest serial_ok */
        if (w->id == 0) {
            /* the preconditioner wanted, else block Jacobi where a factorisation fails */
            int mode = PRECONDITION_JACOBI;
            if (wanted == PRECONDITION_FACTOR && factor_system(m, tm->layout, &solver->fine, blocks, h))
                mode = PRECONDITION_FACTOR;
            if (mode == PRECONDITION_JACOBI) {
                const double stiff = assemble_diagonal(m, tm->layout, inv_mass, blocks, h, vectors.diagonal);
                /* the coarse level from the first iteration's (clamped, positive definite)
                   matrix serves the whole step: A changes little within a step, and a
                   factorisation costs about as much as the CG iterations it saves at
                   h = 1 ms.  Where the springs' mean (omega h)^2 is below COARSE_STIFFNESS
                   (solids at h = 1 ms: 15 to 65; at 1/60 s: 4,000 to 17,000) block Jacobi
                   takes few iterations and the rigid level's assembly costs more than it
                   saves: such steps take the gentle level (translations) or none */
                if (newton_iterations == 0 && !coarse_ready)
                    solver->active = stiff >= COARSE_STIFFNESS ? (solver->two_level ? &solver->coarse : NULL)
                                                               : (solver->gentle_level ? &solver->gentle : NULL);
                block_system* active = solver->active;
                if (active != NULL &&
                    (coarse_ready || (active->width == 6 ? factor_rigid(m, tm->layout, active, blocks, h, x)
                                                         : factor_system(m, tm->layout, active, blocks, h))))
                    mode = PRECONDITION_TWO_LEVEL;
                coarse_ready = mode == PRECONDITION_TWO_LEVEL;
            }
            /* the mode, plus 8 where a factorisation it wanted failed */
            const int expected =
                wanted == PRECONDITION_TWO_LEVEL && solver->active == NULL ? PRECONDITION_JACOBI : wanted;
            tm->serial_ok = mode + (mode != expected ? 8 : 0);
        }
        ms_sync(w);
        const int mode = tm->serial_ok & 7, fell_back = tm->serial_ok >> 3;
        int converged = 1, indefinite = 0, iterations = 0;
        if (fell_back && blocks_exact)
            indefinite = 1; /* the exact tangent's A would not factor */
        else
            iterations = conjugate_gradient(w, blocks, solver, mode, rhs, forcing, delta, &vectors, &cg_residual,
                                            &converged, &indefinite);
        if (w->stopped) break; /* the caller's check: the step is dropped */
        if (indefinite && blocks_exact) {
            /* solve this iteration's system again with the clamped tangent (every worker has
               read serial_ok: the blocks' barrier comes before worker 0 writes it again); the
               rest of the step too, unless this is the first iteration, whose clamped step
               leaves the next one to try the exact tangent again */
            if (w->id == 0) stats->cg_iterations += iterations;
            if (newton_iterations > 0) exact_ok = 0;
            blocks_exact = 0;
            team_spring_blocks(w, x_out, blocks, 1);
            continue;
        }
        newton_iterations += 1;
        if (!converged) cg_converged = 0;
        if (w->id == 0) {
            stats->cg_iterations += iterations;
            stats->cg_residual = cg_residual;
        }
        MS_FOR_MY_NODES(w, b, begin, end)
        for (int64_t q = 3 * begin; q < 3 * end; ++q) {
            dv[q] += delta[q];
            v_out[q] = v[q] + dv[q];
            x_out[q] = x[q] + h * v_out[q];
        }
        ms_sync(w);
        /* Residual g = M dv - h f(x', v') at the new iterate (also the end-of-step power,
           which backward Euler integrates its flows with). */
        double scale = 0.0;
        const double residual_norm = newton_residual_at(w, held, dv, x_out, v_out, t, force, rhs, &rate, &scale);
        newton_residual = scale > 0.0 ? residual_norm / scale : 0.0;
        const int newton_converged = residual_norm <= opt->newton_tol * scale;
        if (w->id == 0) {
            stats->newton_iterations = newton_iterations;
            stats->newton_residual = newton_residual;
            stats->newton_converged = newton_converged;
            stats->cg_converged = cg_converged;
        }
        if (!isfinite(newton_residual) || newton_converged || newton_iterations >= opt->newton_max_iter) break;
        if (newton_iterations >= 2 && newton_residual > 0.5 * previous_residual) exact_ok = 0;
        if (previous_residual < INFINITY) { /* R_k-1 is known */
            const double ratio = newton_residual / previous_residual;
            forcing = forcing_term(0.9 * ratio * ratio, newton_residual, opt);
        }
        previous_residual = newton_residual;
        blocks_exact = exact_ok;
        team_spring_blocks(w, x_out, blocks, !blocks_exact);
    }
    if (w->id == 0 && !cg_converged) stats->cg_failures += 1;
    ms_flow_add(flow, &rate, h);
    /* A non-finite residual means the linear algebra broke down (e.g. h^2 overflowed):
       the step is not trusted even if the iterate happens to be finite. */
    return !w->stopped && isfinite(newton_residual) && isfinite(cg_residual) && ms_flow_finite(flow);
}

/* Backward Euler as the stages of a step: the Newton iterations, then the end of the step
   for every node block. */
int ms_implicit_euler_stages(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out, double t,
                          ms_flow* flow) {
    ms_team* tm = w->team;
    const int finite = implicit_stages(w, x, v, x_out, v_out, t, flow);
    MS_FOR_MY_NODES(w, b, begin, end)
    ms_finish_nodes(w, b, begin, end, !finite, x, x_out, v_out);
    ms_sync(w);
    return !ms_any_bad(tm);
}
