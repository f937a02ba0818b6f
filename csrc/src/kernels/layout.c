/* The spring layout (layout.h): sorting, lane groups, blocks and their halos. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/layout.h"
#include "platform/errors.h"
#if (defined(MS_AVX2_PATH) || defined(MS_AVX512_PATH)) && defined(_MSC_VER)
#include <intrin.h>
#endif

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

/* Breadth-first ranks of the nodes (Cuthill and McKee 1969): each connected part of the
   network from a node as far as possible from its lowest-numbered node, neighbours in
   the order of their springs.  Fills node_order (nnode); returns 0, or -1 if out of
   memory. */
static int breadth_first_order(const ms_model* m, int32_t* node_order) {
    const int64_t n = m->nnode;
    int64_t* start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int32_t* list = malloc(sizeof(int32_t) * (size_t)(2 * m->nspring > 0 ? 2 * m->nspring : 1));
    uint8_t* seen = calloc((size_t)(n > 0 ? n : 1), 1);
    int ok = start != NULL && list != NULL && seen != NULL && ms_node_springs(m, start, list) == 0;
    int64_t filled = 0;
    for (int64_t root = 0; ok && root < n; ++root) {
        if (seen[root]) continue;
        /* twice: from root to find the last node reached, then from that node */
        int32_t from = (int32_t)root;
        for (uint8_t pass = 1; pass <= 2; ++pass) {
            int64_t head = filled, tail = filled;
            node_order[tail++] = from;
            seen[from] = pass;
            while (head < tail) {
                const int32_t u = node_order[head++];
                for (int64_t e = start[u]; e < start[u + 1]; ++e) {
                    const int32_t* spring = m->springs + 2 * (int64_t)list[e];
                    const int32_t w = spring[0] == u ? spring[1] : spring[0];
                    if (seen[w] == pass) continue;
                    seen[w] = pass;
                    node_order[tail++] = w;
                }
            }
            from = node_order[tail - 1];
            if (pass == 2) filled = tail;
        }
    }
    free(start);
    free(list);
    free(seen);
    return ok ? 0 : -1;
}

/* Mean distance in rank between the ends of a spring (rank NULL: the user's numbering). */
static double spread(const ms_model* m, const int32_t* rank) {
    double sum = 0.0;
    for (int64_t s = 0; s < m->nspring; ++s) {
        const int64_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
        const int64_t d = rank != NULL ? (int64_t)rank[i] - rank[j] : i - j;
        sum += (double)(d < 0 ? -d : d);
    }
    return m->nspring > 0 ? sum / (double)m->nspring : 0.0;
}

int ms_rank_nodes(const ms_model* m, int32_t** node_order) {
    *node_order = NULL;
    int32_t* order = malloc(sizeof(int32_t) * (size_t)(m->nnode > 0 ? m->nnode : 1));
    int32_t* rank = malloc(sizeof(int32_t) * (size_t)(m->nnode > 0 ? m->nnode : 1));
    const int ok = order != NULL && rank != NULL && breadth_first_order(m, order) == 0;
    if (ok) {
        for (int64_t r = 0; r < m->nnode; ++r) rank[order[r]] = (int32_t)r;
        if (spread(m, NULL) > 1.5 * spread(m, rank)) {
            *node_order = order;
            order = NULL;
        }
    }
    free(order);
    free(rank);
    return ok ? 0 : -1;
}

/* The number k of springs of each of the nodes a..a+3 if they can form a lane group: their
   groups (at start[a], in owner order) have the same size 1 <= k <= 255 and their j-th
   springs reach equally far up the numbering; else 0. */
static int64_t lane_group_size(const ms_model* m, const int32_t* sorted, const int64_t* start, int64_t a) {
    if (a + MS_LANES > m->nnode) return 0;
    const int64_t k = start[a + 1] - start[a];
    if (k < 1 || k > MS_MAX_LANE_SPRINGS) return 0;
    for (int64_t q = 1; q < MS_LANES; ++q)
        if (start[a + q + 1] - start[a + q] != k) return 0;
    for (int64_t j = 0; j < k; ++j) {
        int64_t reach = 0;
        for (int64_t q = 0; q < MS_LANES; ++q) {
            const int32_t* spring = m->springs + 2 * (int64_t)sorted[start[a + q] + j];
            const int64_t i = spring[0], o = spring[1];
            const int64_t up = (i > o ? i : o) - (a + q);
            if (q == 0) reach = up;
            else if (up != reach) return 0;
        }
    }
    return k;
}

/* Sorts the springs into sorted (by owner, then other end, then spring order) and leaves
   in start (nnode + 1) where each node's springs begin.  Returns 0, or -1 if out of
   memory. */
static int sort_springs(const ms_model* m, int64_t* start, int32_t* sorted) {
    const int64_t n = m->nnode, ns = m->nspring;
    int64_t* key = malloc(sizeof(int64_t) * (size_t)(2 * ns > 0 ? 2 * ns : 1));
    int32_t* by_other = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    int ok = key != NULL && by_other != NULL;
    if (ok) {
        int64_t* owner = key;
        int64_t* other = key + ns;
        for (int64_t s = 0; s < ns; ++s) {
            const int32_t i = m->springs[2 * s], j = m->springs[2 * s + 1];
            owner[s] = i < j ? i : j;
            other[s] = i < j ? j : i;
        }
        /* two stable counting sorts: by the other end, then by the owner */
        ms_counting_sort(other, NULL, ns, n, start, by_other);
        ms_counting_sort(owner, by_other, ns, n, start, sorted);
    }
    free(key);
    free(by_other);
    return ok ? 0 : -1;
}

/* Marks the lane groups in layout->lanes, each at its first node. */
static void find_lane_groups(const ms_model* m, ms_layout* layout, const int64_t* start, const int32_t* sorted) {
    memset(layout->lanes, 0, sizeof(uint16_t) * (size_t)m->nnode);
    for (int64_t a = 0; a + MS_LANES <= m->nnode;) {
        const int64_t k = lane_group_size(m, sorted, start, a);
        layout->lanes[a] = (uint16_t)k;
        a += k > 0 ? MS_LANES : 1;
    }
}

/* Cuts the sorted springs into blocks of about block_springs() springs, at the start of
   an owner's springs that is not inside a lane group.  Fills spring_start and
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

/* Writes the springs of the nodes group[0..3] (k each), interleaved, at out; returns the
   springs written. */
static int64_t put_group(const int32_t* sorted, const int64_t* start, const int64_t* group, int64_t k,
                         int32_t* out) {
    for (int64_t j = 0; j < k; ++j)
        for (int64_t q = 0; q < MS_LANES; ++q) out[MS_LANES * j + q] = sorted[start[group[q]] + j];
    return MS_LANES * k;
}

/* layout->order: the sorted springs of each block in the order the kernel visits them.
   Going up the nodes, a lane group keeps its place; any other owner waits with those of
   its number of springs until four are there, which then form a gathered group; the
   owners left waiting at the end of the block stay single, by number of springs.  Then
   pairs. */
static void arrange_blocks(const ms_model* m, ms_layout* layout, const int64_t* start, const int32_t* sorted) {
    int64_t waiting[MS_MAX_LANE_SPRINGS + 1][MS_LANES];
    int count[MS_MAX_LANE_SPRINGS + 1];
    int32_t* out = layout->order;
    for (int64_t b = 0; b < layout->nblock; ++b) {
        memset(count, 0, sizeof count);
        for (int64_t r = layout->node_start[b]; r < layout->node_start[b + 1];) {
            const int64_t k = start[r + 1] - start[r];
            if (layout->lanes[r] != 0) { /* a lane group: nodes r..r+3 */
                const int64_t group[MS_LANES] = {r, r + 1, r + 2, r + 3};
                out += put_group(sorted, start, group, k, out);
                r += MS_LANES;
                continue;
            }
            if (k > MS_MAX_LANE_SPRINGS) {
                memcpy(out, sorted + start[r], sizeof(int32_t) * (size_t)k);
                out += k;
            } else if (k > 0) {
                waiting[k][count[k]++] = r;
                if (count[k] == MS_LANES) {
                    out += put_group(sorted, start, waiting[k], k, out);
                    layout->lanes[waiting[k][0]] = (uint16_t)(k | MS_GATHERED);
                    count[k] = 0;
                }
            }
            ++r;
        }
        for (int64_t k = 1; k <= MS_MAX_LANE_SPRINGS; ++k)
            for (int q = 0; q < count[k]; ++q) {
                memcpy(out, sorted + start[waiting[k][q]], sizeof(int32_t) * (size_t)k);
                out += k;
            }
    }
    /* owner first: the kernel keeps it in registers over its springs.  Turning a spring
       round negates its d and its force exactly, so the forces do not change. */
    for (int64_t r = 0; r < m->nspring; ++r) {
        const int32_t* spring = m->springs + 2 * (int64_t)layout->order[r];
        const int32_t i = spring[0], j = spring[1];
        layout->pairs[2 * r] = i < j ? i : j;
        layout->pairs[2 * r + 1] = i < j ? j : i;
    }
}

/* Each block's halo, from its last owned node to the highest it reaches, and where the
   force on each spring's other end goes. */
static void place_halos(ms_layout* layout) {
    layout->halo_start[0] = 0;
    for (int64_t b = 0; b < layout->nblock; ++b) {
        const int64_t own_end = layout->node_start[b + 1];
        int64_t high = own_end;
        for (int64_t r = layout->spring_start[b]; r < layout->spring_start[b + 1]; ++r) {
            const int32_t reach = layout->pairs[2 * r + 1];
            if (reach + 1 > high) high = reach + 1;
            layout->dest[r] = reach < own_end ? reach : (int32_t)(-1 - (reach - own_end));
        }
        layout->halo_start[b + 1] = layout->halo_start[b] + (high - own_end);
    }
}

ms_layout* ms_layout_create(const ms_model* m, ms_error* err) {
    const int64_t n = m->nnode, ns = m->nspring;
    const int64_t most_blocks = ns / block_springs(ns) + 2;
    ms_layout* layout = calloc(1, sizeof *layout);
    int64_t* start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int32_t* sorted = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    /* params, the block arrays, order, pairs and dest, lanes: widest first, each aligned */
    const size_t bytes = sizeof(double) * 3 * (size_t)ns + sizeof(int64_t) * 3 * (size_t)(most_blocks + 1) +
                         sizeof(int32_t) * 4 * (size_t)ns + sizeof(uint16_t) * (size_t)n;
    void* buffer = malloc(bytes);
    int ok = layout != NULL && start != NULL && sorted != NULL && buffer != NULL;
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
        layout->dest = layout->pairs + 2 * ns;
        layout->lanes = (uint16_t*)(layout->dest + ns);
        ok = sort_springs(m, start, sorted) == 0;
    }
    if (ok) {
        find_lane_groups(m, layout, start, sorted);
        layout->nblock = cut_blocks(m, layout, start);
        arrange_blocks(m, layout, start, sorted);
        place_halos(layout);
        layout->node_block = block_nodes(n);
        layout->nnode_block = (n + layout->node_block - 1) / layout->node_block;
        const int64_t halo = layout->halo_start[layout->nblock];
        layout->halo = malloc(sizeof(double) * 3 * (size_t)(halo > 0 ? halo : 1));
        ok = layout->halo != NULL;
    }
    free(start);
    free(sorted);
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
        const int64_t k = layout->lanes[layout->pairs[2 * r]] & MS_MAX_LANE_SPRINGS;
        if (k == 0) {
            const int64_t s = order[r];
            double* p = layout->params + 3 * r;
            p[0] = m->rest[s];
            p[1] = m->k[s];
            p[2] = m->c[s];
            ++r;
            continue;
        }
        /* a group: for each j, the rest lengths of its four springs, then k, then c */
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

#if defined(MS_AVX2_PATH) && defined(_MSC_VER)
/* The processor has AVX2 (CPUID leaf 7) and the operating system saves the YMM registers
   (OSXSAVE set and XCR0 enabling the SSE and AVX state).  clang-cl compiles _xgetbv only
   in a function that targets XSAVE. */
#if defined(__clang__)
__attribute__((target("xsave")))
#endif
static int cpu_has_avx2(void) {
    int registers[4];
    __cpuid(registers, 0);
    if (registers[0] < 7) return 0;
    __cpuid(registers, 1);
    const int osxsave = (registers[2] >> 27) & 1, avx = (registers[2] >> 28) & 1;
    if (!osxsave || !avx || (_xgetbv(0) & 6) != 6) return 0;
    __cpuidex(registers, 7, 0);
    return (registers[1] >> 5) & 1;
}
#elif defined(MS_AVX2_PATH)
static int cpu_has_avx2(void) { return __builtin_cpu_supports("avx2"); }
#endif

#if defined(MS_AVX512_PATH) && defined(_MSC_VER)
/* AVX512F (CPUID leaf 7, EBX bit 16) with OSXSAVE, and XCR0 enabling the SSE, AVX, opmask
   and both ZMM states (bits 1, 2, 5, 6, 7). */
#if defined(__clang__)
__attribute__((target("xsave")))
#endif
static int cpu_has_avx512(void) {
    int registers[4];
    __cpuid(registers, 0);
    if (registers[0] < 7) return 0;
    __cpuid(registers, 1);
    if (!((registers[2] >> 27) & 1) || (_xgetbv(0) & 0xE6) != 0xE6) return 0;
    __cpuidex(registers, 7, 0);
    return (registers[1] >> 16) & 1;
}
#elif defined(MS_AVX512_PATH)
/* GCC's and Clang's run-time check also asks XCR0 for the opmask and ZMM states */
static int cpu_has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
#endif

int ms_avx512_supported(void) {
#if defined(MS_AVX512_PATH)
    return ms_avx2_supported() && cpu_has_avx512();
#else
    return 0;
#endif
}

int ms_avx2_supported(void) {
#if defined(MS_AVX2_PATH)
    return cpu_has_avx2();
#else
    return 0;
#endif
}

#if defined(MS_SSE2_PATH)
#define MS_BUILD_PATH "sse2"
#elif defined(MS_NEON_PATH)
#define MS_BUILD_PATH "neon"
#else
#define MS_BUILD_PATH "plain"
#endif

const char* ms_vector_path(void) { return ms_avx2_supported() ? "avx2" : MS_BUILD_PATH; }

ms_spring_kernel ms_spring_kernel_path(void) { return MS_FASTEST_KERNEL(ms_springs); }

ms_euler_kernel ms_euler_kernel_path(void) { return MS_FASTEST_KERNEL(ms_euler); }

ms_node_energy_kernel ms_node_energy_kernel_path(void) { return MS_FASTEST_KERNEL(ms_node_energy); }

double ms_layout_spring_energy(const ms_layout* layout, int64_t b, const double* x) {
    const int32_t* pairs = layout->pairs;
    const double* params = layout->params;
    double sum = 0.0;
    const int64_t end = layout->spring_start[b + 1];
    for (int64_t s = layout->spring_start[b]; s < end;) {
        /* a group's parameters: for each j, four rest lengths then four k; a single's (rest, k, c) */
        const int64_t k = layout->lanes[pairs[2 * s]] & MS_MAX_LANE_SPRINGS;
        const int64_t count = k > 0 ? MS_LANES * k : 1;
        for (int64_t r = s; r < s + count; ++r) {
            const double* p = k > 0 ? params + 3 * (s + MS_LANES * ((r - s) / MS_LANES)) + (r - s) % MS_LANES
                                    : params + 3 * r;
            const int64_t i = pairs[2 * r], j = pairs[2 * r + 1];
            const double dx = x[3 * j] - x[3 * i], dy = x[3 * j + 1] - x[3 * i + 1], dz = x[3 * j + 2] - x[3 * i + 2];
            const double stretch = sqrt(dx * dx + dy * dy + dz * dz) - p[0];
            sum += p[k > 0 ? MS_LANES : 1] * stretch * stretch;
        }
        s += count;
    }
    return 0.5 * sum;
}
