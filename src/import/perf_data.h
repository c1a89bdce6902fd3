// perf.data, read directly (tools/perf/util/header.c and session.c are the
// reference): the file header and its attributes, the feature sections,
// and the records, kernel and perf's own, in file or pipe mode, zstd
// compressed (`perf record -z`) or not. The kernel's records go through the
// recorder's decoder and processor in time order, so `--call-graph dwarf`
// stacks are unwound by microscope's own unwinder from files proved by
// build ID, and frame-pointer callchains are kept as the kernel gave them.
// Every field is bounded; a refusal names the byte offset and the record.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::import {

struct PerfDataOptions {
  // Where a module's file may be found besides its recorded path, as
  // `symbolize` looks: each --debug-dir's build-ID trees and files, and a
  // sysroot for the recorded paths. Every file is proved by its build ID.
  std::vector<std::string> debug_dirs;
  std::string sysroot;
  // perf's build-ID cache (~/.debug), looked in after the recorded path.
  std::string perf_cache;
  // A compressed file inflates to at most this many bytes, or 32 times its
  // own size (up to 4 GiB) when that is more: a -z file holds some 10 times
  // its size.
  uint64_t max_inflate = uint64_t(256) << 20;
  // Read this host's files: modules' CFI to unwind, their layouts, and
  // their symbols to name the frames (symbols::Symbolize with the options
  // above). Off (the fuzz target): no file is opened, frames stay unnamed.
  bool host_files = true;
};

// The file starts with perf's magic ("PERFILE2"): file or pipe mode.
bool IsPerfData(std::span<const uint8_t> bytes);

// A capture of the file's samples, processes, threads and mappings, with
// settings saying which perf and options made it. `name` names the input
// in the capture's notes.
Result<capture::Capture> ReadPerfData(std::span<const uint8_t> bytes, const std::string& name,
                                      const PerfDataOptions& options);

}  // namespace microscope::import
