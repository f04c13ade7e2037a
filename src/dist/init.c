/* init.c: start and end. Reads the options, checks the layout against the
 * number of ranks, reserves the global space in every process, then makes
 * the first ranks schedulers (serving until every worker is done) and the
 * rest workers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "errors.h"
#include "scheduler.h"
#include "space.h"
#include "transport.h"
#include "worker.h"

#define MMD_DEFAULT_SPACE (64ull << 30)
#define MMD_MAX_SPACE     (16ull << 40)   /* below 2^32 slabs: the Used Ranges' run length */

static struct {
  bool inited;
  bool is_sched;
  int nsched;
  uint64_t space;
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

/* MANYMALLOC_SCHEDULERS: the schedulers of each tree level, top first. This
 * version serves from one scheduler: "1". */
static bool parse_schedulers(const char *s, int *nsched) {
  if (s == NULL || *s == '\0') s = "1";
  *nsched = 1;
  return strcmp(s, "1") == 0;
}

static int dist_options(void) {
  const char *space = getenv("MANYMALLOC_DIST_SPACE"), *scheds = getenv("MANYMALLOC_SCHEDULERS");
  bool quiet = env_flag("MANYMALLOC_DIST_QUIET", false), talk = mmd_tp_rank() == 0 && !quiet;
  dist.space = MMD_DEFAULT_SPACE;
  if (space && *space && !parse_bytes(space, &dist.space)) {
    if (talk) fprintf(stderr, "manymalloc: MANYMALLOC_DIST_SPACE=%s: expected 1M to under 16T bytes, with an optional K, M, G or T suffix\n", space);
    return SYS_ERR_ARG;
  }
  if (!parse_schedulers(scheds, &dist.nsched)) {
    if (talk) fprintf(stderr, "manymalloc: MANYMALLOC_SCHEDULERS=%s: this version has one scheduler level; use 1\n", scheds);
    return SYS_ERR_ARG;
  }
  if (mmd_tp_size() < dist.nsched + 1) {
    if (talk) fprintf(stderr, "manymalloc: %d scheduler(s) and at least one worker need %d MPI ranks, "
                              "but %d were started (mpirun -np %d or more)\n",
                      dist.nsched, dist.nsched + 1, mmd_tp_size(), dist.nsched + 1);
    return SYS_ERR_STATE;
  }
  dist.worker.lease_on = env_flag("MANYMALLOC_DIST_LEASE", true);
  char who[32];
  int rank = mmd_tp_rank();
  if (rank < dist.nsched) snprintf(who, sizeof who, "scheduler %d", rank);
  else snprintf(who, sizeof who, "worker %d", rank - dist.nsched);
  mmd_errors_init(who, quiet);
  return 0;
}

/* ---------------------------------------------------------------------------
 * Start and end
 * ------------------------------------------------------------------------- */

static int dist_serve(void) {
  mmd_sched_t s;
  int rc = mmd_sched_init(&s, dist.space, dist.nsched, mmd_tp_size() - dist.nsched);
  if (rc == 0) rc = mmd_sched_serve(&s);
  mmd_sched_destroy(&s);
  return rc ? mmd_fail(rc, "sys_init", "%s", "serving") : 1;
}

static int dist_start_worker(void) {
  mmd_worker_t *w = &dist.worker;
  w->id = mmd_tp_rank() - dist.nsched;
  w->nworkers = mmd_tp_size() - dist.nsched;
  w->sched_rank = 0;
  w->base = dist.base;
  w->size = dist.space;
  int rc = mmd_worker_init(w);
  if (rc == 0) mmd_self = w;
  return rc;
}

int sys_init(int *argc, char ***argv) {
  if (dist.inited) return dist.is_sched ? 1 : 0;
  if (mmd_tp_init(argc, argv) != 0) return SYS_ERR_MPI;
  dist.inited = true;
  int rc = dist_options();
  if (rc != 0) return mmd_set_error(rc);
  if (mmd_space_reserve(dist.space, mmd_tp_all_ok, &dist.base) != 0) {
    if (mmd_tp_rank() == 0)
      fprintf(stderr, "manymalloc: no address range of %llu bytes is free in every process "
                      "(lower MANYMALLOC_DIST_SPACE)\n", (unsigned long long)dist.space);
    return mmd_set_error(SYS_ERR_NOMEM);
  }
  if (mmd_tp_open(dist.nsched) != 0) return mmd_set_error(SYS_ERR_MPI);
  dist.is_sched = mmd_tp_rank() < dist.nsched;
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
  dist.inited = false;
  int mpi = mmd_tp_finalize();
  return rc ? rc : mpi;
}

MPI_Comm sys_worker_comm(void) { return mmd_self ? mmd_tp_user_comm() : MPI_COMM_NULL; }
int sys_worker_id(void) { return mmd_self ? mmd_self->id : SYS_ERR_STATE; }
int sys_num_workers(void) { return dist.inited ? mmd_tp_size() - dist.nsched : SYS_ERR_STATE; }
