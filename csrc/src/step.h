/* The stages of a step, shared by the driver (step.c) and the integrators (integrators.c).
 *
 * A step call runs on one or more workers.  Every worker runs the same code: each stage
 * is a loop over the worker's share of fixed blocks (nodes in blocks of MS_NODE_BLOCK,
 * springs in the layout's blocks), followed by a barrier when the next stage reads what
 * other workers wrote.  The blocks do not depend on the number of workers and every sum
 * over blocks is taken in block order, by every worker alike, so any number of workers
 * gives the same bits and takes the same decisions.
 */
#ifndef MSPRINGS_STEP_H
#define MSPRINGS_STEP_H

#include "internal.h"
#include "layout.h"
#include "thread.h"

#define MS_NODE_BLOCK 2048

/* What a node block sums in a stage. */
typedef struct ms_node_sums {
    ms_flow flow;       /* W: the nodes' own forces and the pins */
    double power;       /* W or J: the external force's end power, the energy loss removed */
    ms_contact contact; /* J: contact at these nodes */
    int bad;            /* some new value of these nodes is not finite */
} ms_node_sums;

typedef struct ms_team {
    const ms_model* m;
    ms_state* s;
    const ms_layout* layout;
    ms_spring_kernel springs;
    ms_euler_kernel euler;
    double h;
    int count;              /* workers */
    ms_barrier* barrier;    /* NULL for one worker */
    int64_t nnode_block;
    ms_node_sums* nodes;    /* (nnode_block) */
    double* spring_power;   /* (layout->nblock) */
    int face_forces;        /* the air acts on the triangles */
    ms_flow face_flow;      /* their power (written by worker 0) */
    /* serial work done by worker 0 between barriers */
    int serial_ok;
    double serial_value;    /* the kinetic energy self-collision removed (J) */
    double serial_work;     /* the constraints' work (J) */
} ms_team;

typedef struct ms_worker {
    ms_team* team;
    int id;
    int sense;                      /* its side of the barrier */
    int64_t node_first, node_last;  /* its node blocks [first, last) */
    int64_t spring_first, spring_last; /* its spring blocks */
} ms_worker;

/* Waits until every worker of the team has arrived (nothing with one worker). */
void ms_sync(ms_worker* w);

/* Nodes [*begin, *end) of node block b. */
void ms_node_block(const ms_team* tm, int64_t b, int64_t* begin, int64_t* end);

/* True if some node block has its bad flag set (after a barrier). */
int ms_any_bad(const ms_team* tm);

/* The total force at (x, v) and time t into f (all nodes), and its power flows (W), the
   same on every worker.  Starts and ends with every worker's nodes complete: it reads x
   and v of every node and must follow a barrier after they were written. */
ms_flow ms_stage_forces(ms_worker* w, const double* x, const double* v, double t, double* f);

/* One step of each integrator, run by every worker: reads (x, v) at time t and writes
   (x_out, v_out), which do not alias them (except for ms_euler_in_place); adds the flows
   of the forces over the step (J) to *flow.  Returns 1 if the new state and the flows are
   finite (the same answer on every worker).  s->f receives the force at the start. */
typedef int (*ms_integrator_stages)(ms_worker* w, const double* x, const double* v, double* x_out, double* v_out,
                                    double t, ms_flow* flow);
extern const ms_integrator_stages ms_integrator_table[MS_INTEGRATOR_COUNT];

#endif
