/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: live-block index and payload patterns (see check.h). */
#include "check.h"
#include "mapping.h"

#include <string.h>

/* ---------------------------------------------------------------------------
 * Live-block index: a treap keyed by block start address
 * ------------------------------------------------------------------------- */

static uint32_t check_hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

void check_index_init(check_index_t *ix, size_t num_ids) {
  ix->nodes   = mapping_alloc(num_ids * sizeof(check_node_t));
  ix->num_ids = num_ids;
  ix->root    = -1;
}

void check_index_done(check_index_t *ix) {
  mapping_free(ix->nodes, ix->num_ids * sizeof(check_node_t));
  ix->nodes = NULL;
}

/* Splits tree `t` into the nodes with lo < key (*l) and lo >= key (*r). */
static void check_split(check_node_t *n, int32_t t, uintptr_t key, int32_t *l, int32_t *r) {
  if (t < 0) {
    *l = *r = -1;
  } else if (n[t].lo < key) {
    check_split(n, n[t].right, key, &n[t].right, r);
    *l = t;
  } else {
    check_split(n, n[t].left, key, l, &n[t].left);
    *r = t;
  }
}

/* Joins two trees where every key of `l` is below every key of `r`. */
static int32_t check_merge(check_node_t *n, int32_t l, int32_t r) {
  if (l < 0) return r;
  if (r < 0) return l;
  if (n[l].prio > n[r].prio) {
    n[l].right = check_merge(n, n[l].right, r);
    return l;
  }
  n[r].left = check_merge(n, l, n[r].left);
  return r;
}

static int32_t check_rightmost(const check_node_t *n, int32_t t) {
  while (t >= 0 && n[t].right >= 0) t = n[t].right;
  return t;
}

static int32_t check_leftmost(const check_node_t *n, int32_t t) {
  while (t >= 0 && n[t].left >= 0) t = n[t].left;
  return t;
}

int64_t check_index_insert(check_index_t *ix, uint32_t id, const void *p, size_t size) {
  check_node_t *n = ix->nodes;
  uintptr_t lo = (uintptr_t)p, hi = lo + (size ? size : 1);
  int32_t l, r;
  check_split(n, ix->root, lo, &l, &r);
  int32_t below = check_rightmost(n, l), above = check_leftmost(n, r);
  int64_t clash = -1;
  if (below >= 0 && n[below].hi > lo) clash = below;
  if (above >= 0 && n[above].lo < hi) clash = above;
  if (clash < 0) {
    n[id] = (check_node_t){.lo = lo, .hi = hi, .left = -1, .right = -1, .prio = check_hash32(id)};
    l = check_merge(n, l, (int32_t)id);
  }
  ix->root = check_merge(n, l, r);
  return clash;
}

void check_index_remove(check_index_t *ix, uint32_t id) {
  check_node_t *n = ix->nodes;
  int32_t l, mid, r;
  check_split(n, ix->root, n[id].lo, &l, &r);
  check_split(n, r, n[id].lo + 1, &mid, &r);
  ix->root = check_merge(n, l, r);
}

/* ---------------------------------------------------------------------------
 * Payload patterns
 * ------------------------------------------------------------------------- */

/* Blocks up to this size are patterned in full, larger ones sampled: the
 * first and last 64 bytes and one word every 4 KiB page. */
#define CHECK_FULL_MAX  (256 * 1024)
#define CHECK_EDGE      64
#define CHECK_STRIDE    4096

uint64_t check_seed(unsigned thread, uint32_t id) {
  return ((uint64_t)thread << 32 | id) * 0x9e3779b97f4a7c15ULL + 1;
}

static uint64_t check_word(uint64_t seed, size_t word) {
  uint64_t x = seed ^ (word * 0xd6e8feb86659fd93ULL);
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  return x ^ (x >> 29);
}

static uint8_t check_byte(uint64_t seed, size_t off) {
  return (uint8_t)(check_word(seed, off / 8) >> (8 * (off % 8)));
}

/* Writes (verify == 0) or verifies the pattern on bytes [from, to); returns
 * the first wrong offset or SIZE_MAX. Whole words go through memcpy because
 * `from` is word aligned only for the full and strided spans. */
static size_t check_span(uint8_t *p, uint64_t seed, size_t from, size_t to, int verify) {
  size_t off = from;
  for (; off < to && (off % 8 != 0); off++) {
    if (!verify) p[off] = check_byte(seed, off);
    else if (p[off] != check_byte(seed, off)) return off;
  }
  for (; off + 8 <= to; off += 8) {
    uint64_t w = check_word(seed, off / 8), have;
    if (!verify) { memcpy(p + off, &w, 8); continue; }
    memcpy(&have, p + off, 8);
    if (have != w) break;
  }
  for (; off < to; off++) {
    if (!verify) p[off] = check_byte(seed, off);
    else if (p[off] != check_byte(seed, off)) return off;
  }
  return SIZE_MAX;
}

/* Walks the patterned spans of a `size`-byte block clipped to `limit`. */
static size_t check_walk(uint8_t *p, uint64_t seed, size_t size, size_t limit, int verify) {
  if (size <= CHECK_FULL_MAX) return check_span(p, seed, 0, size < limit ? size : limit, verify);
  size_t bad = check_span(p, seed, 0, CHECK_EDGE < limit ? CHECK_EDGE : limit, verify);
  for (size_t off = CHECK_STRIDE; bad == SIZE_MAX && off + 8 <= size - CHECK_EDGE; off += CHECK_STRIDE)
    if (off + 8 <= limit) bad = check_span(p, seed, off, off + 8, verify);
  if (bad == SIZE_MAX && size <= limit) bad = check_span(p, seed, size - CHECK_EDGE, size, verify);
  return bad;
}

void check_fill(void *p, uint64_t seed, size_t size) {
  check_walk(p, seed, size, size, 0);
}

size_t check_verify(const void *p, uint64_t seed, size_t size, size_t limit) {
  return check_walk((uint8_t *)p, seed, size, limit, 1);
}
