// The stand-in runtime (src/runtimes/runtime.h), registered only in the
// builds of scripts/build (-Dtest_runtime=true): everything a runtime needs
// is in this directory. Its program (program.c) runs toy functions through
// toy_eval, one native activation each, and keeps their names in toy_vm;
// its BPF walk (toy_walk.bpf.h) copies them at every stack taken; this
// source marks toy_eval's code, lays processes out, and splices each walk
// in place of toy_eval's frames.
#include <linux/types.h>

#include <bpf/bpf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/runtime_ids.h"
#include "src/record/problem_counts.h"
#include "src/record/proc.h"
#include "src/record/process_memory.h"
#include "src/record/splicer.h"
#include "src/record/walk_record.h"
#include "src/runtimes/runtime.h"
#include "src/runtimes/sampler.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"
#include "tests/runtimes/toy/toy.h"

namespace microscope::runtimes::toy {
namespace {

constexpr std::string_view kName = "toy";
const uint8_t kEvalTag = record::code_tags::Allocate();  // toy_eval's code

// A module's toy: toy_eval's code and toy_vm's link-time address.
struct ModuleInfo {
  bool toy = false;
  uint64_t eval_begin = 0, eval_end = 0;  // file offsets
  uint64_t vm = 0;
  std::vector<symbols::LoadSegment> loads;
};

ModuleInfo ReadModule(const std::string& path) {
  ModuleInfo info;
  Result<symbols::ElfFile> file = symbols::OpenElfFile(path);
  if (!file.ok()) return info;
  GElf_Sym eval, vm;
  if (!symbols::FindSymbol(file->elf.get(), "toy_eval", &eval) ||
      !symbols::FindSymbol(file->elf.get(), "toy_vm", &vm))
    return info;
  Result<std::vector<symbols::LoadSegment>> loads = symbols::ElfLoadSegments(file->elf.get());
  if (!loads.ok()) return info;
  for (const symbols::LoadSegment& s : *loads) {
    if (eval.st_value >= s.vaddr && eval.st_value < s.vaddr + s.filesz) {
      info.eval_begin = eval.st_value - s.vaddr + s.offset;
      info.eval_end = info.eval_begin + std::max<uint64_t>(eval.st_size, 1);
    }
  }
  info.toy = info.eval_end > info.eval_begin;
  info.vm = vm.st_value;
  info.loads = std::move(*loads);
  return info;
}

class ToySource final : public record::EventlessSource, public record::StackSplicer {
 public:
  explicit ToySource(const record::SourceContext& context) : context_(context) {}

  Status Start() {
    ASSIGN_OR_RETURN(sampler_, Sampler::Attach(context_.collector, uint32_t(context_.target),
                                               context_.options.runtime_frames,
                                               context_.shared_maps, context_.runtime_sampler));
    return OkStatus();
  }

  int wait_fd() const override { return -1; }
  void Poll(const record::PollWindow&, record::RowSink*) override {}
  record::StackSplicer* splicer() override { return this; }
  bool OwnsWalk(std::span<const uint8_t> walk) const override {
    return record::WalkRuntime(walk) == MICROSCOPE_RUNTIME_TOY;
  }

  void OnModuleMapped(const record::MappedModule& mapping, record::CodeMarks* marks) override {
    if (mapping.path.empty() || mapping.path[0] != '/') return;
    auto [it, fresh] = modules_.try_emplace(mapping.module);
    if (fresh) {
      it->second = ReadModule(record::TargetFile(mapping.pid, mapping.path));
      if (it->second.toy)
        marks->Mark(mapping.module, it->second.eval_begin, it->second.eval_end, kEvalTag);
    }
    const ModuleInfo& info = it->second;
    uint64_t vaddr;
    if (!info.toy || sampler_ == nullptr ||
        !symbols::OffsetToVaddr(info.loads, mapping.file_offset, &vaddr))
      return;
    const toy_process process = {info.vm + (mapping.start - vaddr)};
    const uint32_t pid = mapping.pid;
    if (bpf_map_update_elem(sampler_->map_fd("toy_processes"), &pid, &process, BPF_ANY) != 0)
      problems_.Count("toy processes not laid out", "pid " + std::to_string(pid));
    (void)sampler_->Follow(pid);
  }

  void Splice(const record::SpliceStack& stack, record::FrameInterner* interner) override {
    if (stack.walk.empty()) {  // sampled before the process was laid out
      ++no_walk_;
      return;
    }
    Result<record::WalkRecord> walk = record::ParseWalkRecord(stack.walk, MICROSCOPE_RUNTIME_TOY,
                                                              sizeof(toy_frame), "toy walk record");
    if (!walk.ok()) return problems_.Count("malformed toy walks", walk.status().message());
    if (walk->nframes > TOY_MAX_FRAMES) {
      return problems_.Count("malformed toy walks", "more frames than a toy walk keeps");
    }
    ++walks_;
    std::vector<size_t> tagged;  // toy_eval's activations, leaf first
    for (size_t i = 0; i < stack.frames->size() && i < stack.tags.size(); ++i)
      if (stack.tags[i] == kEvalTag) tagged.push_back(i);
    // A call between its push and its toy_eval (or its return and its pop)
    // has one toy frame more than toy_eval frames: the innermost, not
    // running, is left out.
    const size_t running = tagged.size();
    if (walk->status != TOY_WALKED || (walk->nframes != running && walk->nframes != running + 1)) {
      return problems_.Count("toy walks not spliced (not one toy frame per toy_eval frame)",
                             std::to_string(walk->nframes) + " toy frames, " +
                                 std::to_string(running) + " toy_eval frames");
    }
    record::ProcessMemory memory(pid_t(stack.pid));
    for (size_t k = 0; k < running; ++k) {  // the walk is outermost first, tagged leaf first
      toy_frame f;
      std::memcpy(&f, walk->frames.data() + (running - 1 - k) * sizeof(f), sizeof(f));
      char name[64] = {};
      if (!memory.Read(f.name, name, sizeof(name) - 1))
        std::strcpy(name, "[unknown toy: unreadable name]");
      (*stack.frames)[tagged[k]] = interner->Interpreted({name, "toy", 0, 0});
      ++frames_;
    }
    ++stacks_;
  }

  void Finish(record::RowSink* sink, capture::Settings* settings) override {
    problems_.Report(sink);
    if (sampler_ == nullptr) return;  // no toy program: nothing to say
    capture::SourceSetting& s = settings->SetSource(std::string(kName), "on");
    s.values = {{"stacks", stacks_},
                {"stacks_without_walk", no_walk_},
                {"walks", walks_},
                {"frames", frames_},
                {"walks_lost", sampler_->Lost()}};
    sampler_.reset();
  }

 private:
  record::SourceContext context_;
  std::shared_ptr<Sampler> sampler_;
  std::unordered_map<capture::ModuleId, ModuleInfo> modules_;
  record::ProblemCounts problems_;
  uint64_t stacks_ = 0, walks_ = 0, frames_ = 0, no_walk_ = 0;
};

// Loads its walker when the mode says bpf or the program is a toy one.
Result<std::unique_ptr<record::EventSource>> StartToySource(const record::SourceContext& context) {
  auto source = std::make_unique<ToySource>(context);
  const std::string program = ProgramPath(context);
  const bool toy = !program.empty() && ReadModule(program).toy;
  if (context.options.RuntimeMode(kName) == "bpf" || toy) RETURN_IF_ERROR(source->Start());
  return std::unique_ptr<record::EventSource>(std::move(source));
}

constexpr std::string_view kMaps[] = {"toy_processes"};

}  // namespace

extern const Runtime kRuntime;
const Runtime kRuntime = {kName, "toy frames",
                          "toy frames (tests/runtimes/toy, the stand-in runtime of the tests), "
                          "walked by BPF and spliced in place of toy_eval's frames",
                          kMaps, StartToySource};

}  // namespace microscope::runtimes::toy
