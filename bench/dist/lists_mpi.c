/* SPDX-License-Identifier: Apache-2.0 */
/* dist-lists-mpi: the linked-list exchange written by hand in MPI, a peer of
 * dist-lists (lists_common.h describes the experiment and the checks).
 *
 *   --variant pack  (the default; the paper's "efficient and difficult")
 *       Each node is malloc()ed on its own. In each stage the two processes
 *       of a pair pack their list into a buffer (every node but its link,
 *       248 B), swap the buffers (MPI_Sendrecv), unpack what they received
 *       into newly malloc()ed nodes and relink them, walk and modify every
 *       node, pack that list back, free its nodes, swap the buffers back and
 *       unpack their own list into its nodes in place.
 *   --variant bulk  (the upper bound of moving a list as one block)
 *       Each list is one contiguous block, its nodes linked by offsets. The
 *       blocks are swapped as they are (MPI_Sendrecv), walked and modified
 *       there, and swapped back into place.
 * Build time is the nodes' allocation and filling. The buffers (pack's two,
 * bulk's receiving block) are made once before the repetitions and reused.
 * Nodes are freed (untimed) after the checks.
 *
 *   mpirun -np W ./dist-lists-mpi [--out DIR] [--len L] [--reps N] [--variant pack|bulk]
 */
#define _GNU_SOURCE
#include "lists_common.h"

#define PACKED (LIST_NODE_SIZE - (int)sizeof(uint64_t))   /* a node without its link */

static const char *prog = "dist-lists-mpi";

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "%s: out of memory\n", prog);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }
  return p;
}

/* ---------------------------------------------------------------------------
 * pack: malloc()ed nodes
 * ------------------------------------------------------------------------- */

static list_node_t *pack_build(long len, int me) {
  list_node_t *head = NULL, **link = &head;
  for (long i = 0; i < len; i++) {
    list_node_t *n = xmalloc(sizeof *n);
    list_fill(n, (uint32_t)me, (uint32_t)i);
    *link = n;
    link = &n->link.next;
  }
  *link = NULL;
  return head;
}

static void pack_free(list_node_t *n) {
  while (n) {
    list_node_t *next = n->link.next;
    free(n);
    n = next;
  }
}

static void pack_list(const list_node_t *n, char *buf) {
  for (; n; n = n->link.next, buf += PACKED) memcpy(buf, (const char *)n + sizeof(uint64_t), PACKED);
}

/* New nodes from buf, linked in order. */
static list_node_t *unpack_new(const char *buf, long len) {
  list_node_t *head = NULL, **link = &head;
  for (long i = 0; i < len; i++, buf += PACKED) {
    list_node_t *n = xmalloc(sizeof *n);
    memcpy((char *)n + sizeof(uint64_t), buf, PACKED);
    *link = n;
    link = &n->link.next;
  }
  *link = NULL;
  return head;
}

/* buf back into the nodes of an existing list. */
static void unpack_into(list_node_t *n, const char *buf) {
  for (; n; n = n->link.next, buf += PACKED) memcpy((char *)n + sizeof(uint64_t), buf, PACKED);
}

static long pack_stage(MPI_Comm comm, int me, int peer, list_node_t *head, long len, char *out, char *in) {
  int count = (int)(len * PACKED);   /* main keeps a list under 2 GiB */
  pack_list(head, out);
  MPI_Sendrecv(out, count, MPI_BYTE, peer, 0, in, count, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
  list_node_t *theirs = unpack_new(in, len);
  long bad = 0, i = 0;
  for (list_node_t *n = theirs; n; n = n->link.next, i++) bad += list_visit(n, (uint32_t)me, (uint32_t)peer, (uint32_t)i);
  pack_list(theirs, out);
  pack_free(theirs);
  MPI_Sendrecv(out, count, MPI_BYTE, peer, 1, in, count, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
  unpack_into(head, in);
  return bad + (i != len);
}

/* ---------------------------------------------------------------------------
 * bulk: one block a list, nodes linked by offsets
 * ------------------------------------------------------------------------- */

static list_node_t *bulk_build(long len, int me) {
  list_node_t *block = xmalloc((size_t)len * sizeof *block);
  for (long i = 0; i < len; i++) {
    list_fill(&block[i], (uint32_t)me, (uint32_t)i);
    block[i].link.off = i + 1 < len ? (uint64_t)(i + 1) * sizeof *block : LIST_END;
  }
  return block;
}

static long bulk_walk(list_node_t *block, int me, int owner, long len) {
  long bad = 0, i = 0;
  for (uint64_t off = 0; off != LIST_END; i++) {
    if (off % LIST_NODE_SIZE || off >= (uint64_t)len * LIST_NODE_SIZE) return bad + 1;   /* a broken link */
    list_node_t *n = (list_node_t *)((char *)block + off);
    bad += list_visit(n, (uint32_t)me, (uint32_t)owner, (uint32_t)i);
    off = n->link.off;
  }
  return bad + (i != len);
}

static long bulk_stage(MPI_Comm comm, int me, int peer, list_node_t *mine, long len, list_node_t *in) {
  int count = (int)(len * LIST_NODE_SIZE);
  MPI_Sendrecv(mine, count, MPI_BYTE, peer, 0, in, count, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
  long bad = bulk_walk(in, me, peer, len);
  MPI_Sendrecv(in, count, MPI_BYTE, peer, 1, mine, count, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  list_opts_t o = list_parse(argc, argv, prog, "pack|bulk");
  int bulk = o.variant && strcmp(o.variant, "bulk") == 0;
  if ((long long)o.len * LIST_NODE_SIZE > 0x7fffffff) {
    fprintf(stderr, "%s: --len %ld: a list must stay under 2 GiB\n", prog, o.len);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm comm = MPI_COMM_WORLD;
  int me, p;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);
  list_times_t *t = calloc((size_t)(o.reps + o.warmup), sizeof *t);
  /* The buffers, made once and touched: a careful program keeps them (fresh
   * ones cost a page fault a page as the data lands, and Open MPI's
   * MPI_Sendrecv into untouched pages ran 40-240 ms for 2.5 MB here, against
   * 1 ms into touched ones). */
  char *out = xmalloc((size_t)o.len * LIST_NODE_SIZE), *in = xmalloc((size_t)o.len * LIST_NODE_SIZE);
  memset(out, 0, (size_t)o.len * LIST_NODE_SIZE);
  memset(in, 0, (size_t)o.len * LIST_NODE_SIZE);
  long faults = 0;
  for (int k = 0; k < o.warmup + o.reps; k++) {
    MPI_Barrier(comm);
    double t0 = bench_now_ns();
    list_node_t *head = bulk ? bulk_build(o.len, me) : pack_build(o.len, me);
    double t1 = bench_now_ns();
    MPI_Barrier(comm);
    double t2 = bench_now_ns();
    long bad = 0;
    for (int s = 0; s < list_stages(p); s++) {
      int peer = list_partner(me, p, s);
      if (peer < 0) continue;
      bad += bulk ? bulk_stage(comm, me, peer, head, o.len, (list_node_t *)in)
                  : pack_stage(comm, me, peer, head, o.len, out, in);
    }
    double t3 = bench_now_ns();
    t[k] = (list_times_t){t1 - t0, t3 - t2};
    long i = 0;
    if (bulk) {
      for (uint64_t off = 0; off != LIST_END; i++) {
        if (off % LIST_NODE_SIZE || off >= (uint64_t)o.len * LIST_NODE_SIZE) {
          i = -1;   /* a broken link */
          break;
        }
        list_node_t *n = (list_node_t *)((char *)head + off);
        bad += list_check(n, me, p, (uint32_t)i);
        off = n->link.off;
      }
      free(head);
    } else {
      for (list_node_t *n = head; n; n = n->link.next, i++) bad += list_check(n, me, p, (uint32_t)i);
      pack_free(head);
    }
    faults += bad + (i != o.len);
  }
  list_result_t res = list_reduce(comm, t + o.warmup, o.reps, faults);
  int failed = 0;
  if (me == 0) failed = list_report(prog, &o, bulk ? "mpi-bulk" : "mpi-pack", p, p, &res, NULL);
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  free(t), free(out), free(in);
  MPI_Finalize();
  return failed;
}
