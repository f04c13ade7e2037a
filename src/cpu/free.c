/* manymalloc cpu: free and its slow path.
 *
 * The fast path (mm_free_inline in internal.h) pushes the block on its
 * page's free list when the calling thread owns the segment.  Here:
 * frees into full pages, frees from other threads (or from a thread whose
 * heap is gone) and large blocks.
 *
 * Remote frees of small blocks are batched per page: frees into the same
 * foreign page are linked locally and pushed with one CAS, MM_REMOTE_BATCH
 * at a time.  The CAS pulls the page's first cache line (which the owner
 * writes on every malloc) away from the owner, so a consumer freeing a
 * producer's blocks pays that once per batch, not once per block.  A thread
 * batches for MM_REMOTE_SLOTS pages at once (a slot per page address hash,
 * so frees of mixed classes batch too) and so holds at most
 * MM_REMOTE_SLOTS * MM_REMOTE_BATCH blocks of at most MM_REMOTE_BLOCK_MAX
 * bytes; all are pushed when the thread needs a new page, at its exit and
 * in mm_collect. */
#include "internal.h"

static void mm_free_remote_push(mm_remote_batch_t *batch) {
  mm_page_free_remote(batch->page, batch->head, batch->tail);
  batch->page = NULL;
  batch->count = 0;
}

void mm_free_remote_flush(mm_heap_t *heap) {
  for (size_t i = 0; i < MM_REMOTE_SLOTS; i++)
    if (heap->remote[i].page != NULL) mm_free_remote_push(&heap->remote[i]);
}

static void mm_free_remote(mm_heap_t *heap, mm_page_t *page, mm_block_t *block) {
  /* a thread that only frees gets a heap too, to batch and count in */
  if (heap == &mm_heap_empty) heap = mm_thread_init_on_free();
  if (heap == NULL || page->block_size > MM_REMOTE_BLOCK_MAX) {
    unsigned size_class = page->size_class;
    mm_page_free_remote(page, block, block);
    if (heap != NULL) heap->stats.blocks[size_class]--;
    else mm_stats_orphan_free(size_class);
    return;
  }
  heap->stats.blocks[page->size_class]--;
  mm_remote_batch_t *batch = &heap->remote[((uintptr_t)page / sizeof(mm_page_t)) % MM_REMOTE_SLOTS];
  if (batch->page != page) {
    if (batch->page != NULL) mm_free_remote_push(batch);
    batch->page = page;
    batch->tail = block;
    block->next = NULL;
  } else {
    block->next = batch->head;
  }
  batch->head = block;
  if (++batch->count == MM_REMOTE_BATCH) mm_free_remote_push(batch);
}

void mm_free_generic(mm_segment_t *seg, mm_page_t *page, void *p) {
  mm_heap_t *heap = mm_heap_tls;
  if (seg->kind == MM_SEGMENT_LARGE) {
    mm_large_free(seg);
  } else if (seg->heap == heap) {
    mm_page_free_local_slow(seg, page, (mm_block_t *)p);
  } else {
    mm_free_remote(heap, page, (mm_block_t *)p);
  }
}

MM_EXPORT void mm_free(void *p) {
  mm_free_inline(p);
}
