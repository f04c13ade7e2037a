/* SPDX-License-Identifier: Apache-2.0 */
/* meta.h: the kernel pool. Every piece of scheduler and worker metadata
 * (trie nodes, slab descriptors) is a 64-byte cell of this pool, named by a
 * 32-bit index, in private memory apart from the global space. Its own
 * bookkeeping is a chunk table and a free list threaded through free cells,
 * so it needs no trie and no bootstrap. */
#ifndef MMD_META_H
#define MMD_META_H

#include <stddef.h>
#include <stdint.h>

#define MMD_CELL_SIZE        64
#define MMD_CELL_CHUNK_SHIFT 14                       /* 16384 cells = 1 MiB a chunk */
#define MMD_CELL_CHUNK_CELLS (1u << MMD_CELL_CHUNK_SHIFT)
#define MMD_CELL_MAX_CHUNKS  (1u << 16)               /* 2^30 cells, 64 GiB of metadata */

typedef uint32_t mmd_cell_t;                          /* 0 is no cell */

typedef struct mmd_meta {
  unsigned char **chunk;  /* chunk[i]: MMD_CELL_CHUNK_CELLS cells, mapped on demand */
  uint32_t nchunks;       /* chunks mapped */
  uint32_t next_fresh;    /* first never-used cell */
  mmd_cell_t free_list;   /* freed cells, linked through their first 4 bytes */
  uint64_t live;          /* cells in use */
} mmd_meta_t;

void mmd_meta_init(mmd_meta_t *m);
void mmd_meta_destroy(mmd_meta_t *m);          /* unmaps every chunk */
mmd_cell_t mmd_meta_alloc(mmd_meta_t *m);      /* a zeroed cell, or 0 when out of memory */
void mmd_meta_free(mmd_meta_t *m, mmd_cell_t cell);

static inline void *mmd_cell(const mmd_meta_t *m, mmd_cell_t cell) {
  return m->chunk[cell >> MMD_CELL_CHUNK_SHIFT] +
         (size_t)(cell & (MMD_CELL_CHUNK_CELLS - 1)) * MMD_CELL_SIZE;
}

#endif
