// setns(2) for Node: switch the *calling thread* into another namespace. Called synchronously from the main
// thread only, and always switched back before control returns to the event loop (see src/lib/dataplane/netns.ts).
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <node_api.h>

static napi_value Setns(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd, nstype;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
      napi_get_value_int32(env, argv[1], &nstype) != napi_ok) {
    napi_throw_type_error(env, NULL, "setns(fd: number, nstype: number)");
    return NULL;
  }
  if (setns(fd, nstype) != 0) {
    int err = errno;
    char msg[128];
    snprintf(msg, sizeof msg, "setns(%d, 0x%x): %s", fd, nstype, strerror(err));
    napi_value code, text, error;
    napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &text);
    napi_create_int32(env, err, &code);
    napi_create_error(env, NULL, text, &error);
    napi_set_named_property(env, error, "errno", code);
    napi_throw(env, error);
  }
  return NULL;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn, newnet;
  napi_create_function(env, "setns", NAPI_AUTO_LENGTH, Setns, NULL, &fn);
  napi_set_named_property(env, exports, "setns", fn);
  napi_create_int32(env, CLONE_NEWNET, &newnet);
  napi_set_named_property(env, exports, "CLONE_NEWNET", newnet);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
