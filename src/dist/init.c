/* SPDX-License-Identifier: Apache-2.0 */
/* init.c: start and end. Reads the options, shapes the scheduler tree and
 * places the ranks (a leaf scheduler with its workers on one host wherever
 * the ranks allow), reserves the global space in every process, then makes
 * the schedulers serve until every worker is done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "errors.h"
#include "scheduler.h"
#include "space.h"
#include "transport.h"
#include "tree.h"
#include "worker.h"

#define MMD_DEFAULT_SPACE (64ull << 30)
#define MMD_MAX_SPACE     (16ull << 40)   /* below 2^32 slabs: the Used Ranges' run length */

static struct {
  bool inited;
  bool is_sched;
  mmd_tree_t tree;
  uint64_t space;
  int ranks_here;        /* ranks on this rank's host */
  uintptr_t base;
  mmd_worker_t worker;
} dist;

/* ---------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------- */

static bool env_flag(const char *name, bool dflt) {
  const char *v = getenv(name);
  return v && *v ? strcmp(v, "0") != 0 : dflt;
}

/* Bytes with an optional K/M/G/T suffix, rounded up to whole 1 MiB pages. */
static bool parse_bytes(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  case 't': case 'T': shift = 40; end++; break;
  default: break;
  }
  if (end == s || *end != '\0' || v == 0 || v > MMD_MAX_SPACE >> shift) return false;
  *out = ((v << shift) + MMD_PAGE_SIZE - 1) & ~(MMD_PAGE_SIZE - 1);
  return *out < MMD_MAX_SPACE;
}

/* The tree's shape (MANYMALLOC_SCHEDULERS, MANYMALLOC_WORKERS_PER_SCHEDULER)
 * and who is who. */
static int dist_tree(bool talk) {
  char why[256];
  if (mmd_tree_parse(&dist.tree, getenv("MANYMALLOC_SCHEDULERS"), getenv("MANYMALLOC_WORKERS_PER_SCHEDULER"),
                     mmd_tp_size(), why, sizeof why) != 0) {
    if (talk) fprintf(stderr, "manymalloc: %s\n", why);
    return SYS_ERR_ARG;
  }
  int *host_of = malloc((size_t)mmd_tp_size() * sizeof *host_of);
  int rc = host_of ? mmd_tp_hosts(host_of) : SYS_ERR_NOMEM;
  if (rc == 0) rc = mmd_tree_place(&dist.tree, host_of);
  for (int r = 0; rc == 0 && r < mmd_tp_size(); r++) dist.ranks_here += host_of[r] == host_of[mmd_tp_rank()];
  free(host_of);
  return rc;
}

/* MANYMALLOC_DIST_IDLE: whether waiting ranks give their cores up (an
 * idle scheduler naps between polls, ranks waiting in Open MPI yield):
 * "nap" always, "spin" never, "auto" (or unset) where the ranks on this
 * host, ranks_here, outnumber its cores. -1 for any other value. */
static int dist_idle_naps(long ranks_here) {
  const char *v = getenv("MANYMALLOC_DIST_IDLE");
  if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0) return ranks_here > sysconf(_SC_NPROCESSORS_ONLN);
  if (strcmp(v, "spin") == 0 || strcmp(v, "nap") == 0) return strcmp(v, "nap") == 0;
  return -1;
}

static int dist_idle(bool talk) {
  int naps = dist_idle_naps(dist.ranks_here);
  if (naps < 0) {
    if (talk)
      fprintf(stderr, "manymalloc: MANYMALLOC_DIST_IDLE=%s: expected auto, spin or nap\n",
              getenv("MANYMALLOC_DIST_IDLE"));
    return SYS_ERR_ARG;
  }
  mmd_tp_idle_naps(naps);
  return 0;
}

/* Before MPI starts, by Open MPI's count of the ranks on this host
 * (decision 0011); a bad value is reported once MPI runs (dist_idle). */
static bool dist_crowded_before_init(void) {
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return dist_idle_naps(local ? atol(local) : 0) > 0;
}

/* MANYMALLOC_DIST_RETAIN_MS: how long a worker keeps freed memory
 * populated for reuse (retain.c); 0 gives it back at once. */
#define MMD_RETAIN_MS_DEFAULT 1000
#define MMD_RETAIN_MS_MAX 3600000

static int dist_retain(bool talk) {
  const char *v = getenv("MANYMALLOC_DIST_RETAIN_MS");
  dist.worker.retain_ms = MMD_RETAIN_MS_DEFAULT;
  if (v == NULL || *v == '\0') return 0;
  char *end;
  unsigned long ms = strtoul(v, &end, 10);
  if (*end != '\0' || *v == '-' || ms > MMD_RETAIN_MS_MAX) {
    if (talk) fprintf(stderr, "manymalloc: MANYMALLOC_DIST_RETAIN_MS=%s: expected 0 to %d milliseconds\n", v, MMD_RETAIN_MS_MAX);
    return SYS_ERR_ARG;
  }
  dist.worker.retain_ms = (uint32_t)ms;
  return 0;
}

static int dist_options(void) {
  const char *space = getenv("MANYMALLOC_DIST_SPACE");
  bool quiet = env_flag("MANYMALLOC_DIST_QUIET", false), talk = mmd_tp_rank() == 0 && !quiet;
  dist.space = MMD_DEFAULT_SPACE;
  if (space && *space && !parse_bytes(space, &dist.space)) {
    if (talk) fprintf(stderr, "manymalloc: MANYMALLOC_DIST_SPACE=%s: expected 1M to under 16T bytes, with an optional K, M, G or T suffix\n", space);
    return SYS_ERR_ARG;
  }
  int rc = dist_tree(talk);
  if (rc == 0) rc = dist_idle(talk);
  if (rc == 0) rc = dist_retain(talk);
  if (rc != 0) return rc;
  dist.worker.lease_on = env_flag("MANYMALLOC_DIST_LEASE", true);
  char who[32];
  int role = dist.tree.role[mmd_tp_rank()];
  if (role >= 0) snprintf(who, sizeof who, "scheduler %d", role);
  else snprintf(who, sizeof who, "worker %d", -1 - role);
  mmd_errors_init(who, quiet);
  return 0;
}

/* ---------------------------------------------------------------------------
 * Start and end
 * ------------------------------------------------------------------------- */

static int dist_serve(void) {
  mmd_sched_t s;
  int rc = mmd_sched_init(&s, &dist.tree, dist.tree.role[mmd_tp_rank()], dist.space);
  if (rc == 0) rc = mmd_sched_serve(&s);
  mmd_sched_destroy(&s);
  return rc ? mmd_fail(rc, "sys_init", "%s", "serving") : 1;
}

static int dist_start_worker(void) {
  const mmd_tree_t *t = &dist.tree;
  mmd_worker_t *w = &dist.worker;
  w->id = -1 - t->role[mmd_tp_rank()];
  w->nworkers = t->nworkers;
  int leaf = 0;
  while (w->id >= t->leaf_first[leaf] + t->leaf_workers[leaf]) leaf++;
  w->sched_rank = t->sched_rank[t->level_first[t->nlevels - 1] + leaf];
  w->base = dist.base;
  w->size = dist.space;
  int rc = mmd_worker_init(w);
  if (rc == 0) mmd_self = w;
  return rc;
}

int sys_init(int *argc, char ***argv) {
  if (dist.inited) return dist.is_sched ? 1 : 0;
  if (mmd_tp_init(argc, argv, dist_crowded_before_init()) != 0) return SYS_ERR_MPI;
  dist.inited = true;
  int rc = dist_options();
  if (rc != 0) return mmd_set_error(rc);
  if (mmd_space_reserve(dist.space, mmd_tp_all_ok, &dist.base) != 0) {
    if (mmd_tp_rank() == 0)
      fprintf(stderr, "manymalloc: no address range of %llu bytes is free in every process "
                      "(lower MANYMALLOC_DIST_SPACE)\n", (unsigned long long)dist.space);
    return mmd_set_error(SYS_ERR_NOMEM);
  }
  int role = dist.tree.role[mmd_tp_rank()];
  if (mmd_tp_open(role >= 0 ? -1 : -1 - role) != 0) return mmd_set_error(SYS_ERR_MPI);
  dist.is_sched = role >= 0;
  return dist.is_sched ? dist_serve() : dist_start_worker();
}

int sys_finalize(void) {
  if (!dist.inited) return mmd_set_error(SYS_ERR_STATE);
  int rc = 0;
  if (mmd_self) {
    rc = mmd_notify_done(mmd_self);
    mmd_worker_destroy(mmd_self);
    mmd_self = NULL;
  }
  if (dist.base) mmd_space_unreserve(dist.base, dist.space);
  dist.base = 0;
  mmd_tree_destroy(&dist.tree);
  dist.inited = false;
  int mpi = mmd_tp_finalize();
  return rc ? rc : mpi;
}

MPI_Comm sys_worker_comm(void) { return mmd_self ? mmd_tp_user_comm() : MPI_COMM_NULL; }
int sys_worker_id(void) { return mmd_self ? mmd_self->id : SYS_ERR_STATE; }
int sys_num_workers(void) { return dist.inited ? dist.tree.nworkers : SYS_ERR_STATE; }
