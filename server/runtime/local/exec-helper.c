/*
 * slipway exec helper: one per box, started once by the runner inside the box (its namespaces,
 * root, cgroup; see docs/runtime-isolation.md "exec helper"). It forks the box's commands itself,
 * so an exec costs one fork + exec inside the box instead of a chain of host processes.
 *
 * It talks to the server over fd 3 only (a socketpair the server made; close-on-exec here, so no
 * command inherits it). Frames both ways: u8 type, u32 id (little-endian), u32 length, payload.
 *
 *   server -> helper  'S' start   payload: cwd NUL argc NUL argv... NUL env... NUL  (cwd "" = stay)
 *                     'L' launch a shell command: cwd NUL shell NUL command NUL env... NUL
 *                         (the dataplane's launcher: /bin/bash falls back to /bin/sh when absent; a
 *                         missing shell exits 127 and a missing cwd exits 1, each with a message on
 *                         stderr; then `shell -c command` is exec'd: one exec per command)
 *                     'I' stdin data      'E' end of stdin     'K' signal (u32) to the process group
 *                     'P' pause output    'R' resume output    'C' forget (server is done with it)
 *                     'T' connect to 127.0.0.1:port in the box (u32 port): a "command" whose stdin and
 *                         stdout are the connection ('E' shuts its write side down, 'K' resets it)
 *                     'B' listen on 127.0.0.1:port in the box (u32 port); each connection accepted is
 *                         announced with 'n' under an id of the helper's (high bit set), then as 'T'
 *   helper -> server  'h' hello (id 0, sent once at start: the helper runs)
 *                     'p' started (u32 pid in the box; 0 for a connection or a listener)
 *                     'f' could not start (message)
 *                     'o' stdout data   'e' stderr data   'c' stream closed (u8 1|2; held until 'x' while the command runs)
 *                     'x' exited (u32 wait status; 0 for a connection closed both ways, 9 for one reset)
 *                     'a' stdin bytes consumed (u32)       'n' connection accepted (u32 id of its listener)
 *
 * Each command gets real pipes as stdin/stdout/stderr (so /dev/stdin, /dev/stderr work), its own
 * session and process group, oom_score_adj 500 (the kernel kills commands before the box's init),
 * and exactly the environment it was sent. When the server goes away the helper exits without
 * touching its commands (they are reparented to the box's init, as before).
 *
 * Modes: no argument, the channel is fd 3 (started by the runner through nsenter); `--stdio`, the
 * channel is fd 0 (started by `runsc exec`, which passes only stdio into a gVisor sandbox); `--init`,
 * the channel is fd 0 and the helper is the sandbox's pid 1 (gVisor): it reaps orphans and, when the
 * server goes away, stays up without a channel (the next server starts a `--stdio` helper).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXCMD 512
#define MAXFRAME (8u << 20)
#define OUT_HIGH (1u << 20)
#define CHUNK (256 * 1024)
#define PIPE_SIZE (256 * 1024)

extern char **environ;

/* The channel to the server (-1 once it is gone, in --init mode). */
static int ch = 3;
static int init_mode = 0;

typedef struct {
  char *buf;
  size_t len, off, cap;
} buf_t;

enum { KIND_PROCESS = 0, KIND_SOCKET = 1, KIND_LISTENER = 2 };

typedef struct {
  int used;
  int kind;
  int connecting; /* a socket whose connect() is under way (polled for POLLOUT) */
  uint32_t id;
  pid_t pid;
  int in, out, err;
  int in_eof, paused, exited, forgotten;
  int closed_pending; /* bits 1|2: stream closed, its 'c' frame held until the exit (one write, one wake-up of the server) */
  buf_t inq;
} cmd_t;

static cmd_t cmds[MAXCMD];
static buf_t outq, inb;

static void die(const char *what) {
  dprintf(2, "slipway exec helper: %s: %s\n", what, strerror(errno));
  _exit(70);
}

static void reserve(buf_t *b, size_t extra) {
  if (b->off > 0 && b->off == b->len) b->off = b->len = 0;
  if (b->len + extra <= b->cap) return;
  if (b->off > 0) {
    memmove(b->buf, b->buf + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->len + extra <= b->cap) return;
  }
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) cap *= 2;
  char *n = realloc(b->buf, cap);
  if (!n) die("out of memory");
  b->buf = n;
  b->cap = cap;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24); }

static void frame(char type, uint32_t id, const void *data, uint32_t len) {
  reserve(&outq, 9 + (size_t)len);
  unsigned char *p = (unsigned char *)outq.buf + outq.len;
  p[0] = (unsigned char)type;
  put32(p + 1, id);
  put32(p + 5, len);
  if (len) memcpy(p + 9, data, len);
  outq.len += 9 + (size_t)len;
}

static void frame32(char type, uint32_t id, uint32_t v) {
  unsigned char b[4];
  put32(b, v);
  frame(type, id, b, 4);
}

static void server_gone(void);

static void do_nothing(int sig) { (void)sig; }

static void flush_out(void) {
  while (ch >= 0 && outq.len > outq.off) {
    ssize_t n = write(ch, outq.buf + outq.off, outq.len - outq.off);
    if (n > 0) {
      outq.off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return server_gone();
  }
  outq.off = outq.len = 0;
}

static cmd_t *find(uint32_t id) {
  for (int i = 0; i < MAXCMD; i++)
    if (cmds[i].used && cmds[i].id == id) return &cmds[i];
  return NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void release(cmd_t *c) {
  close_fd(&c->in);
  close_fd(&c->out);
  close_fd(&c->err);
  free(c->inq.buf);
  memset(c, 0, sizeof *c);
  c->in = c->out = c->err = -1;
}

/* Stops relaying a command (it keeps running: reaped, then released); ends a connection or a listener. */
static void forget(cmd_t *c) {
  if (c->kind != KIND_PROCESS || c->exited) return release(c);
  c->forgotten = 1;
  close_fd(&c->in);
  close_fd(&c->out);
  close_fd(&c->err);
}

/* The server went away: a helper started for it exits; the --init one (the sandbox's pid 1) stays,
   without a channel, reaping, until a new server starts a helper of its own. */
static void server_gone(void) {
  if (!init_mode) _exit(0);
  if (ch >= 0) close(ch);
  ch = -1;
  outq.off = outq.len = 0;
  inb.off = inb.len = 0;
  for (int i = 0; i < MAXCMD; i++)
    if (cmds[i].used) forget(&cmds[i]);
}

static void fail_start(uint32_t id, const char *message) { frame('f', id, message, (uint32_t)strlen(message)); }

static cmd_t *free_slot(void) {
  for (int i = 0; i < MAXCMD; i++)
    if (!cmds[i].used) return &cmds[i];
  return NULL;
}

static void start(uint32_t id, char *p, uint32_t len, int launch) {
  if (find(id)) return fail_start(id, "duplicate command id");
  cmd_t *c = free_slot();
  if (!c) return fail_start(id, "too many commands in this sandbox");
  /* Split the payload into NUL-terminated strings. */
  if (len == 0 || p[len - 1] != '\0') return fail_start(id, "malformed start frame");
  size_t count = 0;
  for (uint32_t i = 0; i < len; i++)
    if (p[i] == '\0') count++;
  char **strings = calloc(count + 1, sizeof(char *));
  if (!strings) die("out of memory");
  size_t k = 0;
  for (char *s = p; s < p + len; s += strlen(s) + 1) strings[k++] = s;
  if (count < 3 || (launch && strings[1][0] == '\0')) {
    free(strings);
    return fail_start(id, "malformed start frame");
  }
  char *cwd = strings[0];
  char **argv, **envp;
  if (launch) {
    /* cwd, shell, command, env...: argv becomes shell -c command (the shell is settled in the child). */
    argv = calloc(4, sizeof(char *));
    envp = calloc(count - 3 + 1, sizeof(char *));
    if (!argv || !envp) die("out of memory");
    argv[0] = strings[1];
    argv[1] = "-c";
    argv[2] = strings[2];
    for (size_t i = 3, j = 0; i < count; i++, j++) envp[j] = strings[i];
  } else {
    char *end = NULL;
    unsigned long argc = strtoul(strings[1], &end, 10);
    if (*end != '\0' || argc == 0 || argc > count - 2) {
      free(strings);
      return fail_start(id, "malformed start frame");
    }
    argv = calloc(argc + 1, sizeof(char *));
    envp = calloc(count - 2 - argc + 1, sizeof(char *));
    if (!argv || !envp) die("out of memory");
    for (unsigned long i = 0; i < argc; i++) argv[i] = strings[2 + i];
    for (size_t i = 2 + argc, j = 0; i < count; i++, j++) envp[j] = strings[i];
  }

  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) < 0) goto nopipe;
  if (pipe2(out, O_CLOEXEC) < 0) {
    close(in[0]), close(in[1]);
    goto nopipe;
  }
  if (pipe2(err, O_CLOEXEC) < 0) {
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    goto nopipe;
  }
  /* Every signal blocked across the fork: one sent to the child before it reset the helper's ignores
     stays pending (Linux never discards a blocked signal) and acts once the child unblocks it. */
  sigset_t all, previous;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &previous);
  /* vfork: the child borrows the helper's memory until it execs (or exits), so a command costs no
     copy of the helper's address space (under gVisor, one address space less to build per exec).
     The child only changes its own signal dispositions, fds and mask, and `environ`, which the
     helper puts back once vfork returns here. */
  char **helper_env = environ;
  pid_t pid = vfork();
  if (pid == 0) {
    /* Ignored signals stay ignored across exec: give the command every default back (main reset all
       the others at start, so only the helper's own ignores remain). */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    /* Only 0, 1 and 2: nothing the helper holds (or inherited) reaches the command. */
    close_range(3, ~0U, 0);
    /* Not under gVisor (--init): it has no OOM killer of its own (the whole sandbox is the unit the
       host's kills), and each system call there is a costly trap. */
    int adj = init_mode ? -1 : open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj >= 0) {
      (void)!write(adj, "500", 3);
      close(adj);
    }
    if (launch) {
      /* The dataplane's launcher, as its busybox script did: same checks, same messages, same codes. */
      if (access(argv[0], X_OK) != 0 && strcmp(argv[0], "/bin/bash") == 0) argv[0] = "/bin/sh";
      if (access(argv[0], X_OK) != 0) {
        dprintf(2, "slipway: shell not found in the sandbox: %s\n", argv[0]);
        _exit(127);
      }
      if (chdir(cwd) < 0) {
        dprintf(2, "slipway: cannot change to directory: %s\n", cwd);
        _exit(1);
      }
    } else if (cwd[0] != '\0' && chdir(cwd) < 0) {
      dprintf(2, "slipway: cannot change to directory %s: %s\n", cwd, strerror(errno));
      _exit(126);
    }
    environ = envp;
    if (launch) execv(argv[0], argv);
    else execvp(argv[0], argv);
    int e = errno;
    dprintf(2, "slipway: %s: %s\n", argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  int forkErrno = errno;
  environ = helper_env;
  sigprocmask(SIG_SETMASK, &previous, NULL);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  free(argv);
  free(envp);
  free(strings);
  if (pid < 0) {
    close(in[1]), close(out[0]), close(err[0]);
    errno = forkErrno;
    char message[160];
    snprintf(message, sizeof message, "cannot start the command: %s", strerror(forkErrno));
    return fail_start(id, message);
  }
  /* Larger pipes for the streams that carry bulk data (uploads in, downloads out): fewer wake-ups and frames. */
  fcntl(in[1], F_SETPIPE_SZ, PIPE_SIZE);
  fcntl(out[0], F_SETPIPE_SZ, PIPE_SIZE);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  c->used = 1;
  c->kind = KIND_PROCESS;
  c->id = id;
  c->pid = pid;
  c->in = in[1];
  c->out = out[0];
  c->err = err[0];
  frame32('p', id, (uint32_t)pid);
  return;
nopipe: {
  char message[160];
  snprintf(message, sizeof message, "cannot start the command: %s", strerror(errno));
  free(argv);
  free(envp);
  free(strings);
  return fail_start(id, message);
}
}

/* A connection that is closed both ways (its peer's side read to the end, ours written and shut down)
   is over: exit status 0. */
static void socket_done(cmd_t *c) {
  if (c->kind != KIND_SOCKET || c->exited || c->in >= 0 || c->out >= 0) return;
  c->exited = 1;
  if (c->forgotten) return release(c);
  frame32('x', c->id, 0);
}

static void write_stdin(cmd_t *c) {
  if (c->connecting) return;
  while (c->in >= 0 && c->inq.len > c->inq.off) {
    ssize_t n = write(c->in, c->inq.buf + c->inq.off, c->inq.len - c->inq.off);
    if (n > 0) {
      c->inq.off += (size_t)n;
      frame32('a', c->id, (uint32_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    /* EPIPE: the command stopped reading; what is queued is consumed (dropped). */
    frame32('a', c->id, (uint32_t)(c->inq.len - c->inq.off));
    c->inq.off = c->inq.len = 0;
    close_fd(&c->in);
  }
  if (c->inq.len == c->inq.off) c->inq.off = c->inq.len = 0;
  if (c->in_eof && c->inq.len == 0 && c->in >= 0) {
    /* A connection's end of stdin is a half-close: the peer reads to its end and may still answer. */
    if (c->kind == KIND_SOCKET) shutdown(c->in, SHUT_WR);
    close_fd(&c->in);
  }
  socket_done(c);
}

static void fail_errno(uint32_t id, const char *what) {
  char message[160];
  snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  fail_start(id, message);
}

static struct sockaddr_in loopback(uint32_t port) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

/* A connection as a command: stdin is its write side, stdout its read side (two fds of one socket). */
static void socket_slot(cmd_t *c, uint32_t id, int fd, int connecting) {
  c->used = 1;
  c->kind = KIND_SOCKET;
  c->connecting = connecting;
  c->id = id;
  c->pid = 0;
  c->in = fd;
  c->out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  c->err = -1;
}

static void connect_port(uint32_t id, const char *p, uint32_t len) {
  if (find(id)) return fail_start(id, "duplicate command id");
  if (len != 4 || get32((const unsigned char *)p) == 0 || get32((const unsigned char *)p) > 65535) return fail_start(id, "malformed connect frame");
  uint32_t port = get32((const unsigned char *)p);
  cmd_t *c = free_slot();
  if (!c) return fail_start(id, "too many commands in this sandbox");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno(id, "cannot connect");
  struct sockaddr_in addr = loopback(port);
  int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  if (r < 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    errno = e;
    return fail_errno(id, "cannot connect");
  }
  socket_slot(c, id, fd, r < 0);
  if (c->out < 0) {
    release(c);
    return fail_errno(id, "cannot connect");
  }
  if (!c->connecting) frame32('p', id, 0);
}

/* A connect under way has finished: started, or could not start (then forgotten here). */
static void connected(cmd_t *c) {
  int error = 0;
  socklen_t size = sizeof error;
  if (getsockopt(c->in, SOL_SOCKET, SO_ERROR, &error, &size) < 0) error = errno;
  if (error == EINPROGRESS || error == EALREADY) return;
  c->connecting = 0;
  if (error != 0) {
    uint32_t id = c->id;
    release(c);
    errno = error;
    return fail_errno(id, "cannot connect");
  }
  frame32('p', c->id, 0);
  write_stdin(c);
}

static void listen_port(uint32_t id, const char *p, uint32_t len) {
  if (find(id)) return fail_start(id, "duplicate command id");
  if (len != 4 || get32((const unsigned char *)p) == 0 || get32((const unsigned char *)p) > 65535) return fail_start(id, "malformed listen frame");
  cmd_t *c = free_slot();
  if (!c) return fail_start(id, "too many commands in this sandbox");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno(id, "cannot listen");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = loopback(get32((const unsigned char *)p));
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 128) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return fail_errno(id, "cannot listen");
  }
  c->used = 1;
  c->kind = KIND_LISTENER;
  c->id = id;
  c->out = fd;
  frame32('p', id, 0);
}

static uint32_t accepted = 0;

static void accept_on(cmd_t *l) {
  for (int k = 0; k < 16 && l->out >= 0; k++) {
    int fd = accept4(l->out, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    cmd_t *c = free_slot();
    if (!c) {
      close(fd);
      continue;
    }
    uint32_t id;
    do {
      accepted = (accepted + 1) & 0x7fffffffu;
      id = 0x80000000u | accepted;
    } while (find(id));
    socket_slot(c, id, fd, 0);
    if (c->out < 0) {
      release(c);
      continue;
    }
    frame32('n', id, l->id);
  }
}

/* 'K' on a connection: reset, both ways at once; on a listener: closed. */
static void reset(cmd_t *c) {
  if (c->kind == KIND_LISTENER) return release(c);
  int was_open = c->out >= 0;
  close_fd(&c->in);
  close_fd(&c->out);
  if (c->exited) return;
  c->exited = 1;
  unsigned char w = 1;
  if (was_open) frame('c', c->id, &w, 1);
  frame32('x', c->id, SIGKILL);
}

static void handle(unsigned char type, uint32_t id, char *payload, uint32_t len) {
  cmd_t *c = type == 'S' || type == 'L' || type == 'T' || type == 'B' ? NULL : find(id);
  switch (type) {
    case 'S':
    case 'L':
      start(id, payload, len, type == 'L');
      return;
    case 'T':
      connect_port(id, payload, len);
      return;
    case 'B':
      listen_port(id, payload, len);
      return;
    case 'I':
      if (!c) return;
      if (c->in < 0 || c->in_eof) {
        frame32('a', id, len);
        return;
      }
      if (c->inq.len == c->inq.off && !c->connecting) {
        /* Nothing queued: write straight from the frame; only what the pipe does not take is queued. */
        ssize_t n;
        do n = write(c->in, payload, len);
        while (n < 0 && errno == EINTR);
        if (n > 0) {
          frame32('a', id, (uint32_t)n);
          payload += n;
          len -= (uint32_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          /* EPIPE: the command stopped reading; the data is consumed (dropped). */
          frame32('a', id, len);
          close_fd(&c->in);
          socket_done(c);
          return;
        }
        if (len == 0) return;
      }
      reserve(&c->inq, len);
      memcpy(c->inq.buf + c->inq.len, payload, len);
      c->inq.len += len;
      write_stdin(c);
      return;
    case 'E':
      if (!c) return;
      c->in_eof = 1;
      write_stdin(c);
      return;
    case 'K':
      if (!c || len != 4) return;
      if (c->kind != KIND_PROCESS) return reset(c);
      if (c->exited) return;
      if (kill(-c->pid, (int)get32((unsigned char *)payload)) < 0) kill(c->pid, (int)get32((unsigned char *)payload));
      return;
    case 'P':
      if (c) c->paused = 1;
      return;
    case 'R':
      if (c) c->paused = 0;
      return;
    case 'C':
      /* Not exited yet: stop relaying; a command keeps running (reaped, then released). */
      if (c) forget(c);
      return;
    default:
      return;
  }
}

static void read_channel(void) {
  for (;;) {
    reserve(&inb, CHUNK);
    ssize_t n = read(ch, inb.buf + inb.len, CHUNK);
    if (n == 0) return server_gone();
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return server_gone();
    }
    inb.len += (size_t)n;
    if (n < CHUNK) break;
  }
  for (;;) {
    size_t have = inb.len - inb.off;
    if (have < 9) break;
    unsigned char *h = (unsigned char *)inb.buf + inb.off;
    uint32_t len = get32(h + 5);
    if (len > MAXFRAME) {
      dprintf(2, "slipway exec helper: frame of %u bytes refused\n", len);
      if (!init_mode) _exit(71);
      return server_gone();
    }
    if (have < 9 + (size_t)len) break;
    handle(h[0], get32(h + 1), (char *)h + 9, len);
    if (ch < 0) return;
    inb.off += 9 + (size_t)len;
  }
  if (inb.off == inb.len) inb.off = inb.len = 0;
}

static void read_output(cmd_t *c, int which) {
  int *fd = which == 1 ? &c->out : &c->err;
  for (int rounds = 0; rounds < 4 && *fd >= 0; rounds++) {
    /* Read straight into the outgoing queue behind room for the frame's header: no copy. */
    reserve(&outq, 9 + CHUNK);
    unsigned char *h = (unsigned char *)outq.buf + outq.len;
    ssize_t n = read(*fd, h + 9, CHUNK);
    if (n > 0) {
      h[0] = which == 1 ? 'o' : 'e';
      put32(h + 1, c->id);
      put32(h + 5, (uint32_t)n);
      outq.len += 9 + (size_t)n;
      if (outq.len - outq.off >= OUT_HIGH) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(fd);
    unsigned char w = (unsigned char)which;
    /* While the command runs, its stream's close waits for the exit frame: the server needs both
       (it finishes a command on exit + drained streams) and gets them in one write. A connection's
       end of data goes at once: the other side answers it (an HTTP client closes, say). */
    if (c->exited || c->kind == KIND_SOCKET) frame('c', c->id, &w, 1);
    else c->closed_pending |= which;
    socket_done(c);
  }
}

static void frame_exit(cmd_t *c, int status) {
  /* Output already in the pipes goes first, in this same write (unless the server paused it); a
     background process holding the pipes open leaves them open: read_output stops at EAGAIN. */
  if (!c->paused && outq.len - outq.off < OUT_HIGH) {
    if (c->out >= 0) read_output(c, 1);
    if (c->err >= 0) read_output(c, 2);
  }
  for (unsigned char w = 1; w <= 2; w++)
    if (c->closed_pending & w) frame('c', c->id, &w, 1);
  c->closed_pending = 0;
  frame32('x', c->id, (uint32_t)status);
}

static void reap(int sfd) {
  struct signalfd_siginfo info;
  while (read(sfd, &info, sizeof info) > 0) {
  }
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < MAXCMD; i++) {
      cmd_t *c = &cmds[i];
      if (!c->used || c->kind != KIND_PROCESS || c->pid != pid || c->exited) continue;
      c->exited = 1;
      if (c->forgotten) release(c);
      else frame_exit(c, status);
      break;
    }
  }
}

int main(int argc, char **argv) {
  for (int i = 0; i < MAXCMD; i++) cmds[i].in = cmds[i].out = cmds[i].err = -1;
  int stdio = argc > 1 && (strcmp(argv[1], "--stdio") == 0 || strcmp(argv[1], "--init") == 0);
  init_mode = argc > 1 && strcmp(argv[1], "--init") == 0;
  if (stdio) {
    /* The channel came as stdin (runsc passes only stdio into a sandbox): it becomes fd 3. */
    close_range(3, ~0U, 0);
    if (dup2(0, 3) < 0) die("fd 0");
  }
  if (fcntl(ch, F_SETFD, FD_CLOEXEC) < 0) die("fd 3");
  /* Whatever else the host-side chain left open (sh, nsenter) is not ours to keep. */
  close_range(4, ~0U, 0);
  fcntl(ch, F_SETFL, fcntl(ch, F_GETFL) | O_NONBLOCK);
  /* Every signal at its default (ignores inherited from the host-side chain included), then our own
     ignores, which each command's child resets. */
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  if (init_mode) {
    /* gVisor does not shield a sandbox's pid 1 from its own processes' signals as Linux does: every
       other signal that would end (or core) the helper gets a handler that does nothing. A handler,
       not an ignore: exec resets handlers to the default, so commands get every default back. Only
       SIGKILL and SIGSTOP cannot be caught (box root may end or freeze its own box). */
    struct sigaction nothing;
    memset(&nothing, 0, sizeof nothing);
    nothing.sa_handler = do_nothing;
    nothing.sa_flags = SA_RESTART;
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGCONT && sig != SIGWINCH && sig != SIGURG && sig != SIGPIPE && sig != SIGHUP &&
          sig != SIGINT && sig != SIGTERM)
        sigaction(sig, &nothing, NULL);
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) die("signalfd");
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, 0);
    if (stdio) dup2(devnull, 1);
    if (devnull > 2) close(devnull);
  }
  frame('h', 0, NULL, 0);
  flush_out();

  static struct pollfd fds[2 + 3 * MAXCMD];
  static cmd_t *owner[2 + 3 * MAXCMD];
  static int role[2 + 3 * MAXCMD];
  for (;;) {
    int n = 0;
    /* No channel (an --init helper whose server went away): only reaping is left to do. */
    fds[n] = (struct pollfd){.fd = ch, .events = POLLIN | (outq.len > outq.off ? POLLOUT : 0)};
    owner[n] = NULL, role[n++] = 0;
    fds[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
    owner[n] = NULL, role[n++] = -1;
    int room = outq.len - outq.off < OUT_HIGH;
    for (int i = 0; i < MAXCMD; i++) {
      cmd_t *c = &cmds[i];
      if (!c->used) continue;
      if (c->kind == KIND_LISTENER) {
        if (room && c->out >= 0) fds[n] = (struct pollfd){.fd = c->out, .events = POLLIN}, owner[n] = c, role[n++] = 3;
        continue;
      }
      if (c->connecting) {
        fds[n] = (struct pollfd){.fd = c->in, .events = POLLOUT}, owner[n] = c, role[n++] = 4;
        continue;
      }
      if (c->in >= 0 && c->inq.len > c->inq.off) fds[n] = (struct pollfd){.fd = c->in, .events = POLLOUT}, owner[n] = c, role[n++] = 0;
      if (room && !c->paused && c->out >= 0) fds[n] = (struct pollfd){.fd = c->out, .events = POLLIN}, owner[n] = c, role[n++] = 1;
      if (room && !c->paused && c->err >= 0) fds[n] = (struct pollfd){.fd = c->err, .events = POLLIN}, owner[n] = c, role[n++] = 2;
    }
    int ready = poll(fds, (nfds_t)n, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[1].revents) reap(sfd);
    for (int i = 2; i < n; i++) {
      cmd_t *c = owner[i];
      if (!fds[i].revents || !c->used) continue;
      if (role[i] == 0) write_stdin(c);
      else if (role[i] == 3) {
        if (c->kind == KIND_LISTENER) accept_on(c);
      } else if (role[i] == 4) {
        if (c->connecting) connected(c);
      } else read_output(c, role[i]);
    }
    if (ch >= 0 && fds[0].revents & (POLLIN | POLLHUP | POLLERR)) read_channel();
    flush_out();
  }
}
