/* Sparse Cholesky factorisation (cholesky.h): minimum degree ordering, elimination tree,
   symbolic pattern and supernodes, left-looking supernodal numeric factorisation and
   triangular solves. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cholesky.h"
#include "platform/errors.h"
#include "platform/thread.h"

/* A pivot at most this many machine epsilons of its diagonal entry is taken as zero: the
   rounding in computing it is of that order, so its sign means nothing. */
#define MS_CHOLESKY_PIVOT_EPSILONS 1e3

/* Columns of a supernode's update computed at a time: bounds the update buffer to this
   many columns of the longest list of rows below a supernode. */
#define MS_CHOLESKY_UPDATE_COLUMNS 32

struct ms_cholesky {
    int64_t n;
    int64_t nnz_a;        /* entries of the analysed lower triangle */
    int64_t nnz_l;        /* entries of L, diagonal included */
    int64_t nsuper;       /* supernodes */
    int64_t update_size;  /* doubles of the update buffer */
    int factored;         /* non-zero after a successful ms_cholesky_factor */
    /* the matrix P A P^T by columns of its lower triangle: column k's entries are
       [a_start[k], a_start[k + 1]), each in row a_rows[.] >= k, with value
       values[a_source[.]] in the caller's array */
    int64_t* a_start;     /* (n + 1) */
    int32_t* a_rows;      /* (nnz_a) */
    int64_t* a_source;    /* (nnz_a) */
    int32_t* perm;        /* caller's index of the k-th unknown of P A P^T (n) */
    /* L by columns: column j's entries are [l_start[j], l_start[j + 1]), the diagonal
       first, then the rows below it in increasing order */
    int64_t* l_start;     /* (n + 1) */
    int32_t* l_rows;      /* (nnz_l) */
    double* l_values;     /* (nnz_l) */
    /* supernodes: runs of columns [super_start[s], super_start[s + 1]) in which each
       column's pattern is the previous one's without its diagonal, so that all share the
       rows below the run and the first column's rows index them all */
    int64_t* super_start; /* (nsuper + 1) */
    int32_t* super_of;    /* supernode of each column (n) */
    /* factorisation scratch */
    int32_t* map;         /* position of each row in the current supernode's first column (n) */
    int32_t* head;        /* first supernode with an update due to each supernode, or -1 (n) */
    int32_t* link;        /* next supernode in the same list (n) */
    int64_t* next;        /* first of each supernode's rows below it not yet applied (n) */
    double* update;       /* one update, by columns (update_size) */
    double* work;         /* factorisation: the diagonal of P A P^T; solves: the permuted
                             right-hand sides (3 x n) */
    void* buffer;         /* the arrays of A's pattern, perm, super_of, the scratch and work */
    void* factor_buffer;  /* the arrays of L's pattern and values, super_start, update */
};

/* ---- pattern checks ------------------------------------------------------------- */

/* The sizes and column starts, before anything is allocated. */
static int check_columns(int64_t n, const int64_t* start, const int32_t* rows, ms_error* err) {
    if (n < 0 || n > INT32_MAX)
        return ms_error_set(err, MS_ERR_VALUE, "matrix size n = %lld must be in [0, %ld]", (long long)n,
                            (long)INT32_MAX);
    if (start == NULL) return ms_error_set(err, MS_ERR_VALUE, "start (n + 1 column starts) must not be NULL");
    if (start[0] != 0) return ms_error_set(err, MS_ERR_VALUE, "start[0] = %lld must be 0", (long long)start[0]);
    for (int64_t j = 0; j < n; ++j)
        if (start[j + 1] < start[j])
            return ms_error_set(err, MS_ERR_VALUE, "start[%lld] = %lld must not be below start[%lld] = %lld",
                                (long long)(j + 1), (long long)start[j + 1], (long long)j, (long long)start[j]);
    if (start[n] > 0 && rows == NULL)
        return ms_error_set(err, MS_ERR_VALUE, "rows (%lld row indices) must not be NULL", (long long)start[n]);
    return MS_OK;
}

/* Every row in range, on or below the diagonal, once per column, the diagonal present;
   mark (n) is scratch. */
static int check_rows(int64_t n, const int64_t* start, const int32_t* rows, int32_t* mark, ms_error* err) {
    for (int64_t i = 0; i < n; ++i) mark[i] = -1;
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t q = start[j]; q < start[j + 1]; ++q) {
            const int32_t r = rows[q];
            if (r < 0 || r >= n)
                return ms_error_set(err, MS_ERR_VALUE, "rows[%lld] = %ld (column %lld) is out of range [0, %lld)",
                                    (long long)q, (long)r, (long long)j, (long long)n);
            if (r < j)
                return ms_error_set(err, MS_ERR_VALUE,
                                    "rows[%lld] = %ld is above the diagonal of column %lld: give the lower triangle",
                                    (long long)q, (long)r, (long long)j);
            if (mark[r] == j)
                return ms_error_set(err, MS_ERR_VALUE, "rows[%lld] = %ld repeats a row of column %lld",
                                    (long long)q, (long)r, (long long)j);
            mark[r] = (int32_t)j;
        }
        if (mark[j] != j)
            return ms_error_set(err, MS_ERR_VALUE, "column %lld has no diagonal entry", (long long)j);
    }
    return MS_OK;
}

/* ---- approximate minimum degree ------------------------------------------------- */

enum { MD_VARIABLE = 0, MD_ELEMENT = 1, MD_ABSORBED = 2, MD_DENSE = 3 };

/* Neighbours beyond which a variable is dense: 10 sqrt(n), at least 16 (AMD's rule). */
static int64_t dense_degree(int32_t n) {
    const int64_t bound = (int64_t)(10.0 * sqrt((double)n));
    return bound > 16 ? bound : 16;
}

/* Degree lists: a doubly linked list of the variables of each degree. */
typedef struct degree_lists {
    int32_t* head; /* first variable of each degree, or -1 (n) */
    int32_t* next; /* (n) */
    int32_t* prev; /* (n) */
} degree_lists;

static void degree_insert(degree_lists* lists, int32_t i, int64_t degree) {
    const int32_t first = lists->head[degree];
    lists->next[i] = first;
    lists->prev[i] = -1;
    if (first >= 0) lists->prev[first] = i;
    lists->head[degree] = i;
}

static void degree_remove(degree_lists* lists, int32_t i, int64_t degree) {
    const int32_t before = lists->prev[i], after = lists->next[i];
    if (before >= 0) lists->next[before] = after;
    else lists->head[degree] = after;
    if (after >= 0) lists->prev[after] = before;
}

/* Orders the n unknowns of the graph whose neighbours of i are adj[adj_start[i] ..
   adj_start[i + 1]) (symmetric, no self loops) by approximate minimum degree: order[k]
   receives the k-th unknown to eliminate.  adj is overwritten: it holds the quotient
   graph, each variable's list its adjacent elements (the first elen[i]) then its adjacent
   variables.  Eliminating a variable p replaces, in the list of every variable i of the
   new element L_p, p or an element absorbed into L_p by p itself, and drops variables of
   L_p: no list ever grows.  The elements' own variable lists go to a buffer of their own
   that grows as needed (in all, the entries of L below the diagonal).  Variables of more
   than dense_degree(n) neighbours are dense: they leave the graph and are eliminated last,
   in index order (as approximate minimum degree orderings do), since eliminating a
   variable next to one of them would cost a pass over its long list: a node with a
   hundred thousand springs would make the ordering quadratic.  Returns 0, or -1 if out of
   memory. */
static int minimum_degree(int32_t n, const int64_t* adj_start, int32_t* adj, int32_t* order) {
    int32_t* ints = malloc(sizeof(int32_t) * (11 * (size_t)n + 1));
    int64_t* elem_start = malloc(sizeof(int64_t) * ((size_t)n + 1));
    int64_t capacity = 2 * (int64_t)n + adj_start[n] + 1;
    int32_t* elements = malloc(sizeof(int32_t) * (size_t)capacity);
    if (ints == NULL || elem_start == NULL || elements == NULL) {
        free(ints);
        free(elem_start);
        free(elements);
        return -1;
    }
    int32_t* len = ints;           /* entries of each variable's list */
    int32_t* elen = len + n;       /* elements among them, stored first */
    int32_t* state = elen + n;     /* MD_VARIABLE, MD_ELEMENT or MD_ABSORBED */
    int32_t* degree = state + n;   /* approximate external degree of each variable */
    int32_t* mark = degree + n;    /* k while building and updating the k-th element */
    int32_t* wtag = mark + n;      /* k once w[e] is set for the k-th element */
    int32_t* w = wtag + n;         /* variables of element e outside the k-th element */
    int32_t* elem_len = w + n;     /* size of each element's variable list */
    degree_lists lists = {elem_len + n, elem_len + 2 * (int64_t)n, elem_len + 3 * (int64_t)n};
    const int64_t dense = dense_degree(n);
    int32_t ndense = 0;
    for (int32_t i = 0; i < n; ++i) {
        lists.head[i] = -1;
        state[i] = adj_start[i + 1] - adj_start[i] > dense ? MD_DENSE : MD_VARIABLE;
        ndense += state[i] == MD_DENSE;
    }
    for (int32_t i = 0; i < n; ++i) {
        /* the others' lists without the dense variables */
        int32_t kept = 0;
        for (int64_t q = adj_start[i]; state[i] == MD_VARIABLE && q < adj_start[i + 1]; ++q)
            if (state[adj[q]] == MD_VARIABLE) adj[adj_start[i] + kept++] = adj[q];
        len[i] = kept;
        elen[i] = 0;
        degree[i] = len[i];
        mark[i] = -1;
        wtag[i] = -1;
        if (state[i] == MD_VARIABLE) degree_insert(&lists, i, degree[i]);
    }
    for (int32_t i = 0, last = n - ndense; i < n; ++i)
        if (state[i] == MD_DENSE) order[last++] = i;
    int64_t used = 0, min_degree = 0;
    int status = 0;
    for (int32_t k = 0; k < n - ndense; ++k) {
        while (lists.head[min_degree] < 0) ++min_degree;
        const int32_t p = lists.head[min_degree];
        degree_remove(&lists, p, degree[p]);
        order[k] = p;
        /* the new element L_p: p's variables and the variables of its elements, which
           it absorbs */
        if (used + (n - k) > capacity) {
            const int64_t grown = 2 * capacity > used + (n - k) ? 2 * capacity : used + (n - k);
            int32_t* more = realloc(elements, sizeof(int32_t) * (size_t)grown);
            if (more == NULL) {
                status = -1;
                break;
            }
            elements = more;
            capacity = grown;
        }
        int32_t* new_element = elements + used;
        int32_t size = 0;
        mark[p] = k;
        const int32_t* list = adj + adj_start[p];
        for (int32_t t = 0; t < elen[p]; ++t) {
            const int32_t e = list[t];
            if (state[e] != MD_ELEMENT) continue;
            for (int64_t q = elem_start[e]; q < elem_start[e] + elem_len[e]; ++q) {
                const int32_t v = elements[q];
                if (mark[v] != k) {
                    mark[v] = k;
                    new_element[size++] = v;
                }
            }
            state[e] = MD_ABSORBED;
        }
        for (int32_t t = elen[p]; t < len[p]; ++t) {
            const int32_t v = list[t];
            if (mark[v] != k) {
                mark[v] = k;
                new_element[size++] = v;
            }
        }
        state[p] = MD_ELEMENT;
        elem_start[p] = used;
        elem_len[p] = size;
        used += size;
        /* w[e] = |L_e \ L_p| for every element e next to a variable of L_p */
        for (int32_t t = 0; t < size; ++t) {
            const int32_t* li = adj + adj_start[new_element[t]];
            for (int32_t u = 0; u < elen[new_element[t]]; ++u) {
                const int32_t e = li[u];
                if (state[e] != MD_ELEMENT) continue;
                if (wtag[e] != k) {
                    wtag[e] = k;
                    w[e] = elem_len[e];
                }
                w[e] -= 1;
            }
        }
        /* each variable of L_p: prune its list, add p, bound its degree by
           |L_p \ i| + sum |L_e \ L_p| + |A_i \ L_p| */
        const int64_t most = n - ndense - k - 2; /* the other variables left */
        for (int32_t t = 0; t < size; ++t) {
            const int32_t i = new_element[t];
            degree_remove(&lists, i, degree[i]);
            int32_t* li = adj + adj_start[i];
            int32_t nelem = 0, nvar = 0;
            int64_t external = 0;
            for (int32_t u = 0; u < elen[i]; ++u) {
                const int32_t e = li[u];
                if (state[e] != MD_ELEMENT) continue;
                if (w[e] == 0) { /* e lies inside L_p: absorb it */
                    state[e] = MD_ABSORBED;
                    continue;
                }
                external += w[e];
                li[nelem++] = e;
            }
            for (int32_t u = elen[i]; u < len[i]; ++u) {
                const int32_t v = li[u];
                if (mark[v] == k) continue; /* p, or a variable of L_p: reached through p */
                li[nelem + nvar++] = v;
                external += 1;
            }
            /* p joins the elements: the first variable moves to the end to make room
               (i lost p or an absorbed element, so the list is still no longer) */
            if (nvar > 0) li[nelem + nvar] = li[nelem];
            li[nelem] = p;
            elen[i] = nelem + 1;
            len[i] = nelem + 1 + nvar;
            int64_t bound = size - 1 + external;
            if (bound > degree[i] + (int64_t)size - 1) bound = degree[i] + (int64_t)size - 1;
            if (bound > most) bound = most;
            degree[i] = (int32_t)bound;
            degree_insert(&lists, i, bound);
            if (bound < min_degree) min_degree = bound;
        }
    }
    free(ints);
    free(elem_start);
    free(elements);
    return status;
}

/* ---- symbolic analysis ---------------------------------------------------------- */

/* The factor with its first buffer (A's pattern, perm, super_of, scratch, work); NULL if
   out of memory. */
static ms_cholesky* cholesky_create(int64_t n, int64_t nnz_a) {
    ms_cholesky* c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    const size_t doubles = 3 * (size_t)n, longs = (size_t)(n + 1) + (size_t)nnz_a + (size_t)n,
                 ints = 5 * (size_t)n + (size_t)nnz_a;
    c->buffer = malloc(sizeof(double) * doubles + sizeof(int64_t) * longs + sizeof(int32_t) * ints + 1);
    if (c->buffer == NULL) {
        free(c);
        return NULL;
    }
    c->n = n;
    c->nnz_a = nnz_a;
    c->work = c->buffer;
    c->a_start = (int64_t*)(c->work + 3 * n);
    c->a_source = c->a_start + n + 1;
    c->next = c->a_source + nnz_a;
    c->perm = (int32_t*)(c->next + n);
    c->super_of = c->perm + n;
    c->map = c->super_of + n;
    c->head = c->map + n;
    c->link = c->head + n;
    c->a_rows = c->link + n;
    return c;
}

/* The full symmetric graph of the pattern, without the diagonal: the neighbours of i
   are adj[adj_start[i] .. adj_start[i + 1]); cursor (n + 1) is scratch. */
static void build_graph(int64_t n, const int64_t* start, const int32_t* rows, int64_t* adj_start, int64_t* cursor,
                        int32_t* adj) {
    memset(cursor, 0, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t q = start[j]; q < start[j + 1]; ++q)
            if (rows[q] != j) {
                cursor[rows[q]] += 1;
                cursor[j] += 1;
            }
    adj_start[0] = 0;
    for (int64_t i = 0; i < n; ++i) {
        adj_start[i + 1] = adj_start[i] + cursor[i];
        cursor[i] = adj_start[i];
    }
    for (int64_t j = 0; j < n; ++j)
        for (int64_t q = start[j]; q < start[j + 1]; ++q)
            if (rows[q] != j) {
                adj[cursor[rows[q]]++] = (int32_t)j;
                adj[cursor[j]++] = rows[q];
            }
}

/* P A P^T by columns of its lower triangle (c->a_start, a_rows, a_source) and of its
   upper triangle (upper_start (n + 1), upper_rows (nnz_a), for the symbolic analysis);
   pinv (n) is the position of each caller's index in perm, cursor (n + 1) scratch. */
static void permute_pattern(ms_cholesky* c, const int64_t* start, const int32_t* rows, const int32_t* pinv,
                            int64_t* cursor, int64_t* upper_start, int32_t* upper_rows) {
    const int64_t n = c->n;
    memset(cursor, 0, sizeof(int64_t) * (size_t)(n + 1));
    memset(upper_start, 0, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t q = start[j]; q < start[j + 1]; ++q) {
            const int32_t a = pinv[rows[q]], b = pinv[j];
            cursor[a < b ? a : b] += 1;
            upper_start[(a > b ? a : b) + 1] += 1;
        }
    c->a_start[0] = 0;
    for (int64_t k = 0; k < n; ++k) {
        c->a_start[k + 1] = c->a_start[k] + cursor[k];
        cursor[k] = c->a_start[k];
        upper_start[k + 1] += upper_start[k];
    }
    for (int64_t j = 0; j < n; ++j)
        for (int64_t q = start[j]; q < start[j + 1]; ++q) {
            const int32_t a = pinv[rows[q]], b = pinv[j];
            const int32_t low = a < b ? a : b, high = a < b ? b : a;
            const int64_t slot = cursor[low]++;
            c->a_rows[slot] = high;
            c->a_source[slot] = q;
        }
    /* the upper triangle by transposing the lower one */
    memcpy(cursor, upper_start, sizeof(int64_t) * (size_t)n);
    for (int64_t k = 0; k < n; ++k)
        for (int64_t q = c->a_start[k]; q < c->a_start[k + 1]; ++q) upper_rows[cursor[c->a_rows[q]]++] = (int32_t)k;
}

/* The elimination tree of P A P^T (parent[k], -1 at a root) from its upper triangle;
   ancestor (n) is scratch. */
static void elimination_tree(int64_t n, const int64_t* upper_start, const int32_t* upper_rows, int32_t* parent,
                             int32_t* ancestor) {
    for (int64_t k = 0; k < n; ++k) {
        parent[k] = -1;
        ancestor[k] = -1;
        for (int64_t q = upper_start[k]; q < upper_start[k + 1]; ++q) {
            /* climb from the row to the root of its current subtree, pointing the path at k */
            int32_t i = upper_rows[q];
            while (i != -1 && i < k) {
                const int32_t up = ancestor[i];
                ancestor[i] = (int32_t)k;
                if (up == -1) parent[i] = (int32_t)k;
                i = up;
            }
        }
    }
}

/* Row k of L below the diagonal is the set of nodes on the tree paths from the rows of
   column k of P A P^T's upper triangle up to k.  With fill zero, counts the entries
   below the diagonal of each column (col_count); with fill non-zero, appends k to each
   column's rows at c->next.  mark (n) is scratch. */
static void walk_rows(ms_cholesky* c, const int64_t* upper_start, const int32_t* upper_rows, const int32_t* parent,
                      int32_t* mark, int32_t* col_count, int fill) {
    for (int64_t k = 0; k < c->n; ++k) mark[k] = -1;
    for (int64_t k = 0; k < c->n; ++k) {
        mark[k] = (int32_t)k;
        for (int64_t q = upper_start[k]; q < upper_start[k + 1]; ++q)
            for (int32_t i = upper_rows[q]; mark[i] != k; i = parent[i]) {
                mark[i] = (int32_t)k;
                if (fill) c->l_rows[c->next[i]++] = (int32_t)k;
                else col_count[i] += 1;
            }
    }
}

/* Supernodes: column j joins column j - 1's when j is its parent and its pattern is the
   parent's and the diagonal (one entry more).  Fills super_of and, if super_start is not
   NULL, super_start; returns the number of supernodes. */
static int64_t find_supernodes(ms_cholesky* c, const int32_t* parent, const int32_t* col_count,
                               int64_t* super_start) {
    int64_t nsuper = 0;
    for (int64_t j = 0; j < c->n; ++j) {
        if (j == 0 || parent[j - 1] != j || col_count[j - 1] != col_count[j] + 1) {
            if (super_start != NULL) super_start[nsuper] = j;
            ++nsuper;
        }
        c->super_of[j] = (int32_t)(nsuper - 1);
    }
    if (super_start != NULL) super_start[nsuper] = c->n;
    return nsuper;
}

/* The pattern of L from the counts, its supernodes and the update buffer, in a second
   buffer.  Returns 0, or -1 if out of memory. */
static int build_factor_pattern(ms_cholesky* c, const int64_t* upper_start, const int32_t* upper_rows,
                                const int32_t* parent, int32_t* mark, const int32_t* col_count) {
    const int64_t n = c->n;
    int64_t below = 0;
    for (int64_t j = 0; j < n; ++j) below += col_count[j];
    /* the longest list of rows below a supernode: its last column's */
    const int64_t nsuper = find_supernodes(c, parent, col_count, NULL);
    int64_t most_below = 0;
    for (int64_t j = 0; j < n; ++j)
        if (j + 1 == n || c->super_of[j + 1] != c->super_of[j])
            most_below = col_count[j] > most_below ? col_count[j] : most_below;
    const int64_t update_size = most_below * MS_CHOLESKY_UPDATE_COLUMNS + 1;
    if ((uint64_t)(n + below + update_size) > SIZE_MAX / 32) return -1;
    const size_t bytes = sizeof(double) * (size_t)(n + below + update_size) +
                         sizeof(int64_t) * ((size_t)(n + 1) + (size_t)(nsuper + 1)) + sizeof(int32_t) * (size_t)(n + below);
    c->factor_buffer = malloc(bytes);
    if (c->factor_buffer == NULL) return -1;
    c->nnz_l = n + below;
    c->nsuper = nsuper;
    c->update_size = update_size;
    c->l_values = c->factor_buffer;
    c->update = c->l_values + c->nnz_l;
    c->l_start = (int64_t*)(c->update + update_size);
    c->super_start = c->l_start + n + 1;
    c->l_rows = (int32_t*)(c->super_start + nsuper + 1);
    find_supernodes(c, parent, col_count, c->super_start);
    c->l_start[0] = 0;
    for (int64_t j = 0; j < n; ++j) {
        c->l_start[j + 1] = c->l_start[j] + 1 + col_count[j];
        c->l_rows[c->l_start[j]] = (int32_t)j;
        c->next[j] = c->l_start[j] + 1;
    }
    walk_rows(c, upper_start, upper_rows, parent, mark, NULL, 1);
    return 0;
}

ms_cholesky* ms_cholesky_analyse(int64_t n, const int64_t* start, const int32_t* rows, ms_error* err) {
    if (check_columns(n, start, rows, err) != MS_OK) return NULL;
    const int64_t nnz = start[n];
    ms_cholesky* c = cholesky_create(n, nnz);
    /* scratch: the graph (adj_start, cursor, adj), the upper triangle (upper_start,
       upper_rows) and four arrays of n */
    int64_t* longs = malloc(sizeof(int64_t) * 3 * (size_t)(n + 1));
    int32_t* adj = malloc(sizeof(int32_t) * (2 * (size_t)(nnz - n > 0 ? nnz - n : 0) + 1));
    int32_t* ints = malloc(sizeof(int32_t) * (4 * (size_t)n + (size_t)nnz + 1));
    int status = c != NULL && longs != NULL && adj != NULL && ints != NULL ? MS_OK : MS_ERR_MEMORY;
    int64_t* adj_start = longs;
    int64_t* cursor = longs + n + 1;
    int64_t* upper_start = longs + 2 * (n + 1);
    int32_t* mark = ints;
    int32_t* pinv = ints + n;
    int32_t* parent = ints + 2 * n;
    int32_t* col_count = ints + 3 * n;
    int32_t* upper_rows = ints + 4 * n;
    if (status == MS_OK) status = check_rows(n, start, rows, mark, err);
    if (status == MS_OK) {
        /* nnz >= n now (every column has its diagonal), so adj has room for the graph */
        build_graph(n, start, rows, adj_start, cursor, adj);
        if (minimum_degree((int32_t)n, adj_start, adj, c->perm) != 0) status = MS_ERR_MEMORY;
    }
    if (status == MS_OK) {
        for (int64_t k = 0; k < n; ++k) pinv[c->perm[k]] = (int32_t)k;
        permute_pattern(c, start, rows, pinv, cursor, upper_start, upper_rows);
        elimination_tree(n, upper_start, upper_rows, parent, mark);
        memset(col_count, 0, sizeof(int32_t) * (size_t)n);
        walk_rows(c, upper_start, upper_rows, parent, mark, col_count, 0);
        if (build_factor_pattern(c, upper_start, upper_rows, parent, mark, col_count) != 0) status = MS_ERR_MEMORY;
    }
    free(longs);
    free(adj);
    free(ints);
    if (status != MS_OK) {
        ms_cholesky_destroy(c);
        if (status == MS_ERR_MEMORY)
            ms_error_set(err, MS_ERR_MEMORY, "out of memory analysing a sparse %lld x %lld matrix with %lld entries",
                         (long long)n, (long long)n, (long long)nnz);
        return NULL;
    }
    return c;
}

/* ---- numeric factorisation ------------------------------------------------------ */

/* The first non-finite value, named by its entry. */
static int report_non_finite(const ms_cholesky* c, const double* values, ms_error* err) {
    for (int64_t k = 0; k < c->n; ++k)
        for (int64_t q = c->a_start[k]; q < c->a_start[k + 1]; ++q)
            if (!isfinite(values[c->a_source[q]])) {
                const int32_t a = c->perm[c->a_rows[q]], b = c->perm[k];
                return ms_error_set(err, MS_ERR_VALUE, "values[%lld] = %g (row %ld, column %ld) must be finite",
                                    (long long)c->a_source[q], values[c->a_source[q]], (long)(a > b ? a : b),
                                    (long)(a < b ? a : b));
            }
    return MS_OK;
}

/* Column j of the supernode whose first column is first, indexed by the rows' positions
   in the first column (c->map): column j holds the rows from position j - first on, so
   the entry of the row at position u is supernode_column(c, j, first)[u]. */
static double* supernode_column(const ms_cholesky* c, int64_t j, int64_t first) {
    return c->l_values + c->l_start[j] - (j - first);
}

/* Subtracts from the supernode of columns [first, end) (whose rows' positions are in
   c->map) what the finished supernode d owes it: L_d(R, :) L_d(R', :)^T, where R are d's
   rows below it from c->next[d] on (all >= first) and R' those of them < end.  Returns
   the number of rows of R'. */
static int64_t apply_update(ms_cholesky* c, int32_t d, int64_t first, int64_t end) {
    const int64_t d_first = c->super_start[d], width = c->super_start[d + 1] - d_first;
    const int64_t from = c->next[d];
    const int32_t* rows = c->l_rows + c->l_start[d_first] + width + from;
    const int64_t m = c->l_start[d_first + 1] - c->l_start[d_first] - width - from;
    int64_t q = 0;
    while (q < m && rows[q] < end) ++q;
    for (int64_t b0 = 0; b0 < q; b0 += MS_CHOLESKY_UPDATE_COLUMNS) {
        const int64_t columns = q - b0 < MS_CHOLESKY_UPDATE_COLUMNS ? q - b0 : MS_CHOLESKY_UPDATE_COLUMNS;
        const int64_t height = m - b0; /* rows b0 .. m - 1 of R in each column of the update */
        double* update = c->update;
        memset(update, 0, sizeof(double) * (size_t)(height * columns));
        for (int64_t b = b0; b < b0 + columns; ++b) {
            double* column = update + (b - b0) * height; /* rows b0 .. m - 1 */
            /* v_t[a] = L(R[a], d_first + t); four columns of d at a time */
            int64_t t = 0;
            for (; t + 4 <= width; t += 4) {
                const double* v0 = c->l_values + c->l_start[d_first + t] + (width - t) + from;
                const double* v1 = c->l_values + c->l_start[d_first + t + 1] + (width - t - 1) + from;
                const double* v2 = c->l_values + c->l_start[d_first + t + 2] + (width - t - 2) + from;
                const double* v3 = c->l_values + c->l_start[d_first + t + 3] + (width - t - 3) + from;
                const double l0 = v0[b], l1 = v1[b], l2 = v2[b], l3 = v3[b];
                for (int64_t a = b; a < m; ++a)
                    column[a - b0] -= (v0[a] * l0 + v1[a] * l1) + (v2[a] * l2 + v3[a] * l3);
            }
            for (; t < width; ++t) {
                const double* v = c->l_values + c->l_start[d_first + t] + (width - t) + from;
                const double lb = v[b];
                for (int64_t a = b; a < m; ++a) column[a - b0] -= v[a] * lb;
            }
        }
        for (int64_t b = b0; b < b0 + columns; ++b) {
            double* target = supernode_column(c, rows[b], first);
            const double* column = update + (b - b0) * height;
            for (int64_t a = b; a < m; ++a) target[c->map[rows[a]]] += column[a - b0];
        }
    }
    return q;
}

/* Factors the dense block of supernode s once every update is in: column by column,
   each minus the earlier columns of the block, then scaled by its pivot.  MS_ERR_VALUE
   naming the column if a pivot is not positive (diagonal holds A's diagonal). */
static int factor_supernode(ms_cholesky* c, int64_t s, const double* diagonal, ms_error* err) {
    const int64_t first = c->super_start[s], end = c->super_start[s + 1];
    const int64_t length = c->l_start[first + 1] - c->l_start[first];
    for (int64_t j = first; j < end; ++j) {
        double* column = c->l_values + c->l_start[j];
        const int64_t count = length - (j - first);
        /* four earlier columns at a time */
        int64_t i = first;
        for (; i + 4 <= j; i += 4) {
            const double* e0 = c->l_values + c->l_start[i] + (j - i);
            const double* e1 = c->l_values + c->l_start[i + 1] + (j - i - 1);
            const double* e2 = c->l_values + c->l_start[i + 2] + (j - i - 2);
            const double* e3 = c->l_values + c->l_start[i + 3] + (j - i - 3);
            const double l0 = e0[0], l1 = e1[0], l2 = e2[0], l3 = e3[0];
            for (int64_t a = 0; a < count; ++a) column[a] -= (e0[a] * l0 + e1[a] * l1) + (e2[a] * l2 + e3[a] * l3);
        }
        for (; i < j; ++i) {
            const double* earlier = c->l_values + c->l_start[i] + (j - i);
            const double lji = earlier[0];
            for (int64_t a = 0; a < count; ++a) column[a] -= earlier[a] * lji;
        }
        const double pivot = column[0];
        if (!(pivot > MS_CHOLESKY_PIVOT_EPSILONS * DBL_EPSILON * fabs(diagonal[j])))
            return ms_error_set(err, MS_ERR_VALUE,
                                "the matrix is not positive definite: pivot %g of column %ld (diagonal entry %g)",
                                pivot, (long)c->perm[j], diagonal[j]);
        const double root = sqrt(pivot);
        column[0] = root;
        for (int64_t a = 1; a < count; ++a) column[a] /= root;
    }
    return MS_OK;
}

/* Supernode s is finished: queue its update for the supernode of its first row below
   from c->next[s] on, if any. */
static void queue_update(ms_cholesky* c, int32_t s) {
    const int64_t first = c->super_start[s], width = c->super_start[s + 1] - first;
    const int64_t below = c->l_start[first + 1] - c->l_start[first] - width;
    if (c->next[s] >= below) return;
    const int32_t target = c->super_of[c->l_rows[c->l_start[first] + width + c->next[s]]];
    c->link[s] = c->head[target];
    c->head[target] = s;
}

int ms_cholesky_factor(ms_cholesky* c, const double* values, ms_error* err) {
    return ms_cholesky_factor_checked(c, values, NULL, err);
}

/* Supernodes factored between two readings of the clock. */
#define MS_CHOLESKY_PACE 64

int ms_cholesky_factor_checked(ms_cholesky* c, const double* values, const ms_interrupt* interrupt, ms_error* err) {
    c->factored = 0;
    const int checked = interrupt != NULL && interrupt->check != NULL;
    double checked_at = checked ? ms_clock_seconds() : 0.0;
    if (c->nnz_a > 0 && !ms_all_finite(values, (size_t)c->nnz_a)) return report_non_finite(c, values, err);
    double* diagonal = c->work;
    for (int64_t s = 0; s < c->nsuper; ++s) c->head[s] = -1;
    /* left-looking by supernodes: gather A's columns, subtract the updates of the
       supernodes below in the tree that reach these columns, factor the block */
    for (int64_t s = 0; s < c->nsuper; ++s) {
        if (checked && s % MS_CHOLESKY_PACE == MS_CHOLESKY_PACE - 1) {
            const double now = ms_clock_seconds();
            if (now - checked_at >= MS_CHECK_PERIOD) {
                checked_at = now;
                if (interrupt->check(interrupt->context))
                    return ms_error_set(err, MS_ERR_INTERRUPTED, "the factorisation was interrupted");
            }
        }
        const int64_t first = c->super_start[s], end = c->super_start[s + 1];
        const int32_t* rows = c->l_rows + c->l_start[first];
        const int64_t length = c->l_start[first + 1] - c->l_start[first];
        for (int64_t u = 0; u < length; ++u) c->map[rows[u]] = (int32_t)u;
        memset(c->l_values + c->l_start[first], 0, sizeof(double) * (size_t)(c->l_start[end] - c->l_start[first]));
        for (int64_t j = first; j < end; ++j) {
            double* column = supernode_column(c, j, first);
            for (int64_t q = c->a_start[j]; q < c->a_start[j + 1]; ++q)
                column[c->map[c->a_rows[q]]] = values[c->a_source[q]];
            diagonal[j] = column[j - first];
        }
        for (int32_t d = c->head[s]; d != -1;) {
            const int32_t after = c->link[d];
            c->next[d] += apply_update(c, d, first, end);
            queue_update(c, d);
            d = after;
        }
        const int status = factor_supernode(c, s, diagonal, err);
        if (status != MS_OK) return status;
        c->next[s] = 0;
        queue_update(c, (int32_t)s);
    }
    c->factored = 1;
    return MS_OK;
}

/* ---- solves --------------------------------------------------------------------- */

/* L L^T y = y for one right-hand side. */
static void solve_one(const ms_cholesky* c, double* y) {
    const int64_t* l_start = c->l_start;
    const int32_t* l_rows = c->l_rows;
    const double* l_values = c->l_values;
    for (int64_t j = 0; j < c->n; ++j) {
        const double yj = y[j] /= l_values[l_start[j]];
        for (int64_t p = l_start[j] + 1; p < l_start[j + 1]; ++p) y[l_rows[p]] -= l_values[p] * yj;
    }
    for (int64_t j = c->n - 1; j >= 0; --j) {
        double sum = y[j];
        for (int64_t p = l_start[j] + 1; p < l_start[j + 1]; ++p) sum -= l_values[p] * y[l_rows[p]];
        y[j] = sum / l_values[l_start[j]];
    }
}

/* L L^T y = y for three right-hand sides interleaved in y (n x 3): the same operations
   as solve_one on each, one pass over L for all three. */
static void solve_three(const ms_cholesky* c, double* y) {
    const int64_t* l_start = c->l_start;
    const int32_t* l_rows = c->l_rows;
    const double* l_values = c->l_values;
    for (int64_t j = 0; j < c->n; ++j) {
        const double djj = l_values[l_start[j]];
        const double y0 = y[3 * j] /= djj, y1 = y[3 * j + 1] /= djj, y2 = y[3 * j + 2] /= djj;
        for (int64_t p = l_start[j] + 1; p < l_start[j + 1]; ++p) {
            double* yi = y + 3 * (int64_t)l_rows[p];
            const double l = l_values[p];
            yi[0] -= l * y0;
            yi[1] -= l * y1;
            yi[2] -= l * y2;
        }
    }
    for (int64_t j = c->n - 1; j >= 0; --j) {
        double sum0 = y[3 * j], sum1 = y[3 * j + 1], sum2 = y[3 * j + 2];
        for (int64_t p = l_start[j] + 1; p < l_start[j + 1]; ++p) {
            const double* yi = y + 3 * (int64_t)l_rows[p];
            const double l = l_values[p];
            sum0 -= l * yi[0];
            sum1 -= l * yi[1];
            sum2 -= l * yi[2];
        }
        const double djj = l_values[l_start[j]];
        y[3 * j] = sum0 / djj;
        y[3 * j + 1] = sum1 / djj;
        y[3 * j + 2] = sum2 / djj;
    }
}

void ms_cholesky_solve(ms_cholesky* c, double* b, int nrhs) {
    const int64_t n = c->n;
    if (!c->factored) {
        for (int64_t e = 0; e < n * nrhs; ++e) b[e] = NAN;
        return;
    }
    /* the right-hand sides three at a time (then one at a time), permuted into work */
    double* y = c->work;
    int first = 0;
    for (; first + 3 <= nrhs; first += 3) {
        for (int64_t k = 0; k < n; ++k)
            for (int r = 0; r < 3; ++r) y[3 * k + r] = b[(int64_t)c->perm[k] * nrhs + first + r];
        solve_three(c, y);
        for (int64_t k = 0; k < n; ++k)
            for (int r = 0; r < 3; ++r) b[(int64_t)c->perm[k] * nrhs + first + r] = y[3 * k + r];
    }
    for (; first < nrhs; ++first) {
        for (int64_t k = 0; k < n; ++k) y[k] = b[(int64_t)c->perm[k] * nrhs + first];
        solve_one(c, y);
        for (int64_t k = 0; k < n; ++k) b[(int64_t)c->perm[k] * nrhs + first] = y[k];
    }
}

int64_t ms_cholesky_nonzeros(const ms_cholesky* c) { return c->nnz_l; }

void ms_cholesky_destroy(ms_cholesky* c) {
    if (c == NULL) return;
    free(c->buffer);
    free(c->factor_buffer);
    free(c);
}
