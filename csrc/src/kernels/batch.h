/* The batched kernel: explicit or symplectic Euler steps of many members of one small
 * network at once, one member per vector lane (batch_kernel.h, compiled once per vector
 * path like the spring kernel).
 *
 * A member's step on its own (run.c, in place, one block of springs and one of nodes) sets
 * each node's force to m g, lets the spring kernel add the springs' forces in the layout's
 * order, sums the dampers' power in five accumulators (the single springs' and one per
 * lane of the lane and gathered groups), checks the update and writes it.  The program
 * below is that spring stage rewritten with the same operations on every value (each
 * spring's force the spring kernel's, each node's force summed in the same order), so
 * that each lane repeats one member's arithmetic exactly, operation for operation, and
 * gives its bits.
 */
#ifndef MSPRINGS_KERNELS_BATCH_H
#define MSPRINGS_KERNELS_BATCH_H

#include "kernels/layout.h"

/* The spring stage as two passes.  The springs, in the layout's order: each spring's force
   on its owner goes to a buffer of its own and its damper power to one of five
   accumulators.  Then, node by node, the node's force is put together from m g and those
   forces in the very order the spring kernel adds them (a list of terms per node), and the
   node is updated at once.  A node's terms, in order: */
enum {
    MS_BATCH_SUBTRACT = 0, /* force -= the spring's force (the node is its other end) */
    MS_BATCH_FIRST = 1,    /* sum = 0 + the spring's force (the node owns it) */
    MS_BATCH_NEXT = 2,     /* sum += the spring's force */
    MS_BATCH_ADD = 3,      /* force += sum */
    MS_BATCH_CLEAR = 4     /* sum = 0 */
};

typedef struct ms_batch_spring {
    int32_t a, b;   /* the spring's ends (owner first) */
    int32_t spring; /* the spring's index in the model (its parameters) */
    int32_t slot;   /* power accumulator: 0 the single springs', 1 + q lane q's */
    int32_t row_a, row_b, row_params; /* where the rows of a, b and the spring's parameters
                                         begin in the lanes' arrays: 3 W a, 3 W b and 3 W spring
                                         (doubles; the AVX-512 kernel's addresses) */
} ms_batch_spring;

typedef struct ms_batch_term {
    int32_t kind;
    int32_t spring; /* the spring's place in the program's springs */
} ms_batch_term;

/* The common lists of terms, told apart so that a node of one of them needs no walk over
   its list: */
enum {
    MS_BATCH_LISTED = 0,  /* any other: the node's terms */
    MS_BATCH_ALONE = 1,   /* no term: force = m g */
    MS_BATCH_LESS = 2,    /* force = m g - F(subtracted) */
    MS_BATCH_MORE = 3,    /* force = m g + (0 + F(added)) */
    MS_BATCH_LESS_MORE = 4 /* force = (m g - F(subtracted)) + (0 + F(added)) */
};

typedef struct ms_batch_shape {
    int32_t kind;
    int32_t subtracted, added; /* springs (places in the program's springs) */
} ms_batch_shape;

typedef struct ms_batch_program {
    int64_t nspring;               /* springs, in the layout's order */
    const ms_batch_spring* springs; /* (nspring) */
    int64_t nnode;
    const int32_t* term_start; /* node i's terms: [term_start[i], term_start[i + 1])  (nnode + 1) */
    const ms_batch_term* terms;
    const ms_batch_shape* shapes; /* each node's list of terms told apart         (nnode)     */
} ms_batch_program;

/* Members per group: two vectors of four lanes, whose independent chains of operations
   the processor overlaps (one vector's step is a chain: a square root, a division, the
   update and the next step's forces, each waiting for the one before).  Four vectors
   were slower: their values no longer fit in the registers. */
#define MS_BATCH_VECTORS 2
#define MS_BATCH_WIDTH (4 * MS_BATCH_VECTORS)

/* A group of members in the lanes: lane q of every row is member q, W = MS_BATCH_WIDTH. */
typedef struct ms_batch_lanes {
    int64_t nnode, nspring;
    double* x;              /* positions (m)                        (nnode x 3 x W) */
    double* v;              /* velocities (m/s)                     (nnode x 3 x W) */
    double* f;              /* forces of the last step (N)          (nnode x 3 x W) */
    const double* inv_mass; /* 1/m, 0 for pinned nodes              (nnode x W)     */
    const double* weight;   /* m g (N), as a step sets the force first (nnode x 3 x W) */
    const double* params;   /* rest (m), k (N/m), c (N s/m)         (nspring x 3 x W) */
    double* spring_force;   /* each program spring's force on its owner (N), its length (m) and
                               inverse length (1/m) in the first two rows before (program nspring x 3 x W) */
    double t[MS_BATCH_WIDTH];       /* each lane's time (s), advanced by h per step */
    double dampers[MS_BATCH_WIDTH]; /* each lane's ledger.dampers (J) */
    int64_t failed[MS_BATCH_WIDTH]; /* -1, or the step of the run (0 = its first) whose update
                                       or damper power was not finite: the lane's member
                                       diverged there */
    double failed_time[MS_BATCH_WIDTH]; /* the time (s) that step would have reached */
} ms_batch_lanes;

/* n steps of size h (explicit_euler: explicit, else symplectic Euler) of the lanes of each
   of groups[0 .. count), one group after the other, with the program as the spring stage.
   A lane whose step is not finite is marked in failed and failed_time and goes on in the
   vector (its values are no longer a member's); a group
   whose lanes have all failed stops. */
typedef void (*ms_batch_kernel)(const ms_batch_program* program, ms_batch_lanes* groups, int64_t count, double h,
                                int64_t n, int explicit_euler);

#define MS_DECLARE_BATCH_KERNEL(path)                                                                             \
    void ms_batch_steps_##path(const ms_batch_program* program, ms_batch_lanes* groups, int64_t count, double h, \
                               int64_t n, int explicit_euler)
MS_DECLARE_BATCH_KERNEL(plain);
#if defined(MS_SSE2_PATH)
MS_DECLARE_BATCH_KERNEL(sse2);
#endif
#if defined(MS_NEON_PATH)
MS_DECLARE_BATCH_KERNEL(neon);
#endif
#if defined(MS_AVX2_PATH)
MS_DECLARE_BATCH_KERNEL(avx2);
#endif
#if defined(MS_AVX512_PATH)
/* eight lanes per vector: a group is one vector, and two groups of one integrator are
   stepped together (springs_avx512.c) */
MS_DECLARE_BATCH_KERNEL(avx512);
#endif

/* The batched kernel of the fastest path this processor has, at most the one that
   MSPRINGS_BATCH_PATH in the environment names (ms_batch_path). */
ms_batch_kernel ms_batch_kernel_path(void);

#endif
