/* SPDX-License-Identifier: Apache-2.0 */
/* dist-lists-rma: the linked-list exchange by MPI-3 one-sided access to
 * every node, a peer of dist-lists (lists_common.h describes the experiment
 * and the checks).
 *
 * Each process exposes one window (MPI_Win_allocate of L nodes: a window
 * per process, made collectively) and takes its nodes from it one by one,
 * linked by their offsets in the window. In each stage the two processes of
 * a pair walk each other's list where it is, inside one MPI_Win_lock_all
 * epoch: per node an MPI_Get of the node and an MPI_Win_flush to have it,
 * the modification, and an MPI_Put of it back (completed by the next
 * node's flush: two buffers alternate). A stage ends with a flush and an
 * MPI_Barrier, so that no list is walked by two processes at once. The head
 * of every list is at offset 0 of its owner's window. Build time includes
 * the window's creation; it is freed (untimed) after the checks. Which osc
 * component carries it is Open MPI's choice; the JSON line's window_backing
 * names what backs rank 0's window (list_backing): osc/sm's shared segment on
 * one host, where a get or a put is a memcpy, or private memory.
 *
 *   mpirun -np W ./dist-lists-rma [--out DIR] [--len L] [--reps N]
 */
#define _GNU_SOURCE
#include "lists_common.h"

static const char *prog = "dist-lists-rma";

static long rma_walk(MPI_Win win, int me, int peer, long len) {
  list_node_t buf[2];
  long bad = 0, i = 0;
  int cur = 0;
  for (uint64_t off = 0; off != LIST_END; i++, cur ^= 1) {
    MPI_Get(&buf[cur], LIST_NODE_SIZE, MPI_BYTE, peer, (MPI_Aint)off, LIST_NODE_SIZE, MPI_BYTE, win);
    MPI_Win_flush(peer, win);   /* this get, and the previous node's put */
    bad += list_visit(&buf[cur], (uint32_t)me, (uint32_t)peer, (uint32_t)i);
    MPI_Put(&buf[cur], LIST_NODE_SIZE, MPI_BYTE, peer, (MPI_Aint)off, LIST_NODE_SIZE, MPI_BYTE, win);
    off = buf[cur].link.off;
    if (off != LIST_END && (off % LIST_NODE_SIZE || off >= (uint64_t)len * LIST_NODE_SIZE)) {
      i = -1;                   /* a broken link: not followed, counted below */
      break;
    }
  }
  MPI_Win_flush(peer, win);
  return bad + (i != len);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  list_opts_t o = list_parse(argc, argv, prog, NULL);
  MPI_Comm comm = MPI_COMM_WORLD;
  int me, p;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);
  list_times_t *t = calloc((size_t)(o.reps + o.warmup), sizeof *t);
  long faults = 0;
  char backing[256] = "unknown";
  for (int k = 0; k < o.warmup + o.reps; k++) {
    MPI_Barrier(comm);
    double t0 = bench_now_ns();
    list_node_t *base;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)o.len * LIST_NODE_SIZE, 1, MPI_INFO_NULL, comm, &base, &win);
    for (long i = 0; i < o.len; i++) {   /* one node at a time from the window */
      list_node_t *n = &base[i];
      list_fill(n, (uint32_t)me, (uint32_t)i);
      n->link.off = i + 1 < o.len ? (uint64_t)(i + 1) * LIST_NODE_SIZE : LIST_END;
    }
    double t1 = bench_now_ns();
    if (k == 0) list_backing(base, backing, sizeof backing);
    MPI_Barrier(comm);
    double t2 = bench_now_ns();
    MPI_Win_lock_all(0, win);
    MPI_Win_sync(win);          /* the local stores of the build, public */
    MPI_Barrier(comm);
    long bad = 0;
    for (int s = 0; s < list_stages(p); s++) {
      int peer = list_partner(me, p, s);
      if (peer >= 0) bad += rma_walk(win, me, peer, o.len);
      MPI_Barrier(comm);
    }
    MPI_Win_unlock_all(win);
    double t3 = bench_now_ns();
    t[k] = (list_times_t){t1 - t0, t3 - t2};
    MPI_Barrier(comm);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);   /* every peer's puts, visible here */
    long i = 0;
    for (uint64_t off = 0; off != LIST_END; i++) {
      if (off % LIST_NODE_SIZE || off >= (uint64_t)o.len * LIST_NODE_SIZE) {
        i = -1;                 /* a broken link */
        break;
      }
      list_node_t *n = (list_node_t *)((char *)base + off);
      bad += list_check(n, me, p, (uint32_t)i);
      off = n->link.off;
    }
    MPI_Win_unlock(me, win);
    faults += bad + (i != o.len);
    MPI_Win_free(&win);
  }
  list_result_t res = list_reduce(comm, t + o.warmup, o.reps, faults);
  int failed = 0;
  if (me == 0) {
    char extra[320];
    snprintf(extra, sizeof extra, ", \"window_backing\": \"%s\"", backing);
    failed = list_report(prog, &o, "mpi-rma", p, p, &res, extra);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  free(t);
  MPI_Finalize();
  return failed;
}
