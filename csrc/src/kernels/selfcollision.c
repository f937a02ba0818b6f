/* Self-collision: node-node repulsion found with a spatial hash grid rebuilt every step.
 *
 * Nodes are binned into cubic cells of the collision distance d, hashed into a table of
 * about twice as many buckets as nodes and sorted by bucket (a counting sort), so each
 * node looks only at the 27 cells around it: the cost grows linearly with the node count.
 * A close pair that no spring joins is pushed apart to distance d along the line between
 * them, each node moving in proportion to its inverse mass (the centre of mass stays put),
 * and their approaching relative velocity along that line is removed by equal and opposite
 * impulses (a perfectly inelastic contact, so momentum is conserved).  Where the system has
 * triangles, nodes are also kept d away from every triangle they are not a corner of (see
 * node_triangle_pass), so a node cannot slip through a cloth between its nodes.  Pairs are
 * resolved once per step in node order, which is deterministic.  The distance should be
 * below about half the node spacing, or neighbours in a flat sheet already "collide".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

/* Two nodes (or a node and a triangle) closer than 1e-12 m count as coincident: there is
   no direction to push them apart.  The square of that distance (m^2). */
#define MS_COINCIDENT2 1e-24

typedef struct self_work {
    int64_t* adjacency_start; /* (nnode + 1): neighbours of i are adjacency[start[i] .. start[i+1]) */
    int32_t* adjacency;       /* (2 nspring), sorted per node */
    int64_t buckets;          /* power of two */
    int64_t* bucket_start;    /* (buckets + 1) */
    int32_t* order;           /* (nnode) node indices sorted by bucket */
    int64_t* node_bucket;     /* (nnode) */
    int64_t face_buckets;     /* power of two, for the triangles (0 without faces) */
    int64_t* face_bucket_start; /* (face_buckets + 1) */
    int32_t* face_order;      /* (nface) triangles sorted by bucket */
    int64_t* face_bucket;     /* (nface) */
    ms_sweep_work* sweep;     /* the self-contact sweep's (and the mesh edges), made on first use */
    int64_t edge_buckets;     /* power of two, for the edges (0 until the first edge pass) */
    int64_t* edge_bucket_start; /* (edge_buckets + 1) */
    int32_t* edge_order;      /* (nedge) edges sorted by bucket */
    int64_t* edge_bucket;     /* (nedge) */
} self_work;

static int compare_int32(const void* a, const void* b) {
    const int32_t x = *(const int32_t*)a, y = *(const int32_t*)b;
    return (x > y) - (x < y);
}

static void self_work_free(void* work);

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
    int64_t face_buckets = 0;
    if (m->nface > 0) {
        face_buckets = 1;
        while (face_buckets < 2 * m->nface) face_buckets *= 2;
        w->face_bucket_start = malloc(sizeof(int64_t) * (size_t)(face_buckets + 1));
        w->face_order = malloc(sizeof(int32_t) * (size_t)m->nface);
        w->face_bucket = malloc(sizeof(int64_t) * (size_t)m->nface);
    }
    w->face_buckets = face_buckets;
    if (!w->adjacency_start || !w->adjacency || !w->bucket_start || !w->order || !w->node_bucket ||
        (m->nface > 0 && (!w->face_bucket_start || !w->face_order || !w->face_bucket))) {
        self_work_free(w);
        return NULL;
    }
    w->buckets = buckets;
    /* each node's springs, then the node at each one's other end */
    if (ms_node_springs(m, w->adjacency_start, w->adjacency) != 0) {
        self_work_free(w);
        return NULL;
    }
    for (int64_t i = 0; i < n; ++i)
        for (int64_t e = w->adjacency_start[i]; e < w->adjacency_start[i + 1]; ++e) {
            const int32_t* spring = m->springs + 2 * (int64_t)w->adjacency[e];
            w->adjacency[e] = spring[0] == i ? spring[1] : spring[0];
        }
    for (int64_t i = 0; i < n; ++i)
        qsort(w->adjacency + w->adjacency_start[i], (size_t)(w->adjacency_start[i + 1] - w->adjacency_start[i]),
              sizeof(int32_t), compare_int32);
    return w;
}

static void self_work_free(void* work) {
    self_work* w = work;
    if (w == NULL) return;
    ms_sweep_work_free(w->sweep);
    free(w->edge_bucket_start);
    free(w->edge_order);
    free(w->edge_bucket);
    free(w->face_bucket_start);
    free(w->face_order);
    free(w->face_bucket);
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

/* Cells beyond +-2^52 share the outermost cell: the cast below stays defined for any
   coordinate (huge, or infinite after dividing by a tiny distance), and neighbour cells
   cx +- 1 never overflow. */
#define MS_CELL_LIMIT 4503599627370496.0
static int64_t cell_of(double coordinate, double inv_cell) {
    const double cell = floor(coordinate * inv_cell);
    if (!(cell > -MS_CELL_LIMIT)) return -(int64_t)MS_CELL_LIMIT; /* also NaN */
    if (!(cell < MS_CELL_LIMIT)) return (int64_t)MS_CELL_LIMIT;
    return (int64_t)cell;
}

static int64_t bucket_of(int64_t cx, int64_t cy, int64_t cz, int64_t buckets) {
    const uint64_t h = (uint64_t)cx * 73856093ull ^ (uint64_t)cy * 19349663ull ^ (uint64_t)cz * 83492791ull;
    return (int64_t)(h & (uint64_t)(buckets - 1));
}

/* The distinct buckets of the 27 cells around (cx, cy, cz): two cells can hash to the same
   bucket, and a bucket visited twice would resolve its pairs twice.  Returns the count. */
static int neighbour_buckets(int64_t cx, int64_t cy, int64_t cz, int64_t buckets, int64_t out[27]) {
    int count = 0;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                const int64_t b = bucket_of(cx + dx, cy + dy, cz + dz, buckets);
                int seen = 0;
                for (int k = 0; k < count && !seen; ++k) seen = out[k] == b;
                if (!seen) out[count++] = b;
            }
    return count;
}


/* Coulomb friction after a push: rel is the pair's relative velocity (after the normal
   impulse), normal the unit normal, change the normal velocity change dv_n >= 0 the
   impulse made.  Writes into slip the tangential relative velocity to remove,
   (1 - keep) v_t with keep = max(0, 1 - mu dv_n / |v_t|), and returns the kinetic energy
   that removes, (1 - keep^2) |v_t|^2 / (2 total), total being the pair's inverse mass
   along any direction. */
static double friction_slip(const double rel[3], const double normal[3], double change, double mu, double total,
                            double slip[3]) {
    slip[0] = slip[1] = slip[2] = 0.0;
    if (!(mu > 0.0) || !(change > 0.0) || !(total > 0.0)) return 0.0;
    const double along = rel[0] * normal[0] + rel[1] * normal[1] + rel[2] * normal[2];
    double tangent[3];
    for (int q = 0; q < 3; ++q) tangent[q] = rel[q] - along * normal[q];
    const double speed2 = tangent[0] * tangent[0] + tangent[1] * tangent[1] + tangent[2] * tangent[2];
    if (!(speed2 > 0.0)) return 0.0;
    const double speed = sqrt(speed2);
    const double keep = speed > mu * change ? 1.0 - mu * change / speed : 0.0;
    for (int q = 0; q < 3; ++q) slip[q] = (1.0 - keep) * tangent[q];
    return 0.5 * (1.0 - keep * keep) * speed2 / total;
}

/* Node-triangle pass: a node closer than d to a triangle it is not a corner of is pushed
   out along the line from the triangle's closest point, the triangle's corners moving the
   other way in proportion to their barycentric weights and inverse masses (momentum is
   conserved), and their approaching normal velocity is removed by an impulse.  Triangles
   are hashed by centroid into cells of d + the longest edge, so every triangle within d of
   a node has its centroid in one of the 27 cells around the node. */
static double node_triangle_pass(const ms_model* m, self_work* w, const double* inv_mass, double* x, double* v,
                                 double distance, double mu) {
    double longest2 = 0.0;
    for (int64_t f = 0; f < m->nface; ++f) {
        const int32_t* face = m->faces + 3 * f;
        for (int e = 0; e < 3; ++e) {
            const double* a = x + 3 * (int64_t)face[e];
            const double* b = x + 3 * (int64_t)face[(e + 1) % 3];
            const double d2 = (b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]);
            if (d2 > longest2) longest2 = d2;
        }
    }
    const double cell = distance + sqrt(longest2), inv_cell = 1.0 / cell;
    for (int64_t f = 0; f < m->nface; ++f) {
        const int32_t* face = m->faces + 3 * f;
        double centroid[3];
        for (int q = 0; q < 3; ++q)
            centroid[q] = (x[3 * (int64_t)face[0] + q] + x[3 * (int64_t)face[1] + q] + x[3 * (int64_t)face[2] + q]) / 3.0;
        w->face_bucket[f] = bucket_of(cell_of(centroid[0], inv_cell), cell_of(centroid[1], inv_cell),
                                      cell_of(centroid[2], inv_cell), w->face_buckets);
    }
    ms_counting_sort(w->face_bucket, NULL, m->nface, w->face_buckets, w->face_bucket_start, w->face_order);

    double removed = 0.0;
    for (int64_t i = 0; i < m->nnode; ++i) {
        double* p = x + 3 * i;
        int64_t visit[27];
        const int visits = neighbour_buckets(cell_of(p[0], inv_cell), cell_of(p[1], inv_cell),
                                             cell_of(p[2], inv_cell), w->face_buckets, visit);
        for (int cell_index = 0; cell_index < visits; ++cell_index) {
            const int64_t b = visit[cell_index];
            for (int64_t k = w->face_bucket_start[b]; k < w->face_bucket_start[b + 1]; ++k) {
                const int32_t* face = m->faces + 3 * (int64_t)w->face_order[k];
                if (face[0] == i || face[1] == i || face[2] == i) continue;
                double* corner[3] = {x + 3 * (int64_t)face[0], x + 3 * (int64_t)face[1], x + 3 * (int64_t)face[2]};
                double weight[3];
                ms_closest_on_triangle(p, corner[0], corner[1], corner[2], weight);
                double d[3];
                for (int q = 0; q < 3; ++q)
                    d[q] = p[q] - (weight[0] * corner[0][q] + weight[1] * corner[1][q] + weight[2] * corner[2][q]);
                const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if (length2 >= distance * distance || length2 <= MS_COINCIDENT2) continue;
                const double w_node = inv_mass[i];
                const double w_face[3] = {inv_mass[face[0]], inv_mass[face[1]], inv_mass[face[2]]};
                const double total = w_node + weight[0] * weight[0] * w_face[0] +
                                     weight[1] * weight[1] * w_face[1] + weight[2] * weight[2] * w_face[2];
                if (total == 0.0) continue;
                const double length = sqrt(length2);
                const double normal[3] = {d[0] / length, d[1] / length, d[2] / length};
                const double push = (distance - length) / total;
                double approach = 0.0; /* normal velocity of the node relative to the triangle */
                for (int q = 0; q < 3; ++q) {
                    const double surface = weight[0] * v[3 * (int64_t)face[0] + q] +
                                           weight[1] * v[3 * (int64_t)face[1] + q] +
                                           weight[2] * v[3 * (int64_t)face[2] + q];
                    approach += (v[3 * i + q] - surface) * normal[q];
                }
                const double impulse = approach < 0.0 ? -approach / total : 0.0;
                removed += 0.5 * impulse * impulse * total;
                for (int q = 0; q < 3; ++q) {
                    p[q] += w_node * push * normal[q];
                    v[3 * i + q] += w_node * impulse * normal[q];
                    for (int c = 0; c < 3; ++c) {
                        corner[c][q] -= weight[c] * w_face[c] * push * normal[q];
                        v[3 * (int64_t)face[c] + q] -= weight[c] * w_face[c] * impulse * normal[q];
                    }
                }
                if (mu > 0.0 && impulse > 0.0) {
                    double rel[3], slip[3];
                    for (int q = 0; q < 3; ++q)
                        rel[q] = v[3 * i + q] - (weight[0] * v[3 * (int64_t)face[0] + q] +
                                                 weight[1] * v[3 * (int64_t)face[1] + q] +
                                                 weight[2] * v[3 * (int64_t)face[2] + q]);
                    removed += friction_slip(rel, normal, impulse * total, mu, total, slip);
                    for (int q = 0; q < 3; ++q) {
                        v[3 * i + q] -= w_node * slip[q] / total;
                        for (int c = 0; c < 3; ++c) v[3 * (int64_t)face[c] + q] += weight[c] * w_face[c] * slip[q] / total;
                    }
                }
            }
        }
    }
    return removed;
}


/* Edge-edge pass: two mesh edges that share no node and come closer than d are pushed
   apart along the line between their closest points, each end in proportion to its share
   of the closest point (1 - s, s) and its inverse mass (momentum is conserved), and their
   approaching normal velocity is removed by an impulse (and friction, as the other
   passes).  Edges are hashed by midpoint into cells of d + the longest edge, so every
   edge within d of another has its midpoint in one of the 27 cells around that one's.
   Returns the kinetic energy removed. */
static double edge_edge_pass(self_work* w, const double* inv_mass, double* x, double* v, double distance, double mu) {
    int64_t nedge = 0;
    const int32_t* edges = ms_sweep_edges(w->sweep, &nedge);
    if (nedge == 0) return 0.0;
    double longest2 = 0.0;
    for (int64_t e = 0; e < nedge; ++e) {
        const double* a = x + 3 * (int64_t)edges[2 * e];
        const double* b = x + 3 * (int64_t)edges[2 * e + 1];
        const double d2 = (b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]);
        if (d2 > longest2) longest2 = d2;
    }
    const double inv_cell = 1.0 / (distance + sqrt(longest2));
#define MIDPOINT_CELL(e, axis) \
    cell_of(0.5 * (x[3 * (int64_t)edges[2 * (e)] + (axis)] + x[3 * (int64_t)edges[2 * (e) + 1] + (axis)]), inv_cell)
    for (int64_t e = 0; e < nedge; ++e)
        w->edge_bucket[e] = bucket_of(MIDPOINT_CELL(e, 0), MIDPOINT_CELL(e, 1), MIDPOINT_CELL(e, 2), w->edge_buckets);
    ms_counting_sort(w->edge_bucket, NULL, nedge, w->edge_buckets, w->edge_bucket_start, w->edge_order);
    double removed = 0.0;
    for (int64_t e = 0; e < nedge; ++e) {
        int64_t visit[27];
        const int visits = neighbour_buckets(MIDPOINT_CELL(e, 0), MIDPOINT_CELL(e, 1), MIDPOINT_CELL(e, 2),
                                             w->edge_buckets, visit);
        const int32_t* one = edges + 2 * e;
        for (int cell_index = 0; cell_index < visits; ++cell_index) {
            const int64_t b = visit[cell_index];
            for (int64_t k = w->edge_bucket_start[b]; k < w->edge_bucket_start[b + 1]; ++k) {
                const int64_t g = w->edge_order[k];
                if (g <= e) continue;
                const int32_t* two = edges + 2 * g;
                if (one[0] == two[0] || one[0] == two[1] || one[1] == two[0] || one[1] == two[1]) continue;
                const int32_t node[4] = {one[0], one[1], two[0], two[1]};
                /* boxes farther apart than d along an axis: no closer anywhere */
                int apart = 0;
                for (int q = 0; q < 3 && !apart; ++q) {
                    const double a0 = x[3 * (int64_t)node[0] + q], a1 = x[3 * (int64_t)node[1] + q];
                    const double b0 = x[3 * (int64_t)node[2] + q], b1 = x[3 * (int64_t)node[3] + q];
                    const double a_lo = a0 < a1 ? a0 : a1, a_hi = a0 < a1 ? a1 : a0;
                    const double b_lo = b0 < b1 ? b0 : b1, b_hi = b0 < b1 ? b1 : b0;
                    apart = a_lo - b_hi >= distance || b_lo - a_hi >= distance;
                }
                if (apart) continue;
                double s, t;
                const double length2 = ms_segment_closest(x + 3 * (int64_t)node[0], x + 3 * (int64_t)node[1],
                                                          x + 3 * (int64_t)node[2], x + 3 * (int64_t)node[3], &s, &t);
                if (length2 >= distance * distance || length2 <= MS_COINCIDENT2) continue;
                /* signed shares: the first edge's ends move along +normal, the second's along -normal */
                const double share[4] = {1.0 - s, s, -(1.0 - t), -t};
                double total = 0.0;
                for (int c = 0; c < 4; ++c) total += share[c] * share[c] * inv_mass[node[c]];
                if (total == 0.0) continue;
                double d[3], rel[3];
                for (int q = 0; q < 3; ++q) {
                    d[q] = 0.0, rel[q] = 0.0;
                    for (int c = 0; c < 4; ++c) {
                        d[q] += share[c] * x[3 * (int64_t)node[c] + q];
                        rel[q] += share[c] * v[3 * (int64_t)node[c] + q];
                    }
                }
                const double length = sqrt(length2);
                const double normal[3] = {d[0] / length, d[1] / length, d[2] / length};
                const double push = (distance - length) / total;
                const double approach = rel[0] * normal[0] + rel[1] * normal[1] + rel[2] * normal[2];
                const double impulse = approach < 0.0 ? -approach / total : 0.0;
                removed += 0.5 * impulse * impulse * total;
                for (int c = 0; c < 4; ++c) {
                    const double move = share[c] * inv_mass[node[c]];
                    for (int q = 0; q < 3; ++q) {
                        x[3 * (int64_t)node[c] + q] += move * push * normal[q];
                        v[3 * (int64_t)node[c] + q] += move * impulse * normal[q];
                    }
                }
                if (mu > 0.0 && impulse > 0.0) {
                    double slip[3];
                    for (int q = 0; q < 3; ++q) rel[q] += total * impulse * normal[q];
                    removed += friction_slip(rel, normal, impulse * total, mu, total, slip);
                    for (int c = 0; c < 4; ++c) {
                        const double move = share[c] * inv_mass[node[c]];
                        for (int q = 0; q < 3; ++q) v[3 * (int64_t)node[c] + q] -= move * slip[q] / total;
                    }
                }
            }
        }
    }
#undef MIDPOINT_CELL
    return removed;
}

static self_work* get_work(const ms_model* m, ms_state* s) {
    if (ms_workspace_get(s, MS_WORK_SELF_COLLISION) == NULL) {
        self_work* made = build_work(m);
        if (made == NULL) return NULL;
        ms_workspace_set(s, MS_WORK_SELF_COLLISION, made, self_work_free);
    }
    return ms_workspace_get(s, MS_WORK_SELF_COLLISION);
}

int ms_self_contact(const ms_model* m, ms_state* s, const double* x0, double* x1, double* v,
                    const ms_interrupt* interrupt, int64_t* sent_back, double* removed, const unsigned char** back) {
    *sent_back = 0;
    *back = NULL;
    *removed = 0.0;
    const double distance = m->opt.self_collision;
    if (!(distance * distance > MS_COINCIDENT2) || m->nface == 0) return MS_OK;
    self_work* w = get_work(m, s);
    if (w == NULL) return MS_ERR_MEMORY;
    if (w->sweep == NULL) {
        w->sweep = ms_sweep_work_new(m);
        if (w->sweep == NULL) return MS_ERR_MEMORY;
    }
    const int status =
        ms_self_contact_sweep(m, s, w->sweep, x0, x1, v, MS_SELF_CONTACT_GAP * distance, interrupt, sent_back, removed);
    *back = ms_sweep_sent_back(w->sweep);
    return status;
}

int ms_self_collide(const ms_model* m, ms_state* s, double* MS_RESTRICT x, double* MS_RESTRICT v,
                    double* removed_energy) {
    *removed_energy = 0.0;
    const double distance = m->opt.self_collision, mu = m->opt.self_friction;
    /* A distance no larger than the coincidence one leaves no pair to push (the grid's
       cells, 1 / distance, would not even be finite below 1e-308).  The size of the grid
       does not depend on the distance: its cells are hashed into buckets counted by nodes,
       so a distance beyond the system's extent just puts every node in a few cells. */
    if (!(distance * distance > MS_COINCIDENT2)) return MS_OK;
    self_work* w = get_work(m, s);
    if (w == NULL) return MS_ERR_MEMORY;
    if (m->nface > 0 && w->sweep == NULL) {
        w->sweep = ms_sweep_work_new(m); /* the mesh edges, for the edge-edge pass */
        if (w->sweep == NULL) return MS_ERR_MEMORY;
    }
    if (m->nface > 0 && w->edge_bucket == NULL) {
        int64_t nedge = 0, buckets = 1;
        (void)ms_sweep_edges(w->sweep, &nedge);
        while (buckets < 2 * nedge) buckets *= 2;
        w->edge_buckets = buckets;
        w->edge_bucket_start = malloc(sizeof(int64_t) * (size_t)(buckets + 1));
        w->edge_order = malloc(sizeof(int32_t) * (size_t)(nedge > 0 ? nedge : 1));
        w->edge_bucket = malloc(sizeof(int64_t) * (size_t)(nedge > 0 ? nedge : 1));
        if (!w->edge_bucket_start || !w->edge_order || !w->edge_bucket) return MS_ERR_MEMORY; /* freed with w */
    }
    const int64_t n = m->nnode;
    const double inv_cell = 1.0 / distance;
    const double* inv_mass = s->inv_mass;

    /* The nodes sorted by bucket. */
    for (int64_t i = 0; i < n; ++i) {
        const double* p = x + 3 * i;
        w->node_bucket[i] = bucket_of(cell_of(p[0], inv_cell), cell_of(p[1], inv_cell), cell_of(p[2], inv_cell),
                                      w->buckets);
    }
    ms_counting_sort(w->node_bucket, NULL, n, w->buckets, w->bucket_start, w->order);

    double removed = 0.0;
    const double distance2 = distance * distance;
    for (int64_t i = 0; i < n; ++i) {
        int64_t visit[27];
        const int visits = neighbour_buckets(cell_of(x[3 * i], inv_cell), cell_of(x[3 * i + 1], inv_cell),
                                             cell_of(x[3 * i + 2], inv_cell), w->buckets, visit);
        for (int cell_index = 0; cell_index < visits; ++cell_index) {
            const int64_t b = visit[cell_index];
            for (int64_t k = w->bucket_start[b]; k < w->bucket_start[b + 1]; ++k) {
                const int32_t j = w->order[k];
                if (j <= i) continue; /* each pair once (and not a node with itself) */
                const double wi = inv_mass[i], wj = inv_mass[j];
                if (wi + wj == 0.0) continue;
                double* xi = x + 3 * i;
                double* xj = x + 3 * j;
                const double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
                const double length2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if (length2 >= distance2 || length2 <= MS_COINCIDENT2) continue;
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
                if (mu > 0.0 && impulse > 0.0) {
                    const double rel[3] = {vj[0] - vi[0], vj[1] - vi[1], vj[2] - vi[2]};
                    double slip[3];
                    removed += friction_slip(rel, normal, impulse * (wi + wj), mu, wi + wj, slip);
                    for (int a = 0; a < 3; ++a) {
                        vi[a] += wi * slip[a] / (wi + wj);
                        vj[a] -= wj * slip[a] / (wi + wj);
                    }
                }
            }
        }
    }
    if (m->nface > 0) {
        removed += node_triangle_pass(m, w, inv_mass, x, v, distance, mu);
        removed += edge_edge_pass(w, inv_mass, x, v, distance, mu);
    }
    *removed_energy = removed; /* non-finite if the state overflowed: the step's checks see it */
    return MS_OK;
}
