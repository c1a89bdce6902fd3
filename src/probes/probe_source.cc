#include "src/probes/probe_source.h"

#include <gelf.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/hex.h"
#include "capture/row_order.h"
#include "src/probes/abi.h"
#include "src/probes/module_probes.h"
#include "src/probes/ring_records.h"
#include "src/probes/site_entries.h"
#include "src/probes/targets.h"
#include "src/probes/tsc_clock.h"
#include "src/record/process_memory.h"
#include "src/record/splicer.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::probes {
namespace {

constexpr uint32_t kTimeoutMs = 1000;  // the program switches its sites off after this silence
constexpr int kAttachTries = 100;      // rounds a control block may stay unreadable
constexpr size_t kMaxRings = 65536;    // per control block: past this the list is corrupt
constexpr size_t kMaxNotes = 16;

class ProbeSource final : public record::QueuedSource<ProbeEvent>, public record::MappingWatcher {
 public:
  ProbeSource(std::string selection, std::string lines,
              std::function<void(const std::string&)> warn, record::TargetMemory* memory)
      : selection_(std::move(selection)),
        lines_(std::move(lines)),
        warn_(std::move(warn)),
        memory_(memory) {
    clock_.Add(TscClock::Measure());
  }

  int wait_fd() const override { return -1; }
  record::MappingWatcher* mapping_watcher() override { return this; }

  void OnMapping(const record::MappedModule& m) override {
    if (!m.path.starts_with("/")) return;
    auto [it, fresh] = modules_.try_emplace(m.module);
    ModuleProbes& mp = it->second;
    if (fresh) mp = ReadModuleProbes(record::TargetFile(m.pid, m.path));
    if (!mp.has_ctl) return;
    if (fresh && !mp.refused.empty()) {
      Problem("probes of a module refused or partly read", std::string(m.path) + ": " + mp.refused);
    }
    if (mp.loads.empty()) return;  // refused whole
    for (const symbols::LoadSegment& seg : mp.loads) {
      if (m.file_offset < seg.offset || m.file_offset >= seg.offset + seg.filesz) continue;
      const uint64_t bias = m.start - (seg.vaddr + (m.file_offset - seg.offset));
      auto [t, added] = targets_.try_emplace({m.pid, bias + mp.ctl_vaddr});
      if (!added) return;
      t->second.pid = m.pid;
      t->second.module = m.module;
      t->second.path = std::string(m.path);
      t->second.ctl = bias + mp.ctl_vaddr;
      t->second.bias = bias;
      return;
    }
  }

  void Forget(uint32_t pid) override {
    for (auto it = targets_.lower_bound({pid, 0});
         it != targets_.end() && it->first.first == pid;) {
      Retire(it->second);
      it = targets_.erase(it);
    }
  }

  void Poll(const record::PollWindow& w, record::RowSink* sink) override {
    sink_ = sink;
    clock_.Add(TscClock::Measure());
    for (auto& [key, t] : targets_) {
      if (t.dead) continue;
      if (!t.attached) Attach(t);
      if (!t.attached) continue;
      if (w.final) Detach(t);
      Drain(t);
    }
    Take(&fresh_, [&](const ProbeEvent& e) { return e.time >= w.start && e.time < w.end; });
  }

  void Deliver(size_t i, record::RowSink* sink) override {
    const ProbeEvent& e = at(i);
    Site& site = sites_[e.site];
    if (site.id == capture::kNone) {
      site.id = sink->Add(capture::ProbeSites::Row{
          .kind = site.kind,
          .name = sink->Intern(site.name),
          .file = site.file.empty() ? capture::kNone : sink->Intern(site.file),
          .line = site.line,
          .module = site.module,
      });
    }
    sink->Add(capture::ProbeRecords::Row{
        .time = e.time,
        .thread = sink->EventThread(e.pid, e.tid, e.time, ""),
        .site = site.id,
        .op = e.op,
        .value = e.value,
        .text = e.op == ProbeOp::kLabel ? sink->Intern(texts_[e.text]) : capture::kNone,
    });
    ++delivered_;
  }

  void Finish(record::RowSink* sink, capture::Settings* settings) override {
    sink_ = sink;
    for (auto& [key, t] : targets_) Retire(t);
    if (dropped_ > 0) {
      Problem("probe records dropped (a thread's ring was full)",
              std::to_string(dropped_) + " records");
    }
    if (threads_refused_ > 0) {
      Problem("threads whose probes had no ring (the program could not map one)",
              std::to_string(threads_refused_) + " threads");
    }
    capture::SourceSetting& s = settings->SetSource(std::string(capture::kProbeSource), "on");
    s.values = {{"modules", modules_read_},
                {"sites", sites_.size()},
                {"records", delivered_},
                {"dropped", dropped_}};
    settings->lost_records += dropped_;
    sink_ = nullptr;
  }

 private:
  uint64_t TimeOf(const ProbeEvent& e) const override { return e.time; }

  void Problem(std::string_view kind, const std::string& example) {
    if (sink_ != nullptr) {
      sink_->CountProblem(kind, example);
    } else {
      pending_problems_.emplace_back(kind, example);
    }
  }

  uint32_t SiteIndex(const SiteText& s, capture::ModuleId module) {
    auto key = std::make_tuple(s.kind, s.name, s.file, s.line, module);
    auto [it, fresh] = site_index_.try_emplace(key, uint32_t(sites_.size()));
    if (fresh) sites_.push_back({ProbeKind(s.kind), s.name, s.file, s.line, module});
    return it->second;
  }

  void Attach(Target& t) {
    if (sink_ != nullptr) {
      for (auto& [kind, example] : pending_problems_) sink_->CountProblem(kind, example);
      pending_problems_.clear();
    }
    microscope_ctl ctl;
    if (!record::ProcessMemory(pid_t(t.pid)).Read(t.ctl, &ctl, sizeof(ctl))) {
      if (++t.tries >= kAttachTries) t.dead = true;  // the process went, or never ran the module
      return;
    }
    if (ctl.magic != MICROSCOPE_CTL_MAGIC || ctl.version != kAbiVersion) {
      Problem("probes of a module refused or partly read",
              t.path + " (pid " + std::to_string(t.pid) + "): its control block in memory is not " +
                  "of layout version " + std::to_string(kAbiVersion));
      t.dead = true;
      return;
    }
    const uint32_t self = uint32_t(getpid());
    // A launched program's module switched its sites on for this recorder
    // before main (sdk/c/microscope.h, microscope__early): what they wrote
    // is ours.
    const bool early = ctl.reader == self && ctl.state == MICROSCOPE_STATE_RECORDING;
    if (ctl.reader != 0 && ctl.reader != self && ctl.state == MICROSCOPE_STATE_RECORDING &&
        kill(pid_t(ctl.reader), 0) == 0 && MonotonicNowNs() - ctl.heartbeat < 2'000'000'000ull) {
      Note(t.path + " (pid " + std::to_string(t.pid) + "): its probes are read by recorder pid " +
           std::to_string(ctl.reader) + "; not read here");
      t.dead = true;
      return;
    }
    // Heartbeat, timeout, reader and selection first; then the static
    // sites; then the state that lets run-time sites enable themselves.
    ctl.heartbeat = MonotonicNowNs();
    ctl.timeout_ms = kTimeoutMs;
    ctl.reader = self;
    std::memset(ctl.selection, 0, sizeof(ctl.selection));
    std::memcpy(ctl.selection, lines_.data(), std::min(lines_.size(), sizeof(ctl.selection) - 1));
    const size_t from = offsetof(microscope_ctl, heartbeat);
    if (!WriteAt(t.pid, t.ctl + from, reinterpret_cast<const char*>(&ctl) + from,
                 sizeof(ctl) - from)) {
      t.dead = true;
      return;
    }
    const ModuleProbes& mp = modules_[t.module];
    std::vector<uint64_t> enable;
    for (const SiteText& s : mp.sites) {
      const uint64_t address = t.bias + s.address;
      t.site_at[address] = SiteIndex(s, t.module);
      if (Selected(selection_, s.name)) enable.push_back(address + kSiteEnabledAt);
    }
    WriteBytes(t.pid, enable, 1);
    t.enabled.insert(t.enabled.end(), enable.begin(), enable.end());
    // The run-time sites defined before now (a Node or Python program's
    // zones made at start-up) are switched on here too, not next round.
    ReadRuntimeSites(t, ctl);
    // Recording only once all sites so far are on: a program that waits
    // for it (microscope_recording) then loses none of its first zones.
    const uint32_t recording = MICROSCOPE_STATE_RECORDING;
    (void)WriteAt(t.pid, t.ctl + offsetof(microscope_ctl, state), &recording, sizeof(recording));
    // What rings hold from before this recording is not ours: skip it.
    std::vector<uint64_t> raw;
    ForEachRing(t, ctl.rings, [&](uint64_t address, microscope_ring& ring, RingState& state) {
      state.tid = ring.owner;
      state.dropped = early ? 0 : ring.dropped;
      if (!early && ring.tail != ring.head) {
        (void)WriteAt(t.pid, address + offsetof(microscope_ring, tail), &ring.head,
                      sizeof(ring.head));
      }
    });
    t.attached = true;
    ++modules_read_;
  }

  // Switches the target's sites off (the recording ends); what they wrote
  // before is still drained.
  void Detach(Target& t) {
    WriteBytes(t.pid, t.enabled, 0);
    t.enabled.clear();
    const uint32_t idle = MICROSCOPE_STATE_IDLE;
    (void)WriteAt(t.pid, t.ctl + offsetof(microscope_ctl, state), &idle, sizeof(idle));
    const uint32_t none = 0;
    (void)WriteAt(t.pid, t.ctl + offsetof(microscope_ctl, reader), &none, sizeof(none));
  }

  // A target that goes away: its counts stay.
  void Retire(Target& t) {
    for (auto& [address, ring] : t.rings) dropped_ += ring.dropped;
    t.rings.clear();
    threads_refused_ += t.threads_refused;
    t.threads_refused = 0;
    t.dead = true;
  }

  // Calls fn(address, header, state) for each ring of the list at `first`.
  template <typename Fn>
  void ForEachRing(Target& t, uint64_t first, Fn fn) {
    std::unordered_set<uint64_t> seen;  // a ring is visited once: a list may not be a cycle
    for (uint64_t address = first; address != 0;) {
      if (seen.size() == kMaxRings) {
        Problem("probe rings malformed",
                t.path + ": more than " + std::to_string(kMaxRings) + " rings in one list");
        return;
      }
      if (!seen.insert(address).second) {
        Problem("probe rings malformed",
                t.path + ": the list of rings comes back to the ring at " + HexAddress(address));
        return;
      }
      microscope_ring ring;
      if (!record::ProcessMemory(pid_t(t.pid)).Read(address, &ring, sizeof(ring)))
        return;  // the process is going
      if (ring.magic != MICROSCOPE_RING_MAGIC || !std::has_single_bit(ring.words) ||
          ring.words > kMaxRingWords || ring.tail > ring.head ||
          ring.head - ring.tail > ring.words) {
        Problem("probe rings malformed", t.path + ": ring at " + HexAddress(address) + " (words " +
                                             std::to_string(ring.words) + ", head " +
                                             std::to_string(ring.head) + ", tail " +
                                             std::to_string(ring.tail) + ")");
        return;
      }
      fn(address, ring, t.rings[address]);
      address = ring.next;
    }
  }

  // Reads the run-time sites defined since the last round, and switches on
  // those selected (a site defined while this recorder listened did so itself).
  void ReadRuntimeSites(Target& t, const microscope_ctl& ctl) {
    if (ctl.runtime_sites == 0) return;
    const uint32_t count = std::min(ctl.runtime_count, uint32_t(MICROSCOPE_RUNTIME_SITES));
    if (count <= t.runtime_read) return;
    std::vector<uint8_t> slots(size_t(count - t.runtime_read) * MICROSCOPE_RUNTIME_SITE_SIZE);
    const uint64_t first =
        ctl.runtime_sites + uint64_t(t.runtime_read) * MICROSCOPE_RUNTIME_SITE_SIZE;
    if (!record::ProcessMemory(pid_t(t.pid)).Read(first, slots.data(), slots.size())) return;
    std::vector<uint64_t> enable;
    uint32_t read = 0;
    for (; read < count - t.runtime_read; ++read) {
      const uint64_t address = first + uint64_t(read) * MICROSCOPE_RUNTIME_SITE_SIZE;
      Result<std::optional<SiteText>> site = ParseRuntimeSlot(
          std::span<const uint8_t>(slots).subspan(size_t(read) * MICROSCOPE_RUNTIME_SITE_SIZE,
                                                  MICROSCOPE_RUNTIME_SITE_SIZE),
          address);
      if (!site.ok()) {
        Problem("probe sites malformed", t.path + ": " + site.status().message());
        continue;
      }
      if (!site.value().has_value()) break;  // still being written: from here next round
      const SiteText& s = *site.value();
      t.site_at[address] = SiteIndex(s, capture::kNone);
      if (Selected(selection_, s.name)) enable.push_back(address + kSiteEnabledAt);
    }
    t.runtime_read += read;
    WriteBytes(t.pid, enable, 1);
    t.enabled.insert(t.enabled.end(), enable.begin(), enable.end());
    if (ctl.runtime_count > MICROSCOPE_RUNTIME_SITES && !runtime_full_said_) {
      runtime_full_said_ = true;
      Problem("run-time probe sites refused (the table of " +
                  std::to_string(MICROSCOPE_RUNTIME_SITES) + " is full)",
              t.path + ": " + std::to_string(ctl.runtime_count - MICROSCOPE_RUNTIME_SITES) +
                  " definitions");
    }
  }

  void Drain(Target& t) {
    const uint64_t beat = MonotonicNowNs();
    if (!WriteAt(t.pid, t.ctl + offsetof(microscope_ctl, heartbeat), &beat, sizeof(beat))) return;
    microscope_ctl ctl;
    if (!record::ProcessMemory(pid_t(t.pid)).Read(t.ctl, &ctl, offsetof(microscope_ctl, heartbeat)))
      return;
    t.threads_refused = ctl.threads_refused;
    // The rings' words first, then the sites: a record names only sites
    // defined before it was written.
    struct Chunk {
      uint64_t address;
      uint64_t head;
      uint32_t clock;
      RingState* state;
      std::vector<uint64_t> words;
    };
    std::vector<Chunk> chunks;
    // What the rings hold is copied here before it is decoded: counted in
    // the recording's target memory while it is.
    uint64_t taken = 0;
    struct Release {
      record::TargetMemory* memory;
      uint64_t* bytes;
      ~Release() { memory->Give(*bytes); }
    } release{memory_, &taken};
    bool past = false;
    ForEachRing(t, ctl.rings, [&](uint64_t address, microscope_ring& ring, RingState& state) {
      state.dropped = ring.dropped;
      if (ring.head == ring.tail || past) return;
      const uint64_t bytes = (ring.head - ring.tail) * 8;
      if (!memory_->Take(bytes)) {
        past = true;
        return;
      }
      taken += bytes;
      Chunk c{address, ring.head, ring.clock, &state, std::vector<uint64_t>(ring.head - ring.tail)};
      const uint64_t data = address + kRingHeader;
      const uint64_t start = ring.tail & (ring.words - 1);
      const uint64_t first = std::min<uint64_t>(c.words.size(), ring.words - start);
      iovec local[2] = {{c.words.data(), first * 8},
                        {c.words.data() + first, (c.words.size() - first) * 8}};
      iovec remote[2] = {{reinterpret_cast<void*>(data + start * 8), first * 8},
                         {reinterpret_cast<void*>(data), (c.words.size() - first) * 8}};
      const int n = first == c.words.size() ? 1 : 2;
      if (process_vm_readv(pid_t(t.pid), local, n, remote, n, 0) != ssize_t(c.words.size() * 8))
        return;
      chunks.push_back(std::move(c));
    });
    if (past) {
      // The rings are read no more: their program's records stop here.
      Problem("probe rings read no further (the recording's target memory is used up)",
              t.path + " (pid " + std::to_string(t.pid) + "): past " +
                  std::to_string(memory_->limit() >> 20) + " MiB (--target-memory)");
      Detach(t);
      t.dead = true;
    }
    ReadRuntimeSites(t, ctl);
    for (Chunk& c : chunks) {
      RingChunk decoded = DecodeRingWords(c.words, &c.state->tid);
      if (!decoded.error.empty()) {
        Problem("probe records malformed", t.path + ": ring at " + HexAddress(c.address) +
                                               ", word " + std::to_string(decoded.error_word) +
                                               ": " + decoded.error);
      }
      for (RingRecord& r : decoded.records) Keep(t, c.clock, std::move(r));
      (void)WriteAt(t.pid, c.address + offsetof(microscope_ring, tail), &c.head, sizeof(c.head));
    }
  }

  void Keep(Target& t, uint32_t clock, RingRecord&& r) {
    auto site = t.site_at.find(r.site);
    if (site == t.site_at.end()) {
      Problem("probe records of unknown sites", t.path + ": site address " + HexAddress(r.site));
      return;
    }
    ProbeEvent e;
    e.pid = t.pid;
    e.tid = r.tid;
    e.site = site->second;
    e.op = OpOf(r.op);
    e.time = clock == MICROSCOPE_CLOCK_TSC ? clock_.ToNs(r.time) : r.time;
    if (ProbeKind(capture::ProbeOpKind(e.op)) != sites_[e.site].kind) {
      Problem("probe records malformed", t.path + ": a " +
                                             capture::ProbeKindName(sites_[e.site].kind) +
                                             " site recorded operation " + std::to_string(r.op));
      return;
    }
    if (r.op == MICROSCOPE_OP_COUNTER) {
      e.value = std::bit_cast<double>(r.operand);
      if (!std::isfinite(e.value)) {
        Problem("probe counter values not finite (left out)", sites_[e.site].name);
        return;
      }
    } else if (r.op == MICROSCOPE_OP_LABEL_INT || r.op == MICROSCOPE_OP_LABEL_TEXT) {
      std::string text =
          r.op == MICROSCOPE_OP_LABEL_INT ? std::to_string(int64_t(r.operand)) : std::move(r.text);
      auto [it, fresh] = text_index_.try_emplace(std::move(text), uint32_t(texts_.size()));
      if (fresh) texts_.push_back(it->first);
      e.text = it->second;
    }
    fresh_.push_back(std::move(e));
  }

  void Note(const std::string& line) {
    if (notes_said_++ < kMaxNotes) warn_("probes: " + line);
  }

  const std::string selection_;
  const std::string lines_;  // the selection as the control block carries it
  std::function<void(const std::string&)> warn_;
  record::TargetMemory* memory_;
  record::RowSink* sink_ = nullptr;  // during Poll and Finish
  std::vector<std::pair<std::string, std::string>> pending_problems_;
  TscClock clock_;
  std::unordered_map<capture::ModuleId, ModuleProbes> modules_;
  std::map<std::pair<uint32_t, uint64_t>, Target> targets_;  // by pid and control block
  std::vector<Site> sites_;
  std::map<std::tuple<uint8_t, std::string, std::string, uint32_t, capture::ModuleId>, uint32_t>
      site_index_;
  std::vector<ProbeEvent> fresh_;
  std::vector<std::string> texts_;  // labels' values, each once
  std::unordered_map<std::string, uint32_t> text_index_;
  uint64_t delivered_ = 0;
  uint64_t dropped_ = 0;
  uint64_t threads_refused_ = 0;
  uint64_t modules_read_ = 0;
  size_t notes_said_ = 0;
  bool runtime_full_said_ = false;
};

}  // namespace

Result<std::unique_ptr<record::EventSource>> StartProbeSource(
    const record::SourceContext& context) {
  ASSIGN_OR_RETURN(std::string lines, SelectionLines(context.options.probes));
  context.settings->SetSource(std::string(capture::kProbeSource), "on");
  context.settings->notes.push_back(
      "probes: the program's own zones, marks, labels and counters (sdk/), selected by '" +
      context.options.probes + "'");
  return std::unique_ptr<record::EventSource>(std::make_unique<ProbeSource>(
      context.options.probes, std::move(lines), context.warn, context.target_memory));
}

}  // namespace microscope::probes
