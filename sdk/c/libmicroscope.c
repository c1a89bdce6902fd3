/* libmicroscope.so: the probes header as a shared library, for runtimes that
 * call C through a foreign function interface (sdk/python, ctypes) rather
 * than compile it in. Its sites are run-time sites of its own module, in
 * its own control block; each call is the header's of the same name. */
#include "microscope.h"

#define MICROSCOPE_API __attribute__((visibility("default")))

MICROSCOPE_API uint32_t microscope_lib_abi_version(void) {
  return MICROSCOPE_ABI_VERSION;
}

MICROSCOPE_API int microscope_lib_recording(void) {
  return microscope_recording();
}

MICROSCOPE_API struct microscope_site* microscope_lib_define(uint32_t kind, const char* name,
                                                             const char* file, uint32_t line) {
  return microscope_site_define(kind, name, file, line);
}

/* 1 when the begin was recorded: pass it to microscope_lib_zone_end. */
MICROSCOPE_API int microscope_lib_zone_begin(struct microscope_site* site) {
  return microscope_zone_begin(site).active;
}

MICROSCOPE_API void microscope_lib_zone_end(struct microscope_site* site, int active) {
  microscope_zone_ctx ctx = {site, active};
  microscope_zone_end(ctx);
}

MICROSCOPE_API void microscope_lib_mark(struct microscope_site* site) {
  microscope_mark(site);
}

MICROSCOPE_API void microscope_lib_counter(struct microscope_site* site, double value) {
  microscope_counter(site, value);
}

MICROSCOPE_API void microscope_lib_label_text(struct microscope_site* site, const char* text,
                                              size_t size) {
  microscope_label_text(site, text, size);
}

MICROSCOPE_API void microscope_lib_label_int(struct microscope_site* site, int64_t value) {
  microscope_label_int(site, value);
}

MICROSCOPE_API void microscope_lib_label_clear(struct microscope_site* site) {
  microscope_label_clear(site);
}
