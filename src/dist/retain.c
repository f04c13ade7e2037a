/* SPDX-License-Identifier: Apache-2.0 */
/* retain.c: freed memory a worker keeps populated for a while. The pages a
 * worker would give back to the OS (a region it freed, copies that died)
 * are retained instead, for MANYMALLOC_DIST_RETAIN_MS: memory freed in one
 * step of a program is usually allocated or received again at the same
 * addresses in the next, and a page still present spares the kernel
 * allocating and zeroing it again (decision 0014).
 *
 * Retained ranges age in two generations: each turn, every half delay,
 * gives the old one back and ages the young one. Together they stay below
 * the most bytes the worker recorded resident over the last two turns (at
 * least MMD_RETAIN_FLOOR): beyond that the oldest go at once. Whatever the
 * worker records resident again (leased, allocated or received: about to
 * be written) is claimed, taken out of both generations first, so that
 * giving back never drops memory in use. */
#include <time.h>
#include "worker.h"
#include "space.h"

#define MMD_RETAIN_FLOOR (16ull << 20)

void mmd_retain_init(mmd_retain_t *r, uint64_t delay_ms) {
  *r = (mmd_retain_t){.delay_ns = delay_ms * 1000000ull};
}

void mmd_retain_destroy(mmd_retain_t *r) {
  mmd_ranges_free(&r->gen[0]);
  mmd_ranges_free(&r->gen[1]);
}

static int64_t retain_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return t.tv_sec * 1000000000ll + t.tv_nsec;
}

void mmd_retain(mmd_worker_t *w, uint64_t off, uint64_t len) {
  mmd_retain_t *r = &w->retain;
  if (r->delay_ns == 0 || mmd_ranges_add(&r->gen[0], off, len) != 0) {
    mmd_space_discard(w->base, off, len);
    return;
  }
  if (r->bytes[0] + r->bytes[1] == 0) r->turn_at_ns = retain_now_ns() + (int64_t)r->delay_ns / 2;
  r->bytes[0] += len;
  r->unsorted = true;
}

void mmd_retain_forget(mmd_retain_t *r) {
  r->gen[0].n = r->gen[1].n = 0;
  r->bytes[0] = r->bytes[1] = 0;
}

/* Both generations sorted and merged, their bytes without overlaps. */
static void retain_sort(mmd_retain_t *r) {
  for (int g = 0; g < 2; g++) {
    mmd_ranges_normalize(&r->gen[g]);
    r->bytes[g] = mmd_ranges_bytes(&r->gen[g]);
  }
  r->unsorted = false;
}

void mmd_retain_claim_slow(mmd_worker_t *w, uint64_t off, uint64_t len) {
  mmd_retain_t *r = &w->retain;
  if (r->unsorted) retain_sort(r);
  for (int g = 0; g < 2; g++) {
    uint64_t cut;
    if (mmd_ranges_cut(&r->gen[g], off, len, &cut) != 0) {
      mmd_retain_forget(r);   /* no room to split: keep every page rather than risk one in use */
      return;
    }
    r->bytes[g] -= cut;
  }
}

/* Gives generation g back to the OS. */
static void retain_give_back(mmd_worker_t *w, int g) {
  mmd_resident_release_runs(w, &w->retain.gen[g], true);
  w->retain.gen[g].n = 0;
  w->retain.bytes[g] = 0;
}

static void retain_turn(mmd_worker_t *w, int64_t now) {
  mmd_retain_t *r = &w->retain;
  retain_give_back(w, 1);
  mmd_ranges_t young = r->gen[0];
  r->gen[0] = r->gen[1];   /* empty now, its memory kept */
  r->gen[1] = young;
  r->bytes[1] = r->bytes[0];
  r->bytes[0] = 0;
  r->high[1] = r->high[0];
  r->high[0] = w->resident.bytes;
  r->turn_at_ns = now + (int64_t)r->delay_ns / 2;
}

void mmd_retain_tick_slow(mmd_worker_t *w) {
  mmd_retain_t *r = &w->retain;
  if (w->resident.bytes > r->high[0]) r->high[0] = w->resident.bytes;
  int64_t now = retain_now_ns();
  if (now >= r->turn_at_ns) retain_turn(w, now);
  uint64_t cap = r->high[0] > r->high[1] ? r->high[0] : r->high[1];
  if (cap < MMD_RETAIN_FLOOR) cap = MMD_RETAIN_FLOOR;
  for (int g = 1; g >= 0 && r->bytes[0] + r->bytes[1] > cap; g--) retain_give_back(w, g);
}
