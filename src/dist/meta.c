/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc dist: the kernel pool (meta.h).
 *
 * Owns the chunk table, the chunks of 64-byte cells behind it and the free
 * list threaded through freed cells.  Memory comes straight from mmap, so
 * the pool depends on nothing else in the allocator.  Cells are handed out
 * from the free list first (warm in cache), then from the never-used tail;
 * a chunk is mapped only when that tail first reaches it. */
#define _GNU_SOURCE
#include <assert.h>
#include <string.h>
#include <sys/mman.h>

#include "meta.h"

#define MMD_CHUNK_BYTES ((size_t)MMD_CELL_CHUNK_CELLS * MMD_CELL_SIZE)
#define MMD_TABLE_BYTES ((size_t)MMD_CELL_MAX_CHUNKS * sizeof(unsigned char *))

/* Zeroed, page-aligned memory (so cells are 64-byte aligned), or NULL. */
static void *mmd_os_map(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void mmd_meta_init(mmd_meta_t *m) {
  memset(m, 0, sizeof(*m));
  m->next_fresh = 1;  /* cell 0 means "no cell", so it is never handed out */
}

void mmd_meta_destroy(mmd_meta_t *m) {
  for (uint32_t i = 0; i < m->nchunks; i++) munmap(m->chunk[i], MMD_CHUNK_BYTES);
  if (m->chunk != NULL) munmap(m->chunk, MMD_TABLE_BYTES);
  mmd_meta_init(m);
}

/* Maps the chunk that holds cell next_fresh.  The table is mapped on first
 * use: untouched pages of it cost nothing, and a pool that never allocates
 * maps nothing at all. */
static int mmd_meta_grow(mmd_meta_t *m) {
  if (m->chunk == NULL) {
    m->chunk = mmd_os_map(MMD_TABLE_BYTES);
    if (m->chunk == NULL) return -1;
  }
  unsigned char *c = mmd_os_map(MMD_CHUNK_BYTES);
  if (c == NULL) return -1;
  m->chunk[m->nchunks++] = c;
  return 0;
}

mmd_cell_t mmd_meta_alloc(mmd_meta_t *m) {
  mmd_cell_t cell = m->free_list;
  if (cell != 0) {
    void *p = mmd_cell(m, cell);
    memcpy(&m->free_list, p, sizeof(mmd_cell_t));
    memset(p, 0, MMD_CELL_SIZE);
  } else {
    /* Fresh cells come zeroed from mmap. */
    uint32_t ci = m->next_fresh >> MMD_CELL_CHUNK_SHIFT;
    if (ci >= MMD_CELL_MAX_CHUNKS) return 0;
    if (ci >= m->nchunks && mmd_meta_grow(m) != 0) return 0;
    cell = m->next_fresh++;
  }
  m->live++;
  return cell;
}

void mmd_meta_free(mmd_meta_t *m, mmd_cell_t cell) {
  assert(cell != 0 && cell < m->next_fresh && m->live > 0);
  memcpy(mmd_cell(m, cell), &m->free_list, sizeof(mmd_cell_t));
  m->free_list = cell;
  m->live--;
}
