/* scheduler.h: the scheduler server (the paper's Sect. 5.2). */
#ifndef MMD_SCHED_H
#define MMD_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include "msg.h"
#include "region.h"

/* What the scheduler owes one worker in its next reply. */
typedef struct mmd_owed {
  mmd_buf_t revokes;     /* rid_t: regions whose leases the worker must drop */
  mmd_buf_t remote;      /* uint64_t: offsets of its leased slabs with remote frees */
  mmd_ranges_t zombies;  /* slab runs (key, n) freed once the revokes are delivered */
  bool at_barrier;
  bool done;
} mmd_owed_t;

typedef struct mmd_sched {
  mmd_regions_t R;
  int first_worker;      /* world rank of worker 0 */
  int nworkers;
  int ndone, nbarrier;
  mmd_owed_t *owed;      /* one a worker */
  mmd_buf_t req, rep;
} mmd_sched_t;

/* An incoming request: which worker sent it, and its parsed parts. */
typedef struct mmd_event {
  int worker;
  mmd_req_view_t req;
} mmd_event_t;

int mmd_sched_init(mmd_sched_t *s, uint64_t space_bytes, int first_worker, int nworkers);
/* Serves requests until every worker is done: 0 or SYS_ERR_MPI. */
int mmd_sched_serve(mmd_sched_t *s);
void mmd_sched_destroy(mmd_sched_t *s);

#endif
