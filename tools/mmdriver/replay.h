/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: replaying a trace against the allocator.
 *
 * Two kinds of replay, as in the CMU malloc-lab mdriver: one validated
 * replay that checks every block and measures utilization, then timed
 * replays that only issue the requests. With threads > 1 every thread
 * replays the whole trace on its own id table, all at once. */
#ifndef MMDRIVER_REPLAY_H
#define MMDRIVER_REPLAY_H

#include <stddef.h>

#include "trace.h"

typedef struct replay_check_s {
  size_t errors;          /* requests that failed validation, over all threads */
  size_t peak_live;       /* high-water mark of live requested bytes (thread 0) */
  size_t footprint;       /* peak footprint charged to the trace (one thread only; see allocator.h) */
} replay_check_t;

/* Validated replay on `threads` threads; prints each thread's first failure. */
void   replay_validate(const trace_t *t, unsigned threads, replay_check_t *out);
/* One timed replay on `threads` threads: seconds from the common start to
 * the last thread's end. Blocks still live at the end are freed untimed. */
double replay_timed(const trace_t *t, unsigned threads);

#endif /* MMDRIVER_REPLAY_H */
