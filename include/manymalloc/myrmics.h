/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc/myrmics.h: the distributed region allocator (dist/), the API of
 * the Myrmics paper's Fig. 1 over Open MPI.
 *
 * A program defines myrmics_main() and links libmanymalloc_dist; the library's
 * main() starts MPI, makes some ranks schedulers (one by default; a tree
 * shaped by MANYMALLOC_SCHEDULERS) and runs myrmics_main() on every other
 * rank (a worker):
 *
 *     mpirun -np 5 ./app                                  # 1 scheduler, 4 workers
 *     MANYMALLOC_SCHEDULERS=1,4 mpirun -np 69 ./app       # 1 top + 4 leaves, 64 workers
 *
 * A program with its own main() calls sys_init() and sys_finalize() instead;
 * on scheduler ranks sys_init() serves until every worker has finished and
 * then returns 1, on workers it returns 0.
 *
 * Every object lives in a region; region 0 is the root, which always exists.
 * Objects have the same address in every worker, so a structure built of
 * pointers and sent with sys_send() is traversed on the receiver as it is.
 *
 * Calls returning int return 0 (or a count where said) on success and a
 * negative SYS_ERR_* code on failure; calls returning a pointer or a region
 * ID return NULL or a negative code, and sys_last_error() gives the code.
 * Every failure also prints one line on stderr naming the call and its
 * argument, unless MANYMALLOC_DIST_QUIET=1. No error is fatal: the
 * allocator keeps serving and nothing already allocated is affected.
 */
#ifndef MANYMALLOC_MYRMICS_H
#define MANYMALLOC_MYRMICS_H

#include <stddef.h>
#include <stdint.h>
/* The C API only: the deprecated MPI C++ bindings cannot sit inside extern "C". */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A region ID: 0 is the root region; negative values are error codes. */
typedef int64_t rid_t;

/* Fills the unused tail of sys_recv()'s region array. */
#define SYS_NO_REGION ((rid_t)INT64_MIN)

/* ---- error codes (sys_strerror names them) ------------------------------ */
#define SYS_OK              0
#define SYS_ERR_ARG        -1  /* an argument is out of range (size, count, NULL array) */
#define SYS_ERR_NOMEM      -2  /* the global address space is exhausted */
#define SYS_ERR_NOREGION   -3  /* the region does not exist or was freed */
#define SYS_ERR_NOTGLOBAL  -4  /* the pointer is outside the global address space */
#define SYS_ERR_NOTOBJECT  -5  /* the pointer is not the start of an object */
#define SYS_ERR_FREED      -6  /* the object is not live: already freed, or never allocated */
#define SYS_ERR_TRUNCATE   -7  /* sys_recv()'s arrays are too small for what arrived */
#define SYS_ERR_PEER       -8  /* no such worker (or the caller itself), or the peer's matching call failed */
#define SYS_ERR_NOIDS      -9  /* region IDs are exhausted */
#define SYS_ERR_STATE     -10  /* not initialized, finalized, or called on a scheduler */
#define SYS_ERR_MPI       -11  /* an MPI call failed */
#define SYS_ERR_ROOT      -12  /* the root region cannot be freed or forgotten */

/* ---- start and end ------------------------------------------------------ */

/* Defined by the program when the library provides main(). Its return value
 * becomes the worker's exit status. */
int myrmics_main(int argc, char **argv);

/* Starts MPI (unless already started), reserves the global address space
 * and assigns roles. Returns 0 on a worker; on a scheduler it serves until
 * every worker has called sys_finalize() and returns 1; negative on error
 * (too few ranks for the layout, space not reservable). */
int sys_init(int *argc, char ***argv);

/* Ends this process's part: a worker tells its scheduler it is done; MPI is
 * finalized if sys_init() started it. Returns 0 or a negative code. */
int sys_finalize(void);

/* A communicator of the workers only, ordered by worker ID, for the
 * program's own MPI calls. MPI_COMM_NULL on schedulers. */
MPI_Comm sys_worker_comm(void);

int sys_worker_id(void);    /* 0 .. sys_num_workers()-1; SYS_ERR_STATE on a scheduler */
int sys_num_workers(void);

/* ---- regions ------------------------------------------------------------ */

/* A new region under parent (0: the root). level_hint places it in the
 * scheduler tree (MANYMALLOC_SCHEDULERS): 1 is the top scheduler, 2 the
 * level below, and so on; 0 or negative (no hint) and values past the
 * last level mean the leaf schedulers, next to the workers. A region never
 * lives above its parent's scheduler. Returns its ID, or
 * SYS_ERR_NOREGION (no such parent), SYS_ERR_NOIDS, SYS_ERR_NOMEM. */
rid_t sys_ralloc(rid_t parent, int level_hint);

/* Frees the region, every object in it and all its sub-regions, at a cost
 * that does not depend on the number of objects. Its memory is then free in
 * every worker: the copies other workers received may be given back to the
 * OS (read as zeros) from their next call on (within
 * MANYMALLOC_DIST_RETAIN_MS), so free a region only once no worker still
 * reads its copy. Returns 0, SYS_ERR_NOREGION (unknown or
 * already freed) or SYS_ERR_ROOT. */
int sys_rfree(rid_t region);

/* Drops this worker's copy of a region's memory (with its sub-regions),
 * which it will not read again: its pages go back to the OS at once and
 * read as zeros here until the region is received again. The region
 * itself is untouched: its objects, its ID and every other worker's copy.
 * For a region received, used and sent on, as an MPI program reuses its
 * receive buffer. Returns 0, SYS_ERR_NOREGION or SYS_ERR_ROOT. */
int sys_rforget(rid_t region);

/* ---- objects ------------------------------------------------------------ */

/* An object of size bytes (rounded up to 64) in region. NULL on failure:
 * SYS_ERR_ARG (size 0), SYS_ERR_NOREGION, SYS_ERR_NOMEM. */
void *sys_alloc(size_t size, rid_t region);

/* Frees an object. Returns 0, SYS_ERR_NOTGLOBAL, SYS_ERR_NOTOBJECT or
 * SYS_ERR_FREED. sys_free(NULL) returns 0. */
int sys_free(void *ptr);

/* Resizes ptr and/or moves it to new_region, copying its contents; the
 * result may be ptr itself when it stays in its region and fits. ptr NULL
 * allocates; new_size 0 frees and returns NULL. On failure returns NULL
 * and ptr is unchanged. */
void *sys_realloc(void *ptr, size_t new_size, rid_t new_region);

/* num_objects objects of size bytes in region, written to objects[]. Returns
 * 0 or a negative code; on failure no object is allocated. */
int sys_balloc(size_t size, rid_t region, int num_objects, void **objects);

/* The bytes usable at ptr (its slot size), or 0 when ptr is not a live
 * object (sys_last_error() says why). */
size_t sys_usable_size(void *ptr);

/* ---- communication ------------------------------------------------------ */

/* Sends whole regions (with all their sub-regions) and single objects to
 * peer_worker, in one transfer of the memory they occupy: no packing into a
 * buffer, no pointer rewritten. The peer must call sys_recv(). Returns 0,
 * SYS_ERR_PEER (no such worker, or the caller itself), SYS_ERR_ARG,
 * SYS_ERR_NOREGION (a region the sender does not know), SYS_ERR_NOTGLOBAL /
 * SYS_ERR_NOTOBJECT / SYS_ERR_FREED (an object that is not live). When the
 * sender fails after naming a valid peer, the matching sys_recv() fails with
 * SYS_ERR_PEER instead of waiting. */
int sys_send(int peer_worker, rid_t *regions, int num_regions,
             void **objects, int num_objects);

/* Receives what peer_worker sends. regions[] and objects[] (capacities
 * num_regions and num_objects) are filled, in order, with the region IDs and
 * object pointers the sender named; unused entries become SYS_NO_REGION and
 * NULL. The data is in place afterwards at the same addresses. Returns 0,
 * SYS_ERR_PEER, or SYS_ERR_TRUNCATE when the arrays are too small (the data
 * is still received and the arrays hold what fits). */
int sys_recv(int peer_worker, rid_t *regions, int num_regions,
             void **objects, int num_objects);

/* sys_send() to peer_worker and sys_recv() from it at once, as
 * MPI_Sendrecv: the peer calls sys_sendrecv() with this worker, and the
 * memory moves both ways in one exchange. What is sent and what arrives
 * must not share memory (both held a copy of one region, say): then both
 * calls return SYS_ERR_ARG and nothing moves. Returns 0, the sending side's
 * errors as sys_send() (nothing arrives then either, and the peer's call
 * returns SYS_ERR_PEER), SYS_ERR_PEER when the peer's sending side failed
 * (nothing is sent then), or SYS_ERR_TRUNCATE as sys_recv(). */
int sys_sendrecv(int peer_worker, rid_t *send_regions, int num_send_regions,
                 void **send_objects, int num_send_objects,
                 rid_t *recv_regions, int num_recv_regions,
                 void **recv_objects, int num_recv_objects);

/* A barrier of all workers. It also orders every sys_rfree() before it
 * ahead of every allocation after it, in every worker: a worker allocating
 * from slabs leased to it hears of a peer's sys_rfree() at its next call
 * that reaches the scheduler (this one, or any that needs the scheduler). */
int sys_barrier(void);

/* ---- introspection ------------------------------------------------------ */

typedef struct sys_region_stats_s {
  int64_t live_objects;   /* objects allocated and not freed */
  int64_t live_bytes;     /* their slot sizes summed */
  int64_t slabs_full;     /* 4 KiB slabs with every slot taken (a large object's slabs count here) */
  int64_t slabs_partial;  /* slabs with some slots taken */
  int64_t slabs_free;     /* empty slabs the region keeps for later allocations */
  int64_t transfer_bytes; /* bytes a sys_send() of the region would move */
  int64_t transfer_ranges;/* (address, size) pieces that transfer has */
  int64_t subregions;     /* regions below it, at every depth */
  int64_t scheduler;      /* index of the scheduler that owns the region (0: the top) */
  int64_t scheduler_level;/* its level in the tree (0: the top) */
} sys_region_stats_t;

/* Statistics of a region alone (include_subregions 0) or with all its
 * sub-regions (1). Objects that other workers allocate locally are counted
 * as of their last contact with the scheduler; the caller's own are exact. */
int sys_region_stats(rid_t region, int include_subregions, sys_region_stats_t *stats);

/* Counters of the whole scheduler tree, and of the calling worker. */
typedef struct sys_sched_stats_s {
  int64_t schedulers;      /* schedulers in the tree */
  int64_t levels;          /* levels of the tree */
  int64_t requests;        /* requests workers sent to their leaf schedulers */
  int64_t sched_messages;  /* messages between schedulers, each hop counted */
  int64_t forwarded;       /* requests a scheduler passed to another one */
  int64_t grants;          /* memory or ID chunks a parent gave a child */
  int64_t returns;         /* chunks a child gave back */
  int64_t regions;         /* regions alive, the root aside */
  int64_t worker_calls;    /* this worker's requests */
  int64_t worker_wait_ns;  /* time this worker spent waiting for their replies */
} sys_sched_stats_t;

/* Fills stats: 0 or a negative code. The tree's counters are summed over
 * every scheduler as of the moment each one answers. */
int sys_sched_stats(sys_sched_stats_t *stats);

/* The name of an error code, like MPI_Error_string. */
const char *sys_strerror(int code);

/* The code of this worker's last failed call (SYS_OK if none yet). */
int sys_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
