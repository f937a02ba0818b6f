/* The spring layout (layout.h): sorting, lane groups, blocks and their halos. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout.h"

void ms_counting_sort(const int64_t* key, const int32_t* items, int64_t count, int64_t nkey, int64_t* start,
                      int32_t* order) {
    memset(start, 0, sizeof(int64_t) * (size_t)(nkey + 1));
    for (int64_t r = 0; r < count; ++r) start[key[items != NULL ? items[r] : r] + 1] += 1;
    for (int64_t k = 0; k < nkey; ++k) start[k + 1] += start[k];
    for (int64_t r = 0; r < count; ++r) {
        const int32_t item = items != NULL ? items[r] : (int32_t)r;
        order[start[key[item]]++] = item;
    }
    /* start[k] is now where key k + 1 begins: shift back by one key */
    for (int64_t k = nkey; k > 0; --k) start[k] = start[k - 1];
    start[0] = 0;
}

int ms_node_springs(const ms_model* m, int64_t* start, int32_t* list) {
    const int64_t ends = 2 * m->nspring;
    int64_t* key = calloc((size_t)(ends > 0 ? ends : 1), sizeof(int64_t));
    if (key == NULL) return -1;
    for (int64_t e = 0; e < ends; ++e) key[e] = m->springs[e];
    ms_counting_sort(key, NULL, ends, m->nnode, start, list);
    for (int64_t e = 0; e < ends; ++e) list[e] /= 2; /* spring end e belongs to spring e / 2 */
    free(key);
    return 0;
}

/* Springs per block: enough (some 8,000) that the halos stay small beside the owned
   nodes, and a power of two of blocks (at most 32) so that 2, 4 or 8 workers share them
   evenly. */
static int64_t block_springs(int64_t nspring) {
    int64_t blocks = 1;
    while (blocks < 32 && nspring > 8192 * blocks) blocks *= 2;
    return nspring > 0 ? (nspring + blocks - 1) / blocks : 1;
}

/* Nodes per block of the node stages: a power of two of blocks (at most 256) of some 256
   nodes. */
static int64_t block_nodes(int64_t nnode) {
    int64_t blocks = 1;
    while (blocks < 256 && nnode > 256 * blocks) blocks *= 2;
    return (nnode + blocks - 1) / blocks;
}

/* The number k of springs of each of nodes a..a+3 if they can form a lane group: their
   groups (at start[a], in lower-node order) have the same size 1 <= k <= 255 and their
   j-th springs reach equally far up the numbering; else 0. */
static int64_t lane_group_size(const ms_model* m, const int32_t* order, const int64_t* start, int64_t a) {
    if (a + MS_LANES > m->nnode) return 0;
    const int64_t k = start[a + 1] - start[a];
    if (k < 1 || k > MS_MAX_LANE_SPRINGS) return 0;
    for (int64_t q = 1; q < MS_LANES; ++q)
        if (start[a + q + 1] - start[a + q] != k) return 0;
    for (int64_t j = 0; j < k; ++j) {
        const int32_t* first = m->springs + 2 * (int64_t)order[start[a] + j];
        const int64_t reach = (first[0] > first[1] ? first[0] : first[1]) - a;
        for (int64_t q = 1; q < MS_LANES; ++q) {
            const int32_t* other = m->springs + 2 * (int64_t)order[start[a + q] + j];
            if ((other[0] > other[1] ? other[0] : other[1]) - (a + q) != reach) return 0;
        }
    }
    return k;
}

/* Sorts the springs into layout->order (by lower node, then upper node, then user order)
   with lane groups interleaved, fills pairs and lanes, and leaves in start (nnode + 1)
   where each lower node's springs begin.  Returns 0, or -1 if out of memory. */
static int sort_springs(const ms_model* m, ms_layout* layout, int64_t* start) {
    const int64_t n = m->nnode, ns = m->nspring;
    int64_t* key = calloc((size_t)(2 * ns > 0 ? 2 * ns : 1), sizeof(int64_t));
    int32_t* by_upper = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    if (key == NULL || by_upper == NULL) {
        free(key);
        free(by_upper);
        return -1;
    }
    int64_t* lower = key;
    int64_t* upper = key + ns;
    for (int64_t s = 0; s < ns; ++s) {
        const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        lower[s] = i < j ? i : j;
        upper[s] = i < j ? j : i;
    }
    /* two stable counting sorts: by upper node, then by lower node */
    ms_counting_sort(upper, NULL, ns, n, start, by_upper);
    ms_counting_sort(lower, by_upper, ns, n, start, layout->order);
    /* Lane groups: four consecutive nodes whose springs match one for one are stored
       interleaved, the j-th springs of nodes a..a+3 side by side. */
    memset(layout->lanes, 0, (size_t)n);
    for (int64_t a = 0; a + MS_LANES <= n;) {
        const int64_t k = lane_group_size(m, layout->order, start, a);
        if (k == 0) {
            ++a;
            continue;
        }
        int32_t chunk[MS_LANES * MS_MAX_LANE_SPRINGS];
        for (int64_t q = 0; q < MS_LANES; ++q)
            for (int64_t j = 0; j < k; ++j) chunk[MS_LANES * j + q] = layout->order[start[a] + k * q + j];
        memcpy(layout->order + start[a], chunk, sizeof(int32_t) * MS_LANES * (size_t)k);
        layout->lanes[a] = (uint8_t)k;
        a += MS_LANES;
    }
    /* lower node first: the kernel keeps it in registers over its springs.  Turning a
       spring round negates its d and its force exactly, so the forces do not change. */
    for (int64_t r = 0; r < ns; ++r) {
        const int64_t s = layout->order[r];
        layout->pairs[2 * r] = (int32_t)lower[s];
        layout->pairs[2 * r + 1] = (int32_t)upper[s];
    }
    free(key);
    free(by_upper);
    return 0;
}

/* Cuts the sorted springs into blocks of about block_springs() springs, at the start of
   a lower node's springs that is not inside a lane group.  Fills spring_start and
   node_start (room for ns / target + 2 entries) and returns the number of blocks. */
static int64_t cut_blocks(const ms_model* m, const ms_layout* layout, const int64_t* start) {
    const int64_t target = block_springs(m->nspring);
    int64_t nblock = 0;
    layout->spring_start[0] = 0;
    layout->node_start[0] = 0;
    int64_t next = target;
    for (int64_t a = 0; a < m->nnode; a += layout->lanes[a] ? MS_LANES : 1)
        if (start[a] >= next && start[a] < m->nspring) {
            nblock += 1;
            layout->spring_start[nblock] = start[a];
            layout->node_start[nblock] = a;
            next = start[a] + target;
        }
    nblock += 1;
    layout->spring_start[nblock] = m->nspring;
    layout->node_start[nblock] = m->nnode;
    return nblock;
}

ms_layout* ms_layout_create(const ms_model* m, ms_error* err) {
    const int64_t n = m->nnode, ns = m->nspring;
    const int64_t most_blocks = ns / block_springs(ns) + 2;
    ms_layout* layout = calloc(1, sizeof *layout);
    int64_t* start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    /* params, the block arrays, order and pairs, lanes: widest first, each aligned */
    const size_t bytes = sizeof(double) * 3 * (size_t)ns + sizeof(int64_t) * 3 * (size_t)(most_blocks + 1) +
                         sizeof(int32_t) * 3 * (size_t)ns + (size_t)n;
    void* buffer = malloc(bytes);
    int ok = layout != NULL && start != NULL && buffer != NULL;
    if (ok) {
        layout->buffer = buffer;
        layout->nnode = n;
        layout->nspring = ns;
        layout->params = buffer;
        layout->spring_start = (int64_t*)(layout->params + 3 * ns);
        layout->node_start = layout->spring_start + most_blocks + 1;
        layout->halo_start = layout->node_start + most_blocks + 1;
        layout->order = (int32_t*)(layout->halo_start + most_blocks + 1);
        layout->pairs = layout->order + ns;
        layout->lanes = (uint8_t*)(layout->pairs + 2 * ns);
        ok = sort_springs(m, layout, start) == 0;
    }
    if (ok) {
        layout->nblock = cut_blocks(m, layout, start);
        /* each block's halo: from its last owned node to the highest node it reaches */
        layout->halo_start[0] = 0;
        for (int64_t b = 0; b < layout->nblock; ++b) {
            int64_t high = layout->node_start[b + 1];
            for (int64_t r = layout->spring_start[b]; r < layout->spring_start[b + 1]; ++r)
                if (layout->pairs[2 * r + 1] + 1 > high) high = layout->pairs[2 * r + 1] + 1;
            layout->halo_start[b + 1] = layout->halo_start[b] + (high - layout->node_start[b + 1]);
        }
        layout->node_block = block_nodes(n);
        layout->nnode_block = (n + layout->node_block - 1) / layout->node_block;
        const int64_t halo = layout->halo_start[layout->nblock];
        layout->halo = malloc(sizeof(double) * 3 * (size_t)(halo > 0 ? halo : 1));
        ok = layout->halo != NULL;
    }
    free(start);
    if (!ok) {
        if (layout == NULL) free(buffer);
        else layout->buffer = buffer;
        ms_layout_destroy(layout);
        ms_error_set(err, MS_ERR_MEMORY, "out of memory arranging %lld springs for the step", (long long)ns);
        return NULL;
    }
    return layout;
}

void ms_layout_destroy(ms_layout* layout) {
    if (layout == NULL) return;
    free(layout->halo);
    free(layout->buffer);
    free(layout);
}

void ms_layout_refresh(const ms_model* m, ms_layout* layout) {
    layout->filled = 1;
    layout->dampers = 0;
    for (int64_t s = 0; s < m->nspring && !layout->dampers; ++s) layout->dampers = m->c[s] > 0.0;
    const int32_t* order = layout->order;
    for (int64_t r = 0; r < layout->nspring;) {
        const int64_t k = layout->lanes[layout->pairs[2 * r]];
        if (k == 0) {
            const int64_t s = order[r];
            double* p = layout->params + 3 * r;
            p[0] = m->rest[s];
            p[1] = m->k[s];
            p[2] = m->c[s];
            ++r;
            continue;
        }
        /* a lane group: for each j, the rest lengths of its four springs, then k, then c */
        for (int64_t j = 0; j < k; ++j) {
            double* p = layout->params + 3 * (r + MS_LANES * j);
            for (int64_t q = 0; q < MS_LANES; ++q) {
                const int64_t s = order[r + MS_LANES * j + q];
                p[q] = m->rest[s];
                p[MS_LANES + q] = m->k[s];
                p[2 * MS_LANES + q] = m->c[s];
            }
        }
        r += MS_LANES * k;
    }
}

void ms_layout_gather(const ms_layout* layout, int64_t begin, int64_t end, double* f) {
    for (int64_t b = 0; b < layout->nblock; ++b) {
        const int64_t first = layout->node_start[b + 1];
        const int64_t last = first + (layout->halo_start[b + 1] - layout->halo_start[b]);
        const int64_t low = first > begin ? first : begin, high = last < end ? last : end;
        const double* halo = layout->halo + 3 * layout->halo_start[b]; /* node first at halo[0] */
        for (int64_t q = 3 * low; q < 3 * high; ++q) f[q] += halo[q - 3 * first];
    }
}

int ms_avx2_supported(void) {
#if defined(MS_AVX2_PATH)
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

const char* ms_vector_path(void) {
    if (ms_avx2_supported()) return "avx2";
#if defined(MS_SSE2_PATH)
    return "sse2";
#else
    return "plain";
#endif
}

ms_spring_kernel ms_spring_kernel_path(void) {
#if defined(MS_AVX2_PATH)
    if (ms_avx2_supported()) return ms_springs_avx2;
#endif
#if defined(MS_SSE2_PATH)
    return ms_springs_sse2;
#else
    return ms_springs_plain;
#endif
}

ms_euler_kernel ms_euler_kernel_path(void) {
#if defined(MS_AVX2_PATH)
    if (ms_avx2_supported()) return ms_euler_avx2;
#endif
#if defined(MS_SSE2_PATH)
    return ms_euler_sse2;
#else
    return ms_euler_plain;
#endif
}
