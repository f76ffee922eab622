/* http_worker.c - worker processes for jp_http's isolated requests: fork, one message and one file
 * descriptor each way over a SOCK_SEQPACKET socketpair, memfd bodies, kill and reap (see
 * http_worker.h). Linux: memfd_create, PR_SET_PDEATHSIG. */
#define _GNU_SOURCE /* memfd_create, MSG_CMSG_CLOEXEC */
#include "serve/http_worker.h"

#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int jp_http_proc_start(jp_http_proc *p, jp_http_proc_main child, void *arg, jp_error *err) {
    int sv[2];
    p->pid = 0;
    p->sock = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return jp_error_set(err, JP_ERR_IO, 0, "http: socketpair: %s", strerror(errno));
    pid_t parent = getpid();
    fflush(NULL); /* nothing buffered is written twice: the child only ever leaves by _exit */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return jp_error_set(err, JP_ERR_IO, 0, "http: cannot start a worker process: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the parent may die without closing the socket */
        if (getppid() != parent) _exit(0); /* it died before prctl took effect */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_DFL); /* not the parent's stop flag: a worker told to stop stops */
        signal(SIGPIPE, SIG_IGN);
        child(arg, sv[1]);
        _exit(0);
    }
    close(sv[1]);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK); /* the poll loop never waits on it */
    p->pid = pid;
    p->sock = sv[0];
    return JP_OK;
}

int jp_http_proc_send(int sock, const void *msg, size_t len, int fd) {
    struct iovec iov = {.iov_base = (void *)(uintptr_t)msg, .iov_len = len};
    union { /* aligned room for one descriptor */
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n;
    do n = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if ((size_t)n != len) {
        errno = EMSGSIZE;
        return -1;
    }
    return 0;
}

ssize_t jp_http_proc_recv(int sock, void *msg, size_t cap, int *fd) {
    struct iovec iov = {.iov_base = msg, .iov_len = cap};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    *fd = -1;
    ssize_t n;
    do n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(sizeof(int))) continue;
        int got;
        memcpy(&got, CMSG_DATA(c), sizeof got);
        if (*fd < 0) *fd = got;
        else close(got); /* only one is ever sent: a second is closed, not leaked */
    }
    if (n > 0 && (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) { /* cut: never taken for a whole message */
        if (*fd >= 0) close(*fd);
        *fd = -1;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

int jp_http_proc_memfd(const void *data, size_t len) {
    int fd = memfd_create("jaxprof-answer", MFD_CLOEXEC);
    if (fd < 0) return -1;
    const char *p = data;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            close(fd);
            errno = e;
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return fd;
}

void jp_http_proc_kill(jp_http_proc *p) {
    if (p->pid > 0) kill(p->pid, SIGKILL);
    if (p->sock >= 0) close(p->sock);
    p->sock = -1;
}

int jp_http_proc_reap(jp_http_proc *p, int block, char *why, size_t cap) {
    if (cap) why[0] = '\0';
    if (p->pid <= 0) return 1;
    int status = 0;
    pid_t r;
    do r = waitpid(p->pid, &status, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return 0;
    if (r < 0) snprintf(why, cap, "ended (waitpid: %s)", strerror(errno));
    else if (WIFSIGNALED(status))
        snprintf(why, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else snprintf(why, cap, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (p->sock >= 0) close(p->sock);
    p->sock = -1;
    p->pid = 0;
    return 1;
}
