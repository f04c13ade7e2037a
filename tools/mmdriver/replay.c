/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: validated and timed replays (see replay.h). */
#define _GNU_SOURCE
#include "replay.h"
#include "check.h"
#include "allocator.h"
#include "mapping.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One replaying thread: its id table and, when validating, its checks. */
typedef struct replay_thread_s {
  const trace_t    *trace;
  unsigned          index;
  void            **ptrs;      /* block of each id, NULL when dead */
  uint64_t         *sizes;     /* requested size of each live id */
  check_index_t     live;
  size_t            live_bytes, peak_live;
  size_t            base_footprint, peak_footprint;
  size_t            errors;
  int               sampler;   /* measures the footprint: thread 0 of a single-threaded replay */
  pthread_barrier_t *start;
  struct timespec   t0, t1;
} replay_thread_t;

/* ---------------------------------------------------------------------------
 * Validated replay
 * ------------------------------------------------------------------------- */

static int replay_fail(replay_thread_t *r, size_t i, const char *what, const void *p) {
  const trace_op_t *op = &r->trace->ops[i];
  if (r->errors++ == 0)
    fprintf(stderr, "mmdriver: %s: thread %u, request %zu (%c %" PRIu32 " %" PRIu64 "): %s (%p)\n",
            r->trace->path, r->index, i + 1, "arf"[op->kind], op->id, op->size, what, p);
  return 0;
}

/* The alignment malloc owes a request: 16 bytes, or for requests below 16
 * the largest power of two not above the size (C17 7.22.3, DR 445). */
static uintptr_t replay_required_align(uint64_t size) {
  uintptr_t a = 16;
  while (a > 1 && a > size) a >>= 1;
  return a;
}

/* Checks a block just handed out for id `op->id` and makes it live. */
static int replay_accept(replay_thread_t *r, size_t i, void *p) {
  const trace_op_t *op = &r->trace->ops[i];
  size_t size = (size_t)op->size;
  if (p == NULL) return size == 0 ? 1 : replay_fail(r, i, "allocator returned NULL", p);
  if ((uintptr_t)p % replay_required_align(size) != 0) return replay_fail(r, i, "misaligned block", p);
  int64_t clash = check_index_insert(&r->live, op->id, p, size);
  if (clash >= 0) return replay_fail(r, i, "block overlaps a live block", r->ptrs[clash]);
  if (malloc_usable_size(p) < size) return replay_fail(r, i, "malloc_usable_size below the request", p);
  check_fill(p, check_seed(r->index, op->id), size);
  r->ptrs[op->id]  = p;
  r->sizes[op->id] = size;
  r->live_bytes += size;
  if (r->live_bytes > r->peak_live) r->peak_live = r->live_bytes;
  return 1;
}

/* Verifies a live block's pattern and retires it. */
static int replay_retire(replay_thread_t *r, size_t i) {
  uint32_t id = r->trace->ops[i].id;
  void *p = r->ptrs[id];
  if (p == NULL) return 1;
  size_t bad = check_verify(p, check_seed(r->index, id), r->sizes[id], SIZE_MAX);
  if (bad != SIZE_MAX) return replay_fail(r, i, "block contents changed", (char *)p + bad);
  check_index_remove(&r->live, id);
  r->live_bytes -= r->sizes[id];
  r->ptrs[id] = NULL;
  return 1;
}

static int replay_checked_op(replay_thread_t *r, size_t i) {
  const trace_op_t *op = &r->trace->ops[i];
  void *old = r->ptrs[op->id];
  switch (op->kind) {
  case TRACE_ALLOC:
    return replay_accept(r, i, malloc((size_t)op->size));
  case TRACE_FREE:
    if (!replay_retire(r, i)) return 0;
    free(old);
    return 1;
  default: {
    uint64_t old_size = old ? r->sizes[op->id] : 0;
    if (!replay_retire(r, i)) return 0;
    void *p = realloc(old, (size_t)op->size);
    if (p == NULL && op->size > 0) return replay_fail(r, i, "realloc returned NULL", old);
    size_t kept = (size_t)(old_size < op->size ? old_size : op->size);
    size_t bad = p ? check_verify(p, check_seed(r->index, op->id), (size_t)old_size, kept) : SIZE_MAX;
    if (bad != SIZE_MAX) return replay_fail(r, i, "realloc lost the block's contents", (char *)p + bad);
    return replay_accept(r, i, p);
  }
  }
}

/* Reads the footprint after a request that may have raised it, so the
 * peak found is the footprint's exact peak at request boundaries. */
static void replay_sample(replay_thread_t *r) {
  if (!allocator_footprint_moved()) return;
  size_t f = allocator_footprint();
  if (f > r->peak_footprint) r->peak_footprint = f;
}

static void *replay_validate_thread(void *arg) {
  replay_thread_t *r = arg;
  const trace_t *t = r->trace;
  pthread_barrier_wait(r->start);
  for (size_t i = 0; i < t->num_ops; i++) {
    if (!replay_checked_op(r, i)) break;
    if (r->sampler) replay_sample(r);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------
 * Timed replay
 * ------------------------------------------------------------------------- */

static void *replay_timed_thread(void *arg) {
  replay_thread_t *r = arg;
  const trace_op_t *op = r->trace->ops, *end = op + r->trace->num_ops;
  void **ptrs = r->ptrs;
  pthread_barrier_wait(r->start);
  clock_gettime(CLOCK_MONOTONIC, &r->t0);
  for (; op < end; op++) {
    switch (op->kind) {
    case TRACE_ALLOC:   ptrs[op->id] = malloc((size_t)op->size); break;
    case TRACE_REALLOC: ptrs[op->id] = realloc(ptrs[op->id], (size_t)op->size); break;
    default:            free(ptrs[op->id]); ptrs[op->id] = NULL; break;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &r->t1);
  return NULL;
}

/* ---------------------------------------------------------------------------
 * Running threads
 * ------------------------------------------------------------------------- */

static replay_thread_t *replay_threads_new(const trace_t *t, unsigned threads, int validate) {
  replay_thread_t *rs = mapping_alloc(threads * sizeof(replay_thread_t));
  for (unsigned k = 0; k < threads; k++) {
    rs[k].trace = t;
    rs[k].index = k;
    rs[k].ptrs  = mapping_alloc(t->num_ids * sizeof(void *));
    if (validate) {
      rs[k].sizes = mapping_alloc(t->num_ids * sizeof(uint64_t));
      check_index_init(&rs[k].live, t->num_ids);
    }
  }
  return rs;
}

/* Frees what the trace left live, then the driver's own tables. */
static void replay_threads_free(replay_thread_t *rs, unsigned threads, int validate) {
  const trace_t *t = rs[0].trace;
  for (unsigned k = 0; k < threads; k++) {
    for (size_t id = 0; id < t->num_ids; id++) free(rs[k].ptrs[id]);
    mapping_free(rs[k].ptrs, t->num_ids * sizeof(void *));
    if (validate) {
      mapping_free(rs[k].sizes, t->num_ids * sizeof(uint64_t));
      check_index_done(&rs[k].live);
    }
  }
  mapping_free(rs, threads * sizeof(replay_thread_t));
}

/* Runs `body` on every thread state; thread 0 on the calling thread, so a
 * single-threaded run never pays for (or allocates for) thread creation. */
static void replay_run(replay_thread_t *rs, unsigned threads, void *(*body)(void *)) {
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, threads);
  pthread_t *tids = mapping_alloc(threads * sizeof(pthread_t));
  for (unsigned k = 0; k < threads; k++) rs[k].start = &start;
  for (unsigned k = 1; k < threads; k++) {
    if (pthread_create(&tids[k], NULL, body, &rs[k]) != 0) {
      fprintf(stderr, "mmdriver: cannot create thread %u\n", k);
      exit(2);
    }
  }
  body(&rs[0]);
  for (unsigned k = 1; k < threads; k++) pthread_join(tids[k], NULL);
  mapping_free(tids, threads * sizeof(pthread_t));
  pthread_barrier_destroy(&start);
}

void replay_validate(const trace_t *t, unsigned threads, replay_check_t *out) {
  replay_thread_t *rs = replay_threads_new(t, threads, 1);
  allocator_release();
  mapping_prefault_stack(256 * 1024); /* where the stack's end lies in its page varies from run to run */
  rs[0].base_footprint = allocator_footprint_base();
  rs[0].peak_footprint = allocator_footprint();
  rs[0].sampler = threads == 1;
  replay_run(rs, threads, replay_validate_thread);
  out->errors = 0;
  for (unsigned k = 0; k < threads; k++) out->errors += rs[k].errors;
  out->peak_live = rs[0].peak_live;
  size_t base = rs[0].base_footprint, peak = rs[0].peak_footprint;
  out->footprint = peak > base ? peak - base : 0;
  replay_threads_free(rs, threads, 1);
}

static double replay_seconds(const struct timespec *t) {
  return (double)t->tv_sec + (double)t->tv_nsec * 1e-9;
}

double replay_timed(const trace_t *t, unsigned threads) {
  replay_thread_t *rs = replay_threads_new(t, threads, 0);
  replay_run(rs, threads, replay_timed_thread);
  double first = replay_seconds(&rs[0].t0), last = replay_seconds(&rs[0].t1);
  for (unsigned k = 1; k < threads; k++) {
    if (replay_seconds(&rs[k].t0) < first) first = replay_seconds(&rs[k].t0);
    if (replay_seconds(&rs[k].t1) > last) last = replay_seconds(&rs[k].t1);
  }
  replay_threads_free(rs, threads, 0);
  return last - first;
}
