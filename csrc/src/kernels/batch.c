/* The batched kernel's choice of vector path (the kernel itself: ensemble_kernel.h). */
#include "kernels/batch.h"

ms_batch_kernel ms_batch_kernel_path(void) { return MS_FASTEST_KERNEL(ms_batch_steps); }
