/* SPDX-License-Identifier: Apache-2.0 */
/* errors.h: error codes turned into one line on stderr and the caller's
 * last error. */
#ifndef MMD_ERRORS_H
#define MMD_ERRORS_H

#include <stdbool.h>
#include "manymalloc/myrmics.h"

/* Who this process is in error lines ("worker 3", "scheduler"). */
void mmd_errors_init(const char *who, bool quiet);
/* Records code as the last error and prints one line naming the call and
 * its argument (argfmt), unless quiet. Returns code. */
int mmd_fail(int code, const char *call, const char *argfmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records code without a line (the caller has printed, or it is no error). */
int mmd_set_error(int code);

#endif
