/* transport.h: every MPI call of dist/ goes through here. Three
 * communicators: requests and replies between workers and schedulers,
 * transfers between workers, and the program's own (sys_worker_comm). */
#ifndef MMD_TRANSPORT_H
#define MMD_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <mpi.h>
#include "msg.h"
#include "ranges.h"

int mmd_tp_init(int *argc, char ***argv);   /* 0 or SYS_ERR_MPI */
int mmd_tp_finalize(void);
int mmd_tp_rank(void);
int mmd_tp_size(void);
/* Collective: true iff ok on every rank. */
bool mmd_tp_all_ok(bool ok);
/* Collective: the communicators; workers are ranks >= first_worker. */
int mmd_tp_open(int first_worker);
MPI_Comm mmd_tp_user_comm(void);

/* Worker side of a request: send, then block for the reply. */
int mmd_tp_call(int sched_rank, const mmd_buf_t *req, mmd_buf_t *rep);
/* A request that gets no reply (the worker's last). */
int mmd_tp_send_request(int sched_rank, const mmd_buf_t *req);
/* Scheduler side: the next request from any rank, and a reply to one. */
int mmd_tp_next_request(mmd_buf_t *req, int *src_rank);
int mmd_tp_reply(int dst_rank, const mmd_buf_t *rep);

/* Between workers: a message, then the memory of a list of ranges at the
 * same addresses on both sides (one hindexed datatype over MPI_BOTTOM). */
int mmd_tp_send_msg(int peer_worker, const mmd_buf_t *b);
int mmd_tp_recv_msg(int peer_worker, mmd_buf_t *b);
int mmd_tp_send_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l);
int mmd_tp_recv_ranges(int peer_worker, uintptr_t base, const mmd_ranges_t *l);

/* The largest range one datatype block can carry. */
#define MMD_TP_MAX_BLOCK (1ull << 30)

#endif
