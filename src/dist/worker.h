/* SPDX-License-Identifier: Apache-2.0 */
/* worker.h: a worker's state and its calls to the scheduler. */
#ifndef MMD_WORKER_H
#define MMD_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include "lease.h"
#include "msg.h"
#include "ranges.h"

/* The pages this worker has written or received: given back to the OS when
 * the scheduler says no region it used (or received) holds them any more. */
typedef struct mmd_resident {
  mmd_ranges_t ranges;
  mmd_buf_t rids;         /* int64: regions allocated in or received: their memory is kept */
  uint64_t bytes;         /* in ranges, counting overlaps until normalized */
  uint64_t check_above;   /* bytes above which the next check runs */
  size_t normalize_above; /* entries above which the list is normalized */
  bool check_due;         /* run the check before the next request */
} mmd_resident_t;

/* Freed memory kept populated for reuse (retain.c): two generations of
 * ranges, young [0] and old [1]. */
typedef struct mmd_retain {
  mmd_ranges_t gen[2];
  uint64_t bytes[2];
  uint64_t high[2];       /* the most bytes recorded resident in this turn and the last */
  uint64_t delay_ns;      /* MANYMALLOC_DIST_RETAIN_MS; 0: give back at once */
  int64_t turn_at_ns;     /* when the young become old */
  bool unsorted;          /* ranges added since the generations were last sorted */
} mmd_retain_t;

typedef struct mmd_worker {
  int id, nworkers;
  int sched_rank;         /* the scheduler this worker talks to */
  uintptr_t base;         /* the global space */
  uint64_t size;
  bool lease_on;          /* the local fast path (MANYMALLOC_DIST_LEASE) */
  uint32_t retain_ms;     /* MANYMALLOC_DIST_RETAIN_MS */
  mmd_leases_t leases;
  mmd_resident_t resident;
  mmd_retain_t retain;
  mmd_buf_t req, rep;
  mmd_rep_view_t reply;   /* the last reply's parts */
  int64_t calls;          /* round trips to the scheduler */
  int64_t wait_ns;        /* time spent in them */
} mmd_worker_t;

extern mmd_worker_t *mmd_self;  /* NULL on a scheduler, before sys_init and after sys_finalize */

int mmd_worker_init(mmd_worker_t *w);
void mmd_worker_destroy(mmd_worker_t *w);

/* One round trip: the request with its args and items (and the lease
 * reports that are due), the reply parsed into w->reply with its revokes
 * and remote frees applied. Returns the reply's status, or SYS_ERR_MPI. */
int64_t mmd_call(mmd_worker_t *w, mmd_msg_type_t type, int64_t a0, int64_t a1, int64_t a2,
                 const void *items, size_t nitems);
/* The same, sending no reply-needing request: only the message. */
int mmd_notify_done(mmd_worker_t *w);

static inline bool mmd_in_space(const mmd_worker_t *w, const void *p) {
  return (uintptr_t)p >= w->base && (uintptr_t)p < w->base + w->size;
}
static inline uint64_t mmd_off(const mmd_worker_t *w, const void *p) { return (uintptr_t)p - w->base; }
static inline void *mmd_ptr(const mmd_worker_t *w, uint64_t off) { return (void *)(w->base + off); }

/* ---- resident.c ---- */
void mmd_resident_init(mmd_resident_t *r);
void mmd_resident_destroy(mmd_resident_t *r);
/* Records [off, off + len); a check falls due when the bytes doubled. */
void mmd_resident_add(mmd_worker_t *w, uint64_t off, uint64_t len);
/* Records that this worker holds memory of region rid. */
void mmd_resident_touch(mmd_worker_t *w, rid_t rid);
/* Asks which resident ranges are still in some region; releases the rest. */
int mmd_resident_check(mmd_worker_t *w);
/* Releases the given ranges (dead memory): given back to the OS now, or
 * retained (retain.c). */
void mmd_resident_release(mmd_worker_t *w, const uint64_t *pairs, size_t npairs, bool now);
/* Appends [off, off + len) to l for mmd_resident_release_runs, or gives it
 * back now when l cannot grow. */
void mmd_resident_defer(mmd_worker_t *w, mmd_ranges_t *l, uint64_t off, uint64_t len);
/* Releases a list of ranges, which it sorts and merges first. */
void mmd_resident_release_runs(mmd_worker_t *w, mmd_ranges_t *l, bool now);

/* ---- retain.c ---- */
void mmd_retain_init(mmd_retain_t *r, uint64_t delay_ms);
void mmd_retain_destroy(mmd_retain_t *r);
/* Retains dead memory [off, off + len) (gives it back at once with no delay). */
void mmd_retain(mmd_worker_t *w, uint64_t off, uint64_t len);
/* Forgets what is retained without giving it back: its pages stay. */
void mmd_retain_forget(mmd_retain_t *r);
void mmd_retain_claim_slow(mmd_worker_t *w, uint64_t off, uint64_t len);
void mmd_retain_tick_slow(mmd_worker_t *w);
/* Takes [off, off + len), about to be written, out of what is retained. */
static inline void mmd_retain_claim(mmd_worker_t *w, uint64_t off, uint64_t len) {
  if (w->retain.bytes[0] | w->retain.bytes[1]) mmd_retain_claim_slow(w, off, len);
}
/* Gives back what aged past the delay or exceeds the cap; at each call. */
static inline void mmd_retain_tick(mmd_worker_t *w) {
  if (w->retain.bytes[0] | w->retain.bytes[1]) mmd_retain_tick_slow(w);
}

/* What every call into the library owes first or last: the resident check
 * when due, and giving back retained memory that aged. */
static inline void mmd_worker_tidy(mmd_worker_t *w) {
  if (w->resident.check_due) mmd_resident_check(w);
  mmd_retain_tick(w);
}

#endif
