/* SPDX-License-Identifier: Apache-2.0 */
/* spare.c: pages a worker parks for reuse instead of giving them back.
 * Memory leaves a worker's use with its pages populated (a region it
 * freed, the copy of one it sent back), and new memory arrives where no
 * page is (a region received, slabs leased). Rather than the kernel
 * freeing the one and then allocating and zeroing the other, mremap moves
 * the page tables: discarded pages go onto a stack in an area of their own
 * and come back at the addresses that next need pages (decision 0009).
 * Parked pages that nothing used for a second go back to the OS, at the
 * worker's next call to the scheduler, discard or fill.
 *
 * Every move leaves its source mapped (MREMAP_DONTUNMAP), and the source
 * is then mapped afresh over itself: no range of the global space is ever
 * without a mapping that another mmap could take, and the fresh mapping
 * merges with its neighbours again. Pages placed in the space stay a
 * mapping of their own until discarded, so placing pauses while the
 * process has more than a quarter of vm.max_map_count mappings. A kernel
 * that refuses a move (MREMAP_DONTUNMAP came in Linux 5.7, moves across
 * several mappings in 6.17) turns parking off at the first refusal: the
 * parked pages go back, and discards are madvise again. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "spare.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SPARE_CAP        (256ull << 20)  /* bytes parked at most */
#define SPARE_DECAY_NS   1000000000ull   /* parked pages unused this long go back */
#define SPARE_RECOUNT    128             /* placements between readings of the mapping count */

static uint64_t spare_page(void) {
  static uint64_t page;
  if (page == 0) page = (uint64_t)sysconf(_SC_PAGESIZE);
  return page;
}

void mmd_spare_init(mmd_spare_t *s) { *s = (mmd_spare_t){.cap = SPARE_CAP}; }

void mmd_spare_destroy(mmd_spare_t *s) {
  if (s->area) munmap((void *)s->area, s->cap);
  *s = (mmd_spare_t){0};
}

/* A fresh private mapping over [addr, addr + len), which is ours. */
static void spare_remap(uintptr_t addr, uint64_t len) {
  mmap((void *)addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Moves the pages of [from, from + len) to [to, to + len), replacing what
 * was there, and maps the source afresh. */
static bool spare_move(uintptr_t from, uintptr_t to, uint64_t len) {
  void *r = mremap((void *)from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (void *)to);
  if (r == MAP_FAILED) return false;
  spare_remap(from, len);
  return true;
}

static uint64_t spare_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void spare_release(mmd_spare_t *s) {
  if (s->used) madvise((void *)s->area, s->used, MADV_DONTNEED);
  s->used = 0;
}

static void spare_turn_off(mmd_spare_t *s) {
  s->off = true;
  spare_release(s);
}

void mmd_spare_expire(mmd_spare_t *s) {
  if (s->used && spare_now_ns() - s->last_use_ns > SPARE_DECAY_NS) spare_release(s);
}

static bool spare_ready(mmd_spare_t *s) {
  if (s->area || s->off) return !s->off;
  void *p = mmap(NULL, s->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    s->off = true;
    return false;
  }
  s->area = (uintptr_t)p;
  return true;
}

/* Calls fn on each run of at least MMD_SPARE_MIN_RUN bytes of whole pages in
 * [lo, hi) (page aligned) that are resident, or that are not, as long as
 * fn returns true. */
static void spare_each_run(mmd_spare_t *s, uintptr_t lo, uintptr_t hi, bool resident,
                           bool (*fn)(mmd_spare_t *s, uintptr_t at, uint64_t len)) {
  uint64_t page = spare_page();
  unsigned char vec[4096];
  for (uintptr_t at = lo; at < hi;) {
    uint64_t chunk = hi - at < sizeof vec * page ? hi - at : sizeof vec * page, pages = chunk / page;
    if (mincore((void *)at, chunk, vec) != 0) return;
    for (uint64_t i = 0; i < pages;) {
      uint64_t j = i;
      while (j < pages && (vec[j] & 1) == resident) j++;
      if ((j - i) * page >= MMD_SPARE_MIN_RUN && !fn(s, at + i * page, (j - i) * page)) return;
      i = j + 1;
    }
    at += chunk;
  }
}

/* Parks the pages of [at, at + len) as far as there is room. */
static bool spare_park(mmd_spare_t *s, uintptr_t at, uint64_t len) {
  uint64_t n = len < s->cap - s->used ? len : s->cap - s->used;
  if (n == 0 || !spare_ready(s)) return false;
  if (!spare_move(at, s->area + s->used, n)) {
    spare_turn_off(s);
    return false;
  }
  if (s->used == 0) s->last_use_ns = spare_now_ns();
  s->used += n;
  return true;
}

void mmd_spare_discard(mmd_spare_t *s, uintptr_t base, uint64_t off, uint64_t len) {
  uint64_t page = spare_page();
  uint64_t lo = (off + page - 1) & ~(page - 1), hi = (off + len) & ~(page - 1);
  if (lo >= hi) return;
  mmd_spare_expire(s);
  if (hi - lo >= MMD_SPARE_MIN_RUN && s->used < s->cap && !s->off) spare_each_run(s, base + lo, base + hi, true, spare_park);
  madvise((void *)(base + lo), hi - lo, MADV_DONTNEED);   /* what did not park; swapped-out pages too */
}

/* ---------------------------------------------------------------------------
 * Placing
 * ------------------------------------------------------------------------- */

/* Whether the process has room for the mappings that placing makes: read
 * from /proc every SPARE_RECOUNT placements. */
static bool spare_room_for_mappings(mmd_spare_t *s) {
  if (s->places++ % SPARE_RECOUNT) return !s->crowded;
  long limit = 65530, n = 0;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f) {
    if (fscanf(f, "%ld", &limit) != 1) limit = 65530;
    fclose(f);
  }
  if ((f = fopen("/proc/self/maps", "r")) == NULL) return !(s->crowded = true);
  for (int c; (c = getc_unlocked(f)) != EOF;) n += c == '\n';
  fclose(f);
  s->crowded = n > limit / 4;
  return !s->crowded;
}

/* Parked pages into [at, at + len), which has none, from at up: whether
 * some are left. */
static bool spare_place(mmd_spare_t *s, uintptr_t at, uint64_t len) {
  uint64_t n = len < s->used ? len : s->used;
  if (!spare_room_for_mappings(s)) return false;
  if (!spare_move(s->area + s->used - n, at, n)) {
    spare_turn_off(s);
    return false;
  }
  s->used -= n;
  s->last_use_ns = spare_now_ns();
  return s->used > 0;
}

void mmd_spare_fill(mmd_spare_t *s, uintptr_t base, uint64_t off, uint64_t len, bool populate) {
  static bool no_populate;
  uint64_t page = spare_page();
  uint64_t lo = (off + page - 1) & ~(page - 1), hi = (off + len) & ~(page - 1);
  mmd_spare_expire(s);
  if (lo < hi && s->used && !s->off) spare_each_run(s, base + lo, base + hi, false, spare_place);
  if (!populate || no_populate || len == 0) return;
  lo = off & ~(page - 1), hi = (off + len + page - 1) & ~(page - 1);
  if (madvise((void *)(base + lo), hi - lo, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) no_populate = true;
}
