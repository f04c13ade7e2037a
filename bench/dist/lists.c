/* SPDX-License-Identifier: Apache-2.0 */
/* dist-lists: the linked-list exchange of the Myrmics paper (Sect. 6.5,
 * Fig. 4g-h) on the dist allocator; its peers are dist-lists-mpi,
 * dist-lists-rma and dist-lists-shmem (lists_common.h describes the
 * experiment and the checks).
 *
 * Each worker builds a list of L nodes of 256 B in a region of its own:
 *   --variant alloc    one sys_alloc per node, as the paper does;
 *   --variant balloc   all L nodes from one sys_balloc.
 * In each stage the two workers of a pair swap their lists (sys_sendrecv of
 * the region and the head object: one transfer of the memory the region
 * occupies each way, no pointer rewritten, as the MPI peers' MPI_Sendrecv),
 * walk and modify every node of the list received, and swap them back.
 * Build time includes sys_ralloc; the region is freed (sys_rfree, untimed)
 * after the checks. The tree of schedulers is MANYMALLOC_SCHEDULERS's.
 *
 *   mpirun -np S+W ./dist-lists [--out DIR] [--len L] [--reps N] [--variant alloc|balloc]
 */
#define _GNU_SOURCE
#include "manymalloc/myrmics.h"
#include "lists_common.h"

static const char *prog = "dist-lists";

static void lists_fail(const char *call, int code) {
  fprintf(stderr, "%s: worker %d: %s failed: %s\n", prog, sys_worker_id(), call, sys_strerror(code));
  MPI_Abort(sys_worker_comm(), 1);
  exit(1);
}

/* The list of `me`, in a new region: its head. */
static list_node_t *lists_build(rid_t r, long len, int me, int balloc, void **objs) {
  list_node_t *head = NULL, **link = &head;
  if (balloc) {
    int rc = sys_balloc(LIST_NODE_SIZE, r, (int)len, objs);
    if (rc != 0) lists_fail("sys_balloc", rc);
  }
  for (long i = 0; i < len; i++) {
    list_node_t *n = balloc ? objs[i] : sys_alloc(LIST_NODE_SIZE, r);
    if (n == NULL) lists_fail("sys_alloc", sys_last_error());
    list_fill(n, (uint32_t)me, (uint32_t)i);
    *link = n;
    link = &n->link.next;
  }
  *link = NULL;
  return head;
}

/* Every node of owner's list, from head: the faults found (a wrong node, a
 * list of the wrong length). */
static long lists_walk(list_node_t *head, int owner, int me, long len) {
  long bad = 0, i = 0;
  for (list_node_t *n = head; n != NULL; n = n->link.next, i++) bad += list_visit(n, (uint32_t)me, (uint32_t)owner, (uint32_t)i);
  return bad + (i != len);
}

/* One stage with peer: the lists swapped there and back (sys_sendrecv),
 * the peer's walked and modified in between. */
static long lists_stage(int me, int peer, rid_t mine, list_node_t *head, long len) {
  rid_t theirs = SYS_NO_REGION, back = SYS_NO_REGION;
  void *obj = head, *their_head = NULL, *back_head = NULL;
  int rc = sys_sendrecv(peer, &mine, 1, &obj, 1, &theirs, 1, &their_head, 1);
  if (rc != 0) lists_fail("sys_sendrecv", rc);
  long bad = lists_walk(their_head, peer, me, len);
  rc = sys_sendrecv(peer, &theirs, 1, &their_head, 1, &back, 1, &back_head, 1);
  if (rc != 0) lists_fail("sys_sendrecv", rc);
  return bad + (back != mine || back_head != head);
}

int myrmics_main(int argc, char **argv) {
  list_opts_t o = list_parse(argc, argv, prog, "alloc|balloc");
  int balloc = o.variant && strcmp(o.variant, "balloc") == 0;
  MPI_Comm comm = sys_worker_comm();
  int me = sys_worker_id(), p = sys_num_workers(), ranks;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  list_times_t *t = calloc((size_t)(o.reps + o.warmup), sizeof *t);
  void **objs = balloc ? malloc((size_t)o.len * sizeof *objs) : NULL;
  if (t == NULL || (balloc && objs == NULL)) lists_fail("malloc", SYS_ERR_NOMEM);
  long faults = 0;
  sys_region_stats_t rs = {0};
  sys_sched_stats_t before, after;
  for (int k = 0; k < o.warmup + o.reps; k++) {
    MPI_Barrier(comm);
    if (k == o.warmup + o.reps - 1) sys_sched_stats(&before);
    double t0 = bench_now_ns();
    rid_t r = sys_ralloc(0, 0);
    if (r < 0) lists_fail("sys_ralloc", (int)r);
    list_node_t *head = lists_build(r, o.len, me, balloc, objs);
    double t1 = bench_now_ns();
    if (k == o.warmup + o.reps - 1 && sys_region_stats(r, 0, &rs) != 0) lists_fail("sys_region_stats", sys_last_error());
    MPI_Barrier(comm);
    double t2 = bench_now_ns();
    long bad = 0;
    for (int s = 0; s < list_stages(p); s++) {
      int peer = list_partner(me, p, s);
      if (peer >= 0) bad += lists_stage(me, peer, r, head, o.len);
    }
    double t3 = bench_now_ns();
    if (k == o.warmup + o.reps - 1) sys_sched_stats(&after);
    t[k] = (list_times_t){t1 - t0, t3 - t2};
    long i = 0;
    for (list_node_t *n = head; n != NULL; n = n->link.next, i++) bad += list_check(n, me, p, (uint32_t)i);
    faults += bad + (i != o.len);
    int rc = sys_rfree(r);
    if (rc != 0) lists_fail("sys_rfree", rc);
    if ((rc = sys_barrier()) != 0) lists_fail("sys_barrier", rc);
  }
  list_result_t res = list_reduce(comm, t + o.warmup, o.reps, faults);
  int failed = 0;
  if (me == 0) {
    const char *sched = getenv("MANYMALLOC_SCHEDULERS"), *lease = getenv("MANYMALLOC_DIST_LEASE");
    char extra[768], impl[32];
    snprintf(impl, sizeof impl, "ours-%s", balloc ? "balloc" : "alloc");
    snprintf(extra, sizeof extra,
             ", \"schedulers\": \"%s\", \"scheduler_ranks\": %lld, \"lease\": %s, "
             "\"transfer_bytes\": %lld, \"transfer_ranges\": %lld, \"live_bytes\": %lld, "
             "\"last_rep\": {\"requests\": %lld, \"sched_messages\": %lld, \"worker0_calls\": %lld, "
             "\"worker0_wait_s\": %.6f}",
             sched && *sched ? sched : "1", (long long)after.schedulers,
             lease && strcmp(lease, "0") == 0 ? "false" : "true", (long long)rs.transfer_bytes,
             (long long)rs.transfer_ranges, (long long)rs.live_bytes,
             (long long)(after.requests - before.requests),
             (long long)(after.sched_messages - before.sched_messages),
             (long long)(after.worker_calls - before.worker_calls),
             (double)(after.worker_wait_ns - before.worker_wait_ns) / 1e9);
    failed = list_report(prog, &o, impl, p, ranks, &res, extra);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  free(t), free(objs);
  return failed;
}
