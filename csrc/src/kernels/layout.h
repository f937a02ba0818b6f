/* The spring layout: the copy of the springs that a step visits, ordered for the spring
 * kernel, and the fixed blocks that the step's spring stage is cut into.
 *
 * The layout works in its model's numbering, which a step needs to keep the nodes of a
 * spring close together: a grid's rows do.  A network whose numbering does not (nodes
 * numbered at random, a mesh in its exporter's order) steps on a copy renumbered in the
 * order of ms_rank_nodes (ranked.c), and the layout is the copy's.
 *
 * Springs are sorted by their lower-numbered end (their owner), then by the other end
 * (each stored owner first).  Four owners with k springs each form a group of 4 k
 * springs, stored in the order (j, owner), with their parameters as, for each j, the
 * four rest lengths, then the four k, then the four c.  The kernel evaluates the four
 * springs of one j together, one lane per owner, on every processor: as one AVX2 vector,
 * two SSE2 vectors or four plain doubles, with the same operations in the same order, so
 * every path gives the same bits.  A lane group is four consecutive nodes a..a+3 whose
 * j-th springs reach equally far up the numbering, so their ends are read and written
 * four at a time; a gathered group is any four owners of a block with the same k, their
 * ends read and written one lane at a time.  The springs of owners left over stay single.
 *
 * Blocks are consecutive runs of about the same number of springs, cut between the
 * springs of two owners (never inside a lane group), chosen from the network alone: the
 * same for any number of threads.  Block b owns the nodes [node_start[b],
 * node_start[b + 1]): its springs add their forces on owned nodes straight into the force
 * array, and on the higher-numbered nodes they reach beyond (its halo) into a buffer of
 * its own, added to the forces afterwards in block order.  No two blocks write the same
 * memory, so they can run at once, and every node's force is summed in an order fixed by
 * the layout.
 */
#ifndef MSPRINGS_LAYOUT_H
#define MSPRINGS_LAYOUT_H

#include "msprings/msprings.h"
#include "platform/portable.h"

#define MS_LANES 4                 /* nodes per lane group */
#define MS_MAX_LANE_SPRINGS 255    /* the most springs per node in a group */
#define MS_GATHERED 0x100          /* in lanes: the group is gathered */

typedef struct ms_layout ms_layout;

/* Damper power (W) of the springs of block b, whose forces are added to f (owned nodes)
   and to the block's halo (which it zeroes first).  Unless energy is NULL, *energy receives
   their elastic energy k (l - L)^2 / 2 (J), summed in the block's order: the same bits on
   every path. */
typedef double (*ms_spring_kernel)(const ms_layout* layout, int64_t b, const double* x, const double* v, double* f,
                                   double* energy);

/* The elastic energy k (l - L)^2 / 2 (J) of the springs of block b at positions x, summed in the layout's order from its parameters (after ms_layout_refresh):
   the same bits on every path and thread count. */
double ms_layout_spring_energy(const ms_layout* layout, int64_t b, const double* x);

struct ms_layout {
    int64_t nnode, nspring;
    int32_t* order;      /* user index of the spring at each sorted position   (nspring)     */
    int32_t* pairs;      /* (owner, other) node of each sorted spring          (nspring x 2) */
    int32_t* dest;       /* where the force on the other end goes: its node if the block owns
                            it, else -1 - its place in the block's halo        (nspring)     */
    double* params;      /* (rest, k, c) by sorted position, groups by kind     (nspring x 3) */
    uint16_t* lanes;     /* at the first owner of a group of 4 k springs: k, with MS_GATHERED
                            if it is gathered; else 0                              (nnode) */
    int64_t nblock;
    int64_t* spring_start; /* block b's springs: [spring_start[b], spring_start[b + 1]) (nblock + 1) */
    int64_t* node_start;   /* block b's nodes: [node_start[b], node_start[b + 1])   (nblock + 1) */
    int64_t* halo_start;   /* block b's halo, nodes [node_start[b + 1], ... + halo length), at
                              halo + 3 halo_start[b]; halo length halo_start[b + 1] - halo_start[b]
                                                                                 (nblock + 1) */
    double* halo;          /* (3 x halo_start[nblock]) */
    int filled;            /* params hold the model's values (ms_layout_refresh ran) */
    int dampers;           /* some spring has c > 0 (as of the last refresh) */
    int64_t node_block;    /* nodes per block of the node stages (the last may be shorter) */
    int64_t nnode_block;   /* blocks of node_block nodes */
    void* buffer;        /* the one allocation everything above lives in */
};

/* Builds the layout of the model's springs (NULL with err set if out of memory). */
ms_layout* ms_layout_create(const ms_model* m, ms_error* err);
void ms_layout_destroy(ms_layout* layout);

/* Copies rest, k and c into the layout's order (and notes whether some c > 0): done by a
   step call after checking the values, unless the caller vouches that they did not change
   since the last call (ms_step_options.parameters_unchanged). */
void ms_layout_refresh(const ms_model* m, ms_layout* layout);

/* Adds what the springs left aside to the forces f of the nodes [begin, end): the halos
   of the blocks, in block order. */
void ms_layout_gather(const ms_layout* layout, int64_t begin, int64_t end, double* f);

/* What an Euler update can sum beside: the kinetic energy 1/2 m |v|^2 into *kinetic and the
   gravitational energy -m g.x into *potential (J) of the free nodes (inv_mass > 0) at the
   (x, v) it reads, for masses mass and gravity g (3 values). */
typedef struct ms_energy_request {
    const double* mass;
    const double* gravity;
    double* kinetic;
    double* potential;
} ms_energy_request;

/* The explicit (explicit_euler != 0) or symplectic Euler update of nodes [begin, end)
   from x, v and f with step h, written to x_out and v_out (which may be x and v) or, with
   x_out NULL, only checked: 1 if every new value is finite; and, unless energy is NULL, the
   energies it asks for.  Every path gives the same values. */
typedef int (*ms_euler_kernel)(const double* inv_mass, const double* x, const double* v, const double* f, double h,
                               int explicit_euler, int64_t begin, int64_t end, double* x_out, double* v_out,
                               const ms_energy_request* energy);

/* The kinetic energy 1/2 m |v|^2 and the gravitational energy -m g.x (J) of the free nodes
   (inv_mass > 0) of [begin, end) into *kinetic and *gravity, four nodes at a time: the same
   bits on every path. */
typedef void (*ms_node_energy_kernel)(const double* mass, const double* inv_mass, const double gravity[3],
                                      const double* x, const double* v, int64_t begin, int64_t end, double* kinetic,
                                      double* potential);

/* The kernels of each vector path (spring_kernel.h compiled once per path, with
   MS_KERNEL(name) = name##_path): ms_springs_path, ms_euler_path and ms_node_energy_path. */
#define MS_DECLARE_KERNELS(path)                                                                                     \
    double ms_springs_##path(const ms_layout* layout, int64_t b, const double* x, const double* v, double* f,        \
                             double* energy);                                                                        \
    int ms_euler_##path(const double* inv_mass, const double* x, const double* v, const double* f, double h,         \
                        int explicit_euler, int64_t begin, int64_t end, double* x_out, double* v_out,                \
                        const ms_energy_request* energy);                                                            \
    void ms_node_energy_##path(const double* mass, const double* inv_mass, const double gravity[3],                  \
                               const double* x, const double* v, int64_t begin, int64_t end, double* kinetic,        \
                               double* potential)
MS_DECLARE_KERNELS(plain);
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(MS_NO_VECTOR)
#define MS_SSE2_PATH 1
MS_DECLARE_KERNELS(sse2);
#endif
#if (defined(__aarch64__) || defined(_M_ARM64)) && !defined(MS_NO_VECTOR)
#define MS_NEON_PATH 1
MS_DECLARE_KERNELS(neon);
#endif
/* AVX2 beside SSE2, chosen at run time: GCC and Clang compile springs_avx2.c for it through
   a pragma, MSVC through /arch:AVX2 on that file alone (setup.py). */
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(MS_NO_AVX2) && !defined(MS_NO_VECTOR)
#define MS_AVX2_PATH 1
MS_DECLARE_KERNELS(avx2);
#endif
/* AVX-512 (F) beside them for the batched ensemble kernel alone (batch.h), chosen at run
   time: GCC and Clang compile springs_avx512.c for it through a pragma, MSVC through
   /arch:AVX512 on that file alone (setup.py). */
#if defined(MS_AVX2_PATH) && !defined(MS_NO_AVX512)
#define MS_AVX512_PATH 1
#endif

/* A kernel's version on the fastest path this processor has: AVX2 where the build has it
   and the processor runs it, else the path every processor of the build's architecture
   has (SSE2, NEON or plain doubles). */
#if defined(MS_SSE2_PATH)
#define MS_BUILD_KERNEL(name) name##_sse2
#elif defined(MS_NEON_PATH)
#define MS_BUILD_KERNEL(name) name##_neon
#else
#define MS_BUILD_KERNEL(name) name##_plain
#endif
#if defined(MS_AVX2_PATH)
#define MS_FASTEST_KERNEL(name) (ms_avx2_supported() ? name##_avx2 : MS_BUILD_KERNEL(name))
#else
#define MS_FASTEST_KERNEL(name) MS_BUILD_KERNEL(name)
#endif

/* The force on end a of one spring from a to b (force[3], N; b gets its opposite) and the
   power of its damper (W): the kernel's formula, for code outside the step. */
double ms_spring_force(const double xa[3], const double xb[3], const double va[3], const double vb[3], double rest,
                       double stiffness, double damping, double force[3]);

/* The kernels this processor runs (the fastest path it has). */
ms_spring_kernel ms_spring_kernel_path(void);
ms_euler_kernel ms_euler_kernel_path(void);
ms_node_energy_kernel ms_node_energy_kernel_path(void);

/* Whether the processor and the operating system run AVX-512 F code (the build has the
   path, CPUID says AVX512F and XCR0 enables the opmask and ZMM state). */
int ms_avx512_supported(void);

/* Stable counting sort: order receives the items (items[r] for r = 0 .. count - 1, or r
   itself if items is NULL) sorted by key[item] in [0, nkey); start (nkey + 1) receives
   where each key's items begin, start[nkey] = count. */
void ms_counting_sort(const int64_t* key, const int32_t* items, int64_t count, int64_t nkey, int64_t* start,
                      int32_t* order);

/* The order a network steps in when its own numbering does not keep the nodes of a spring
   close together: a breadth-first order from a node as far as possible from its first
   (Cuthill and McKee 1969), unless the numbering is about as local already (its springs
   span at most half as much again).  *node_order receives the node of each rank (nnode,
   malloc'd), or NULL when the numbering is kept.  Returns 0, or -1 if out of memory. */
int ms_rank_nodes(const ms_model* m, int32_t** node_order);

/* The springs of each node: those of node i are list[start[i] .. start[i + 1]), in spring
   order; start has nnode + 1 entries, list 2 nspring.  Returns 0, or -1 if out of memory. */
int ms_node_springs(const ms_model* m, int64_t* start, int32_t* list);

#endif
