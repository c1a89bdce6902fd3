/* The probes SDK for Node.js: a Node-API addon over sdk/c/microscope.h
 * (compiled in: the addon is a module with its own control block). Sites
 * are run-time sites; JavaScript holds each as a number (its address, below
 * 2^47 on x86-64 and aarch64 Linux: exact in a double). index.js is the API. */
#define NAPI_VERSION 8
#include <node_api.h>

#include "microscope.h"

#define MAX_TEXT 512

static struct microscope_site* SiteArg(napi_env env, napi_value v) {
  double d = 0;
  if (napi_get_value_double(env, v, &d) != napi_ok || d <= 0) return NULL;
  return (struct microscope_site*)(uintptr_t)d;
}

static size_t Args(napi_env env, napi_callback_info info, napi_value* argv, size_t want) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return 0;
  return argc;
}

static napi_value Bool(napi_env env, int value) {
  napi_value out;
  napi_get_boolean(env, value != 0, &out);
  return out;
}

/* define(kind, name, file, line) -> site (0: none) */
static napi_value Define(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  char name[MAX_TEXT], file[MAX_TEXT];
  size_t n = 0;
  uint32_t kind = 0, line = 0;
  double address = 0;
  if (Args(env, info, argv, 4) == 4 && napi_get_value_uint32(env, argv[0], &kind) == napi_ok &&
      napi_get_value_string_utf8(env, argv[1], name, sizeof(name), &n) == napi_ok &&
      napi_get_value_string_utf8(env, argv[2], file, sizeof(file), &n) == napi_ok &&
      napi_get_value_uint32(env, argv[3], &line) == napi_ok) {
    address = (double)(uintptr_t)microscope_site_define(kind, name, file, line);
  }
  napi_value out;
  napi_create_double(env, address, &out);
  return out;
}

/* begin(site) -> whether the begin was recorded (then end(site) follows) */
static napi_value Begin(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (Args(env, info, argv, 1) < 1) return Bool(env, 0);
  return Bool(env, microscope_zone_begin(SiteArg(env, argv[0])).active);
}

static napi_value End(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (Args(env, info, argv, 1) >= 1) {
    microscope_zone_ctx ctx = {SiteArg(env, argv[0]), 1};
    if (ctx.site != NULL) microscope_zone_end(ctx);
  }
  return NULL;
}

static napi_value Enabled(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (Args(env, info, argv, 1) < 1) return Bool(env, 0);
  return Bool(env, microscope_site_enabled(SiteArg(env, argv[0])));
}

static napi_value Mark(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (Args(env, info, argv, 1) >= 1) microscope_mark(SiteArg(env, argv[0]));
  return NULL;
}

static napi_value Counter(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  double value = 0;
  if (Args(env, info, argv, 2) == 2 && napi_get_value_double(env, argv[1], &value) == napi_ok)
    microscope_counter(SiteArg(env, argv[0]), value);
  return NULL;
}

/* label(site, value): a string, or a number kept as an integer */
static napi_value Label(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  if (Args(env, info, argv, 2) < 2) return NULL;
  struct microscope_site* site = SiteArg(env, argv[0]);
  napi_valuetype type;
  if (napi_typeof(env, argv[1], &type) != napi_ok) return NULL;
  if (type == napi_number) {
    int64_t v = 0;
    if (napi_get_value_int64(env, argv[1], &v) == napi_ok) microscope_label_int(site, v);
    return NULL;
  }
  char text[MICROSCOPE_LABEL_TEXT_MAX + 1];
  size_t n = 0;
  if (napi_get_value_string_utf8(env, argv[1], text, sizeof(text), &n) == napi_ok)
    microscope_label_text(site, text, n);
  return NULL;
}

static napi_value LabelClear(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (Args(env, info, argv, 1) >= 1) microscope_label_clear(SiteArg(env, argv[0]));
  return NULL;
}

static napi_value Recording(napi_env env, napi_callback_info info) {
  (void)info;
  return Bool(env, microscope_recording());
}

static napi_value Init(napi_env env, napi_value exports) {
  const napi_property_descriptor fns[] = {
      {"define", NULL, Define, NULL, NULL, NULL, napi_default, NULL},
      {"begin", NULL, Begin, NULL, NULL, NULL, napi_default, NULL},
      {"end", NULL, End, NULL, NULL, NULL, napi_default, NULL},
      {"enabled", NULL, Enabled, NULL, NULL, NULL, napi_default, NULL},
      {"mark", NULL, Mark, NULL, NULL, NULL, napi_default, NULL},
      {"counter", NULL, Counter, NULL, NULL, NULL, napi_default, NULL},
      {"label", NULL, Label, NULL, NULL, NULL, napi_default, NULL},
      {"labelClear", NULL, LabelClear, NULL, NULL, NULL, napi_default, NULL},
      {"recording", NULL, Recording, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
