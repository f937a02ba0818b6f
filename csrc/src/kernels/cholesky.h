/* Sparse Cholesky factorisation of a symmetric positive definite matrix, for the solvers
 * that take large steps: one symbolic analysis per sparsity pattern, then any number of
 * numeric factorisations with new values on that pattern, each followed by any number of
 * solves.
 *
 * The analysis orders the unknowns by approximate minimum degree on the quotient graph
 * (eliminated unknowns become elements that stand for the cliques they create, elements
 * inside a new one are absorbed, and each degree is an upper bound on the true one made
 * from the sizes of its elements outside the new one), builds the elimination tree of the reordered matrix and from it the pattern
 * of the factor by columns, grouped into supernodes (runs of columns that share their
 * rows below the run).  The numeric factorisation is left-looking by supernodes: each
 * gathers its columns of A, subtracts the dense updates of the finished supernodes that
 * reach it (found through lists kept as the factorisation goes), and factors its dense
 * block.  The solves are column-oriented and treat three right-hand sides at once.
 *
 * A factor owns everything it keeps in two buffers, one made before the factor's pattern
 * is known and one after, including the scratch arrays that the numeric factorisation
 * and the solves work in: one factor must not be used by two threads at once.
 */
#ifndef MSPRINGS_CHOLESKY_H
#define MSPRINGS_CHOLESKY_H

#include <stdint.h>

#include "msprings/msprings.h"

typedef struct ms_cholesky ms_cholesky;

/* Symbolic analysis of a symmetric n x n matrix given by the pattern of its lower
   triangle (diagonal included) in compressed columns: the rows of column j are
   rows[start[j] .. start[j + 1]), each >= j, in any order, no duplicates; start[0] = 0.
   Chooses the fill-reducing ordering, builds the elimination tree and the factor's
   pattern.  NULL with err set (MS_ERR_MEMORY if out of memory, MS_ERR_VALUE naming the
   entry if the pattern is invalid: a row out of range or above the diagonal, a repeated
   row, a missing diagonal). */
ms_cholesky* ms_cholesky_analyse(int64_t n, const int64_t* start, const int32_t* rows, ms_error* err);

/* Numeric factorisation L L^T = P A P^T with values[q] the entry at rows[q] of the
   analysed pattern; may be called again and again with new values.  MS_ERR_VALUE naming
   the entry if a value is not finite, or naming the column (in the caller's numbering)
   whose pivot is not positive: a pivot at most 1e3 machine epsilons of its diagonal entry
   counts as zero, so a matrix that is singular to working precision is refused too.  After
   a failure the factor is unusable (solves give NaN) until a call succeeds. */
int ms_cholesky_factor(ms_cholesky* c, const double* values, ms_error* err);

/* ms_cholesky_factor with the caller's interruption check (NULL: none), run about every
   25 ms of the factorisation: MS_ERR_INTERRUPTED (the factor unusable) when it asks to
   stop. */
int ms_cholesky_factor_checked(ms_cholesky* c, const double* values, const ms_interrupt* interrupt, ms_error* err);

/* Solves A x = b in place for nrhs right-hand sides stored interleaved, b[i * nrhs + r]
   (an nnode x 3 position array is 3 right-hand sides of an nnode x nnode matrix).  Works
   in the factor's scratch array, hence the non-const factor.  Without a successful
   factorisation every entry of b becomes NaN. */
void ms_cholesky_solve(ms_cholesky* c, double* b, int nrhs);

/* Entries of L (diagonal included), for reports. */
int64_t ms_cholesky_nonzeros(const ms_cholesky* c);

void ms_cholesky_destroy(ms_cholesky* c);

#endif
