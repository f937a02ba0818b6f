/* The sparsity pattern of a matrix over the free nodes with one entry per pair of free
 * nodes joined by springs (pattern.c): what projective dynamics and the implicit solver
 * factor. */
#ifndef MSPRINGS_PATTERN_H
#define MSPRINGS_PATTERN_H

#include "msprings/msprings.h"

typedef struct ms_node_pattern {
    int64_t nfree;
    int32_t* free_index;   /* per node: its row among the free nodes, or -1 if pinned (nnode) */
    int64_t* column_start; /* the lower triangle by columns, each column's diagonal first (nfree + 1) */
    int32_t* rows;         /* (column_start[nfree]) */
    int64_t* spring_entry; /* per spring with two free ends: its off-diagonal entry, else -1 (nspring) */
} ms_node_pattern;

/* Builds the pattern for the model's pins (several springs between two nodes share their
   entry).  Returns 0, or -1 if out of memory (then release it). */
int ms_node_pattern_build(const ms_model* m, ms_node_pattern* p);
/* The same over groups of nodes: group[i] in [0, ngroup) is node i's group, -1 for a node
   in none (nnode); free_index becomes a copy of group, nfree ngroup, and a spring between
   two nodes of one group has no entry. */
int ms_group_pattern_build(const ms_model* m, const int32_t* group, int64_t ngroup, ms_node_pattern* p);
void ms_node_pattern_release(ms_node_pattern* p);

#endif
