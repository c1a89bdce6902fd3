#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/profile.h"
#include "analysis/summary.h"
#include "capture/reader.h"
#include "src/cli/commands.h"

namespace microscope::cli {
namespace {

using analysis::CallTree;
using analysis::Cost;
using analysis::Flat;
using analysis::FunctionKeys;
using analysis::Summary;
using nlohmann::ordered_json;

struct ReportOptions {
  std::string file;
  bool tree = false;
  bool json = false;
  double min_percent = 0.5;
  size_t top = 20;
};

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * part / whole;
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3f s", double(ns) / 1e9);
  return buf;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

void PrintHeader(const Summary& s) {
  printf("command     %s\n", Join(s.command).c_str());
  printf("mode        %s, pid %d\n", s.mode.c_str(), s.target_pid);
  printf("processes   %zu:", s.processes.size());
  for (const auto& p : s.processes) {
    printf(" %d %s", p.pid, p.command.c_str());
    if (p.exit_status >= 0) printf(" (exit %d)", p.exit_status);
    printf(";");
  }
  printf("\n");
  printf("threads     %zu:", s.threads.size());
  const size_t kShownThreads = 8;
  for (size_t i = 0; i < s.threads.size() && i < kShownThreads; ++i) {
    const auto& t = s.threads[i];
    printf(" %s (tid %d) %llu;", t.name.c_str(), t.tid, static_cast<unsigned long long>(t.samples));
  }
  if (s.threads.size() > kShownThreads) printf(" ... (--json lists all)");
  printf("\n");
  printf("duration    %s\n", Seconds(s.duration_ns).c_str());
  printf("samples     %llu (%s of CPU) at %u Hz, %zu threads\n",
         static_cast<unsigned long long>(s.samples), Seconds(s.sampled_ns).c_str(), s.frequency,
         s.threads.size());
  printf("lost        %llu records, %llu samples; throttled %llu times\n",
         static_cast<unsigned long long>(s.lost_records),
         static_cast<unsigned long long>(s.lost_samples),
         static_cast<unsigned long long>(s.throttles));
  printf("call graph  %s", s.call_graph.c_str());
  if (s.stack_copy != 0) printf(", %u-byte user stack copy", s.stack_copy);
  printf("\n");
  uint64_t complete = s.stack_ends[uint8_t(capture::StackEnd::kComplete)];
  uint64_t fp = s.stack_ends[uint8_t(capture::StackEnd::kFramePointerEnd)];
  if (s.samples > 0 && complete + fp < s.samples) {
    // How many stacks CFI proved whole, and why the others ended early.
    printf("stack quality %.1f%% complete, %llu ended early\n", Percent(complete, s.samples),
           static_cast<unsigned long long>(s.samples - complete - fp));
  }
  printf("stacks      ");
  bool first = true;
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    if (s.stack_ends[e] == 0) continue;
    printf("%s%llu %s", first ? "" : ", ", static_cast<unsigned long long>(s.stack_ends[e]),
           capture::StackEndName(capture::StackEnd(e)));
    first = false;
  }
  printf("%s; kernel frames %s\n", first ? "none" : "", s.kernel_frames ? "on" : "off");
  if (s.problems.empty()) {
    printf("problems    none\n");
  } else {
    for (size_t i = 0; i < s.problems.size(); ++i) {
      const auto& p = s.problems[i];
      printf("%s%llu x %s (e.g. %s)\n", i == 0 ? "problems    " : "            ",
             static_cast<unsigned long long>(p.count), p.kind.c_str(), p.example.c_str());
    }
  }
  for (const std::string& n : s.notes) printf("note        %s\n", n.c_str());
}

void PrintFlat(const Flat& flat, const FunctionKeys& keys, size_t top, bool by_total) {
  std::vector<const analysis::FlatRow*> rows;
  for (const auto& r : flat.rows) rows.push_back(&r);
  if (by_total) {
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
      return a->total.samples > b->total.samples;
    });
  }
  printf("\n%s\n", by_total ? "Hottest functions by total time (self + callees)"
                            : "Hottest functions by self time");
  printf("%7s %8s %7s %8s  %s\n", "self%", "self", "total%", "total", "function [module]");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& r = *rows[i];
    if ((by_total ? r.total.samples : r.self.samples) == 0) break;
    printf("%6.2f%% %8llu %6.2f%% %8llu  %s [%s]\n", Percent(r.self.samples, flat.all.samples),
           static_cast<unsigned long long>(r.self.samples),
           Percent(r.total.samples, flat.all.samples),
           static_cast<unsigned long long>(r.total.samples), keys.Name(r.key).c_str(),
           keys.ModuleName(r.key).c_str());
  }
}

void PrintTreeNode(const CallTree& tree, const FunctionKeys& keys, uint32_t i, int depth,
                   double min_percent) {
  const auto& n = tree.nodes[i];
  double total = Percent(n.total.samples, tree.all.samples);
  if (total < min_percent) return;
  printf("%6.2f%% %6.2f%%  %*s%s [%s]\n", total, Percent(n.self.samples, tree.all.samples),
         depth * 2, "", keys.Name(n.key).c_str(), keys.ModuleName(n.key).c_str());
  for (uint32_t c : n.children) PrintTreeNode(tree, keys, c, depth + 1, min_percent);
}

ordered_json CostJson(const Cost& c, uint64_t all) {
  return {{"samples", c.samples}, {"time_ns", c.time_ns}, {"percent", Percent(c.samples, all)}};
}

ordered_json TreeJson(const CallTree& tree, const FunctionKeys& keys, uint32_t i,
                      double min_percent) {
  const auto& n = tree.nodes[i];
  ordered_json node = {{"function", keys.Name(n.key)},
                       {"module", keys.ModuleName(n.key)},
                       {"self", CostJson(n.self, tree.all.samples)},
                       {"total", CostJson(n.total, tree.all.samples)}};
  ordered_json children = ordered_json::array();
  for (uint32_t c : n.children) {
    if (Percent(tree.nodes[c].total.samples, tree.all.samples) >= min_percent) {
      children.push_back(TreeJson(tree, keys, c, min_percent));
    }
  }
  node["children"] = std::move(children);
  return node;
}

ordered_json SummaryJson(const Summary& s) {
  ordered_json j;
  j["command"] = s.command;
  j["mode"] = s.mode;
  j["target_pid"] = s.target_pid;
  j["frequency"] = s.frequency;
  j["call_graph"] = s.call_graph;
  j["stack_copy"] = s.stack_copy;
  j["duration_ns"] = s.duration_ns;
  j["samples"] = s.samples;
  j["sampled_ns"] = s.sampled_ns;
  j["lost_records"] = s.lost_records;
  j["lost_samples"] = s.lost_samples;
  j["throttles"] = s.throttles;
  j["kernel_frames"] = s.kernel_frames;
  ordered_json ends = ordered_json::object();
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    ends[capture::StackEndName(capture::StackEnd(e))] = s.stack_ends[e];
  }
  j["stack_ends"] = ends;
  j["processes"] = ordered_json::array();
  for (const auto& p : s.processes) {
    j["processes"].push_back({{"pid", p.pid},
                              {"parent_pid", p.parent_pid},
                              {"command", p.command},
                              {"exit_status", p.exit_status},
                              {"samples", p.samples}});
  }
  j["threads"] = ordered_json::array();
  for (const auto& t : s.threads) {
    j["threads"].push_back(
        {{"tid", t.tid}, {"pid", t.pid}, {"name", t.name}, {"samples", t.samples}});
  }
  j["problems"] = ordered_json::array();
  for (const auto& p : s.problems) {
    j["problems"].push_back({{"kind", p.kind}, {"count", p.count}, {"example", p.example}});
  }
  j["notes"] = s.notes;
  return j;
}

int RunReport(const ReportOptions& o) {
  Result<capture::Capture> read = capture::ReadCapture(o.file);
  if (!read.ok()) {
    PrintError(read.status().WithContext(o.file).message());
    return 1;
  }
  const capture::Capture& cap = *read;
  Summary summary = analysis::Summarize(cap);
  FunctionKeys keys(cap);
  Flat flat = analysis::ComputeFlat(cap, keys);
  CallTree tree;
  if (o.tree) tree = analysis::ComputeTree(cap, keys);
  if (o.json) {
    ordered_json out;
    out["header"] = SummaryJson(summary);
    out["functions"] = ordered_json::array();
    for (const auto& r : flat.rows) {
      out["functions"].push_back({{"function", keys.Name(r.key)},
                                  {"module", keys.ModuleName(r.key)},
                                  {"self", CostJson(r.self, flat.all.samples)},
                                  {"total", CostJson(r.total, flat.all.samples)}});
    }
    if (o.tree) {
      ordered_json roots = ordered_json::array();
      for (uint32_t r : tree.roots) {
        if (Percent(tree.nodes[r].total.samples, tree.all.samples) >= o.min_percent) {
          roots.push_back(TreeJson(tree, keys, r, o.min_percent));
        }
      }
      out["tree"] = std::move(roots);
    }
    printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  PrintHeader(summary);
  PrintFlat(flat, keys, o.top, /*by_total=*/false);
  PrintFlat(flat, keys, o.top, /*by_total=*/true);
  if (o.tree) {
    printf("\nCall tree (callers first; below %.2f%% pruned)\n", o.min_percent);
    printf("%7s %7s  %s\n", "total%", "self%", "function [module]");
    for (uint32_t r : tree.roots) PrintTreeNode(tree, keys, r, 0, o.min_percent);
  }
  return 0;
}

}  // namespace

Runner AddReportCommand(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd =
      app.add_subcommand("report", "Summarize a capture: header, hottest functions, call tree.");
  cmd->add_option("file", o->file, "capture file")->required();
  cmd->add_flag("--tree", o->tree, "print the call tree, callers first");
  cmd->add_option("--min-percent", o->min_percent, "prune tree nodes below this share of samples")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-n,--top", o->top, "functions listed per table")->capture_default_str();
  cmd->add_flag("--json", o->json, "the same report as JSON");
  return [o]() { return RunReport(*o); };
}

}  // namespace microscope::cli
