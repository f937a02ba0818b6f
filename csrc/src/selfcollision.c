/* Self-collision: node-node repulsion found with a spatial hash grid rebuilt every step.
 *
 * Nodes are binned into cubic cells of the collision distance d, hashed into a table of
 * about twice as many buckets as nodes and sorted by bucket (a counting sort), so each
 * node looks only at the 27 cells around it: the cost grows linearly with the node count.
 * A close pair that no spring joins is pushed apart to distance d along the line between
 * them, each node moving in proportion to its inverse mass (the centre of mass stays put),
 * and their approaching relative velocity along that line is removed by equal and opposite
 * impulses (a perfectly inelastic contact, so momentum is conserved).  Pairs are resolved
 * once per step in node order, which is deterministic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct self_work {
    int64_t* adjacency_start; /* (nnode + 1): neighbours of i are adjacency[start[i] .. start[i+1]) */
    int32_t* adjacency;       /* (2 nspring), sorted per node */
    int64_t buckets;          /* power of two */
    int64_t* bucket_start;    /* (buckets + 1) */
    int32_t* order;           /* (nnode) node indices sorted by bucket */
    int64_t* node_bucket;     /* (nnode) */
} self_work;

static int compare_int32(const void* a, const void* b) {
    const int32_t x = *(const int32_t*)a, y = *(const int32_t*)b;
    return (x > y) - (x < y);
}

static self_work* build_work(const ms_model* m) {
    const int64_t n = m->nnode, springs = m->nspring;
    int64_t buckets = 1;
    while (buckets < 2 * n) buckets *= 2;
    self_work* w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->adjacency_start = calloc((size_t)n + 1, sizeof(int64_t));
    w->adjacency = malloc(sizeof(int32_t) * (size_t)(2 * springs > 0 ? 2 * springs : 1));
    w->bucket_start = malloc(sizeof(int64_t) * (size_t)(buckets + 1));
    w->order = malloc(sizeof(int32_t) * (size_t)n);
    w->node_bucket = malloc(sizeof(int64_t) * (size_t)n);
    if (!w->adjacency_start || !w->adjacency || !w->bucket_start || !w->order || !w->node_bucket) {
        free(w->adjacency_start);
        free(w->adjacency);
        free(w->bucket_start);
        free(w->order);
        free(w->node_bucket);
        free(w);
        return NULL;
    }
    w->buckets = buckets;
    for (int64_t s = 0; s < springs; ++s) {
        w->adjacency_start[m->springs[2 * s] + 1] += 1;
        w->adjacency_start[m->springs[2 * s + 1] + 1] += 1;
    }
    for (int64_t i = 0; i < n; ++i) w->adjacency_start[i + 1] += w->adjacency_start[i];
    int64_t* fill = w->node_bucket; /* borrowed as a cursor while building */
    for (int64_t i = 0; i < n; ++i) fill[i] = w->adjacency_start[i];
    for (int64_t s = 0; s < springs; ++s) {
        const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        w->adjacency[fill[i]++] = j;
        w->adjacency[fill[j]++] = i;
    }
    for (int64_t i = 0; i < n; ++i)
        qsort(w->adjacency + w->adjacency_start[i], (size_t)(w->adjacency_start[i + 1] - w->adjacency_start[i]),
              sizeof(int32_t), compare_int32);
    return w;
}

void ms_self_work_free(void* work) {
    self_work* w = work;
    if (w == NULL) return;
    free(w->adjacency_start);
    free(w->adjacency);
    free(w->bucket_start);
    free(w->order);
    free(w->node_bucket);
    free(w);
}

static int joined(const self_work* w, int32_t i, int32_t j) {
    const int32_t* first = w->adjacency + w->adjacency_start[i];
    int64_t low = 0, high = w->adjacency_start[i + 1] - w->adjacency_start[i];
    while (low < high) {
        const int64_t mid = (low + high) / 2;
        if (first[mid] < j)
            low = mid + 1;
        else
            high = mid;
    }
    return low < w->adjacency_start[i + 1] - w->adjacency_start[i] && first[low] == j;
}

static int64_t cell_of(double coordinate, double inv_cell) { return (int64_t)floor(coordinate * inv_cell); }

static int64_t bucket_of(int64_t cx, int64_t cy, int64_t cz, int64_t buckets) {
    const uint64_t h = (uint64_t)cx * 73856093ull ^ (uint64_t)cy * 19349663ull ^ (uint64_t)cz * 83492791ull;
    return (int64_t)(h & (uint64_t)(buckets - 1));
}

double ms_self_collide(const ms_model* m, ms_state* s, double* restrict x, double* restrict v) {
    if (s->self_work == NULL) {
        s->self_work = build_work(m);
        if (s->self_work == NULL) return -1.0;
    }
    self_work* w = s->self_work;
    const int64_t n = m->nnode;
    const double distance = m->opt.self_collision, inv_cell = 1.0 / distance;
    const double* inv_mass = s->inv_mass;

    /* Counting sort of the nodes by bucket. */
    memset(w->bucket_start, 0, sizeof(int64_t) * (size_t)(w->buckets + 1));
    for (int64_t i = 0; i < n; ++i) {
        const double* p = x + 3 * i;
        w->node_bucket[i] = bucket_of(cell_of(p[0], inv_cell), cell_of(p[1], inv_cell), cell_of(p[2], inv_cell),
                                      w->buckets);
        w->bucket_start[w->node_bucket[i] + 1] += 1;
    }
    for (int64_t b = 0; b < w->buckets; ++b) w->bucket_start[b + 1] += w->bucket_start[b];
    for (int64_t i = 0; i < n; ++i) w->order[w->bucket_start[w->node_bucket[i]]++] = (int32_t)i;
    for (int64_t b = w->buckets; b > 0; --b) w->bucket_start[b] = w->bucket_start[b - 1];
    w->bucket_start[0] = 0;

    double removed = 0.0;
    const double distance2 = distance * distance;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t cx = cell_of(x[3 * i], inv_cell), cy = cell_of(x[3 * i + 1], inv_cell),
                      cz = cell_of(x[3 * i + 2], inv_cell);
        for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    const int64_t b = bucket_of(cx + dx, cy + dy, cz + dz, w->buckets);
                    for (int64_t k = w->bucket_start[b]; k < w->bucket_start[b + 1]; ++k) {
                        const int32_t j = w->order[k];
                        if (j <= i) continue; /* each pair once (and not a node with itself) */
                        const double wi = inv_mass[i], wj = inv_mass[j];
                        if (wi + wj == 0.0) continue;
                        double* xi = x + 3 * i;
                        double* xj = x + 3 * j;
                        const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
                        const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                        if (length2 >= distance2 || length2 <= 1e-24) continue;
                        if (joined(w, (int32_t)i, j)) continue;
                        const double length = sqrt(length2);
                        const double normal[3] = {d[0] / length, d[1] / length, d[2] / length};
                        const double push = (distance - length) / (wi + wj);
                        double* vi = v + 3 * i;
                        double* vj = v + 3 * j;
                        const double approach = (vj[0] - vi[0]) * normal[0] + (vj[1] - vi[1]) * normal[1] +
                                                (vj[2] - vi[2]) * normal[2];
                        /* inelastic impulse along the normal, only if they approach */
                        const double impulse = approach < 0.0 ? -approach / (wi + wj) : 0.0;
                        if (impulse > 0.0) removed += 0.5 * impulse * impulse * (wi + wj);
                        for (int a = 0; a < 3; ++a) {
                            xi[a] -= wi * push * normal[a];
                            xj[a] += wj * push * normal[a];
                            vi[a] -= wi * impulse * normal[a];
                            vj[a] += wj * impulse * normal[a];
                        }
                    }
                }
    }
    return removed;
}
