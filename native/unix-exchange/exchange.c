// One request/reply exchange over a unix stream socket, on libuv's thread pool or, on request, on the calling
// thread.
//
// Why native: the CNI plugin talks to the per-node agent once per exec, and loading node:net with its stream
// machinery costs more than the rest of that exchange (~4 ms of a ~20 ms budget, measured). This does the
// connect, send-all and read-until-close with one deadline in plain syscalls. By default off the main thread, so
// that an in-process peer (tests) still runs; `blocking` does it on the calling thread for a process with nothing
// else to do meanwhile (the plugin), which then never starts the thread pool's threads, except when the peer is
// this very process or its backlog is full. It never rejects for socket errors: what happened is reported as
// data (connected / errno / timedOut) because the caller's next step depends on it (see
// src/lib/agent-client/client.ts).
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <node_api.h>

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  struct sockaddr_un addr;
  char *request;
  size_t request_len;
  long long deadline;
  size_t max_reply;
  int fd;
  int connected, err, timed_out;
  char *reply;
  size_t reply_len, reply_cap;
} job_t;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// 1 when fd is ready for `events`, 0 when the deadline passed, -1 on error (errno set).
static int wait_for(int fd, short events, long long deadline) {
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n > 0) return 1;
    if (n == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

static int reply_room(job_t *j) {
  if (j->reply_len < j->reply_cap) return 1;
  if (j->reply_cap >= j->max_reply) return 0;
  size_t cap = j->reply_cap ? j->reply_cap * 2 : 4096;
  if (cap > j->max_reply) cap = j->max_reply;
  char *p = realloc(j->reply, cap);
  if (!p) return 0;
  j->reply = p;
  j->reply_cap = cap;
  return 1;
}

// One connect attempt: 1 connected, 0 failed (err set, fd closed), -1 the listener's backlog is full (EAGAIN:
// nothing was sent, try again later). A non-blocking connect to a unix socket completes or fails at once.
static int connect_once(job_t *j) {
  if (j->fd < 0) j->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (j->fd < 0) {
    j->err = errno;
    return 0;
  }
  while (connect(j->fd, (struct sockaddr *)&j->addr, sizeof j->addr) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return -1;
    j->err = errno;
    close(j->fd);
    j->fd = -1;
    return 0;
  }
  j->connected = 1;
  return 1;
}

// Send all of the request, then read until the peer closes, within the deadline; closes the socket.
static void transfer(job_t *j) {
  int fd = j->fd;
  for (size_t off = 0; off < j->request_len;) {
    ssize_t n = send(fd, j->request + off, j->request_len - off, MSG_NOSIGNAL);
    if (n >= 0) {
      off += (size_t)n;
      continue;
    }
    if (errno == EINTR) continue;
    int w = errno == EAGAIN ? wait_for(fd, POLLOUT, j->deadline) : -1;
    if (w == 0) j->timed_out = 1;
    if (w < 0) j->err = errno;
    if (w <= 0) goto out;
  }
  for (;;) {
    // Full at maxReply bytes: one more byte tells a reply of exactly that size (then EOF) from a longer one.
    char extra;
    int full = !reply_room(j);
    ssize_t n = full ? recv(fd, &extra, 1, 0) : recv(fd, j->reply + j->reply_len, j->reply_cap - j->reply_len, 0);
    if (full && n > 0) {
      j->err = EMSGSIZE;
      goto out;
    }
    if (n > 0) {
      j->reply_len += (size_t)n;
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    int w = errno == EAGAIN ? wait_for(fd, POLLIN, j->deadline) : -1;
    if (w == 0) j->timed_out = 1;
    if (w < 0) j->err = errno;
    if (w <= 0) goto out;
  }
out:
  close(fd);
  j->fd = -1;
}

// On the thread pool: connect unless the calling thread did, retrying while the listener's backlog is full
// (nothing has been sent, so the caller may go elsewhere at the deadline), then the transfer.
static void execute(napi_env env, void *data) {
  job_t *j = data;
  while (!j->connected) {
    int c = connect_once(j);
    if (c == 0) return;
    if (c < 0 && now_ms() >= j->deadline) {
      j->timed_out = 1;
      close(j->fd);
      j->fd = -1;
      return;
    }
    if (c < 0) usleep(1000);
  }
  transfer(j);
}

static void set(napi_env env, napi_value obj, const char *name, napi_value v) { napi_set_named_property(env, obj, name, v); }

// What happened, as the ExchangeResult object; frees the job.
static napi_value result(napi_env env, job_t *j) {
  napi_value res, v;
  void *copy;
  napi_create_object(env, &res);
  napi_get_boolean(env, j->connected, &v);
  set(env, res, "connected", v);
  napi_create_int32(env, j->err, &v);
  set(env, res, "errno", v);
  napi_get_boolean(env, j->timed_out, &v);
  set(env, res, "timedOut", v);
  napi_create_buffer_copy(env, j->reply_len, j->reply_len ? j->reply : "", &copy, &v);
  set(env, res, "reply", v);
  free(j->reply);
  free(j->request);
  free(j);
  return res;
}

static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  // result() frees the job: take what is still needed first.
  napi_async_work work = j->work;
  napi_deferred deferred = j->deferred;
  napi_resolve_deferred(env, deferred, result(env, j));
  napi_delete_async_work(env, work);
}

// The peer listening on a connected socket is this very process (an in-process agent: tests, cache training),
// which can answer only once the calling thread returns to its event loop. Unknown counts as this process.
static int peer_is_self(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid == getpid();
}

static napi_value fail(napi_env env, const char *msg) {
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

static bool is_undefined(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && t == napi_undefined;
}

static napi_value Exchange(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], promise, name;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4)
    return fail(env, "exchange(path, request, timeoutMs, maxReply[, blocking])");
  job_t *j = calloc(1, sizeof *j);
  if (!j) return fail(env, "out of memory");
  j->fd = -1;
  j->addr.sun_family = AF_UNIX;
  size_t path_len = 0;
  void *req;
  size_t req_len;
  int timeout_ms;
  double max_reply;
  bool blocking = false;
  // sun_path must hold the path and its NUL: a longer path would silently name another socket.
  if (napi_get_value_string_utf8(env, argv[0], j->addr.sun_path, sizeof j->addr.sun_path, &path_len) != napi_ok ||
      path_len == 0 || path_len >= sizeof j->addr.sun_path - 1 ||
      napi_get_buffer_info(env, argv[1], &req, &req_len) != napi_ok ||
      napi_get_value_int32(env, argv[2], &timeout_ms) != napi_ok || timeout_ms < 0 ||
      napi_get_value_double(env, argv[3], &max_reply) != napi_ok || !(max_reply >= 1) ||
      (argc > 4 && !is_undefined(env, argv[4]) && napi_get_value_bool(env, argv[4], &blocking) != napi_ok)) {
    free(j);
    return fail(env, "exchange(path: string (1-106 bytes), request: Buffer, timeoutMs: int >= 0, maxReply: number >= 1, blocking?: boolean)");
  }
  j->deadline = now_ms() + timeout_ms;
  j->max_reply = (size_t)max_reply;
  j->request = malloc(req_len ? req_len : 1);
  if (!j->request) {
    free(j);
    return fail(env, "out of memory");
  }
  memcpy(j->request, req, req_len);
  j->request_len = req_len;
  // Blocking: the whole exchange on this thread, without starting libuv's thread pool (a process that only waits
  // for this reply saves starting and ending the pool's threads). Not when the peer is this process, whose event
  // loop this thread would hold up, nor while the listener's backlog is full (the retry loop is the pool's).
  if (blocking) {
    int c = connect_once(j);
    if (c == 0) return result(env, j);
    if (c > 0 && !peer_is_self(j->fd)) {
      transfer(j);
      return result(env, j);
    }
  }
  napi_create_promise(env, &j->deferred, &promise);
  napi_create_string_utf8(env, "unix-exchange", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, execute, complete, j, &j->work);
  napi_queue_async_work(env, j->work);
  return promise;
}

// The kernel's record of who connected a unix socket (SO_PEERCRED): the agent runs a plugin's invocation only for
// a peer it can verify, never on what the peer says of itself (src/lib/agent/peer.ts). pid is as this process's
// pid namespace sees it, 0 when the peer's is not visible from here. null when the fd is not a connected unix socket.
static napi_value PeerCredentials(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, v;
  int32_t fd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
    return fail(env, "peerCredentials(fd: int >= 0)");
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    napi_get_null(env, &out);
    return out;
  }
  napi_create_object(env, &out);
  napi_create_int64(env, cred.pid, &v);
  napi_set_named_property(env, out, "pid", v);
  napi_create_int64(env, cred.uid, &v);
  napi_set_named_property(env, out, "uid", v);
  napi_create_int64(env, cred.gid, &v);
  napi_set_named_property(env, out, "gid", v);
  return out;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "exchange", NAPI_AUTO_LENGTH, Exchange, NULL, &fn);
  napi_set_named_property(env, exports, "exchange", fn);
  napi_create_function(env, "peerCredentials", NAPI_AUTO_LENGTH, PeerCredentials, NULL, &fn);
  napi_set_named_property(env, exports, "peerCredentials", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
