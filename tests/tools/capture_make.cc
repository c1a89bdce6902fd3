// Test tool: writes a capture shaped like a recording of a fixture, built
// directly with capture/'s tables, so the e2e tests of what reads captures
// (report, convert, malformed input) need no perf_event privileges and get
// the same capture every run. Usage: capture_make OUT threads|split|split-swap|build
//   or capture_make OUT synthetic SAMPLES PATHS
//   synthetic   bench/synthetic_capture.h's, of that size: for what only a
//               large capture shows (serve's deadlines and bounds)
//   threads     the threads fixture: worker-a, worker-b and worker-c burn 1, 2
//               and 3 shares in work_a/b/c, each with burn_units inlined
//               (burn.h lines), called from thread_a/b/c under start_thread
//   split       the split fixture: main > run > hot 70%, cold 30%, burn_units
//               inlined into both; split-swap: 30/70
//   build       a parallel build: make (pid 4000) and 40 cc1plus processes
//               with long command lines, one thread each, their samples in
//               main and 4 unnamed addresses of cc1plus (1, 2, 3 and 4
//               shares)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/synthetic_capture.h"
#include "capture/reader.h"
#include "capture/writer.h"

using namespace microscope::capture;

namespace {

class Builder {
 public:
  Builder(const std::string& command, const std::string& path) {
    module_ = 0;
    Module m;
    m.path = String(path);
    m.build_id = {0x4d, 0x53, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
    m.size = 0x10000;
    c_.modules.push_back(m);
    c_.processes.push_back({4000, 1, String(command), 0, kStart, kEnd});
    c_.mappings.push_back({0, 0, 0x555555554000, 0x555555564000, 0, kStart, kEnd});
    c_.settings.mode = "launch";
    c_.settings.command = {path};
    c_.settings.target_pid = 4000;
    c_.settings.frequency = 999;
    c_.settings.call_graph = "fp";
    c_.settings.host = "capture_make";
    c_.settings.clock = "monotonic";
    c_.settings.recorder = "capture_make (tests/tools)";
    c_.settings.start_time = kStart;
    c_.settings.end_time = kEnd;
    c_.settings.symbols = "now";
  }

  ThreadId Thread(int32_t tid, const std::string& name, ProcessId process = 0) {
    c_.threads.push_back({tid, process, String(name), kStart, kEnd});
    return ThreadId(c_.threads.size() - 1);
  }

  // Another process, with the module mapped as in the first.
  ProcessId Process(int32_t pid, int32_t parent, const std::string& command) {
    c_.processes.push_back({pid, parent, String(command), 0, kStart, kEnd});
    ProcessId p = ProcessId(c_.processes.size() - 1);
    c_.mappings.push_back({p, 0, 0x555555554000, 0x555555564000, 0, kStart, kEnd});
    return p;
  }

  // A native frame without a name (no symbol covers `address`).
  FrameId Unnamed(uint64_t address) {
    c_.frames.push_back({FrameKind::kNative, module_, address, kNone, kNone, 0});
    return FrameId(c_.frames.size() - 1);
  }

  // A native frame of `function` at file offset `address`, source file:line.
  FrameId Native(const std::string& function, uint64_t address, const std::string& file,
                 uint32_t line) {
    return AddFrame(FrameKind::kNative, function, address, file, line);
  }
  FrameId Inline(const std::string& function, uint64_t address, const std::string& file,
                 uint32_t line) {
    return AddFrame(FrameKind::kInline, function, address, file, line);
  }

  // The node for `frames`, outermost first.
  StackId Stack(const std::vector<FrameId>& frames) {
    StackId parent = kNone;
    for (FrameId f : frames) {
      StackId found = kNone;
      for (StackId s = 0; s < c_.stacks.size(); ++s) {
        if (c_.stacks.parent[s] == parent && c_.stacks.frame[s] == f) found = s;
      }
      if (found == kNone) {
        c_.stacks.parent.push_back(parent);
        c_.stacks.frame.push_back(f);
        found = StackId(c_.stacks.size() - 1);
      }
      parent = found;
    }
    return parent;
  }

  // Samples in time order: `rows` is (thread, stack) for each sample, the
  // samples spread evenly over the recording, 1 ms of CPU each.
  void Samples(const std::vector<std::pair<ThreadId, StackId>>& rows) {
    uint64_t step = (kEnd - kStart) / (rows.size() + 1);
    for (size_t i = 0; i < rows.size(); ++i) {
      c_.samples.time.push_back(kStart + step * (i + 1));
      c_.samples.thread.push_back(rows[i].first);
      c_.samples.stack.push_back(rows[i].second);
      c_.samples.weight.push_back(1000000);
      c_.samples.end.push_back(StackEnd::kFramePointerEnd);
    }
  }

  Capture& capture() { return c_; }

 private:
  static constexpr uint64_t kStart = 1000000000;
  static constexpr uint64_t kEnd = kStart + 1000000000;

  StringId String(const std::string& s) {
    for (StringId i = 0; i < c_.strings.size(); ++i) {
      if (c_.strings[i] == s) return i;
    }
    c_.strings.push_back(s);
    return StringId(c_.strings.size() - 1);
  }
  FrameId AddFrame(FrameKind kind, const std::string& function, uint64_t address,
                   const std::string& file, uint32_t line) {
    StringId name = String(function);
    FunctionId fn = kNone;
    for (FunctionId i = 0; i < c_.functions.size(); ++i) {
      if (c_.functions[i].name == name) fn = i;
    }
    if (fn == kNone) {
      c_.functions.push_back({name, module_});
      fn = FunctionId(c_.functions.size() - 1);
    }
    c_.frames.push_back({kind, module_, address, fn, String(file), line});
    return FrameId(c_.frames.size() - 1);
  }

  Capture c_;
  ModuleId module_;
};

Capture Threads() {
  Builder b("threads", "/opt/fixtures/threads");
  b.Thread(4000, "threads");
  FrameId start = b.Native("start_thread", 0x8a0, "pthread_create.c", 442);
  std::vector<std::pair<ThreadId, StackId>> rows;
  std::vector<std::vector<StackId>> per_thread;
  const char* names[] = {"a", "b", "c"};
  for (int w = 0; w < 3; ++w) {
    std::string n = names[w];
    ThreadId t = b.Thread(4001 + w, "worker-" + n);
    uint64_t base = 0x1200 + 0x100 * w;
    FrameId thread_fn = b.Native("thread_" + n, base + 0x80, "threads.c", 16 + w);
    // Two addresses in each worker, each with burn_units inlined on its own
    // burn.h line: address granularity has rows to split.
    std::vector<StackId> stacks;
    for (int k = 0; k < 2; ++k) {
      FrameId work = b.Native("work_" + n, base + 0x10 + 8 * k, "threads.c", 12 + w);
      FrameId burn = b.Inline("burn_units", base + 0x10 + 8 * k, "burn.h", 9 + k);
      stacks.push_back(b.Stack({start, thread_fn, work, burn}));
    }
    per_thread.push_back(stacks);
    (void)t;
  }
  // worker-a 1 share, worker-b 2, worker-c 3, interleaved over the recording.
  for (int round = 0; round < 60; ++round) {
    for (int w = 0; w < 3; ++w) {
      for (int share = 0; share <= w; ++share) {
        rows.push_back({ThreadId(1 + w), per_thread[w][(round + share) % 2]});
      }
    }
  }
  b.Samples(rows);
  return b.capture();
}

Capture Split(bool swap) {
  Builder b("split", "/opt/fixtures/split");
  ThreadId t = b.Thread(4000, "split");
  FrameId start = b.Native("_start", 0x1040, "", 0);
  FrameId libc = b.Native("__libc_start_main", 0x1080, "", 0);
  FrameId main_fn = b.Native("main", 0x1300, "split.c", 27);
  FrameId run = b.Native("run", 0x12a0, "split.c", 19);
  FrameId hot = b.Native("hot", 0x1200, "split.c", 14);
  FrameId hot_burn = b.Inline("burn_units", 0x1200, "burn.h", 9);
  FrameId cold = b.Native("cold", 0x1250, "split.c", 15);
  FrameId cold_burn = b.Inline("burn_units", 0x1250, "burn.h", 9);
  StackId hot_stack = b.Stack({start, libc, main_fn, run, hot, hot_burn});
  StackId cold_stack = b.Stack({start, libc, main_fn, run, cold, cold_burn});
  std::vector<std::pair<ThreadId, StackId>> rows;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 10; ++i) {
      bool is_hot = swap ? i < 3 : i < 7;
      rows.push_back({t, is_hot ? hot_stack : cold_stack});
    }
  }
  b.Samples(rows);
  return b.capture();
}

Capture Build() {
  Builder b("make", "/usr/libexec/gcc/x86_64-linux-gnu/14/cc1plus");
  b.Thread(4000, "make");
  FrameId main_fn = b.Native("main", 0x2000, "main.cc", 39);
  std::vector<StackId> stacks;
  for (int k = 0; k < 4; ++k) stacks.push_back(b.Stack({main_fn, b.Unnamed(0x4000 + 0x40 * k)}));
  std::vector<std::pair<ThreadId, StackId>> rows;
  for (int i = 0; i < 40; ++i) {
    std::string source = "src/module_" + std::to_string(i) + ".cc";
    ProcessId p = b.Process(4001 + i, 4000,
                            "cc1plus -quiet -I include -I build/generated -D_GNU_SOURCE " + source +
                                " -o /tmp/cc" + std::to_string(i) + ".s");
    ThreadId t = b.Thread(4001 + i, "cc1plus", p);
    for (int k = 0; k < 4; ++k) {
      for (int n = 0; n <= k; ++n) rows.push_back({t, stacks[k]});
    }
  }
  b.Samples(rows);
  return b.capture();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[2]) == "synthetic") != (argc == 5) || argc > 5) {
    fprintf(stderr,
            "usage: capture_make OUT threads|split|split-swap|build|synthetic SAMPLES PATHS\n");
    return 2;
  }
  std::string shape = argv[2];
  Capture c;
  if (shape == "synthetic") {
    c = microscope::bench::MakeSyntheticCapture(std::strtoull(argv[3], nullptr, 10), 3,
                                                std::strtoull(argv[4], nullptr, 10));
  } else if (shape == "threads") {
    c = Threads();
  } else if (shape == "split" || shape == "split-swap") {
    c = Split(shape == "split-swap");
  } else if (shape == "build") {
    c = Build();
  } else {
    fprintf(stderr, "unknown shape %s\n", shape.c_str());
    return 2;
  }
  auto valid = ValidateCapture(c);
  if (!valid.ok()) {
    fprintf(stderr, "capture_make: %s\n", valid.message().c_str());
    return 1;
  }
  auto written = WriteCapture(c, argv[1]);
  if (!written.ok()) {
    fprintf(stderr, "capture_make: %s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
