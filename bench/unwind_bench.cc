// Unwind throughput on stored samples of the no-frame-pointer fixtures:
// microscope's CFI-table unwinder against a cached libdwfl unwinder (one Dwfl
// per process, as perf's unwind-libdw keeps at best) on the same samples.
// The samples are recorded here first (root needed; otherwise the benchmarks
// skip), with a 16 KiB stack copy, from $MICROSCOPE_FIXTURES (default
// build/tests).
#include <benchmark/benchmark.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/record/collector.h"
#include "src/record/decode.h"
#include "src/record/module_cfi.h"
#include "src/unwind/unwinder.h"

using namespace microscope;
using namespace microscope::record;

namespace {

struct StoredSample {
  unwind::Registers regs;
  std::vector<uint8_t> stack;
  uint32_t tid;
};

struct Map {
  uint64_t start, end, pgoff;
  std::string path;
  std::vector<uint8_t> build_id;
};

struct Recording {
  std::string error;
  std::vector<Map> maps;
  std::vector<StoredSample> samples;
};

Recording RecordFixture(const std::vector<std::string>& argv) {
  Recording rec;
  CollectorOptions o;
  o.stack_copy = 16384;
  o.ring_pages = 2048;
  auto collector = Collector::Create(o);
  if (!collector.ok()) {
    rec.error = collector.status().message();
    return rec;
  }
  int gate[2];
  if (pipe(gate) != 0) return rec;
  pid_t child = fork();
  if (child == 0) {
    close(gate[1]);
    char c;
    if (read(gate[0], &c, 1) != 1) _exit(127);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(gate[0]);
  Status s = (*collector)->AddTask(child, true);
  if (!s.ok()) {
    rec.error = s.message();
    close(gate[1]);
    waitpid(child, nullptr, 0);
    return rec;
  }
  char go = 1;
  if (write(gate[1], &go, 1) != 1) return rec;
  close(gate[1]);
  for (;;) {
    (*collector)->Wait(50);
    (*collector)->Drain();
    int status;
    if (waitpid(child, &status, WNOHANG) == child) break;
  }
  (*collector)->Drain();
  for (const auto& arena : (*collector)->arenas()) {
    arena.ForEach([&](uint32_t, std::span<const uint8_t> record) {
      auto e = DecodeRecord(record, (*collector)->layout());
      if (!e.ok()) return true;
      if (e->type == EventType::kMmap2 && (e->prot & 4) && !e->filename.empty() &&
          e->filename[0] == '/') {
        rec.maps.push_back({e->addr, e->addr + e->len, e->pgoff, std::string(e->filename),
                            std::vector<uint8_t>(e->build_id.begin(), e->build_id.end())});
      } else if (e->type == EventType::kSample && e->regs_abi != 0 &&
                 e->regs.size() == record::kUserRegCount * 8) {
        StoredSample st;
        for (size_t i = 0; i < record::kUserRegCount; ++i) {
          uint64_t v;
          std::memcpy(&v, e->regs.data() + i * 8, 8);
          st.regs.Set(record::kUserRegToDwarf[i], v);
        }
        st.stack.assign(e->stack.begin(), e->stack.end());
        st.tid = e->tid;
        rec.samples.push_back(std::move(st));
      }
      return true;
    });
  }
  std::sort(rec.maps.begin(), rec.maps.end(),
            [](const Map& a, const Map& b) { return a.start < b.start; });
  return rec;
}

std::string Fixtures() {
  const char* d = getenv("MICROSCOPE_FIXTURES");
  return d ? d : "build/tests";
}

const Recording& Get(const std::string& name) {
  static std::map<std::string, Recording> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::vector<std::string> argv;
  if (name == "cpp") {
    argv = {Fixtures() + "/unwind_cpp"};
  } else {
    argv = {Fixtures() + "/unwind", name};
  }
  return cache.emplace(name, RecordFixture(argv)).first->second;
}

// microscope's code map over the recorded mappings.
struct Code : unwind::CodeMap {
  const Recording* rec;
  record::CfiCache* cache;
  std::vector<std::shared_ptr<const record::ModuleCfi>> cfi;
  std::vector<uint64_t> bias;
  bool Lookup(uint64_t pc, unwind::CodeInfo* info) override {
    auto it = std::upper_bound(rec->maps.begin(), rec->maps.end(), pc,
                               [](uint64_t a, const Map& m) { return a < m.start; });
    if (it == rec->maps.begin() || pc >= (it - 1)->end) return false;
    size_t i = size_t(it - 1 - rec->maps.begin());
    info->table = cfi[i] ? cfi[i]->table.get() : nullptr;
    info->bias = bias[i];
    return true;
  }
};

void BM_UnwindMicroscope(benchmark::State& state, const std::string& fixture) {
  const Recording& rec = Get(fixture);
  if (rec.samples.empty()) {
    state.SkipWithError(("no samples: " + rec.error).c_str());
    return;
  }
  record::CfiCache cache;
  Code code;
  code.rec = &rec;
  code.cache = &cache;
  for (const Map& m : rec.maps) {
    auto c = cache.Get(m.build_id, std::span(&m.path, 1));
    code.cfi.push_back(c.ok() ? *c : nullptr);
    uint64_t b = 0;
    if (c.ok()) (*c)->Bias(m.start, m.pgoff, &b);
    code.bias.push_back(b);
  }
  std::vector<unwind::Frame> out(1024);
  uint64_t frames = 0, samples = 0;
  for (auto _ : state) {
    for (const StoredSample& s : rec.samples) {
      unwind::StackImage img{s.regs.value[unwind::kRegRsp], s.stack};
      auto r = unwind::Unwind(s.regs, img, code, unwind::Policy::kAuto, out);
      frames += r.frames;
    }
    samples += rec.samples.size();
  }
  state.counters["frames/sample"] = double(frames) / double(samples);
  state.counters["ns/sample"] = benchmark::Counter(
      double(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns/frame"] =
      benchmark::Counter(double(frames), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The libdwfl baseline: Dwfl with the process's modules reported once, a
// thread whose registers and memory come from the stored sample.
struct DwflContext {
  const StoredSample* current = nullptr;
  pid_t tid = 0;
};

pid_t NextThread(Dwfl*, void* arg, void** thread_argp) {
  auto* ctx = static_cast<DwflContext*>(arg);
  if (*thread_argp != nullptr) return 0;
  *thread_argp = ctx;
  return ctx->tid;
}

bool GetThread(Dwfl*, pid_t, void* arg, void** thread_argp) {
  *thread_argp = arg;
  return true;
}

bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* ctx = static_cast<DwflContext*>(arg);
  const StoredSample& s = *ctx->current;
  uint64_t base = s.regs.value[unwind::kRegRsp];
  if (addr < base || addr + 8 > base + s.stack.size()) return false;
  std::memcpy(result, s.stack.data() + (addr - base), 8);
  return true;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
  auto* ctx = static_cast<DwflContext*>(arg);
  Dwarf_Word regs[unwind::kRegCount];
  for (int i = 0; i < unwind::kRegCount; ++i) regs[i] = ctx->current->regs.value[i];
  return dwfl_thread_state_registers(thread, 0, unwind::kRegCount, regs);
}

int CountFrame(Dwfl_Frame* frame, void* arg) {
  Dwarf_Addr pc;
  bool activation;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  auto* n = static_cast<uint64_t*>(arg);
  return ++*n >= 1024 ? DWARF_CB_ABORT : DWARF_CB_OK;
}

void BM_UnwindLibdwfl(benchmark::State& state, const std::string& fixture) {
  const Recording& rec = Get(fixture);
  if (rec.samples.empty()) {
    state.SkipWithError(("no samples: " + rec.error).c_str());
    return;
  }
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = &debuginfo_path,
  };
  Dwfl* dwfl = dwfl_begin(&callbacks);
  dwfl_report_begin(dwfl);
  std::map<std::string, bool> reported;
  for (const Map& m : rec.maps) {
    if (reported[m.path]) continue;
    auto cfi = record::LoadModuleCfi(m.path);
    uint64_t bias = 0;
    if (!cfi.ok() || !(*cfi)->Bias(m.start, m.pgoff, &bias)) continue;
    if (dwfl_report_elf(dwfl, m.path.c_str(), m.path.c_str(), -1, bias, false) != nullptr) {
      reported[m.path] = true;
    }
  }
  dwfl_report_end(dwfl, nullptr, nullptr);
  static const Dwfl_Thread_Callbacks thread_callbacks = {
      .next_thread = NextThread,
      .get_thread = GetThread,
      .memory_read = MemoryRead,
      .set_initial_registers = SetInitialRegisters,
      .detach = nullptr,
      .thread_detach = nullptr,
  };
  DwflContext ctx;
  ctx.tid = pid_t(rec.samples[0].tid);
  if (!dwfl_attach_state(dwfl, nullptr, ctx.tid, &thread_callbacks, &ctx)) {
    state.SkipWithError(dwfl_errmsg(-1));
    dwfl_end(dwfl);
    return;
  }
  uint64_t frames = 0, samples = 0;
  for (auto _ : state) {
    for (const StoredSample& s : rec.samples) {
      ctx.current = &s;
      uint64_t n = 0;
      dwfl_getthread_frames(dwfl, ctx.tid, CountFrame, &n);
      frames += n;
    }
    samples += rec.samples.size();
  }
  dwfl_end(dwfl);
  state.counters["frames/sample"] = double(frames) / double(samples);
  state.counters["ns/sample"] = benchmark::Counter(
      double(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns/frame"] =
      benchmark::Counter(double(frames), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// What a recording pays the first time a sample lands in a module: its CFI
// loaded, then the row of one address (the middle of its largest segment,
// the text) found.
void BM_LoadCfi(benchmark::State& state, const std::string& path) {
  auto probe = record::LoadModuleCfi(path);
  if (!probe.ok()) {
    state.SkipWithError((path + ": " + probe.status().message()).c_str());
    return;
  }
  uint64_t text = 0, largest = 0;
  for (const auto& load : (*probe)->loads) {
    if (load.filesz > largest) largest = load.filesz, text = load.vaddr + load.filesz / 2;
  }
  size_t rows = 0;
  for (auto _ : state) {
    auto cfi = record::LoadModuleCfi(path);
    benchmark::DoNotOptimize((*cfi)->table->Find(text));
    rows = (*cfi)->table->size();
  }
  state.counters["rows"] = double(rows);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* f : {"recurse", "qsort", "thread", "cpp"}) {
    benchmark::RegisterBenchmark((std::string("BM_UnwindMicroscope/") + f).c_str(),
                                 BM_UnwindMicroscope, f)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("BM_UnwindLibdwfl/") + f).c_str(), BM_UnwindLibdwfl,
                                 f)
        ->Unit(benchmark::kMicrosecond);
  }
  // libc, and a large module: node's executable (V8 and all of node).
  for (const char* path : {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/node"}) {
    benchmark::RegisterBenchmark((std::string("BM_LoadCfi/") + path).c_str(), BM_LoadCfi, path)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
