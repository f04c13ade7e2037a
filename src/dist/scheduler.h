/* SPDX-License-Identifier: Apache-2.0 */
/* scheduler.h: a scheduler of the tree (the paper's Sect. 5): its regions,
 * the workers or child schedulers it serves, what it lent its children and
 * the requests it waits on. The handlers of the protocol table are spread
 * over sched_*.c by subject; scheduler.c holds the table and the loop. */
#ifndef MMD_SCHED_H
#define MMD_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include "msg.h"
#include "region.h"
#include "tree.h"

/* What the scheduler owes one worker in its next reply. */
typedef struct mmd_owed {
  mmd_buf_t revokes;     /* rid_t: regions whose leases the worker must drop */
  mmd_buf_t remote;      /* uint64_t: offsets of its leased slabs with remote frees */
  mmd_ranges_t zombies;  /* slab runs (key, n) freed once the revokes are delivered */
} mmd_owed_t;

/* Where a request came from: a member (a worker, then the children, by
 * position) or the parent. */
#define MMD_FROM_PARENT (-1)

typedef struct mmd_event {
  int from;
  uint64_t ticket;       /* the sending scheduler's, for its reply (0: none wanted) */
  int leaf;              /* the leaf scheduler the worker's request entered */
  bool retry;            /* re-run after the parent's grant: no second asking */
  mmd_req_view_t req;
} mmd_event_t;

struct mmd_job;
typedef struct mmd_sched mmd_sched_t;
/* A reply to a request this scheduler sent; aux is what the sender kept. */
typedef void mmd_reply_fn(mmd_sched_t *s, struct mmd_job *job, const mmd_rep_view_t *rep, uint64_t aux);
typedef void mmd_job_done_fn(mmd_sched_t *s, struct mmd_job *job);

/* A request served across several messages (a re-entrant event): where it
 * came from, the replies still due, and what it has gathered. */
typedef struct mmd_job {
  mmd_event_t origin;    /* its req view is not kept */
  int waiting;
  int64_t status, val;
  int64_t bad;           /* the first failing item */
  mmd_ranges_t runs;
  mmd_buf_t out;
  uint64_t *slots;       /* per-item results (a pack's owners, by object) */
  size_t nslots;
  int64_t arg[3];
  mmd_job_done_fn *done;
} mmd_job_t;

/* One request sent to a neighbour, waiting for its reply. */
typedef struct mmd_wait {
  mmd_job_t *job;
  mmd_reply_fn *on_reply;
  uint64_t aux;
  uint32_t gen;
} mmd_wait_t;

/* A request waiting for memory or IDs from the parent. */
typedef struct mmd_parked {
  mmd_event_t ev;
  mmd_buf_t req;
  bool asked;            /* a grant for its need was asked after it parked */
  uint64_t need_slabs;   /* the run it needs */
  uint64_t need_total;   /* the slabs it needs in all (a batch) */
  bool need_ids;
  struct mmd_parked *next;
} mmd_parked_t;

typedef struct mmd_counts {
  int64_t requests, sched_messages, forwarded, grants, returns;
} mmd_counts_t;

struct mmd_sched {
  mmd_regions_t R;
  const mmd_tree_t *tree;
  int self, level;
  int parent_rank;           /* -1: the top */
  int first_child, nchildren;
  int first_worker, nworkers;/* worker IDs of a leaf */
  int nmembers;              /* workers, then children */
  int *member_rank;          /* [nmembers] world ranks */
  int *member_of;            /* [world size] member position, or MMD_FROM_PARENT, or -2 */
  mmd_owed_t *owed;          /* [nworkers] */
  bool *at_barrier, *done;   /* [nmembers] */
  mmd_job_t **deferred;      /* [nchildren] a child's barrier or done, answered later */
  int ndone, nbarrier, nbye;
  bool barrier_sent, done_asked, shutting, finished;
  /* the tree */
  mmd_trie_t held;           /* page runs (slab keys) this scheduler holds, lent or not */
  mmd_trie_t lent_ranges;    /* slab key -> run << 32 | child position */
  mmd_trie_t lent_ids;       /* first ID -> count << 32 | child position */
  uint64_t high_slabs, low_slabs, high_ids, low_ids;
  bool grant_pending;
  bool reclaim_pending;      /* the top asked its subtree for all its free memory */
  uint64_t short_total;      /* slabs the failing batch needs in all (see trade.c) */
  mmd_parked_t *parked, *parked_tail;
  uint64_t *child_load;      /* [nchildren] regions in each child's subtree, as reported */
  uint64_t load_reported;
  mmd_wait_t *waits;
  uint32_t nwaits, waits_cap, *free_waits, nfree_waits;
  mmd_counts_t counts;
  mmd_buf_t msg, rep, link;
};

int mmd_sched_init(mmd_sched_t *s, const mmd_tree_t *tree, int self, uint64_t space_bytes);
/* Serves until the whole tree is done: 0 or SYS_ERR_MPI. */
int mmd_sched_serve(mmd_sched_t *s);
void mmd_sched_destroy(mmd_sched_t *s);

/* ---- scheduler.c: answers ---- */
/* Answers the request ev: to a worker with what it is owed, to a scheduler
 * with a link reply. A shortage of memory or IDs first asks the parent. */
void mmd_answer(mmd_sched_t *s, const mmd_event_t *ev, int64_t status, int64_t val, const void *items,
                size_t nitems);
static inline void mmd_answer_status(mmd_sched_t *s, const mmd_event_t *ev, int64_t status) {
  mmd_answer(s, ev, status, 0, NULL, 0);
}
static inline bool mmd_from_worker(const mmd_sched_t *s, const mmd_event_t *ev) {
  return ev->from >= 0 && ev->from < s->nworkers;
}
static inline int mmd_child_of(const mmd_sched_t *s, const mmd_event_t *ev) {
  return ev->from >= s->nworkers ? ev->from - s->nworkers : -1;
}
/* The remote frees owed to worker: its leased slab at off had some. */
void mmd_owe_remote(mmd_sched_t *s, int32_t worker, uint64_t off);

/* ---- event.c: requests to neighbours and jobs ---- */
#define MMD_TO_PARENT (-1)
mmd_job_t *mmd_job_new(const mmd_event_t *origin, mmd_job_done_fn *done);
/* Sends a request to a child (position) or MMD_TO_PARENT; on_reply gets its
 * reply and aux. The job waits for one more reply. 0 or a code (then the
 * job does not wait). */
int mmd_send_request(mmd_sched_t *s, int to, mmd_job_t *job, mmd_reply_fn *on_reply, uint64_t aux,
                     int leaf, uint32_t type, const int64_t arg[3], const void *items, size_t nitems);
/* The same with no reply wanted (a notification). */
int mmd_notify(mmd_sched_t *s, int to, uint32_t type, const int64_t arg[3], const void *items, size_t nitems);
/* A reply handler that keeps the reply's status, val and items in the job. */
mmd_reply_fn mmd_reply_keep;
/* Passes ev on as it is; its reply goes back unchanged. */
void mmd_forward(mmd_sched_t *s, const mmd_event_t *ev, int to);
/* Its requests are out: runs done now if none was needed. */
void mmd_job_start(mmd_sched_t *s, mmd_job_t *job);
/* One reply of a job is in: runs done when none is due. */
void mmd_job_settle(mmd_sched_t *s, mmd_job_t *job);
/* Answers the job's origin with its status, val and out, and frees it. */
void mmd_job_answer(mmd_sched_t *s, mmd_job_t *job);
void mmd_job_free(mmd_job_t *job);
/* A link reply arrived: runs its waiter. */
void mmd_on_link_reply(mmd_sched_t *s, const mmd_link_hdr_t *h, const mmd_rep_view_t *rep);

/* ---- route.c ---- */
#define MMD_HERE    (-2)
#define MMD_NOWHERE (-3)
/* Where the region rid / the object at off is served: MMD_HERE, a child
 * position, MMD_TO_PARENT, or MMD_NOWHERE (an error here). */
int mmd_route_rid(const mmd_sched_t *s, rid_t rid, bool from_parent);
int mmd_route_off(const mmd_sched_t *s, uint64_t off, bool from_parent);
/* Handles ev elsewhere when route is not MMD_HERE: forwarded, or answered
 * with err. True when it did. */
bool mmd_elsewhere(mmd_sched_t *s, const mmd_event_t *ev, int route, int err);
/* The child a new region goes to, for a request that entered at leaf. */
int mmd_place_child(const mmd_sched_t *s, int leaf);
/* Regions in this scheduler's subtree; reported upward when it moved. */
uint64_t mmd_load(const mmd_sched_t *s);
void mmd_load_check(mmd_sched_t *s);

/* ---- trade.c ---- */
void mmd_trade_init(mmd_sched_t *s, uint64_t space_bytes);
/* After every event: asks for a refill under the low watermarks, gives
 * back what is above the high ones. */
void mmd_trade_check(mmd_sched_t *s);
/* Parks ev until the parent's grant (at the top: until the subtree has
 * given back its free memory): true, or false when it cannot. */
bool mmd_trade_park(mmd_sched_t *s, const mmd_event_t *ev, int64_t status);

/* ---- handlers (the table in scheduler.c) ---- */
void mmd_sched_handle(mmd_sched_t *s, const mmd_event_t *ev);
typedef void mmd_handler_fn(mmd_sched_t *s, const mmd_event_t *ev);
mmd_handler_fn mmd_on_ralloc, mmd_on_rfree, mmd_on_stats, mmd_on_create, mmd_on_link, mmd_on_unlink;
mmd_handler_fn mmd_on_alloc, mmd_on_free, mmd_on_balloc, mmd_on_usable, mmd_on_lease;
mmd_handler_fn mmd_on_pack, mmd_on_live, mmd_on_sched_stats;
mmd_handler_fn mmd_on_grant, mmd_on_return, mmd_on_reclaim, mmd_on_load;
/* Lease reports of a worker's request, applied before its handler. */
void mmd_apply_report(mmd_sched_t *s, int worker, const mmd_report_t *r);

#endif
