/* The pattern of a matrix over the free nodes (pattern.h). */
#include <stdlib.h>
#include <string.h>

#include "kernels/pattern.h"

void ms_node_pattern_release(ms_node_pattern* p) {
    free(p->free_index);
    free(p->column_start);
    free(p->rows);
    free(p->spring_entry);
    p->free_index = NULL;
    p->column_start = NULL;
    p->rows = NULL;
    p->spring_entry = NULL;
    p->nfree = 0;
}

/* The pattern over the groups in p->free_index (p->nfree of them, set by the caller): a
   diagonal entry per group and one per pair of groups joined by springs (several springs
   between two groups share theirs).  Returns 0, or -1 if out of memory. */
static int build_over_groups(const ms_model* m, ms_node_pattern* p) {
    const int64_t n = m->nnode, ns = m->nspring;
    const size_t n1 = (size_t)(n > 0 ? n : 1), ns1 = (size_t)(ns > 0 ? ns : 1);
    p->column_start = calloc(n1 + 1, sizeof(int64_t));
    p->rows = malloc(sizeof(int32_t) * (n1 + ns1));
    p->spring_entry = malloc(sizeof(int64_t) * ns1);
    int64_t* slot = malloc(sizeof(int64_t) * (n1 + ns1)); /* per candidate entry: where it is kept */
    int64_t* last = malloc(sizeof(int64_t) * n1);
    int status = -1;
    if (p->column_start == NULL || p->rows == NULL || p->spring_entry == NULL || slot == NULL || last == NULL)
        goto done;
    /* candidates: each column's diagonal, then one per spring in its lower node's column */
    for (int64_t s = 0; s < ns; ++s) {
        const int32_t a = p->free_index[m->springs[2 * s]], b = p->free_index[m->springs[2 * s + 1]];
        if (a >= 0 && b >= 0 && a != b) p->column_start[(a < b ? a : b) + 1] += 1;
    }
    for (int64_t j = 0; j < p->nfree; ++j) {
        p->column_start[j + 1] += p->column_start[j] + 1;
        p->rows[p->column_start[j]] = (int32_t)j;
        last[j] = p->column_start[j] + 1; /* the column's next free candidate */
    }
    for (int64_t s = 0; s < ns; ++s) {
        const int32_t a = p->free_index[m->springs[2 * s]], b = p->free_index[m->springs[2 * s + 1]];
        p->spring_entry[s] = -1;
        if (a >= 0 && b >= 0 && a != b) {
            p->spring_entry[s] = last[a < b ? a : b];
            p->rows[last[a < b ? a : b]++] = a < b ? b : a;
        }
    }
    /* merge the rows repeated within a column; last[row] becomes the entry that row last
       got, which is in the current column if it is at or after the column's start */
    for (int64_t j = 0; j < p->nfree; ++j) last[j] = -1;
    int64_t kept = 0;
    for (int64_t j = 0; j < p->nfree; ++j) {
        const int64_t begin = p->column_start[j], end = p->column_start[j + 1];
        p->column_start[j] = kept;
        for (int64_t q = begin; q < end; ++q) {
            const int32_t row = p->rows[q];
            if (last[row] < p->column_start[j]) {
                last[row] = kept;
                p->rows[kept++] = row;
            }
            slot[q] = last[row];
        }
    }
    p->column_start[p->nfree] = kept;
    for (int64_t s = 0; s < ns; ++s)
        if (p->spring_entry[s] >= 0) p->spring_entry[s] = slot[p->spring_entry[s]];
    status = 0;
done:
    free(slot);
    free(last);
    return status;
}

int ms_node_pattern_build(const ms_model* m, ms_node_pattern* p) {
    p->free_index = malloc(sizeof(int32_t) * (size_t)(m->nnode > 0 ? m->nnode : 1));
    if (p->free_index == NULL) return -1;
    p->nfree = 0;
    for (int64_t i = 0; i < m->nnode; ++i) p->free_index[i] = m->pinned[i] ? -1 : (int32_t)p->nfree++;
    return build_over_groups(m, p);
}

int ms_group_pattern_build(const ms_model* m, const int32_t* group, int64_t ngroup, ms_node_pattern* p) {
    p->free_index = malloc(sizeof(int32_t) * (size_t)(m->nnode > 0 ? m->nnode : 1));
    if (p->free_index == NULL) return -1;
    memcpy(p->free_index, group, sizeof(int32_t) * (size_t)m->nnode);
    p->nfree = ngroup;
    return build_over_groups(m, p);
}
