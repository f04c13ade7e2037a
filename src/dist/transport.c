/* SPDX-License-Identifier: Apache-2.0 */
/* transport.c: the only file that calls MPI. Requests and replies are small
 * two-sided messages on a duplicate of MPI_COMM_WORLD; region data moves in
 * one MPI_Send/MPI_Recv of an hindexed datatype over MPI_BOTTOM, the same
 * on both sides because the addresses are the same: no staging buffer. */
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include "transport.h"
#include "manymalloc/myrmics.h"

enum { TAG_REQUEST = 1, TAG_REPLY, TAG_HEADER, TAG_DATA, TAG_LINK };

/* Messages to other schedulers still in flight, with their buffers. */
typedef struct tp_outbox {
  MPI_Request *req;
  unsigned char **data;
  int n, cap;
} tp_outbox_t;

static struct {
  bool started;      /* MPI_Init was ours, so MPI_Finalize is too */
  int rank, size;
  MPI_Comm sched;    /* requests and replies, every rank */
  MPI_Comm peers;    /* transfers, workers only */
  MPI_Comm user;     /* sys_worker_comm(), workers only */
  tp_outbox_t out;
  bool naps;         /* an idle scheduler sleeps between polls */
  bool slack_set;    /* its naps end on time (PR_SET_TIMERSLACK) */
} tp = {.sched = MPI_COMM_NULL, .peers = MPI_COMM_NULL, .user = MPI_COMM_NULL};

#define TP_CHECK(call) do { if ((call) != MPI_SUCCESS) return SYS_ERR_MPI; } while (0)

int mmd_tp_init(int *argc, char ***argv, bool yield_when_idle) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (yield_when_idle) setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    TP_CHECK(MPI_Init(argc, argv));
    tp.started = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &tp.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tp.size);
  return 0;
}

int mmd_tp_finalize(void) {
  MPI_Comm *comms[] = {&tp.sched, &tp.peers, &tp.user};
  for (size_t i = 0; i < 3; i++)
    if (*comms[i] != MPI_COMM_NULL) MPI_Comm_free(comms[i]);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (tp.started && !finalized) TP_CHECK(MPI_Finalize());
  return 0;
}

int mmd_tp_rank(void) { return tp.rank; }
int mmd_tp_size(void) { return tp.size; }

bool mmd_tp_all_ok(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

int mmd_tp_hosts(int *host_of) {
  MPI_Comm local;
  int lowest = tp.rank;
  TP_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, tp.rank, MPI_INFO_NULL, &local));
  int rc = MPI_Allreduce(&tp.rank, &lowest, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  TP_CHECK(rc);
  TP_CHECK(MPI_Allgather(&lowest, 1, MPI_INT, host_of, 1, MPI_INT, MPI_COMM_WORLD));
  return 0;
}

int mmd_tp_open(int worker_id) {
  TP_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &tp.sched));
  MPI_Comm_set_errhandler(tp.sched, MPI_ERRORS_RETURN);   /* errors are codes, not aborts */
  int color = worker_id >= 0 ? 0 : MPI_UNDEFINED;
  TP_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, worker_id, &tp.peers));
  if (tp.peers != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(tp.peers, MPI_ERRORS_RETURN);
    TP_CHECK(MPI_Comm_dup(tp.peers, &tp.user));
    MPI_Comm_set_errhandler(tp.user, MPI_ERRORS_ARE_FATAL);  /* the program's own, as MPI's default */
  }
  return 0;
}

MPI_Comm mmd_tp_user_comm(void) { return tp.user; }

/* ---------------------------------------------------------------------------
 * Requests and replies
 * ------------------------------------------------------------------------- */

static int tp_recv_into(MPI_Comm comm, int src, int tag, mmd_buf_t *b, int *from) {
  MPI_Status st;
  int count;
  TP_CHECK(MPI_Probe(src, tag, comm, &st));
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (mmd_buf_reserve(b, (size_t)count) != 0) return SYS_ERR_NOMEM;
  TP_CHECK(MPI_Recv(b->p, count, MPI_BYTE, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE));
  b->len = (size_t)count;
  if (from) *from = st.MPI_SOURCE;
  return 0;
}

int mmd_tp_send_request(int sched_rank, const mmd_buf_t *req) {
  TP_CHECK(MPI_Send(req->p, (int)req->len, MPI_BYTE, sched_rank, TAG_REQUEST, tp.sched));
  return 0;
}

int mmd_tp_call(int sched_rank, const mmd_buf_t *req, mmd_buf_t *rep) {
  int rc = mmd_tp_send_request(sched_rank, req);
  return rc ? rc : tp_recv_into(tp.sched, sched_rank, TAG_REPLY, rep, NULL);
}

void mmd_tp_idle_naps(bool on) { tp.naps = on; }

#define TP_SPIN_NS 50000   /* polls in vain before an idle scheduler naps */
#define TP_NAP_NS  20000
#define TP_SLACK_NS 1000   /* a nap's lateness; the kernel's default, 50 us, would triple it */

static uint64_t tp_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The next message's envelope, polling; once nothing has come for
 * TP_SPIN_NS, with a nap between polls (decision 0010). */
static int tp_probe_napping(MPI_Comm comm, MPI_Status *st) {
  uint64_t idle_since = 0;
  if (!tp.slack_set) {
    prctl(PR_SET_TIMERSLACK, TP_SLACK_NS, 0, 0, 0);   /* best effort: a refusal only makes naps longer */
    tp.slack_set = true;
  }
  for (;;) {
    int found = 0;
    TP_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &found, st));
    if (found) return 0;
    uint64_t now = tp_now_ns();
    if (idle_since == 0) idle_since = now;
    else if (now - idle_since > TP_SPIN_NS) nanosleep(&(struct timespec){0, TP_NAP_NS}, NULL);
  }
}

int mmd_tp_next_message(mmd_buf_t *b, int *src_rank, bool *from_sched) {
  MPI_Status st;
  if (tp.naps) {
    int rc = tp_probe_napping(tp.sched, &st);
    if (rc != 0) return rc;
  } else {
    TP_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, tp.sched, &st));
  }
  *from_sched = st.MPI_TAG == TAG_LINK;
  return tp_recv_into(tp.sched, st.MPI_SOURCE, st.MPI_TAG, b, src_rank);
}

int mmd_tp_reply(int dst_rank, const mmd_buf_t *rep) {
  TP_CHECK(MPI_Send(rep->p, (int)rep->len, MPI_BYTE, dst_rank, TAG_REPLY, tp.sched));
  return 0;
}

/* Frees the buffers of the messages that have left. */
static int tp_outbox_reap(tp_outbox_t *o, bool wait) {
  int rc = wait ? MPI_Waitall(o->n, o->req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
  int kept = 0;
  for (int i = 0; i < o->n; i++) {
    int done = wait;
    if (!wait && MPI_Test(&o->req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    if (done) {
      free(o->data[i]);
      continue;
    }
    o->req[kept] = o->req[i];
    o->data[kept++] = o->data[i];
  }
  o->n = kept;
  return rc == MPI_SUCCESS ? 0 : SYS_ERR_MPI;
}

int mmd_tp_link_send(int dst_rank, const mmd_buf_t *b) {
  tp_outbox_t *o = &tp.out;
  if (o->n >= 64) tp_outbox_reap(o, false);
  if (o->n == o->cap) {
    int cap = o->cap ? 2 * o->cap : 64;
    MPI_Request *req = realloc(o->req, (size_t)cap * sizeof *req);
    if (req) o->req = req;
    unsigned char **data = req ? realloc(o->data, (size_t)cap * sizeof *data) : NULL;
    if (data == NULL) return SYS_ERR_NOMEM;
    o->data = data;
    o->cap = cap;
  }
  unsigned char *copy = malloc(b->len ? b->len : 1);
  if (copy == NULL) return SYS_ERR_NOMEM;
  memcpy(copy, b->p, b->len);
  if (MPI_Isend(copy, (int)b->len, MPI_BYTE, dst_rank, TAG_LINK, tp.sched, &o->req[o->n]) != MPI_SUCCESS) {
    free(copy);
    return SYS_ERR_MPI;
  }
  o->data[o->n++] = copy;
  return 0;
}

int mmd_tp_link_drain(void) {
  int rc = tp_outbox_reap(&tp.out, true);
  free(tp.out.req);
  free(tp.out.data);
  tp.out = (tp_outbox_t){0};
  return rc;
}

/* ---------------------------------------------------------------------------
 * Transfers between workers
 * ------------------------------------------------------------------------- */

int mmd_tp_send_msg(int peer_worker, const mmd_buf_t *b) {
  TP_CHECK(MPI_Send(b->p, (int)b->len, MPI_BYTE, peer_worker, TAG_HEADER, tp.peers));
  return 0;
}

int mmd_tp_recv_msg(int peer_worker, mmd_buf_t *b) {
  return tp_recv_into(tp.peers, peer_worker, TAG_HEADER, b, NULL);
}

int mmd_tp_exchange_msg(int peer_worker, const mmd_buf_t *out, mmd_buf_t *in) {
  MPI_Request req;
  TP_CHECK(MPI_Isend(out->p, (int)out->len, MPI_BYTE, peer_worker, TAG_HEADER, tp.peers, &req));
  int rc = tp_recv_into(tp.peers, peer_worker, TAG_HEADER, in, NULL);
  TP_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  return rc;
}

/* One datatype for the whole list: block i is ranges[i] at its address. */
static int tp_ranges_type(uintptr_t base, const mmd_ranges_t *l, MPI_Datatype *type) {
  int *lens = malloc(l->n * sizeof *lens);
  MPI_Aint *addrs = malloc(l->n * sizeof *addrs);
  int rc = lens && addrs ? 0 : SYS_ERR_NOMEM;
  for (size_t i = 0; rc == 0 && i < l->n; i++) {
    lens[i] = (int)l->r[i].len;
    addrs[i] = (MPI_Aint)(base + l->r[i].off);
  }
  if (rc == 0 && (MPI_Type_create_hindexed((int)l->n, lens, addrs, MPI_BYTE, type) != MPI_SUCCESS ||
                  MPI_Type_commit(type) != MPI_SUCCESS))
    rc = SYS_ERR_MPI;
  free(lens);
  free(addrs);
  return rc;
}

static int tp_move_ranges(bool send, int peer, uintptr_t base, const mmd_ranges_t *l) {
  if (l->n == 0) return 0;
  MPI_Datatype type;
  int rc = tp_ranges_type(base, l, &type);
  if (rc != 0) return rc;
  int mpi = send ? MPI_Send(MPI_BOTTOM, 1, type, peer, TAG_DATA, tp.peers)
                 : MPI_Recv(MPI_BOTTOM, 1, type, peer, TAG_DATA, tp.peers, MPI_STATUS_IGNORE);
  MPI_Type_free(&type);
  return mpi == MPI_SUCCESS ? 0 : SYS_ERR_MPI;
}

/* Both directions at once: out's ranges to the peer while its ranges arrive
 * in in's. The two lists must not overlap (MPI_Sendrecv's rule). */
int mmd_tp_exchange_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *out, const mmd_ranges_t *in) {
  MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE};
  const mmd_ranges_t *lists[2] = {out, in};
  int rc = 0;
  for (int i = 0; i < 2 && rc == 0; i++)
    if (lists[i]->n) rc = tp_ranges_type(base, lists[i], &types[i]);
  if (rc == 0 && MPI_Sendrecv(MPI_BOTTOM, out->n ? 1 : 0, types[0], peer_worker, TAG_DATA, MPI_BOTTOM,
                              in->n ? 1 : 0, types[1], peer_worker, TAG_DATA, tp.peers,
                              MPI_STATUS_IGNORE) != MPI_SUCCESS)
    rc = SYS_ERR_MPI;
  for (int i = 0; i < 2; i++)
    if (types[i] != MPI_BYTE) MPI_Type_free(&types[i]);
  return rc;
}

int mmd_tp_send_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l) {
  return tp_move_ranges(true, peer_worker, base, l);
}

int mmd_tp_recv_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l) {
  return tp_move_ranges(false, peer_worker, base, l);
}
