/* The sparse Cholesky factorisation of the core (src/cholesky.h): solves to rounding on
   Laplacians, grids numbered in order and at random, cloth-like spring matrices and
   disconnected graphs; agreement with a dense factorisation; refactorisation; refusal of
   indefinite, singular and non-finite matrices and of bad patterns; fill against the
   natural order. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "helpers.h"
#include "msprings/msprings.h"
#include "kernels/cholesky.h"

/* ---- sparse symmetric matrices by the lower triangle ----------------------------- */

typedef struct sparse {
    int64_t n;
    int64_t* start; /* (n + 1) */
    int32_t* rows;  /* (start[n]) each >= its column */
    double* values; /* (start[n]) */
} sparse;

static void sparse_free(sparse* a) {
    free(a->start);
    free(a->rows);
    free(a->values);
    memset(a, 0, sizeof *a);
}

/* The stored ends of edge e (node i stored as label[i], or i if label is NULL), lower
   first. */
static void edge_ends(const int32_t* edges, const int32_t* label, int64_t e, int32_t* lower, int32_t* upper) {
    int32_t p = edges[2 * e], q = edges[2 * e + 1];
    if (label != NULL) p = label[p], q = label[q];
    *lower = p < q ? p : q;
    *upper = p < q ? q : p;
}

/* The symmetric matrix diag(diagonal) + sum_e weight[e] (u_a - u_b)(u_a - u_b)^T over the
   edges (a, b) = edges[2 e ..] (the matrix of springs between nodes, with masses on the
   diagonal), node i stored as label[i] (or i if label is NULL), each column's diagonal
   first.  The edges must be distinct.  Returns 0, or -1 if out of memory. */
static int sparse_from_edges(int64_t n, int64_t nedge, const int32_t* edges, const double* weight,
                             const double* diagonal, const int32_t* label, sparse* a) {
    memset(a, 0, sizeof *a);
    a->n = n;
    a->start = calloc((size_t)n + 1, sizeof(int64_t));
    a->rows = malloc(sizeof(int32_t) * ((size_t)(n + nedge) + 1));
    a->values = malloc(sizeof(double) * ((size_t)(n + nedge) + 1));
    double* full_diagonal = calloc((size_t)n + 1, sizeof(double));
    int64_t* edge_start = calloc((size_t)n + 2, sizeof(int64_t));     /* edges by their lower end */
    int32_t* edge_list = malloc(sizeof(int32_t) * ((size_t)nedge + 1));
    const int ok = a->start && a->rows && a->values && full_diagonal && edge_start && edge_list;
    if (ok) {
        int32_t lower, upper;
        for (int64_t e = 0; e < nedge; ++e) {
            edge_ends(edges, label, e, &lower, &upper);
            edge_start[lower + 2] += 1;
            full_diagonal[lower] += weight[e];
            full_diagonal[upper] += weight[e];
        }
        for (int64_t j = 0; j < n; ++j) edge_start[j + 2] += edge_start[j + 1];
        for (int64_t e = 0; e < nedge; ++e) {
            edge_ends(edges, label, e, &lower, &upper);
            edge_list[edge_start[lower + 1]++] = (int32_t)e;
        }
        for (int64_t i = 0; i < n; ++i) full_diagonal[label != NULL ? label[i] : i] += diagonal[i];
        int64_t nnz = 0;
        for (int64_t j = 0; j < n; ++j) {
            a->start[j] = nnz;
            a->rows[nnz] = (int32_t)j;
            a->values[nnz++] = full_diagonal[j];
            for (int64_t t = edge_start[j]; t < edge_start[j + 1]; ++t) {
                edge_ends(edges, label, edge_list[t], &lower, &upper);
                a->rows[nnz] = upper;
                a->values[nnz++] = -weight[edge_list[t]];
            }
        }
        a->start[n] = nnz;
    }
    free(full_diagonal);
    free(edge_start);
    free(edge_list);
    if (!ok) sparse_free(a);
    return ok ? 0 : -1;
}

/* y = A x for nrhs interleaved columns. */
static void sparse_multiply(const sparse* a, const double* x, int nrhs, double* y) {
    memset(y, 0, sizeof(double) * (size_t)(a->n * nrhs));
    for (int64_t j = 0; j < a->n; ++j)
        for (int64_t q = a->start[j]; q < a->start[j + 1]; ++q) {
            const int64_t r = a->rows[q];
            for (int k = 0; k < nrhs; ++k) {
                y[r * nrhs + k] += a->values[q] * x[j * nrhs + k];
                if (r != j) y[j * nrhs + k] += a->values[q] * x[r * nrhs + k];
            }
        }
}

/* max |A x - b| / (||A||_inf ||x||_inf): the normwise backward error of x. */
static double relative_residual(const sparse* a, const double* x, const double* b, int nrhs) {
    double* ax = malloc(sizeof(double) * (size_t)(a->n * nrhs + 1));
    double* row_sums = calloc((size_t)a->n + 1, sizeof(double));
    if (ax == NULL || row_sums == NULL) {
        free(ax);
        free(row_sums);
        return INFINITY;
    }
    sparse_multiply(a, x, nrhs, ax);
    for (int64_t j = 0; j < a->n; ++j)
        for (int64_t q = a->start[j]; q < a->start[j + 1]; ++q) {
            row_sums[a->rows[q]] += fabs(a->values[q]);
            if (a->rows[q] != j) row_sums[j] += fabs(a->values[q]);
        }
    double residual = 0.0, norm_a = 0.0, norm_x = 0.0;
    for (int64_t i = 0; i < a->n * nrhs; ++i) {
        residual = fmax(residual, fabs(ax[i] - b[i]));
        norm_x = fmax(norm_x, fabs(x[i]));
    }
    for (int64_t i = 0; i < a->n; ++i) norm_a = fmax(norm_a, row_sums[i]);
    free(ax);
    free(row_sums);
    return residual / (norm_a * norm_x);
}

/* ---- matrices of springs ---------------------------------------------------------- */

/* Edges of a side x side grid numbered row by row: the 4 neighbours (reach 1), with the
   diagonals (shear) and the second neighbours along rows and columns (bending) if cloth
   is non-zero.  edges has room for 8 side^2 pairs; returns the count. */
static int64_t grid_edges(int side, int cloth, int32_t* edges) {
    int64_t count = 0;
    for (int r = 0; r < side; ++r)
        for (int c = 0; c < side; ++c) {
            const int32_t i = r * side + c;
            const int offsets[6][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}, {0, 2}, {2, 0}};
            for (int o = 0; o < (cloth ? 6 : 2); ++o) {
                const int r2 = r + offsets[o][0], c2 = c + offsets[o][1];
                if (r2 < side && c2 >= 0 && c2 < side) {
                    edges[2 * count] = i;
                    edges[2 * count + 1] = r2 * side + c2;
                    ++count;
                }
            }
        }
    return count;
}

/* A random permutation of 0 .. n - 1. */
static void random_labels(int64_t n, uint64_t seed, int32_t* label) {
    for (int64_t i = 0; i < n; ++i) label[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; --i) {
        const int64_t j = (int64_t)((lcg_uniform(&seed) + 1.0) * 0.5 * (double)(i + 1)) % (i + 1);
        const int32_t t = label[i];
        label[i] = label[j];
        label[j] = t;
    }
}

/* The grid's matrix: springs of stiffness k (the cloth's, with shear and bending, if
   cloth is non-zero) and every node's mass / h^2 on the diagonal, numbered row by row or
   (random non-zero) at random. */
static int grid_matrix(int side, int cloth, double k, double diagonal, int random, sparse* a) {
    const int64_t n = (int64_t)side * side;
    int32_t* edges = malloc(sizeof(int32_t) * 16 * (size_t)n);
    double* weight = malloc(sizeof(double) * 8 * (size_t)n);
    double* diag = malloc(sizeof(double) * (size_t)n);
    int32_t* label = malloc(sizeof(int32_t) * (size_t)n);
    int status = -1;
    if (edges && weight && diag && label) {
        const int64_t nedge = grid_edges(side, cloth, edges);
        for (int64_t e = 0; e < nedge; ++e) weight[e] = k;
        for (int64_t i = 0; i < n; ++i) diag[i] = diagonal;
        random_labels(n, 17, label);
        status = sparse_from_edges(n, nedge, edges, weight, diag, random ? label : NULL, a);
    }
    free(edges);
    free(weight);
    free(diag);
    free(label);
    return status;
}

/* Right-hand sides with entries in [-1, 1). */
static void random_vector(int64_t count, uint64_t seed, double* b) {
    for (int64_t i = 0; i < count; ++i) b[i] = lcg_uniform(&seed);
}

/* Analyses and factors a, solves nrhs random right-hand sides and returns the relative
   residual (infinity on any failure); *nonzeros receives the entries of L. */
static double solve_residual(const sparse* a, int nrhs, int64_t* nonzeros) {
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(a->n, a->start, a->rows, &err);
    double* b = malloc(sizeof(double) * (size_t)(a->n * nrhs + 1));
    double* x = malloc(sizeof(double) * (size_t)(a->n * nrhs + 1));
    double residual = INFINITY;
    if (c != NULL && b != NULL && x != NULL && ms_cholesky_factor(c, a->values, &err) == MS_OK) {
        random_vector(a->n * nrhs, 5, b);
        memcpy(x, b, sizeof(double) * (size_t)(a->n * nrhs));
        ms_cholesky_solve(c, x, nrhs);
        residual = relative_residual(a, x, b, nrhs);
        if (nonzeros != NULL) *nonzeros = ms_cholesky_nonzeros(c);
    }
    ms_cholesky_destroy(c);
    free(b);
    free(x);
    return residual;
}

/* Entries of L when A is factored in its own numbering: row k of L is the set of nodes
   on the elimination tree's paths from the columns of row k of A up to k. */
static int64_t natural_nonzeros(const sparse* a) {
    const int64_t n = a->n;
    int64_t* row_start = calloc((size_t)n + 1, sizeof(int64_t));
    int32_t* row_cols = malloc(sizeof(int32_t) * (size_t)(a->start[n] + 1));
    int32_t* parent = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t* ancestor = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t* mark = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t nonzeros = -1;
    if (row_start && row_cols && parent && ancestor && mark) {
        for (int64_t q = 0; q < a->start[n]; ++q) row_start[a->rows[q] + 1] += 1;
        for (int64_t i = 0; i < n; ++i) row_start[i + 1] += row_start[i];
        for (int64_t j = 0; j < n; ++j)
            for (int64_t q = a->start[j]; q < a->start[j + 1]; ++q) row_cols[row_start[a->rows[q]]++] = (int32_t)j;
        for (int64_t i = n; i > 0; --i) row_start[i] = row_start[i - 1];
        row_start[0] = 0;
        for (int64_t k = 0; k < n; ++k) {
            parent[k] = ancestor[k] = -1;
            for (int64_t q = row_start[k]; q < row_start[k + 1]; ++q)
                for (int32_t i = row_cols[q], up; i != -1 && i < k; i = up) {
                    up = ancestor[i];
                    ancestor[i] = (int32_t)k;
                    if (up == -1) parent[i] = (int32_t)k;
                }
        }
        nonzeros = n;
        for (int64_t k = 0; k < n; ++k) {
            mark[k] = (int32_t)k;
            for (int64_t q = row_start[k]; q < row_start[k + 1]; ++q)
                for (int32_t i = row_cols[q]; mark[i] != k; i = parent[i]) {
                    mark[i] = (int32_t)k;
                    ++nonzeros;
                }
        }
    }
    free(row_start);
    free(row_cols);
    free(parent);
    free(ancestor);
    free(mark);
    return nonzeros;
}

/* ---- solves ------------------------------------------------------------------------ */

static int test_cholesky_chain(void) {
    /* A 1-D Laplacian + shift: a path, which minimum degree eliminates from its ends
       without fill, so L has exactly 2 n - 1 entries. */
    const int64_t n = 500;
    int32_t edges[2 * 499];
    double weight[499], diagonal[500];
    for (int64_t e = 0; e < n - 1; ++e) {
        edges[2 * e] = (int32_t)e;
        edges[2 * e + 1] = (int32_t)e + 1;
        weight[e] = 1.0;
    }
    for (int64_t i = 0; i < n; ++i) diagonal[i] = 1e-3;
    sparse a;
    ENSURE(sparse_from_edges(n, n - 1, edges, weight, diagonal, NULL, &a) == 0);
    int64_t nonzeros = 0;
    for (int nrhs = 1; nrhs <= 4; ++nrhs) ENSURE(solve_residual(&a, nrhs, &nonzeros) <= 1e-12);
    ENSURE(nonzeros == 2 * n - 1);
    ENSURE(natural_nonzeros(&a) == 2 * n - 1);
    sparse_free(&a);
    return 0;
}

static int test_cholesky_grids(void) {
    /* 2-D grid Laplacians with a mass diagonal, numbered row by row and at random, and the
       cloth's matrix M/h^2 + sum k A^T A over structural, shear and bending springs
       (1 kg, h = 1/60 s, k = 1e5 N/m); 3 right-hand sides as a position array. */
    for (int kind = 0; kind < 4; ++kind) {
        sparse a;
        const int cloth = kind >= 2, random = kind % 2;
        ENSURE(grid_matrix(cloth ? 32 : 40, cloth, cloth ? 1e5 : 1.0, cloth ? 3600.0 : 0.01, random, &a) == 0);
        ENSURE(solve_residual(&a, 3, NULL) <= 1e-12);
        ENSURE(solve_residual(&a, 1, NULL) <= 1e-12);
        sparse_free(&a);
    }
    return 0;
}

static int test_cholesky_interleaved(void) {
    /* Three interleaved right-hand sides give bit for bit the solutions of the three
       solved one at a time, and five (a block of three, then two) those too. */
    sparse a;
    ENSURE(grid_matrix(20, 1, 1e5, 3600.0, 1, &a) == 0);
    const int64_t n = a.n;
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(n, a.start, a.rows, &err);
    ENSURE(c != NULL);
    ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_OK);
    double* b = malloc(sizeof(double) * 5 * (size_t)n);
    double* single = malloc(sizeof(double) * (size_t)n);
    ENSURE(b != NULL && single != NULL);
    random_vector(5 * n, 9, b);
    double* five = malloc(sizeof(double) * 5 * (size_t)n);
    double* three = malloc(sizeof(double) * 3 * (size_t)n);
    ENSURE(five != NULL && three != NULL);
    memcpy(five, b, sizeof(double) * 5 * (size_t)n);
    for (int64_t i = 0; i < n; ++i)
        for (int r = 0; r < 3; ++r) three[3 * i + r] = b[5 * i + r];
    ms_cholesky_solve(c, five, 5);
    ms_cholesky_solve(c, three, 3);
    for (int r = 0; r < 5; ++r) {
        for (int64_t i = 0; i < n; ++i) single[i] = b[5 * i + r];
        ms_cholesky_solve(c, single, 1);
        for (int64_t i = 0; i < n; ++i) {
            ENSURE(single[i] == five[5 * i + r]);
            if (r < 3) ENSURE(single[i] == three[3 * i + r]);
        }
    }
    ENSURE(relative_residual(&a, five, b, 5) <= 1e-12);
    free(b);
    free(single);
    free(five);
    free(three);
    ms_cholesky_destroy(c);
    sparse_free(&a);
    return 0;
}

static int test_cholesky_components(void) {
    /* Disconnected pieces, numbered at random together: a chain, a grid, a triangle and
       isolated nodes (L's column of an isolated node is its diagonal alone). */
    const int64_t n = 100 + 144 + 3 + 7;
    int32_t* edges = malloc(sizeof(int32_t) * 2 * 1000);
    double* weight = malloc(sizeof(double) * 1000);
    double* diagonal = malloc(sizeof(double) * (size_t)n);
    int32_t* label = malloc(sizeof(int32_t) * (size_t)n);
    ENSURE(edges && weight && diagonal && label);
    int64_t nedge = 0;
    for (int32_t i = 0; i + 1 < 100; ++i, ++nedge) edges[2 * nedge] = i, edges[2 * nedge + 1] = i + 1;
    int32_t grid[2 * 8 * 144];
    const int64_t ngrid = grid_edges(12, 0, grid);
    for (int64_t e = 0; e < ngrid; ++e, ++nedge) edges[2 * nedge] = grid[2 * e] + 100, edges[2 * nedge + 1] = grid[2 * e + 1] + 100;
    const int32_t triangle[6] = {244, 245, 245, 246, 246, 244};
    for (int e = 0; e < 3; ++e, ++nedge) edges[2 * nedge] = triangle[2 * e], edges[2 * nedge + 1] = triangle[2 * e + 1];
    for (int64_t e = 0; e < nedge; ++e) weight[e] = 2.0 + e % 3;
    for (int64_t i = 0; i < n; ++i) diagonal[i] = 0.05 * (1 + i % 4);
    random_labels(n, 3, label);
    sparse a;
    ENSURE(sparse_from_edges(n, nedge, edges, weight, diagonal, label, &a) == 0);
    ENSURE(solve_residual(&a, 3, NULL) <= 1e-12);
    ENSURE(solve_residual(&a, 1, NULL) <= 1e-12);
    sparse_free(&a);
    free(edges);
    free(weight);
    free(diagonal);
    free(label);
    return 0;
}

static int test_cholesky_tiny(void) {
    /* n = 1: x = b / a exactly; n = 0: nothing to do. */
    const int64_t start[2] = {0, 1};
    const int32_t rows[1] = {0};
    const double value[1] = {4.0};
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(1, start, rows, &err);
    ENSURE(c != NULL);
    ENSURE(ms_cholesky_nonzeros(c) == 1);
    ENSURE(ms_cholesky_factor(c, value, &err) == MS_OK);
    double b[3] = {2.0, -1.0, 8.0};
    ms_cholesky_solve(c, b, 3);
    ENSURE(b[0] == 0.5 && b[1] == -0.25 && b[2] == 2.0);
    ms_cholesky_destroy(c);
    const int64_t empty_start[1] = {0};
    c = ms_cholesky_analyse(0, empty_start, NULL, &err);
    ENSURE(c != NULL);
    ENSURE(ms_cholesky_nonzeros(c) == 0);
    ENSURE(ms_cholesky_factor(c, NULL, &err) == MS_OK);
    ms_cholesky_solve(c, b, 3);
    ENSURE(b[0] == 0.5);
    ms_cholesky_destroy(c);
    return 0;
}

/* Solves a x = b (dense, n x n, row-major) by a dense Cholesky factorisation, in place
   in a and b; 0, or -1 if a pivot is not positive. */
static int dense_solve(int n, double* a, double* b) {
    for (int j = 0; j < n; ++j) {
        double d = a[j * n + j];
        for (int k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0.0)) return -1;
        a[j * n + j] = sqrt(d);
        for (int i = j + 1; i < n; ++i) {
            double s = a[i * n + j];
            for (int k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / a[j * n + j];
        }
    }
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < i; ++k) b[i] -= a[i * n + k] * b[k];
        b[i] /= a[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        for (int k = i + 1; k < n; ++k) b[i] -= a[k * n + i] * b[k];
        b[i] /= a[i * n + i];
    }
    return 0;
}

static int test_cholesky_blocks(void) {
    /* Implicit Euler's matrix on a cloth: 3 unknowns per node (x, y, z), M/h^2 on the
       diagonal and for each spring the block K = k_t I + (k - k_t) n n^T (n its unit
       vector, 0 <= k_t <= k) added to both ends' diagonal blocks and subtracted from the
       blocks between them; every entry of those blocks is in the pattern.  The solution
       agrees with a dense Cholesky. */
    enum { SIDE = 10, NODES = SIDE * SIDE, N = 3 * NODES };
    const double k = 1e5;
    int32_t edges[2 * 8 * NODES];
    const int64_t nedge = grid_edges(SIDE, 1, edges);
    double* dense = calloc((size_t)N * N, sizeof(double));
    unsigned char* adjacent = calloc((size_t)NODES * NODES, 1);
    sparse a = {N, malloc(sizeof(int64_t) * (N + 1)), malloc(sizeof(int32_t) * (size_t)N * N),
                malloc(sizeof(double) * (size_t)N * N)};
    ENSURE(dense && adjacent && a.start && a.rows && a.values);
    uint64_t seed = 77;
    for (int64_t i = 0; i < N; ++i) dense[i * N + i] = 3600.0;
    for (int64_t e = 0; e < nedge; ++e) {
        const int32_t p = edges[2 * e], q = edges[2 * e + 1];
        adjacent[p * NODES + q] = adjacent[q * NODES + p] = 1;
        double unit[3] = {lcg_uniform(&seed), lcg_uniform(&seed), lcg_uniform(&seed) + 2.0};
        const double norm = sqrt(unit[0] * unit[0] + unit[1] * unit[1] + unit[2] * unit[2]);
        const double transverse = k * 0.5 * (lcg_uniform(&seed) + 1.0);
        for (int r = 0; r < 3; ++r)
            for (int t = 0; t < 3; ++t) {
                const double block = (r == t ? transverse : 0.0) + (k - transverse) * unit[r] * unit[t] / (norm * norm);
                dense[(3 * p + r) * N + 3 * p + t] += block;
                dense[(3 * q + r) * N + 3 * q + t] += block;
                dense[(3 * p + r) * N + 3 * q + t] -= block;
                dense[(3 * q + r) * N + 3 * p + t] -= block;
            }
    }
    int64_t nnz = 0;
    for (int64_t j = 0; j < N; ++j) {
        a.start[j] = nnz;
        for (int64_t i = j; i < N; ++i)
            if (i / 3 == j / 3 || adjacent[(i / 3) * NODES + j / 3]) {
                a.rows[nnz] = (int32_t)i;
                a.values[nnz++] = dense[i * N + j];
            }
    }
    a.start[N] = nnz;
    ENSURE(solve_residual(&a, 1, NULL) <= 1e-12);
    double b[N], x[N];
    random_vector(N, 5, b);
    memcpy(x, b, sizeof b);
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(N, a.start, a.rows, &err);
    ENSURE(c != NULL && ms_cholesky_factor(c, a.values, &err) == MS_OK);
    ms_cholesky_solve(c, x, 1);
    ENSURE(dense_solve(N, dense, b) == 0);
    double scale = 0.0;
    for (int i = 0; i < N; ++i) scale = fmax(scale, fabs(b[i]));
    for (int i = 0; i < N; ++i) ENSURE_NEAR(x[i], b[i], 1e-12 * scale);
    ms_cholesky_destroy(c);
    sparse_free(&a);
    free(dense);
    free(adjacent);
    return 0;
}

static int test_cholesky_dense_reference(void) {
    /* Random sparse symmetric positive definite matrices (random pattern and signs,
       diagonal above the sum of its row, at most 10x so they are not all trivially
       dominated): the same solution as a dense Cholesky to rounding. */
    enum { MOST = 40 };
    uint64_t seed = 12345;
    double* dense = malloc(sizeof(double) * MOST * MOST);
    ENSURE(dense != NULL);
    for (int trial = 0; trial < 200; ++trial) {
        const int n = 1 + (int)((lcg_uniform(&seed) + 1.0) * 0.5 * MOST) % MOST;
        const double density = 0.02 + 0.3 * (lcg_uniform(&seed) + 1.0) * 0.5;
        memset(dense, 0, sizeof(double) * MOST * MOST);
        for (int j = 0; j < n; ++j)
            for (int i = j + 1; i < n; ++i)
                if ((lcg_uniform(&seed) + 1.0) * 0.5 < density) dense[i * n + j] = dense[j * n + i] = lcg_uniform(&seed);
        for (int i = 0; i < n; ++i) {
            double sum = 0.0;
            for (int j = 0; j < n; ++j) sum += fabs(dense[i * n + j]);
            dense[i * n + i] = sum * (1.0 + 0.1 * (lcg_uniform(&seed) + 1.0)) + 1e-3;
        }
        sparse a = {n, malloc(sizeof(int64_t) * (size_t)(n + 1)), malloc(sizeof(int32_t) * (size_t)(n * n)),
                    malloc(sizeof(double) * (size_t)(n * n))};
        ENSURE(a.start && a.rows && a.values);
        int64_t nnz = 0;
        for (int j = 0; j < n; ++j) {
            a.start[j] = nnz;
            /* rows in a scrambled order: the pattern's order within a column is free */
            for (int t = 0; t < n - j; ++t) {
                const int i = n - 1 - t;
                if (dense[i * n + j] != 0.0) {
                    a.rows[nnz] = i;
                    a.values[nnz++] = dense[i * n + j];
                }
            }
        }
        a.start[n] = nnz;
        double b[MOST], x[MOST];
        random_vector(n, (uint64_t)trial + 1, b);
        memcpy(x, b, sizeof b);
        ms_error err = fresh_error();
        ms_cholesky* c = ms_cholesky_analyse(n, a.start, a.rows, &err);
        ENSURE(c != NULL);
        ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_OK);
        ENSURE(ms_cholesky_nonzeros(c) >= nnz && ms_cholesky_nonzeros(c) <= (int64_t)n * (n + 1) / 2);
        ms_cholesky_solve(c, x, 1);
        ENSURE(dense_solve(n, dense, b) == 0);
        double scale = 0.0;
        for (int i = 0; i < n; ++i) scale = fmax(scale, fabs(b[i]));
        for (int i = 0; i < n; ++i) ENSURE_NEAR(x[i], b[i], 1e-12 * scale);
        ms_cholesky_destroy(c);
        sparse_free(&a);
    }
    free(dense);
    return 0;
}

static int test_cholesky_refactor(void) {
    /* New values on the same pattern (stiffer springs, a smaller step): the new solution,
       bit for bit what a fresh analysis and factorisation give. */
    sparse a, stiffer;
    ENSURE(grid_matrix(24, 1, 1e4, 3600.0, 1, &a) == 0);
    ENSURE(grid_matrix(24, 1, 3e5, 14400.0, 1, &stiffer) == 0);
    ENSURE(a.start[a.n] == stiffer.start[stiffer.n]);
    const int64_t n = a.n;
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(n, a.start, a.rows, &err);
    ms_cholesky* fresh = ms_cholesky_analyse(n, stiffer.start, stiffer.rows, &err);
    double* b = malloc(sizeof(double) * 3 * (size_t)n);
    double* x = malloc(sizeof(double) * 3 * (size_t)n);
    double* y = malloc(sizeof(double) * 3 * (size_t)n);
    ENSURE(c != NULL && fresh != NULL && b != NULL && x != NULL && y != NULL);
    random_vector(3 * n, 21, b);
    ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_OK);
    memcpy(x, b, sizeof(double) * 3 * (size_t)n);
    ms_cholesky_solve(c, x, 3);
    ENSURE(relative_residual(&a, x, b, 3) <= 1e-12);
    ENSURE(ms_cholesky_factor(c, stiffer.values, &err) == MS_OK);
    memcpy(x, b, sizeof(double) * 3 * (size_t)n);
    ms_cholesky_solve(c, x, 3);
    ENSURE(relative_residual(&stiffer, x, b, 3) <= 1e-12);
    ENSURE(relative_residual(&a, x, b, 3) > 1e-6); /* not the old matrix's solution */
    ENSURE(ms_cholesky_factor(fresh, stiffer.values, &err) == MS_OK);
    memcpy(y, b, sizeof(double) * 3 * (size_t)n);
    ms_cholesky_solve(fresh, y, 3);
    ENSURE(memcmp(x, y, sizeof(double) * 3 * (size_t)n) == 0);
    free(b);
    free(x);
    free(y);
    ms_cholesky_destroy(c);
    ms_cholesky_destroy(fresh);
    sparse_free(&a);
    sparse_free(&stiffer);
    return 0;
}

/* ---- refusals ----------------------------------------------------------------------- */

static int test_cholesky_not_positive_definite(void) {
    sparse a;
    ENSURE(grid_matrix(10, 0, 1.0, 0.01, 1, &a) == 0);
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(a.n, a.start, a.rows, &err);
    ENSURE(c != NULL);
    /* a negative diagonal entry at column 37: every other principal minor is diagonally
       dominant, so column 37 is the one whose pivot fails, whatever the order */
    double* values = malloc(sizeof(double) * (size_t)a.start[a.n]);
    ENSURE(values != NULL);
    memcpy(values, a.values, sizeof(double) * (size_t)a.start[a.n]);
    values[a.start[37]] = -0.5;
    err = fresh_error();
    ENSURE(ms_cholesky_factor(c, values, &err) == MS_ERR_VALUE);
    ENSURE(err.status == MS_ERR_VALUE && strstr(err.message, "column 37 ") != NULL);
    ENSURE(strstr(err.message, "not positive definite") != NULL);
    /* the factor is then unusable: solves give NaN */
    double b[300];
    random_vector(300, 2, b);
    ms_cholesky_solve(c, b, 3);
    for (int i = 0; i < 300; ++i) ENSURE(isnan(b[i]));
    /* a free-floating Laplacian (no mass diagonal) is singular: refused too */
    sparse floating;
    ENSURE(grid_matrix(10, 1, 1e5, 0.0, 1, &floating) == 0);
    err = fresh_error();
    ENSURE(ms_cholesky_factor(c, floating.values, &err) == MS_ERR_VALUE);
    ENSURE(strstr(err.message, "not positive definite") != NULL && strstr(err.message, "column ") != NULL);
    sparse_free(&floating);
    /* a 1-D free Laplacian, whose last pivot is exactly zero */
    ENSURE(grid_matrix(10, 0, 1.0, 0.0, 0, &floating) == 0);
    err = fresh_error();
    ENSURE(ms_cholesky_factor(c, floating.values, &err) == MS_ERR_VALUE);
    sparse_free(&floating);
    /* good values make it usable again */
    ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_OK);
    random_vector(300, 2, b);
    double x[300];
    memcpy(x, b, sizeof x);
    ms_cholesky_solve(c, x, 3);
    ENSURE(relative_residual(&a, x, b, 3) <= 1e-12);
    free(values);
    ms_cholesky_destroy(c);
    sparse_free(&a);
    return 0;
}

static int test_cholesky_non_finite(void) {
    sparse a;
    ENSURE(grid_matrix(6, 1, 10.0, 1.0, 0, &a) == 0);
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(a.n, a.start, a.rows, &err);
    ENSURE(c != NULL);
    const double bad[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; ++k) {
        const double saved = a.values[5];
        a.values[5] = bad[k];
        err = fresh_error();
        ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_ERR_VALUE);
        ENSURE(strstr(err.message, "values[5]") != NULL && strstr(err.message, "finite") != NULL);
        a.values[5] = saved;
    }
    ENSURE(ms_cholesky_factor(c, a.values, &err) == MS_OK);
    ms_cholesky_destroy(c);
    sparse_free(&a);
    return 0;
}

static int test_cholesky_bad_patterns(void) {
    /* 3 x 3: columns {0, 2}, {1, 2}, {2}, and five ways to get it wrong */
    const int64_t start[4] = {0, 2, 4, 5}, short_start[4] = {0, 2, 3, 4};
    const int32_t good[5] = {0, 2, 1, 2, 2};
    const int32_t out_of_range[5] = {0, 3, 1, 2, 2};
    const int32_t negative[5] = {0, -1, 1, 2, 2};
    const int32_t above[5] = {0, 2, 1, 0, 2};
    const int32_t no_diagonal[4] = {0, 2, 2, 2};
    const int32_t repeated[5] = {0, 2, 1, 1, 2};
    const int32_t* const bad[5] = {out_of_range, negative, above, no_diagonal, repeated};
    const int64_t* const bad_start[5] = {start, start, start, short_start, start};
    const char* const words[5] = {"rows[1] = 3 (column 0) is out of range", "rows[1] = -1 (column 0) is out of range",
                                  "rows[3] = 0 is above the diagonal of column 1", "column 1 has no diagonal",
                                  "rows[3] = 1 repeats a row of column 1"};
    ms_error err = fresh_error();
    ms_cholesky* c = ms_cholesky_analyse(3, start, good, &err);
    ENSURE(c != NULL && ms_cholesky_nonzeros(c) == 5);
    ms_cholesky_destroy(c);
    for (int k = 0; k < 5; ++k) {
        err = fresh_error();
        ENSURE(ms_cholesky_analyse(3, bad_start[k], bad[k], &err) == NULL);
        ENSURE(err.status == MS_ERR_VALUE && strstr(err.message, words[k]) != NULL);
    }
    const int64_t shifted[4] = {1, 2, 4, 5}, falling[4] = {0, 3, 2, 5};
    err = fresh_error();
    ENSURE(ms_cholesky_analyse(3, shifted, good, &err) == NULL && err.status == MS_ERR_VALUE && has_message(&err));
    err = fresh_error();
    ENSURE(ms_cholesky_analyse(3, falling, good, &err) == NULL && err.status == MS_ERR_VALUE && has_message(&err));
    err = fresh_error();
    ENSURE(ms_cholesky_analyse(-1, start, good, &err) == NULL && err.status == MS_ERR_VALUE && has_message(&err));
    err = fresh_error();
    ENSURE(ms_cholesky_analyse(3, start, NULL, &err) == NULL && err.status == MS_ERR_VALUE && has_message(&err));
    return 0;
}

/* ---- fill ---------------------------------------------------------------------------- */

static int test_cholesky_fill(void) {
    /* A 64 x 64 grid Laplacian: row-by-row numbering fills L's band (some 64 entries per
       column); the ordering needs well under half of that (some 17).  Numbered at random
       the natural order fills some 300 entries per column, while the ordering does about
       as well as on the grid in order. */
    sparse grid, scrambled;
    ENSURE(grid_matrix(64, 0, 1.0, 0.01, 0, &grid) == 0);
    ENSURE(grid_matrix(64, 0, 1.0, 0.01, 1, &scrambled) == 0);
    int64_t ordered = 0, ordered_scrambled = 0;
    ENSURE(solve_residual(&grid, 1, &ordered) <= 1e-12);
    ENSURE(solve_residual(&scrambled, 1, &ordered_scrambled) <= 1e-12);
    const int64_t natural = natural_nonzeros(&grid), natural_scrambled = natural_nonzeros(&scrambled);
    ENSURE(natural > 60 * grid.n && natural < 66 * grid.n);
    ENSURE(2 * ordered < natural);
    ENSURE(10 * ordered_scrambled < natural_scrambled);
    ENSURE(2 * ordered_scrambled < 3 * ordered && 2 * ordered < 3 * ordered_scrambled);
    ENSURE(ordered < 20 * grid.n && ordered_scrambled < 20 * grid.n);
    sparse_free(&grid);
    sparse_free(&scrambled);
    return 0;
}

const test_case cholesky_tests[] = {
    TEST(test_cholesky_chain),
    TEST(test_cholesky_grids),
    TEST(test_cholesky_interleaved),
    TEST(test_cholesky_components),
    TEST(test_cholesky_tiny),
    TEST(test_cholesky_dense_reference),
    TEST(test_cholesky_blocks),
    TEST(test_cholesky_refactor),
    TEST(test_cholesky_not_positive_definite),
    TEST(test_cholesky_non_finite),
    TEST(test_cholesky_bad_patterns),
    TEST(test_cholesky_fill),
    {NULL, NULL},
};
