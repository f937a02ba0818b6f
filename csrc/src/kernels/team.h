/* The workers of a step call and the stages every solver shares (team.c).
 *
 * A step call runs on one or more workers.  Every worker runs the same code: each stage
 * is a loop over the worker's share of fixed blocks (the layout's blocks of nodes and of
 * springs), followed by a barrier when the next stage reads what
 * other workers wrote.  The blocks do not depend on the number of workers and every sum
 * over blocks is taken in block order, by every worker alike, so any number of workers
 * gives the same bits and takes the same decisions.
 */
#ifndef MSPRINGS_KERNELS_TEAM_H
#define MSPRINGS_KERNELS_TEAM_H

#include "kernels/kernels.h"
#include "platform/thread.h"

/* What a node block sums in a stage. */
typedef struct ms_node_sums {
    double pins[2];     /* W: the pins' power, by forces ticket */
    double power;       /* W: the external force's power at the end of a step (Verlet) */
    double removed;     /* J: the kinetic energy the energy loss removed */
    double kinetic;     /* J: the kinetic energy of these nodes' free nodes */
    double gravity;     /* J: their gravitational energy */
    ms_contact contact; /* J: contact at these nodes */
    double push_energy; /* J: the springs' share of their pushes (ms_push_spring_energy) */
    int bad;            /* some new value of these nodes is not finite */
    double reduce[7];   /* the implicit solver's dot products and residual parts */
} ms_node_sums;

/* What a spring block sums of the mechanical energy: its springs' elastic energy and the
   kinetic and gravitational energy of the nodes it owns (unless the node blocks sum those). */
typedef struct ms_block_energy {
    double spring, kinetic, gravity; /* J */
} ms_block_energy;

typedef struct ms_team {
    const ms_model* m;
    ms_state* s;
    const ms_layout* layout;
    ms_spring_kernel springs;
    ms_euler_kernel euler;
    ms_node_energy_kernel node_energy;
    double h;
    /* what is active in this call (ms_team_init) */
    const double* external; /* the external force, or NULL where it is zero everywhere */
    int velocity_forces;    /* some force depends on velocity: dampers, drag, air */
    int moving_pins;        /* some pinned node has a velocity */
    int count;              /* workers */
    ms_barrier* barrier;    /* NULL for one worker */
    int64_t nnode_block;
    ms_node_sums* nodes;    /* (nnode_block) */
    ms_flow* block_flow;    /* per spring block and ticket: its nodes' own forces and dampers (2 x nblock) */
    ms_block_energy* block_energy; /* per spring block (nblock) */
    int face_forces;        /* the air acts on the triangles */
    ms_flow face_flow[2];   /* their power, by ticket (written by worker 0) */
    /* what the finished nodes of a step go through (ms_finish_nodes) */
    int energy_loss, contact_now;
    double* before_contact; /* NULL, or x then v before contact (ms_step_options.before_contact) */
    /* serial work done by worker 0 between barriers */
    int serial_ok;
    double serial_value;    /* the kinetic energy self-collision removed (J) */
    double serial_work;     /* the constraints' work (J) */
    double serial_colliders; /* the colliders' work (J) */
    /* the caller's interruption check (ms_should_stop), or NULL */
    const ms_interrupt* interrupt;
    int stop[2];            /* worker 0's word at the last two decision points: stop */
    int64_t stride[2];      /* and the checks until the next one */
    int stopping;           /* worker 0: the caller's check asked to stop */
    double paced_at;        /* worker 0: the clock at the last decision point (s) */
    double checked_at;      /* worker 0: the clock when the caller's check last ran (s) */
} ms_team;

/* What sums the mechanical energy of the state a step call starts from (ms_worker's
   start_energy), when the caller asks for it: the first forces evaluation sums the springs'
   and, unless the update does, the nodes' kinetic and gravitational energy by spring block;
   the Euler update of the first step sums the nodes' by node block (ms_start_request), from
   the x and v it reads anyway. */
enum { MS_START_FORCES = 1, MS_START_UPDATE = 2 };

typedef struct ms_worker {
    ms_team* team;
    int id;
    int sense;                      /* its side of the barrier */
    int tickets;                    /* forces evaluations so far: the next ticket is tickets & 1 */
    int start_energy;               /* what sums the energy of the state the call starts from
                                       (MS_START_FORCES, MS_START_UPDATE), into the block sums */
    int64_t node_first, node_last;  /* its node blocks [first, last) */
    int64_t spring_first, spring_last; /* its spring blocks */
    int64_t countdown;              /* ms_should_stop calls until the next decision point */
    int decisions;                  /* decision points passed */
    int stopped;                    /* the call is to stop (the same on every worker) */
} ms_worker;

/* The request for an Euler update of node block b to sum the energy of the state a call
   starts from (filled into *request), or NULL if this update is not to; call it after the
   step's first forces evaluation. */
const ms_energy_request* ms_start_request(const ms_worker* w, int64_t b, ms_energy_request* request);

/* Whether the call is to stop because the caller's check (ms_interrupt) asked it to; 1 on
   every worker alike.  Every worker calls it at the same points, at the top of each pass
   of every loop that can run long.  Most calls only count down; every so many (a count
   that worker 0 sets so that they come about every millisecond) are a decision point:
   worker 0 reads the clock, runs the caller's check if it last ran 25 ms ago or more, and
   its word reaches the others through a barrier.  Once it has said stop it says so at
   every later call (w->stopped). */
int ms_should_stop(ms_worker* w);

/* Waits until every worker of the team has arrived (nothing with one worker). */
void ms_sync(ms_worker* w);

/* Nodes [*begin, *end) of node block b. */
void ms_node_block(const ms_team* tm, int64_t b, int64_t* begin, int64_t* end);

/* True if some node block has its bad flag set (after a barrier). */
int ms_any_bad(const ms_team* tm);

/* The worker's node blocks b with their nodes [begin, end). */
#define MS_FOR_MY_NODES(w, b, begin, end)                                  \
    for (int64_t b = (w)->node_first, begin, end; b < (w)->node_last; ++b) \
        if (ms_node_block((w)->team, b, &begin, &end), 1)

/* The total force at (x, v) and time t into f.  It reads x and v of every node, so it
   must follow a barrier after they were written.  On return f is complete for the
   worker's own node blocks (the rest after the next barrier), and the power flows of
   this evaluation are ms_forces_flow(tm, ticket) after the next barrier, where ticket is
   the value returned; each worker must read them before its next evaluation. */
int ms_stage_forces(ms_worker* w, const double* x, const double* v, double t, double* f);

/* ms_stage_forces, with own receiving the forces other than the springs' (gravity, drag,
   the external force, the air on the triangles), complete for every node on return. */
int ms_stage_forces_and_own(ms_worker* w, const double* x, const double* v, double t, double* f, double* own);
ms_flow ms_forces_flow(const ms_team* tm, int ticket);

/* A team of one worker on the state's layout and block sums (layout, nodes, block_flow and
   block_energy: the step driver's storage), with what is active at the state now (the
   inverse masses as well if parameters: they may have changed since the last call). */
void ms_team_init(ms_team* tm, const ms_model* m, ms_state* s, const ms_layout* layout, ms_node_sums* nodes,
                  ms_flow* block_flow, ms_block_energy* block_energy, int parameters);

/* Gives worker id its share of the team's node and spring blocks. */
void ms_worker_init(ms_team* tm, ms_worker* w, int id);

/* Copies nodes [begin, end) of x and v into tm->before_contact (x, then v at nnode x 3). */
void ms_keep_before_contact(const ms_team* tm, const double* x, const double* v, int64_t begin, int64_t end);

/* The end of a step for node block b, called by the integrators on each of the worker's
   blocks once (x_next, v_next) are final there (bad: some value is not finite): the
   energy loss, and contact when nothing acts on every node in between (no constraints),
   then the finiteness check. */
void ms_finish_nodes(ms_worker* w, int64_t b, int64_t begin, int64_t end, int bad, const double* x_old,
                     double* x_next, double* v_next);

#endif
