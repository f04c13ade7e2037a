/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc common: bounded lock-free MPMC FIFO with per-slot sequence numbers.
 *
 * Vyukov's bounded queue, the design of XMalloc's FIFO buffer: slot i holds a
 * sequence number that says whose turn it is (an enqueuer at position p waits
 * for seq == 2p, a dequeuer for seq == 2p + 1; the factor 2 keeps "full at
 * lap k" apart from "free at lap k + 1" even with a single slot).  Positions
 * only grow, so a slot is never mistaken for an older use of itself:
 * ABA-safe by construction, no tagged pointers, no memory reclamation
 * problem.  Capacity may be any count, 0 included (positions are reduced
 * modulo it); storage is supplied by the caller.
 * Push fails when full and pop when empty; neither ever blocks. */
#ifndef MM_COMMON_SEQ_FIFO_H
#define MM_COMMON_SEQ_FIFO_H

#include "common/atomic.h"

typedef struct mm_fifo_cell_s {
  uintptr_t seq;   /* turn of this slot: 2p free for position p, 2p + 1 holding it */
  uintptr_t value; /* payload, published by the release store of seq */
} mm_fifo_cell_t;

typedef struct mm_seq_fifo_s {
  mm_fifo_cell_t *cells; /* caller-owned storage of `capacity` cells */
  uintptr_t capacity;
  uintptr_t enqueue_pos __attribute__((aligned(64))); /* next position to fill */
  uintptr_t dequeue_pos __attribute__((aligned(64))); /* next position to drain */
} mm_seq_fifo_t;

static inline void mm_seq_fifo_init(mm_seq_fifo_t *q, mm_fifo_cell_t *cells, uintptr_t capacity) {
  q->cells = cells;
  q->capacity = capacity;
  for (uintptr_t i = 0; i < capacity; i++) mm_atomic_store_relaxed(&cells[i].seq, 2 * i);
  mm_atomic_store_relaxed(&q->enqueue_pos, 0);
  mm_atomic_store_release(&q->dequeue_pos, 0);
}

/* Appends `value`; false when the queue is full (or has no capacity). */
static inline bool mm_seq_fifo_push(mm_seq_fifo_t *q, uintptr_t value) {
  if (q->capacity == 0) return false;
  uintptr_t pos = mm_atomic_load_relaxed(&q->enqueue_pos);
  for (;;) {
    mm_fifo_cell_t *cell = &q->cells[pos % q->capacity];
    intptr_t diff = (intptr_t)(mm_atomic_load_acquire(&cell->seq) - 2 * pos);
    if (diff == 0) {
      if (mm_atomic_cas(&q->enqueue_pos, &pos, pos + 1)) {
        cell->value = value;
        mm_atomic_store_release(&cell->seq, 2 * pos + 1);
        return true;
      }
    } else if (diff < 0) {
      return false; /* the slot still holds the value of the previous lap */
    } else {
      pos = mm_atomic_load_relaxed(&q->enqueue_pos);
    }
  }
}

/* Removes the oldest value into *out; false when the queue is empty. */
static inline bool mm_seq_fifo_pop(mm_seq_fifo_t *q, uintptr_t *out) {
  if (q->capacity == 0) return false;
  uintptr_t pos = mm_atomic_load_relaxed(&q->dequeue_pos);
  for (;;) {
    mm_fifo_cell_t *cell = &q->cells[pos % q->capacity];
    intptr_t diff = (intptr_t)(mm_atomic_load_acquire(&cell->seq) - (2 * pos + 1));
    if (diff == 0) {
      if (mm_atomic_cas(&q->dequeue_pos, &pos, pos + 1)) {
        *out = cell->value;
        mm_atomic_store_release(&cell->seq, 2 * (pos + q->capacity));
        return true;
      }
    } else if (diff < 0) {
      return false; /* nothing published at this position yet */
    } else {
      pos = mm_atomic_load_relaxed(&q->dequeue_pos);
    }
  }
}

#endif /* MM_COMMON_SEQ_FIFO_H */
