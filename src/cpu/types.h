/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: every data structure of the allocator.
 *
 * Memory comes from the OS in segments of MM_SEGMENT_SIZE bytes aligned to
 * their size, so `(p - 1) & ~(MM_SEGMENT_SIZE - 1)` finds the header of any
 * block p in O(1).  A segment belongs to one thread heap and is cut into
 * pages of one size (256 KiB for small blocks, 512 KiB for medium ones); a
 * page serves one size class and keeps two free lists (free for its owner,
 * xthread_free for other threads).  Blocks above 32 KiB take a run of whole
 * OS pages (a span) from a segment of kind MM_SEGMENT_SPAN, where free runs
 * merge.  Blocks above MM_SIZE_CLASS_MAX get a mapping of their own whose
 * first bytes are the same segment header, of kind MM_SEGMENT_LARGE.
 * docs/cpu-design.md draws the layout. */
#ifndef MM_CPU_TYPES_H
#define MM_CPU_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "size_class.h"

/* ---- geometry ---- */
#define MM_SEGMENT_SHIFT       22                               /* 4 MiB segments */
#define MM_SEGMENT_SIZE        ((uintptr_t)1 << MM_SEGMENT_SHIFT)
#define MM_SEGMENT_MASK        (MM_SEGMENT_SIZE - 1)
#define MM_SEGMENT_HEADER_SIZE ((uintptr_t)128 * 1024)          /* header + checked bitmap */
#define MM_SEGMENT_CHECK_OFFSET ((uintptr_t)64 * 1024)          /* checked-mode bitmap */
#define MM_SMALL_PAGE_SHIFT    18                               /* 256 KiB pages */
#define MM_MEDIUM_PAGE_SHIFT   19                               /* 512 KiB pages */
#define MM_SMALL_BLOCK_MAX     ((size_t)16 * 1024)              /* larger blocks use medium pages */
#define MM_MEDIUM_BLOCK_MAX    ((size_t)32 * 1024)              /* larger blocks come from spans */
#define MM_REALLOC_SPAN_MIN    ((size_t)4 * 1024)               /* realloc grows blocks from here in spans */
#define MM_MAX_PAGES           ((size_t)1 << (MM_SEGMENT_SHIFT - MM_SMALL_PAGE_SHIFT))
#define MM_LARGE_OFFSET        ((uintptr_t)4096)                /* header before a large block */
#define MM_OS_PAGE_SIZE        ((size_t)4096)
#define MM_DIRECT_MAX          ((size_t)1024)                   /* sizes served by heap->direct */
#define MM_DIRECT_COUNT        (MM_DIRECT_MAX / MM_ALIGNMENT + 1)
/* Classes above MM_DIRECT_MAX up to MM_MEDIUM_BLOCK_MAX, served by
 * heap->direct_wide by the size rounded up to 128 B, a step that every class
 * boundary there is a multiple of (size_class.h: the class of 2^n bytes is
 * 8n - 49); those up to MM_SMALL_BLOCK_MAX may name a lender's page there
 * (heap.c). */
#define MM_DIRECT_CLASS_FIRST  32                               /* 1152 B */
#define MM_DIRECT_WIDE_SHIFT   7                                /* their sizes step by multiples of 128 B */
#define MM_DIRECT_WIDE_COUNT   ((MM_MEDIUM_BLOCK_MAX >> MM_DIRECT_WIDE_SHIFT) + 1)
#define MM_DIRECT_CLASS_LENDING 32                              /* up to 16 KiB */
#define MM_MEDIUM_CLASS_FIRST  64                               /* 18 KiB: the first class above MM_SMALL_BLOCK_MAX */
#define MM_MEDIUM_CLASS_LAST   71                               /* 32 KiB: the last class served by pages */
#define MM_BORROW_CLASS_FIRST  39                               /* 2 KiB: the first class that borrows (heap.c) */
#define MM_BORROW_CLASSES      8                                /* a class borrows from up to this many classes up */
#define MM_SPAN_SHIFT          12                               /* spans are runs of 4 KiB units (OS pages) */
#define MM_SPAN_UNIT           ((size_t)1 << MM_SPAN_SHIFT)
#define MM_SPAN_UNITS          ((MM_SEGMENT_SIZE - MM_SEGMENT_HEADER_SIZE) >> MM_SPAN_SHIFT) /* 992 per segment */
#define MM_SPAN_OFFSET         ((uintptr_t)8 * 1024)            /* the units' descriptors in the header */
#define MM_SPAN_BINS           64                               /* free runs binned by length, as size classes */
#define MM_KEEP_BYTES          ((size_t)1024 * 1024)            /* kept resident by a heap's empty span segment */
#define MM_COLOR_MIN           ((size_t)2048)                   /* classes from here are padded (mm_class_stride) */
#define MM_COLOR_MAX           ((size_t)32 * 1024)              /* ... up to here */
#define MM_COLOR_PAD           ((size_t)64)                     /* one cache line */
#define MM_CACHE_LINE          ((size_t)64)
#define MM_SLOT_OS_PAGES_MAX   (((size_t)1 << MM_MEDIUM_PAGE_SHIFT) / MM_OS_PAGE_SIZE) /* OS pages in the largest page slot */

typedef struct mm_block_s mm_block_t;
typedef struct mm_page_s mm_page_t;
typedef struct mm_segment_s mm_segment_t;
typedef struct mm_heap_s mm_heap_t;

/* A free block: its first word links it into one of its page's lists. */
struct mm_block_s {
  mm_block_t *next;
};

/* xthread_free (mm_page_remote_t) packs three things in one word, changed by one CAS:
 * the list of blocks freed by other threads, their number in the bits from
 * MM_XTHREAD_COUNT_SHIFT up (addresses of segments stay below 2^48), and
 * the state below in the two low bits (blocks are 16-aligned).  The state
 * tells a freeing thread whether the owner must be told about a free on a
 * page it parked in its full queue. */
typedef enum mm_delayed_e {
  MM_DELAYED_NONE = 0,   /* page is in a class queue: remote frees just push */
  MM_DELAYED_NOTIFY = 1, /* page is full: the next remote free notifies the heap */
  MM_DELAYED_BUSY = 2,   /* a remote thread is notifying: the page must stay put */
} mm_delayed_t;
#define MM_DELAYED_MASK ((uintptr_t)3)
#define MM_XTHREAD_COUNT_SHIFT 48
#define MM_XTHREAD_COUNT_ONE   ((uintptr_t)1 << MM_XTHREAD_COUNT_SHIFT)
#define MM_XTHREAD_LIST_MASK   ((MM_XTHREAD_COUNT_ONE - 1) & ~MM_DELAYED_MASK)

/* What a thread that does not own a page touches of it: the list of its
 * remote frees and copies of the two fields that a remote free reads, on a
 * line of their own in the segment header.  The owner writes its page
 * descriptor at every malloc and free; a remote free that read or wrote
 * that line would take it out of the owner's cache every time. */
typedef struct __attribute__((aligned(64))) mm_page_remote_s {
  uintptr_t xthread_free; /* atomic: count << 48 | blocks freed by other threads | mm_delayed_t tag */
  uint8_t size_class;     /* the page's, set with it (_mm_page_init) */
  uint8_t has_aligned;    /* the page's, set before the first inner aligned address is handed out */
} mm_page_remote_t;

/* A page: blocks of one size class carved from part of a segment.  Its
 * owner reads and writes the descriptor; other threads find what they need
 * in the page's mm_page_remote_t, and read the descriptor only for the
 * block of an inner aligned address (start, stride). */
struct mm_page_s {
  mm_block_t *free;       /* blocks ready for malloc and freed by the owner (owner only, LIFO) */
  uint16_t used;          /* blocks handed out and not yet seen freed by the owner (<= reserved) */
  uint8_t size_class;     /* class index, for queues and stats */
  uint8_t index;          /* slot in its segment */
  union {
    struct {
      uint8_t in_full;     /* page sits in heap->full, not in its class queue */
      uint8_t has_aligned; /* some block was handed out by an inner aligned address */
      uint8_t in_spans;    /* pages[0] of a span segment: every free goes to span.c */
    };
    uint32_t flags;        /* any: free takes the slow path */
  };
  mm_page_remote_t *remote; /* the slot's remote side, in its segment's header (set with `index`) */
  uint32_t block_size;    /* bytes per block (0: slot is not in use) */
  uint32_t stride;        /* distance between blocks: block_size, padded from MM_COLOR_MIN */
  uint8_t *start;         /* first block */
  uint16_t capacity;      /* blocks linked into the free lists so far (grows lazily) */
  uint16_t reserved;      /* blocks that fit in the page */
  int32_t used_counted;   /* the part of `used` already in the heap's statistics (stats.c) */
  mm_page_t *next;        /* neighbours in the heap queue the page sits in */
  mm_page_t *prev;
};

/* The OS pages a live page gave back while its blocks there were free
 * (shrink.c).  The blocks that start in such an OS page are free and on no
 * list; the page links them again, before it carves further, when its free
 * list runs dry. */
typedef struct mm_page_shrunk_s {
  uint64_t os_pages[MM_SLOT_OS_PAGES_MAX / 64]; /* bit i: the slot's OS page i went back */
  uint32_t held_out;      /* blocks so kept off the lists */
  uint32_t free_left;     /* bytes of free blocks the last shrink left resident */
  uint16_t unshrinks;     /* times it linked held-out blocks again */
  uint16_t unshrinks_seen; /* `unshrinks` when a give-back last looked at the page */
  uint8_t rest;           /* give-backs that pass the page by from now */
  uint8_t rest_next;      /* ... after the next time it takes back what it gave (doubles up to a cap) */
} mm_page_shrunk_t;

/* What the memory of a page slot holds, whichever page uses it (page.c):
 * kept while the segment stays resident. */
typedef struct mm_slot_memory_s {
  uint32_t touched;       /* bytes from the slot's start ever carved since the segment was set up */
  uint32_t purged_from;   /* [purged_from, purged_to): went back while the slot was free */
  uint32_t purged_to;
  uint32_t emptied_back;  /* ms (the clock's low 32 bits, 0: never): when its page last gave all back as it
                             emptied (purge.c) */
} mm_slot_memory_t;

typedef enum mm_segment_kind_e {
  MM_SEGMENT_SMALL = 0,  /* 256 KiB pages */
  MM_SEGMENT_MEDIUM = 1, /* 512 KiB pages */
  MM_SEGMENT_SPAN = 2,   /* runs of 4 KiB units (span.c) */
  MM_SEGMENT_LARGE = 3,  /* one block with its own mapping */
} mm_segment_kind_t;
#define MM_PAGE_KINDS 2          /* kinds a heap carves pages from */
#define MM_SEGMENT_KINDS_CARVED 3 /* kinds of 4 MiB segments (all but large) */

/* One 4 KiB unit of a span segment.  The first and the last unit of a run
 * describe it, so that a freed run finds both neighbours; a free run's
 * first unit also links it into its heap's bin.  Inner units are stale. */
typedef struct mm_span_s mm_span_t;
struct mm_span_s {
  mm_span_t *next;        /* neighbours in heap->span_bins (free runs, first unit) */
  mm_span_t *prev;
  uint32_t units;         /* length of the run */
  uint16_t free;          /* the run is free */
  uint16_t resident;      /* free run, first unit: at most this many of its units are resident */
};

/* Segment header, at the start of every segment and every large mapping.
 * The fields the free fast path reads come first so that a large block's
 * header fits in the MM_LARGE_OFFSET bytes before it (checked in segment.c). */
struct mm_segment_s {
  mm_heap_t *heap;        /* owner heap, compared with the thread's heap on free
                             (NULL for large blocks and cached segments: never matches) */
  uint32_t page_shift;    /* log2 of the page size; 63 for large blocks (one page) */
  uint32_t kind;          /* mm_segment_kind_t */
  size_t mapped_size;     /* bytes of the mapping that starts here */
  size_t block_size;      /* large: usable bytes of the block */
  uintptr_t block_offset; /* large: distance from the header to the block */
  uint64_t free_pages;    /* bit i set: page slot i is free */
  uint32_t page_count;    /* slots in this segment */
  uint32_t used_pages;    /* slots in use (span: runs in use) */
  uint32_t span_touched;  /* span: units from here on were not touched since the last purge */
  mm_segment_t *next;     /* neighbours in heap->segments[kind] (segments with free slots) */
  mm_segment_t *prev;
  bool in_queue;          /* listed in heap->segments[kind] */
  mm_page_t pages[MM_MAX_PAGES]; /* large blocks: only pages[0] exists, never written */
  mm_slot_memory_t slot_memory[MM_MAX_PAGES]; /* (page.c) */
  mm_page_shrunk_t page_shrunk[MM_MAX_PAGES]; /* what each live page gave back (shrink.c) */
  mm_page_remote_t remote[MM_MAX_PAGES]; /* what other threads touch of each page (page.c) */
  uint64_t purge_at;      /* retired, or a heap's empty span segment: when (ms, _mm_os_clock_ms)
                             its memory may go back to the OS if still unused (segment.c) */
};

/* A doubly linked list of pages; `first` is where malloc takes blocks. */
typedef struct mm_page_queue_s {
  mm_page_t *first;
  mm_page_t *last;
} mm_page_queue_t;

/* A heap's part in giving memory back to the OS (purge.c): the growth it
 * has to match, the peak test, the time budget of shrinking pages and the
 * timer of memory that goes back after a delay. */
typedef struct mm_purge_s {
  uintptr_t grown;        /* 4 KiB units taken afresh since the last give-back */
  uintptr_t refaulted;    /* units given back and faulted in again since then */
  uintptr_t in_use_high;  /* the most bytes in use seen at a give-back */
  uint32_t give_backs;    /* give-backs of growth so far */
  uint32_t high_rose_at;  /* give_backs when in_use_high last rose */
  intptr_t budget;        /* 4 KiB units pages may still give back now */
  uint64_t budget_at;     /* ms: when the budget last grew; 0: never */
  uint64_t due;           /* ms: when some of the heap's memory is next due to go back; 0: none */
  uintptr_t owed;         /* units of growth that free spans match once the delay is over (many threads) */
  uint64_t owed_since;    /* ms: when the oldest of `owed` grew; 0: nothing owed */
  bool kept_waiting;      /* an emptied kept page waits out the delay before it gives back */
} mm_purge_t;

/* Per-thread statistics, summed over all heaps on demand. */
typedef struct mm_heap_stats_s {
  intptr_t blocks[MM_SIZE_CLASS_COUNT]; /* live blocks of this heap's pages as last counted (stats.c),
                                           minus blocks of other heaps freed by this thread */
  intptr_t pages[MM_SIZE_CLASS_COUNT];  /* pages in use per class */
} mm_heap_stats_t;

/* A thread heap: the thread-local cache and the pages and segments it owns.
 * Owned by one thread at a time; when that thread exits, the heap is
 * orphaned whole and adopted by the next new thread. */
struct mm_heap_s {
  mm_page_t *direct[MM_DIRECT_COUNT];          /* size/16 -> page to malloc from (fast path) */
  mm_page_t *direct_wide[MM_DIRECT_WIDE_COUNT]; /* ceil(size/128) -> page, 1-32 KiB (fast path; heap.c) */
  uint32_t borrowing;                          /* bit i (< MM_DIRECT_CLASS_LENDING): class MM_DIRECT_CLASS_FIRST + i's
                                                  direct_wide entries name a larger class's page (heap.c) */
  mm_page_queue_t queues[MM_SIZE_CLASS_COUNT]; /* pages with (possibly) free blocks, per class */
  mm_page_queue_t full;                        /* pages found full; remote frees notify */
  uintptr_t delayed_free;                      /* atomic: blocks freed remotely into full pages */
  mm_segment_t *segments[MM_PAGE_KINDS];       /* segments with free page slots, per kind */
  mm_span_t *span_bins[MM_SPAN_BINS];          /* free runs of span segments, by length */
  uint64_t span_bin_mask;                      /* bit b set: span_bins[b] is not empty */
  mm_segment_t *span_empty;                    /* a span segment with no run in use, kept */
  uintptr_t span_segments;                     /* span segments owned */
  uintptr_t span_resident;                     /* units of free runs that may be resident */
  uint32_t shrink_class;                       /* where the next shrink of pages starts (shrink.c) */
  mm_segment_t *retired;                       /* segments that emptied, newest first, not purged yet (segment.c) */
  uint32_t retired_count;
  mm_purge_t purge;                            /* what the heap gives back to the OS, and when (purge.c) */
  mm_heap_stats_t stats;
  mm_heap_t *all_next;                         /* link in the list of all heaps (never removed) */
};

#endif /* MM_CPU_TYPES_H */
