/* http_worker.h - the process mechanics behind jp_http's isolated requests (internal to http.c):
 * start a worker by fork, pass one message and one file descriptor each way over a socketpair,
 * make a body file in memory, stop and reap a worker and say how it ended. */
#ifndef JP_SERVE_HTTP_WORKER_H
#define JP_SERVE_HTTP_WORKER_H

#include <stddef.h>
#include <sys/types.h>

#include "jaxprof/jaxprof.h"

/* One worker process as its parent sees it. */
typedef struct jp_http_proc {
    pid_t pid; /* the child; 0 when none */
    int sock;  /* the parent's end of the socketpair (non-blocking, close-on-exec); -1 once closed */
} jp_http_proc;

/* The child's side: runs in the forked process with its end of the socketpair (blocking) and must
 * never return (it ends with _exit). */
typedef void (*jp_http_proc_main)(void *arg, int sock);

/* Forks a worker running child(arg, sock) into *p. The child dies with the parent (it gets SIGKILL
 * when the parent is gone), ignores SIGINT (Ctrl-C reaches the whole process group: the parent
 * decides) and SIGPIPE, and dies of SIGTERM whatever handler the parent has. JP_ERR_IO names what
 * failed. */
int jp_http_proc_start(jp_http_proc *p, jp_http_proc_main child, void *arg, jp_error *err);

/* Sends len bytes of msg with fd (-1: none) as one message (SOCK_SEQPACKET keeps the boundary);
 * 0, or -1 with errno set. Never raises SIGPIPE. */
int jp_http_proc_send(int sock, const void *msg, size_t len, int fd);

/* Receives one message into msg (cap bytes) and the descriptor passed with it into *fd (-1: none;
 * close-on-exec); the message's length, 0 at the end of the stream, -1 with errno set (EMSGSIZE
 * for a message longer than cap: nothing of it is kept). */
ssize_t jp_http_proc_recv(int sock, void *msg, size_t cap, int *fd);

/* A new anonymous file (memfd) holding data[0, len), or -1 with errno set. */
int jp_http_proc_memfd(const void *data, size_t len);

/* Kills the worker (SIGKILL) and closes the parent's end; the pid stays for jp_http_proc_reap. */
void jp_http_proc_kill(jp_http_proc *p);

/* Reaps the worker once it has ended: 1 and how it ended into why ("killed by signal 11
 * (Segmentation fault)", "exited with status 3"); 0 while it still runs (only when block is 0). Closes the
 * parent's end and clears p when it returns 1. */
int jp_http_proc_reap(jp_http_proc *p, int block, char *why, size_t cap);

#endif /* JP_SERVE_HTTP_WORKER_H */
