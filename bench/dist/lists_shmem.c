/* SPDX-License-Identifier: Apache-2.0 */
/* dist-lists-shmem: the linked-list exchange by OpenSHMEM access to every
 * node, a peer of dist-lists in the way of the paper's UPC version
 * (lists_common.h describes the experiment and the checks).
 *
 * Each PE allocates its nodes one by one with shmem_malloc (which is
 * collective: every PE allocates its i-th node together, so node i has the
 * same symmetric address everywhere) and links them by their symmetric
 * addresses. In each stage the two PEs of a pair walk each other's list
 * where it is: per node a shmem_getmem of the node, the modification and a
 * shmem_putmem of it back. A stage ends with shmem_barrier_all (which
 * completes the puts), so that no list is walked by two PEs at once. The
 * head of the partner's list is at the symmetric address of one's own.
 * Nodes are freed (shmem_free, untimed) after the checks. The JSON line's
 * heap_backing names what backs PE 0's symmetric heap (list_backing).
 *
 *   oshrun --mca osc ^rdma -np W ./dist-lists-shmem [--out DIR] [--len L] [--reps N]
 *
 * (Debian 12's Open MPI 4.1.4 crashes at finalize without --mca osc ^rdma.)
 * The JSON line and the timings are reduced with MPI on MPI_COMM_WORLD,
 * which Open MPI's OSHMEM shares with the PEs (PE i is rank i).
 */
#define _GNU_SOURCE
#include <shmem.h>
#include "lists_common.h"

static const char *prog = "dist-lists-shmem";

static list_node_t *shm_build(long len, int me, list_node_t **nodes) {
  list_node_t *head = NULL, **link = &head;
  for (long i = 0; i < len; i++) {
    list_node_t *n = shmem_malloc(sizeof *n);
    if (n == NULL) {
      fprintf(stderr, "%s: PE %d: shmem_malloc of node %ld failed (symmetric heap too small? "
                      "SHMEM_SYMMETRIC_SIZE)\n", prog, me, i);
      shmem_global_exit(1);
    }
    list_fill(n, (uint32_t)me, (uint32_t)i);
    nodes[i] = n;
    *link = n;
    link = &n->link.next;
  }
  *link = NULL;
  return head;
}

static long shm_walk(list_node_t *head, int me, int peer, long len) {
  list_node_t buf;
  long bad = 0, i = 0;
  for (list_node_t *n = head; n != NULL && i <= len; i++) {
    shmem_getmem(&buf, n, sizeof buf, peer);
    bad += list_visit(&buf, (uint32_t)me, (uint32_t)peer, (uint32_t)i);
    shmem_putmem(n, &buf, sizeof buf, peer);   /* buf is reusable on return */
    n = buf.link.next;
  }
  return bad + (i != len);
}

int main(int argc, char **argv) {
  shmem_init();
  list_opts_t o = list_parse(argc, argv, prog, NULL);
  int me = shmem_my_pe(), p = shmem_n_pes(), flag = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    fprintf(stderr, "%s: MPI is not initialized under OpenSHMEM here; cannot report\n", prog);
    shmem_global_exit(1);
  }
  list_times_t *t = calloc((size_t)(o.reps + o.warmup), sizeof *t);
  list_node_t **nodes = malloc((size_t)o.len * sizeof *nodes);
  if (t == NULL || nodes == NULL) shmem_global_exit(1);
  long faults = 0;
  char backing[256] = "unknown";
  for (int k = 0; k < o.warmup + o.reps; k++) {
    shmem_barrier_all();
    double t0 = bench_now_ns();
    list_node_t *head = shm_build(o.len, me, nodes);
    double t1 = bench_now_ns();
    if (k == 0) list_backing(head, backing, sizeof backing);
    shmem_barrier_all();
    double t2 = bench_now_ns();
    long bad = 0;
    for (int s = 0; s < list_stages(p); s++) {
      int peer = list_partner(me, p, s);
      if (peer >= 0) bad += shm_walk(head, me, peer, o.len);
      shmem_barrier_all();
    }
    double t3 = bench_now_ns();
    t[k] = (list_times_t){t1 - t0, t3 - t2};
    long i = 0;
    for (list_node_t *n = head; n != NULL && i <= o.len; n = n->link.next, i++) bad += list_check(n, me, p, (uint32_t)i);
    faults += bad + (i != o.len);
    for (long j = o.len; j-- > 0;) shmem_free(nodes[j]);
  }
  list_result_t res = list_reduce(MPI_COMM_WORLD, t + o.warmup, o.reps, faults);
  int failed = 0;
  if (me == 0) {
    char extra[320];
    snprintf(extra, sizeof extra, ", \"heap_backing\": \"%s\"", backing);
    failed = list_report(prog, &o, "shmem", p, p, &res, extra);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(t), free(nodes);
  shmem_finalize();
  return failed;
}
