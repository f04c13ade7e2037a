/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: large blocks, served straight by the OS.
 *
 * A block above MM_SIZE_CLASS_MAX gets a mapping of its own that starts with
 * a segment header of kind MM_SEGMENT_LARGE, so free and usable_size find it
 * like any block.  The block starts MM_LARGE_OFFSET bytes in, or at the
 * requested alignment; with an alignment of a segment or more the header is
 * one segment before the block (mm_segment_of rounds p - 1 down).
 *
 * Freed mappings wait in a lock-free array, MM_LARGE_CACHE_BYTES of them at
 * most (or a quarter of the large bytes in use, or up to an eighth above the
 * recent peak of large bytes in use, mm_large_cache_room; a freed mapping
 * takes the room of smaller ones, and joins the cached mappings next to it,
 * mm_large_cache_join); the next large block takes the one that fits best,
 * whole if it fills half of it or more (as realloc keeps a mapping), split
 * at a segment boundary if it is bigger (the rest stays cached), else grown
 * with mremap, so the pages it keeps need not be faulted in again (a program
 * that grows and frees big arrays in a loop otherwise pays a fault per 4 KiB
 * every time).  A mapping of up to MM_LARGE_CACHE_SMALL bytes is always
 * cached; a larger one only while that room is as much, so that the cache
 * stays small beside what the program once held, yet a program that replaces
 * big blocks one at a time finds a freed one (decisions 0039 and 0091: the
 * bound of the large-mapping cache).  Where a new mapping fails, the cached
 * ones go back to the OS and it is tried once more.  calloc never takes one:
 * fresh mappings are zero.
 * A new mapping of 4 MiB or more is advised for transparent huge pages,
 * calloc's excepted (big zeroed arrays are often written only here and
 * there): a block filled through faults in per 2 MiB instead of per 4 KiB.
 * The advice comes after the header's first touch, which faults in 4 KiB,
 * so the mapping's first 2 MiB (the header and the block's head) stay in
 * 4 KiB pages: a program that writes only the heads of its big blocks does
 * not zero 2 MiB for each, and the mapping stays one kernel mapping, which
 * mremap needs (decision 0094: huge pages for large blocks by default;
 * MANYMALLOC_LARGE_HUGEPAGES=0 turns it off).
 * A mapping still cached MANYMALLOC_PURGE_DELAY ms after its free goes
 * back to the OS at the next slow path of any thread, like the segments of
 * exited threads (purge.c), rather than staying resident until mm_collect
 * or exit. */
#include <errno.h>

#include "internal.h"

#define MM_LARGE_CACHE       512
#define MM_HUGEPAGE_SIZE     ((size_t)2 << 20)
#define MM_LARGE_CACHE_SMALL ((size_t)8 << 20)  /* mappings always cached up to this size */
#define MM_LARGE_CACHE_BYTES ((size_t)64 << 20) /* bytes of all the cached mappings, at most, */
#define MM_LARGE_CACHE_SHARE 4                  /* ... or a quarter of the bytes of large blocks in use, */
#define MM_LARGE_PEAK_SLACK  8                  /* ... or up to an eighth above the recent peak in use */
#define MM_LARGE_BULK_MAX    ((size_t)512 << 20) /* ... for mappings of up to this size (decision 0093) */
#define MM_LARGE_PAGES_MAX   (MM_SEGMENT_SIZE - 1) /* OS pages an entry can name: 16 GiB of them */

/* Cached mappings, 0 where none.  An entry is the mapping's address (a
 * multiple of MM_SEGMENT_SIZE) with its size in OS pages in the bits below,
 * so that a thread choosing one never reads a mapping another thread may
 * have taken and unmapped meanwhile; taking an entry is a CAS to 0.  Scans
 * stop at mm_large_cache_used, past the highest entry ever filled. */
static uintptr_t mm_large_cache[MM_LARGE_CACHE];
static uintptr_t mm_large_cache_used;
static uintptr_t mm_large_cached_bytes; /* of the mappings in the cache, or on their way in */
static uintptr_t mm_large_peak;         /* most bytes of large blocks in use after a large malloc (realloc's growth
                                           not counted), less what expiry gave back since */

static size_t mm_large_entry_size(uintptr_t entry) {
  return (size_t)(entry & (MM_SEGMENT_SIZE - 1)) * MM_OS_PAGE_SIZE;
}

/* Takes entry `i` if it still holds `entry`. */
static mm_segment_t *mm_large_cache_take(size_t i, uintptr_t entry) {
  if (!mm_atomic_cas(&mm_large_cache[i], &entry, 0)) return NULL;
  mm_atomic_fetch_add(&mm_large_cached_bytes, (uintptr_t)0 - mm_large_entry_size(entry));
  return (mm_segment_t *)(entry & ~(MM_SEGMENT_SIZE - 1));
}

/* Takes whatever mapping entry `i` holds; NULL when none. */
static mm_segment_t *mm_large_cache_take_any(size_t i) {
  uintptr_t entry = mm_atomic_load_relaxed(&mm_large_cache[i]);
  return entry != 0 ? mm_large_cache_take(i, entry) : NULL;
}

/* Whether a cached mapping of `size` bytes serves `want` better than the
 * one of `chosen` bytes found so far (0: none yet). */
typedef bool mm_large_prefers_t(size_t size, size_t chosen, size_t want);

/* Best fit: the smallest mapping as big as `want`, else the biggest. */
static bool mm_large_fits_better(size_t size, size_t chosen, size_t want) {
  return chosen == 0 || (size >= want ? chosen < want || size < chosen : size > chosen);
}

/* The smallest mapping below `want`. */
static bool mm_large_smaller_below(size_t size, size_t chosen, size_t want) {
  return size < want && (chosen == 0 || size < chosen);
}

/* The index of the cached mapping that `prefers` chooses for `want`, its
 * entry in *entry; MM_LARGE_CACHE when it chooses none. */
static size_t mm_large_cache_choose(mm_large_prefers_t *prefers, size_t want, uintptr_t *entry) {
  size_t chosen = MM_LARGE_CACHE, used = mm_atomic_load_relaxed(&mm_large_cache_used);
  *entry = 0;
  for (size_t i = 0; i < used; i++) {
    uintptr_t candidate = mm_atomic_load_relaxed(&mm_large_cache[i]);
    if (candidate != 0 && prefers(mm_large_entry_size(candidate), mm_large_entry_size(*entry), want)) {
      chosen = i;
      *entry = candidate;
    }
  }
  return chosen;
}

/* Takes the smallest cached mapping below `size` bytes; NULL when none. */
static mm_segment_t *mm_large_cache_smallest_below(size_t size) {
  uintptr_t entry;
  size_t i = mm_large_cache_choose(mm_large_smaller_below, size, &entry);
  return i < MM_LARGE_CACHE ? mm_large_cache_take(i, entry) : NULL;
}

/* Puts `entry` in the first free place; false when the cache is full. */
static bool mm_large_cache_put(uintptr_t entry) {
  for (size_t i = 0; i < MM_LARGE_CACHE; i++) {
    uintptr_t empty = 0;
    if (mm_atomic_load_relaxed(&mm_large_cache[i]) == 0 && mm_atomic_cas(&mm_large_cache[i], &empty, entry)) {
      mm_atomic_raise(&mm_large_cache_used, i + 1);
      return true;
    }
  }
  return false;
}

/* The bytes of mappings above MM_LARGE_CACHE_SMALL the cache may hold
 * beside `in_use` bytes of large blocks, for a mapping of `size` bytes: a
 * quarter of them, and for a mapping of up to MM_LARGE_BULK_MAX also all
 * that keeps the bytes in use and cached within an eighth above the peak of
 * bytes in use (mm_large_peak), which each expiry lowers by what it gave
 * back.  A program that frees its big blocks and allocates the next finds
 * their pages instead of faulting them in again, even where it holds no
 * other (decision 0091); blocks freed in bulk by many threads, at a phase's
 * or the threads' end, wait out the purge delay instead of being unmapped
 * one by one, each munmap stalling every other thread's page faults on the
 * process's mmap lock (decision 0040).  The memory held so stays within an
 * eighth of what the blocks in use recently took.  A bigger mapping is not
 * held so: unmapping it once its delay is over would stall the thread that
 * happens to do it for as long. */
static size_t mm_large_cache_room(size_t in_use, size_t size) {
  size_t room = in_use / MM_LARGE_CACHE_SHARE;
  if (size > MM_LARGE_BULK_MAX) return room;
  size_t peak = mm_atomic_load_relaxed(&mm_large_peak);
  size_t held = peak + peak / MM_LARGE_PEAK_SLACK;
  return held > in_use && held - in_use > room ? held - in_use : room;
}

/* Lowers the peak by `bytes` that went back to the OS, so that memory
 * freed in bulk goes back pass by pass. */
static void mm_large_peak_lower(size_t bytes) {
  uintptr_t seen = mm_atomic_load_relaxed(&mm_large_peak);
  while (!mm_atomic_cas(&mm_large_peak, &seen, seen > bytes ? seen - bytes : 0)) {}
}

/* Whether the cache may take a mapping of `size` bytes beside `room`
 * (mm_large_cache_room). */
static bool mm_large_cache_admits(size_t size, size_t room) {
  if (size / MM_OS_PAGE_SIZE > MM_LARGE_PAGES_MAX) return false; /* not in an entry */
  return size <= MM_LARGE_CACHE_SMALL || size <= room;
}

/* Caches a freed mapping; false when it does not fit.  Where the bound
 * leaves no room, cached mappings smaller than it go back to the OS to make
 * room, the smallest first: a big mapping serves more blocks (cut, or taken
 * whole) than the small ones that cuts leave. */
static bool mm_large_cache_push(mm_segment_t *seg) {
  size_t size = seg->mapped_size, room = mm_large_cache_room(_mm_stats_large_bytes(), size);
  if (!mm_large_cache_admits(size, room)) return false;
  size_t bound = room > MM_LARGE_CACHE_BYTES ? room : MM_LARGE_CACHE_BYTES;
  while (mm_atomic_load_relaxed(&mm_large_cached_bytes) + size > bound) {
    mm_segment_t *smaller = mm_large_cache_smallest_below(size);
    if (smaller == NULL) break;
    _mm_os_free(smaller, smaller->mapped_size);
  }
  if (mm_atomic_fetch_add(&mm_large_cached_bytes, size) + size <= bound &&
      mm_large_cache_put((uintptr_t)seg | (size / MM_OS_PAGE_SIZE)))
    return true;
  mm_atomic_fetch_add(&mm_large_cached_bytes, (uintptr_t)0 - size);
  return false;
}

/* The freed mapping `seg` joined with the cached mappings that end where it
 * starts and start where it ends, where the cache admits the whole: the
 * rest of a mapping cut for a smaller block (mm_large_split) meets its
 * front again when that block is freed, so that the next bigger block finds
 * the mapping whole with its pages instead of growing the front over fresh
 * ones.  Mappings that merely lie side by side join as well; where the
 * kernel keeps them apart, a later mremap over both fails and the block is
 * mapped afresh (mm_large_reuse) or copied (_mm_large_realloc). */
static mm_segment_t *mm_large_cache_join(mm_segment_t *seg) {
  size_t used = mm_atomic_load_relaxed(&mm_large_cache_used), in_use = _mm_stats_large_bytes();
  for (size_t i = 0; i < used; i++) {
    uintptr_t entry = mm_atomic_load_relaxed(&mm_large_cache[i]);
    uintptr_t at = entry & ~(MM_SEGMENT_SIZE - 1), end = (uintptr_t)seg + seg->mapped_size;
    size_t size = mm_large_entry_size(entry), joined = seg->mapped_size + size;
    if (entry == 0 || (at != end && at + size != (uintptr_t)seg)) continue;
    if (!mm_large_cache_admits(joined, mm_large_cache_room(in_use, joined))) continue;
    mm_segment_t *neighbour = mm_large_cache_take(i, entry);
    if (neighbour == NULL) continue;
    if (at != end) { /* it lies before: the joined mapping starts with its header */
      neighbour->purge_at = seg->purge_at;
      seg = neighbour;
    }
    seg->mapped_size = joined;
  }
  return seg;
}

/* The cached mapping that best fits `mapped` bytes: the smallest that is
 * as big, else the biggest; NULL when there is none (or other threads kept
 * taking the one chosen).  Best fit rather than the oldest, so that more
 * blocks find a freed mapping as big (decision 0039: a best-fit array for
 * the large-mapping cache). */
static mm_segment_t *mm_large_cache_best(size_t mapped) {
  for (int attempt = 0; attempt < 4; attempt++) {
    uintptr_t entry;
    size_t i = mm_large_cache_choose(mm_large_fits_better, mapped, &entry);
    if (i == MM_LARGE_CACHE) return NULL;
    mm_segment_t *seg = mm_large_cache_take(i, entry);
    if (seg != NULL) return seg;
  }
  return NULL;
}

/* Returns every cached mapping to the OS; the bytes that went. */
size_t _mm_large_cache_purge(void) {
  size_t used = mm_atomic_load_relaxed(&mm_large_cache_used), released = 0;
  for (size_t i = 0; i < used; i++) {
    mm_segment_t *seg = mm_large_cache_take_any(i);
    if (seg == NULL) continue;
    released += seg->mapped_size;
    _mm_os_free(seg, seg->mapped_size);
  }
  mm_large_peak_lower(released);
  return released;
}

/* Whether a block or mapping of `have` bytes serves `want` as it is: it is
 * as big and no more than twice as big (realloc and the cache alike). */
static bool mm_large_keeps(size_t have, size_t want) {
  return want <= have && want >= have / 2;
}

/* Whether a mapping of `mapped` bytes gets transparent huge pages; one
 * mapped smaller gets them when it grows to that (mm_large_remap), so a
 * block that realloc grows past 4 MiB faults in per 2 MiB like one that
 * malloc made that big (decision 0097: huge pages for grown mappings). */
static bool mm_large_wants_hugepages(size_t mapped) {
  return _mm_options.large_hugepages && mapped >= 2 * MM_HUGEPAGE_SIZE;
}

/* The mapping at `seg` resized to `mapped` bytes, in place or with its
 * pages moved by mremap (no copy); NULL, the mapping as it was, when
 * neither works.  Its advice for huge pages moves with it. */
static mm_segment_t *mm_large_remap(mm_segment_t *seg, size_t mapped) {
  size_t old = seg->mapped_size;
  if (!_mm_os_resize(seg, old, mapped)) {
    seg = _mm_os_move_aligned(seg, old, mapped, MM_SEGMENT_SIZE);
    if (seg == NULL) return NULL;
  }
  seg->mapped_size = mapped;
  if (mm_large_wants_hugepages(mapped) && !mm_large_wants_hugepages(old)) _mm_os_advise_hugepages(seg, mapped);
  return seg;
}

/* Cuts the cached mapping `seg` for a block of `mapped` bytes at the first
 * segment boundary after them; the rest stays cached as a mapping of its
 * own (its header at its start), with the pages it holds.  Between the
 * block and the boundary: part of the block where it then keeps no more
 * than twice its size, else back to the OS.  NULL when no boundary lies
 * inside the mapping past the block.  Of the rest's header only its size
 * and purge time are written here, over the freed block's bytes; the
 * block that takes it writes the others (_mm_large_alloc). */
static mm_segment_t *mm_large_split(mm_segment_t *seg, size_t mapped) {
  size_t front = (mapped + MM_SEGMENT_MASK) & ~MM_SEGMENT_MASK;
  if (front >= seg->mapped_size) return NULL;
  mm_segment_t *rest = (mm_segment_t *)((uint8_t *)seg + front);
  rest->mapped_size = seg->mapped_size - front;
  rest->purge_at = seg->purge_at;
  if (!mm_large_cache_push(rest)) _mm_os_free(rest, rest->mapped_size);
  size_t kept = mm_large_keeps(front, mapped) ? front : mapped;
  if (kept < front) _mm_os_free((uint8_t *)seg + kept, front - kept);
  seg->mapped_size = kept;
  return seg;
}

/* Whether a cached mapping of `have` bytes serves a block of `mapped`
 * whole although more than twice as big: the bytes past the block would,
 * split off, make a mapping the cache always takes (MM_LARGE_CACHE_SMALL),
 * so they stay resident either way, and whole they are there with their
 * pages for the next bigger block.  One block of 1-32 MiB freed and
 * allocated in turn (the bigpair case) otherwise cut its mapping for each
 * smaller block and grew it again, faulting in the pages it had cut off. */
static bool mm_large_excess_small(size_t have, size_t mapped) {
  return have >= mapped && have - mapped <= MM_LARGE_CACHE_SMALL;
}

/* A cached mapping of at least `mapped` bytes, or NULL.  One of up to twice
 * that is taken whole, with its pages, which need not fault in again
 * (decisions 0039 and 0090: cached mappings taken whole up to twice the
 * block).  A bigger one is split (mm_large_split), a smaller one grown. */
static mm_segment_t *mm_large_reuse(size_t mapped) {
  mm_segment_t *seg = mm_large_cache_best(mapped);
  if (seg == NULL) return NULL;
  if (mm_large_keeps(seg->mapped_size, mapped) || mm_large_excess_small(seg->mapped_size, mapped)) return seg;
  mm_segment_t *split = mm_large_split(seg, mapped);
  if (split != NULL) return split;
  mm_segment_t *resized = mm_large_remap(seg, mapped);
  if (resized == NULL) _mm_os_free(seg, seg->mapped_size);
  return resized;
}

/* Bytes to map for a block of `size` after `offset` bytes of header; 0 when
 * no mapping could be that big. */
static size_t mm_large_mapping(size_t offset, size_t size) {
  if (size > PTRDIFF_MAX - 2 * MM_SEGMENT_SIZE) return 0;
  return mm_os_page_round(offset + size);
}

/* A new mapping of `mapped` bytes for a block at `alignment`; NULL with
 * errno ENOMEM when the OS has none. */
static mm_segment_t *mm_large_map(size_t mapped, size_t alignment) {
  return alignment <= MM_SEGMENT_SIZE ? _mm_os_alloc_aligned(mapped, MM_SEGMENT_SIZE, 0)
                                      : _mm_os_alloc_aligned(mapped, alignment, MM_SEGMENT_SIZE);
}

/* A block of `size` bytes at `alignment`; zeroed if `zero`. */
void *_mm_large_alloc(size_t size, size_t alignment, bool zero) {
  uintptr_t offset = alignment <= MM_LARGE_OFFSET ? MM_LARGE_OFFSET
                   : alignment <= MM_SEGMENT_SIZE ? alignment : MM_SEGMENT_SIZE;
  /* a block of 0 bytes still gets an OS page, so that it lies inside its mapping */
  size_t mapped = mm_large_mapping(offset, size == 0 ? 1 : size);
  if (mapped == 0) {
    errno = ENOMEM;
    return NULL;
  }
  mm_segment_t *seg = NULL;
  if (offset == MM_LARGE_OFFSET && !zero) seg = mm_large_reuse(mapped);
  bool fresh = seg == NULL;
  if (!fresh) {
    mapped = seg->mapped_size; /* up to twice the block's, taken whole */
  } else {
    seg = mm_large_map(mapped, alignment);
    if (seg == NULL && _mm_large_cache_purge() > 0) seg = mm_large_map(mapped, alignment); /* under pressure */
    if (seg == NULL) return NULL;
  }
  seg->heap = NULL; /* a split mapping's rest has a block's old bytes here: free must never match */
  seg->kind = MM_SEGMENT_LARGE;
  seg->page_shift = 63;
  seg->mapped_size = mapped;
  seg->block_offset = offset;
  seg->block_size = mapped - offset;
  /* advised once the header is written: its first 2 MiB then stay in 4 KiB pages */
  if (fresh && !zero && mm_large_wants_hugepages(mapped)) _mm_os_advise_hugepages(seg, mapped);
  _mm_checked_on_map(seg);
  _mm_stats_large(1, (intptr_t)seg->block_size);
  mm_atomic_raise(&mm_large_peak, _mm_stats_large_bytes());
  return (uint8_t *)seg + offset;
}

void _mm_large_free(mm_segment_t *seg) {
  _mm_stats_large(-1, -(intptr_t)seg->block_size);
  _mm_checked_on_unmap(seg, true);
  if (seg->block_offset == MM_LARGE_OFFSET) {
    uint64_t purge_at = _mm_options.purge ? mm_purge_delay_end(_mm_os_clock_ms()) : 0;
    seg->purge_at = purge_at; /* before another thread may pop it */
    seg = mm_large_cache_join(seg);
    if (mm_large_cache_push(seg)) {
      if (_mm_options.purge) _mm_purge_warm_schedule(purge_at); /* seg may be another thread's already */
      return;
    }
  }
  _mm_os_free(seg, seg->mapped_size);
}

/* Returns the cached mappings whose delay is over at `now` to the OS;
 * called once _mm_purge_warm_due has come (purge.c). */
void _mm_large_cache_expire(uint64_t now) {
  size_t used = mm_atomic_load_relaxed(&mm_large_cache_used), released = 0;
  for (size_t i = 0; i < used; i++) {
    mm_segment_t *seg = mm_large_cache_take_any(i);
    if (seg == NULL) continue;
    uint64_t purge_at = seg->purge_at;
    if (purge_at <= now || !mm_large_cache_push(seg)) {
      released += seg->mapped_size;
      _mm_os_free(seg, seg->mapped_size);
    } else {
      _mm_purge_warm_schedule(purge_at); /* once pushed, seg may be another thread's */
    }
  }
  mm_large_peak_lower(released);
}

/* Grows or shrinks in place when the mapping allows, else moves the pages
 * with mremap (no copy).  Called for sizes above MM_SIZE_CLASS_MAX.  NULL,
 * the block as it was, when mremap can do neither: out of memory, or the
 * program gave part of the block other flags (madvise, mprotect), which
 * splits the mapping into kernel mappings that mremap does not take as one
 * (EFAULT); realloc then copies the block, as glibc does. */
void *_mm_large_realloc(mm_segment_t *seg, void *p, size_t size) {
  if (mm_large_keeps(seg->block_size, size)) return p;
  size_t mapped = mm_large_mapping(seg->block_offset, size);
  if (mapped == 0) {
    errno = ENOMEM;
    return NULL;
  }
  size_t old_block = seg->block_size;
  /* out of the checked-mode registry before the pages move: once they have,
     another thread's new mapping may start at this address */
  _mm_checked_on_unmap(seg, false);
  mm_segment_t *resized = mm_large_remap(seg, mapped);
  _mm_checked_on_map(resized != NULL ? resized : seg);
  if (resized == NULL) return NULL;
  seg = resized;
  seg->block_size = mapped - seg->block_offset;
  _mm_stats_large(0, (intptr_t)seg->block_size - (intptr_t)old_block);
  return (uint8_t *)seg + seg->block_offset;
}
