/* SPDX-License-Identifier: Apache-2.0 */
/* tree.h: the shape of the scheduler tree (MANYMALLOC_SCHEDULERS,
 * MANYMALLOC_WORKERS_PER_SCHEDULER) and which MPI rank plays which part.
 * Schedulers are numbered level by level from the top (index 0); workers
 * are numbered leaf by leaf. No MPI here: the ranks' hosts are an input. */
#ifndef MMD_TREE_H
#define MMD_TREE_H

#include <stdbool.h>
#include <stddef.h>

#define MMD_TREE_MAX_LEVELS 8

typedef struct mmd_tree {
  int nlevels;
  int level_size[MMD_TREE_MAX_LEVELS];   /* schedulers of each level, top first */
  int level_first[MMD_TREE_MAX_LEVELS];  /* index of each level's first scheduler */
  int nsched, nleaves, nworkers, size;
  int *leaf_workers;   /* [nleaves]: workers of each leaf */
  int *leaf_first;     /* [nleaves]: its first worker's ID */
  int *sched_rank;     /* [nsched]: world rank of each scheduler */
  int *worker_rank;    /* [nworkers]: world rank of each worker */
  int *role;           /* [size]: a rank's scheduler index, or -1 - its worker ID */
} mmd_tree_t;

/* Reads the tree's shape for size ranks: 0, or -1 with why filled. scheds
 * "1,4,16" (NULL or "": "1"); per_leaf NULL or "": the workers spread
 * evenly over the leaves. */
int mmd_tree_parse(mmd_tree_t *t, const char *scheds, const char *per_leaf, int size, char *why,
                   size_t whylen);
/* Assigns ranks: a leaf and its workers on one host wherever the ranks allow
 * (host_of[r]: any ID shared by the ranks of one host). 0 or SYS_ERR_NOMEM. */
int mmd_tree_place(mmd_tree_t *t, const int *host_of);
void mmd_tree_destroy(mmd_tree_t *t);

int mmd_tree_level(const mmd_tree_t *t, int sched);
static inline bool mmd_tree_is_leaf(const mmd_tree_t *t, int sched) {
  return mmd_tree_level(t, sched) == t->nlevels - 1;
}
/* The parent's index, -1 for the top. */
int mmd_tree_parent(const mmd_tree_t *t, int sched);
/* Children are the indices [first, first + n). */
int mmd_tree_nchildren(const mmd_tree_t *t, int sched);
int mmd_tree_first_child(const mmd_tree_t *t, int sched);
/* A leaf's position among the leaves. */
static inline int mmd_tree_leaf_pos(const mmd_tree_t *t, int sched) {
  return sched - t->level_first[t->nlevels - 1];
}
/* The child of sched whose subtree holds scheduler other (-1: none). */
int mmd_tree_child_toward(const mmd_tree_t *t, int sched, int other);
/* Schedulers in sched's subtree, itself included. */
int mmd_tree_subtree_size(const mmd_tree_t *t, int sched);

#endif
