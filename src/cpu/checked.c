/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: checked mode (MANYMALLOC_CHECKED=1).
 *
 * A registry over the whole address space, one bit per segment-sized unit,
 * says which units start one of our mappings (a second bit: a large block
 * that was freed, to tell a double free from a wild pointer).  Inside a
 * segment, one bit per 16 bytes says which blocks are allocated; malloc
 * sets it on the slow path (checked mode sends every malloc there) and
 * free clears it atomically, so double frees are caught even when they race
 * on different threads.  Off, this file costs one predictable branch in free. */
#include <stdlib.h>
#include <unistd.h>

#include "common/bitmap.h"
#include "internal.h"

#define MM_ADDRESS_BITS 48
#define MM_REGISTRY_BITS ((uintptr_t)1 << (MM_ADDRESS_BITS - MM_SEGMENT_SHIFT))

static uintptr_t *mm_registry_mapped; /* unit starts a live mapping of ours */
static uintptr_t *mm_registry_freed;  /* unit started a large block since freed */

void _mm_checked_init(void) {
  if (!_mm_options.checked) return;
  size_t bytes = MM_REGISTRY_BITS / 8;
  mm_registry_mapped = _mm_os_reserve(2 * bytes);
  if (mm_registry_mapped == NULL) {
    _mm_options.checked = false; /* no address space for the registry */
    return;
  }
  mm_registry_freed = mm_registry_mapped + bytes / sizeof(uintptr_t);
}

static size_t mm_registry_unit(const void *seg) {
  return ((uintptr_t)seg >> MM_SEGMENT_SHIFT) & (MM_REGISTRY_BITS - 1);
}

void _mm_checked_on_map(mm_segment_t *seg) {
  if (!_mm_options.checked) return;
  mm_bitmap_clear(mm_registry_freed, mm_registry_unit(seg));
  mm_bitmap_set(mm_registry_mapped, mm_registry_unit(seg));
}

void _mm_checked_on_unmap(mm_segment_t *seg, bool large_block) {
  if (!_mm_options.checked) return;
  mm_bitmap_clear(mm_registry_mapped, mm_registry_unit(seg));
  if (large_block) mm_bitmap_set(mm_registry_freed, mm_registry_unit(seg));
}

static uintptr_t *mm_checked_bits(mm_segment_t *seg) {
  return (uintptr_t *)((uint8_t *)seg + MM_SEGMENT_CHECK_OFFSET);
}

static size_t mm_checked_bit(mm_segment_t *seg, const void *p) {
  return ((uintptr_t)p - (uintptr_t)seg) / MM_ALIGNMENT;
}

/* The block handed out at `block` is handed out at p inside it instead. */
void _mm_checked_on_aligned(mm_segment_t *seg, void *block, void *p) {
  mm_bitmap_clear(mm_checked_bits(seg), mm_checked_bit(seg, block));
  mm_bitmap_set(mm_checked_bits(seg), mm_checked_bit(seg, p));
}

void _mm_checked_on_malloc(mm_segment_t *seg, void *p) {
  mm_bitmap_set(mm_checked_bits(seg), mm_checked_bit(seg, p));
}

/* ---------------------------------------------------------------------------
 * Reporting: write(2) only, so that a corrupted heap cannot get in the way
 * ------------------------------------------------------------------------- */

void _mm_fatal_pointer(const char *what, const void *p) {
  char buf[128];
  size_t n = 0;
  const char *prefix = "manymalloc: ";
  for (const char *s = prefix; *s; s++) buf[n++] = *s;
  for (const char *s = what; *s && n < 80; s++) buf[n++] = *s;
  buf[n++] = ' ';
  buf[n++] = '0';
  buf[n++] = 'x';
  uintptr_t v = (uintptr_t)p;
  int digits = 1;
  while (digits < 16 && (v >> (4 * digits)) != 0) digits++;
  for (int i = digits - 1; i >= 0; i--) buf[n++] = "0123456789abcdef"[(v >> (4 * i)) & 15];
  buf[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, n);
  (void)ignored;
  abort();
}

/* A broken invariant (MM_ASSERT, in the sanitizer and debug builds). */
void _mm_assert_fail(const char *cond, const char *file, int line) {
  char buf[256];
  int n = snprintf(buf, sizeof buf, "manymalloc: assertion failed: %s (%s:%d)\n", cond, file, line);
  ssize_t ignored = write(STDERR_FILENO, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
  (void)ignored;
  abort();
}

/* ---------------------------------------------------------------------------
 * Validation of a pointer passed to free
 * ------------------------------------------------------------------------- */

/* The verdicts, worded for free or for realloc. */
typedef struct mm_checked_words_s {
  const char *invalid;
  const char *freed;
} mm_checked_words_t;

static const mm_checked_words_t mm_checked_free_words = {"free of invalid pointer", "double free of pointer"};
static const mm_checked_words_t mm_checked_realloc_words = {"realloc of invalid pointer", "realloc of freed pointer"};

/* Aborts with a message unless p is a live block of ours; with `release`
 * also marks it free, atomically, so that racing double frees are caught. */
static mm_segment_t *mm_checked_validate(const void *p, bool release, const mm_checked_words_t *words) {
  if (((uintptr_t)p & (MM_ALIGNMENT - 1)) != 0) _mm_fatal_pointer(words->invalid, p);
  mm_segment_t *seg = mm_segment_of(p);
  size_t unit = mm_registry_unit(seg);
  if (!mm_bitmap_test(mm_registry_mapped, unit)) {
    if (mm_bitmap_test(mm_registry_freed, unit)) _mm_fatal_pointer(words->freed, p);
    _mm_fatal_pointer(words->invalid, p);
  }
  if (seg->kind == MM_SEGMENT_LARGE) {
    if ((uintptr_t)p != (uintptr_t)seg + seg->block_offset) _mm_fatal_pointer(words->invalid, p);
    return seg;
  }
  if (seg->heap == NULL || (uintptr_t)p - (uintptr_t)seg < MM_SEGMENT_HEADER_SIZE) _mm_fatal_pointer(words->invalid, p);
  if (seg->kind == MM_SEGMENT_SPAN) {
    /* runs start on units; the bitmap tells a live one from anything else */
    if (((uintptr_t)p & (MM_SPAN_UNIT - 1)) != 0) _mm_fatal_pointer(words->invalid, p);
  } else {
    mm_page_t *page = mm_segment_page_of(seg, p);
    uintptr_t offset = (uintptr_t)p - (uintptr_t)page->start;
    if (page->block_size == 0 || (uintptr_t)p < (uintptr_t)page->start || offset / page->stride >= page->capacity ||
        (offset % page->stride != 0 && !page->has_aligned) || offset % page->stride >= page->block_size)
      _mm_fatal_pointer(words->invalid, p);
  }
  size_t bit = mm_checked_bit(seg, p);
  bool live = release ? mm_bitmap_clear(mm_checked_bits(seg), bit) : mm_bitmap_test(mm_checked_bits(seg), bit);
  if (!live) _mm_fatal_pointer(words->freed, p);
  return seg;
}

/* Frees p, or aborts with a message unless it is a live block of ours. */
void _mm_checked_free(void *p) {
  if (p == NULL) return;
  mm_segment_t *seg = mm_checked_validate(p, true, &mm_checked_free_words);
  _mm_free_generic(seg, mm_segment_page_of(seg, p), p);
}

/* Aborts with a message unless p (not NULL) is a live block of ours. */
void _mm_checked_realloc(const void *p) {
  mm_checked_validate(p, false, &mm_checked_realloc_words);
}
