/* The thread layer: the only code that knows the operating system's threads.
 *
 * It runs one function on several workers at once and gives them a barrier; it knows
 * nothing of the physics.  thread_posix.c implements it with POSIX threads and
 * thread_win32.c with Windows threads; both are compiled everywhere and the preprocessor
 * keeps the one for the target (_WIN32 or not), so no other file knows which it is.  The
 * layer also answers ms_thread_layer and ms_process_id (msprings.h).
 */
#ifndef MSPRINGS_THREAD_H
#define MSPRINGS_THREAD_H

/* The most workers one call uses. */
#define MS_MAX_THREADS 64

/* The number of processors online (at least 1).  It asks the operating system (a system
   call on Linux): callers read it once, when a state is made, not at every step. */
int ms_cpu_count(void);

/* A monotonic clock (s) from an arbitrary origin, for pacing the checks of long calls;
   no system call where the operating system maps its clock into the process (Linux's
   vDSO, Windows' performance counter). */
double ms_clock_seconds(void);

/* Seconds between two runs of a caller's interruption check (ms_interrupt) in a long call. */
#define MS_CHECK_PERIOD 0.025

/* The work of one worker: worker is 0 .. count - 1. */
typedef void (*ms_thread_work)(void* context, int worker);

/* Runs work(context, k) for k = 0 .. count - 1 at the same time, k = 0 on the calling
   thread, and returns when all have returned: 0, or -1 if the threads could not be
   started (then work was not called at all).  No thread outlives the call. */
int ms_threads_run(int count, ms_thread_work work, void* context);

/* A barrier for the count workers of one ms_threads_run call.  Each worker keeps its own
   sense flag (an int starting at 0) and passes it to every wait. */
typedef struct ms_barrier ms_barrier;
ms_barrier* ms_barrier_create(int count); /* NULL if out of memory */
void ms_barrier_wait(ms_barrier* barrier, int* sense);
void ms_barrier_destroy(ms_barrier* barrier);

/* A count that threads raise and wait on, sleeping (not spinning) while they wait: for
   workers that hand work to one another at uneven times. */
typedef struct ms_counter ms_counter;
ms_counter* ms_counter_create(void); /* at 0; NULL if out of memory */
void ms_counter_add(ms_counter* counter, long long amount); /* adds amount and wakes the waiters */
/* Returns the count once it is >= at_least, or after about `seconds` (< 0: no limit), whichever
   comes first. */
long long ms_counter_wait(ms_counter* counter, long long at_least, double seconds);
long long ms_counter_value(ms_counter* counter);
void ms_counter_destroy(ms_counter* counter);

#endif
