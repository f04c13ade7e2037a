/* resident.c: the memory a worker has written or received. A worker keeps
 * copies of regions it received after their owner frees them; they go back
 * to the OS here. Whenever the recorded bytes have doubled since the last
 * check (and passed 16 MiB), the worker asks its scheduler which of them
 * some region still holds and discards the rest, so a long run of receive,
 * free and reallocate keeps each worker's memory within about twice what
 * is live. */
#include "worker.h"
#include "space.h"

#define MMD_RESIDENT_MIN_CHECK (16ull << 20)

static void resident_normalize(mmd_resident_t *r) {
  mmd_ranges_normalize(&r->ranges);
  r->bytes = mmd_ranges_bytes(&r->ranges);
  r->normalize_above = 2 * r->ranges.n + 1024;
}

void mmd_resident_add(mmd_worker_t *w, uint64_t off, uint64_t len) {
  mmd_resident_t *r = &w->resident;
  if (mmd_ranges_add(&r->ranges, off, len) != 0) return;
  r->bytes += len;
  if (r->ranges.n > r->normalize_above) resident_normalize(r);
  if (r->bytes > r->check_above) {
    resident_normalize(r);
    r->check_due = r->bytes > r->check_above;   /* not now: the caller may still read a reply */
  }
}

/* Discards what lies in the sorted list have but not in the sorted list
 * keep (a subset of it). */
static void resident_discard_gaps(mmd_worker_t *w, const mmd_ranges_t *have, const mmd_range_t *keep,
                                  size_t nkeep) {
  size_t j = 0;
  for (size_t i = 0; i < have->n; i++) {
    uint64_t at = have->r[i].off, end = at + have->r[i].len;
    for (; j < nkeep && keep[j].off < end; j++) {
      if (keep[j].off > at) mmd_space_discard(w->base, at, keep[j].off - at);
      at = keep[j].off + keep[j].len;
    }
    if (at < end) mmd_space_discard(w->base, at, end - at);
  }
}

int mmd_resident_check(mmd_worker_t *w) {
  mmd_resident_t *r = &w->resident;
  r->check_due = false;
  resident_normalize(r);
  int64_t rc = mmd_call(w, MMD_MSG_LIVE, 0, 0, 0, r->ranges.r, r->ranges.n * 2);
  if (rc != 0) return (int)rc;
  const mmd_range_t *live = (const mmd_range_t *)w->reply.items;
  size_t nlive = w->reply.hdr->nitems / 2;
  resident_discard_gaps(w, &r->ranges, live, nlive);
  r->ranges.n = 0;
  for (size_t i = 0; i < nlive; i++) mmd_ranges_add(&r->ranges, live[i].off, live[i].len);
  resident_normalize(r);
  r->check_above = 2 * r->bytes > MMD_RESIDENT_MIN_CHECK ? 2 * r->bytes : MMD_RESIDENT_MIN_CHECK;
  return 0;
}

void mmd_resident_discard(mmd_worker_t *w, const uint64_t *pairs, size_t npairs) {
  for (size_t i = 0; i < npairs; i++) mmd_space_discard(w->base, pairs[2 * i], pairs[2 * i + 1]);
}
