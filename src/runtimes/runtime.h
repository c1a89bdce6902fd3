// A runtime: an interpreter or virtual machine whose frames a BPF walker
// reads at every stack the recording takes (samples, off-CPU intervals, slow
// system calls), and whose event source splices them into the native
// stacks. Each runtime's room, src/runtimes/NAME/, holds all of it:
//  - NAME_walk.bpf.h: its maps and the four hooks bpf/runtimes.bpf.h calls
//    (NAME_walk_thread, NAME_exec, NAME_exit, NAME_fork), writing the one
//    walk record (bpf/walk.h) with its number MICROSCOPE_RUNTIME_NAME;
//  - its event source (record/event_source.h), whose StackSplicer marks its
//    code as modules map and splices its walks;
//  - `const Runtime NAME::kRuntime` below, and its meson.build.
// Registering it is one line: its name and room in meson.build's walker_rooms,
// from which the BPF dispatch, the walk numbers and Registered() follow.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::runtimes {

struct Runtime {
  // "python": its flag (--python MODE), its mode in RecordOptions::runtimes,
  // its source's name in the capture's settings.
  std::string_view name;
  std::string_view frames;  // "Python frames": how a refusal names them
  std::string_view help;    // what --NAME records, before the modes
  // The BPF maps its walker reads (NAME_walk.bpf.h), shared by every BPF
  // object that walks (record::SharedBpfMaps): its processes' layouts.
  std::span<const std::string_view> maps;
  // Starts its source, when its mode is not "off" (the source reads it:
  // "auto" or "bpf"), and also when it is "off" if `marks_when_off`.
  Result<std::unique_ptr<record::EventSource>> (*start)(const record::SourceContext&);
  // Whether its source also runs with its mode "off", walking nothing and
  // only marking what changes how native stacks unwind (V8's generated
  // code keeps frame pointers, whether its frames are walked or not).
  bool marks_when_off = false;
  // What the file at `path` is to this runtime (`microscope doctor`):
  // nullopt when it is not its interpreter; else the release it is and
  // whether the walker reads it (an error saying why not). Null: no check.
  std::optional<std::pair<std::string, Status>> (*inspect)(const std::string& path) = nullptr;
};

// Every runtime of walker_rooms (generated: registered.cc).
std::span<const Runtime* const> Registered();

}  // namespace microscope::runtimes
