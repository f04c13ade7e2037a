/* SPDX-License-Identifier: Apache-2.0 */
/* msg.h: the messages between a worker and its scheduler, and between
 * schedulers. A request is a header, the worker's lease reports, then the
 * request's items; a reply is a header, the region IDs whose leases the
 * worker must drop, the remote frees in slabs it leases, then the reply's
 * items. Between schedulers a link header comes first, and there are no
 * reports, revokes or remote frees. The table of request types and their
 * handlers is in scheduler.c; docs/dist-reference.md lists it. */
#ifndef MMD_MSG_H
#define MMD_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum mmd_msg_type {
  MMD_MSG_RALLOC,   /* arg: parent, level hint        -> status: rid */
  MMD_MSG_RFREE,    /* arg: rid; (from the parent's owner) 1, parent -> items: freed runs */
  MMD_MSG_ALLOC,    /* arg: size, rid                 -> val: offset */
  MMD_MSG_FREE,     /* arg: offset                    -> status */
  MMD_MSG_BALLOC,   /* arg: size, rid, count          -> items: offsets */
  MMD_MSG_USABLE,   /* arg: offset                    -> status: slot size; val: rid */
  MMD_MSG_PACK,     /* arg: #rids, #offsets; items    -> items: runs, objects' rids; val */
  MMD_MSG_STATS,    /* arg: rid, with sub-regions     -> items: sys_region_stats_t */
  MMD_MSG_LEASE,    /* arg: rid, slot, slabs wanted   -> items: (offset, live bits) */
  MMD_MSG_LIVE,     /* arg: #run items, #rids to confirm (-1: all); runs, rids, the
                       worker's regions -> items: live parts, rids left; val */
  MMD_MSG_BARRIER,  /* the reply comes when every worker has asked */
  MMD_MSG_DONE,     /* workers: no reply; a child: the reply is the shutdown */
  MMD_MSG_SCHED_STATS, /*                             -> items: sys_sched_stats_t */
  /* between schedulers only */
  MMD_MSG_CREATE,   /* arg: level, hint; items: parent's chain -> status: rid */
  MMD_MSG_LINK,     /* arg: parent, rid: a child made a region under parent (no reply) */
  MMD_MSG_UNLINK,   /* arg: parent, rid: it is gone (no reply) */
  MMD_MSG_GRANT,    /* items: pages needed in one run, pages, IDs wanted, IDs needed
                       -> items: page runs, ID runs; val: page run items */
  MMD_MSG_RETURN,   /* arg: page run items; items: page runs, ID runs (no reply) */
  MMD_MSG_LOAD,     /* arg: regions in the child's subtree (no reply) */
  MMD_MSG_RECLAIM,  /* the top ran dry: every free page and ID  -> items: page runs, ID runs; val */
  MMD_MSG_BYE,      /* the child has shut down (no reply) */
  MMD_MSG_COUNT
} mmd_msg_type_t;

/* Before every message between schedulers. */
typedef struct mmd_link_hdr {
  uint32_t is_reply;
  int32_t leaf;       /* requests: the leaf scheduler the worker's request entered */
  uint64_t ticket;    /* requests: the sender's, echoed by the reply (0: no reply) */
} mmd_link_hdr_t;

typedef struct mmd_req_hdr {
  uint32_t type;
  uint32_t nreports;  /* mmd_report_t after the header */
  uint32_t nitems;    /* 8-byte items after the reports */
  uint32_t pad;
  int64_t arg[3];
} mmd_req_hdr_t;

/* A leased slab's allocation bitmap, reported by its holder. */
typedef struct mmd_report {
  uint64_t off;
  uint64_t live;
  uint64_t unlease;   /* 1: the worker gives the slab up */
} mmd_report_t;

typedef struct mmd_rep_hdr {
  int64_t status;     /* 0, a count or ID, or a negative code */
  int64_t val;
  uint32_t nrevokes;  /* rid_t after the header */
  uint32_t nremote;   /* mmd_remote_t after the revokes */
  uint32_t nitems;    /* 8-byte items after the remote frees */
  uint32_t pad;
} mmd_rep_hdr_t;

/* Slots of a leased slab freed through the scheduler. */
typedef struct mmd_remote {
  uint64_t off;
  uint64_t bits;
} mmd_remote_t;

/* A growable byte buffer a message is built in or received into. */
typedef struct mmd_buf {
  unsigned char *p;
  size_t len, cap;
} mmd_buf_t;

int mmd_buf_reserve(mmd_buf_t *b, size_t cap);   /* 0 or SYS_ERR_NOMEM */
int mmd_buf_put(mmd_buf_t *b, const void *data, size_t n);
void mmd_buf_free(mmd_buf_t *b);

/* Where the parts of a received request or reply start. */
typedef struct mmd_req_view {
  const mmd_req_hdr_t *hdr;
  const mmd_report_t *reports;
  const uint64_t *items;
} mmd_req_view_t;

typedef struct mmd_rep_view {
  const mmd_rep_hdr_t *hdr;
  const int64_t *revokes;
  const mmd_remote_t *remote;
  const uint64_t *items;
} mmd_rep_view_t;

/* Checks that the sizes the header gives fit the buffer: 0 or -1. */
int mmd_req_view(const mmd_buf_t *b, mmd_req_view_t *v);
int mmd_rep_view(const mmd_buf_t *b, mmd_rep_view_t *v);

#endif
