/* The batched path of an ensemble's step call. */
#include "step/ensemble_batch.h"

int ms_batch_prepare(ms_ensemble* e, double h, int continuing, ms_error* err) {
    (void)e;
    (void)h;
    (void)continuing;
    (void)err;
    return 0;
}

int ms_batch_takes(const ms_ensemble* e, int64_t i) {
    (void)e;
    (void)i;
    return 0;
}

int64_t ms_batch_groups(const ms_ensemble* e) {
    (void)e;
    return 0;
}

void ms_batch_run(ms_ensemble* e, double h, int64_t n, int worker, int workers) {
    (void)e;
    (void)h;
    (void)n;
    (void)worker;
    (void)workers;
}

int ms_batch_finish(ms_ensemble* e, ms_error* err) {
    (void)e;
    (void)err;
    return 0;
}

void ms_batch_forget(ms_ensemble* e) { (void)e; }

void ms_batch_destroy(ms_ensemble* e) { (void)e; }
