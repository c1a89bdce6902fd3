#include <doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/report.h"
#include "formats/report_json.h"
#include "tests/unit/analysis/test_views.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using analysis::ReportQuery;
using nlohmann::ordered_json;

namespace {

ordered_json ReportOf(const capture::Capture& c, const ReportQuery& q,
                      const capture::Capture* other = nullptr) {
  auto m = analysis::BuildReport(c, q, other);
  REQUIRE(m.ok());
  return ordered_json::parse(formats::ReportJson(*m));
}

std::vector<std::string> Keys(const ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("Report JSON: parts in a fixed order, each only when asked for") {
  auto c = testing::MakeTestCapture();
  CHECK(Keys(ReportOf(c, {})) == std::vector<std::string>{"header", "all", "functions"});
  auto off = testing::MakeOffCpuCapture();
  auto other = testing::MakeTestCapture();
  ReportQuery q;
  q.views = {true, true, true, true, true, true, true};
  q.filter.thread = "app";
  q.filter_text = "thread app";
  CHECK(Keys(ReportOf(off, q, &other)) ==
        std::vector<std::string>{"header", "off_cpu", "by_state", "filter", "kept", "all",
                                 "functions", "syscalls", "tree", "inverted", "threads", "lanes",
                                 "diff"});
}

TEST_CASE("Report JSON: functions are whole, costs carry their share") {
  auto c = testing::MakeTestCapture();
  ReportQuery q;
  q.top = 1;  // the text tables' pruning; the JSON lists every function
  ordered_json j = ReportOf(c, q);
  CHECK(j["all"] == ordered_json::parse(
                        R"({"samples": 10, "value": 10000, "percent": 100.0, "text": "100.00%"})"));
  REQUIRE(j["functions"].size() == 4);
  const ordered_json& hot = j["functions"][0];
  CHECK(Keys(hot) == std::vector<std::string>{"function", "module", "self", "total"});
  CHECK(hot["function"] == "hot");
  CHECK(hot["module"] == "app");
  CHECK(hot["self"]["samples"] == 7);
  CHECK(hot["self"]["percent"].get<double>() == doctest::Approx(70));
  CHECK(j["functions"][3]["function"] == "run");
  CHECK(j["header"]["samples"] == 10);
  CHECK(j["header"]["command"] == ordered_json::array({"app", "--flag"}));
}

TEST_CASE("Report JSON: trees nest children and leave out pruned nodes") {
  auto c = testing::MakeTestCapture();
  ReportQuery q;
  q.views.tree = true;
  q.min_percent = 50;
  ordered_json j = ReportOf(c, q);
  REQUIRE(j["tree"].size() == 1);
  const ordered_json& main = j["tree"][0];
  CHECK(main["function"] == "main");
  CHECK(main["total"]["percent"].get<double>() == doctest::Approx(100));
  REQUIRE(main["children"].size() == 1);
  const ordered_json& run = main["children"][0];
  REQUIRE(run["children"].size() == 1);  // cold (30%) and the unsampled leaf pruned
  CHECK(run["children"][0]["function"] == "hot");
  CHECK(run["children"][0]["children"] == ordered_json::array());
}

TEST_CASE("Report JSON: a diff's tables are their top rows; the call trees merged and pruned") {
  auto base = testing::MakeTestCapture();
  auto other = testing::MakeTestCapture();
  for (size_t i = 0; i < other.samples.size(); ++i) other.samples.stack[i] = 3;
  ReportQuery q;
  q.top = 1;
  q.min_percent = 50;
  ordered_json d = ReportOf(base, q, &other)["diff"];
  CHECK(d["metric"] == "cpu");
  CHECK(d["base_total"] == 10000);
  REQUIRE(d["self"].size() == 1);  // the top one; the text shows as many
  CHECK(d["self_rows"] == 4);
  CHECK(Keys(d["self"][0]) == std::vector<std::string>{"name", "module", "side", "base_value",
                                                       "other_value", "base_share", "other_share",
                                                       "delta", "delta_text"});
  CHECK(d["self"][0]["side"] == "both");
  CHECK(d["self"][0]["delta_text"].get<std::string>().size() > 1);
  CHECK(std::abs(d["self"][0]["delta"].get<double>()) == doctest::Approx(0.7));
  REQUIRE_FALSE(d["paths"].empty());
  CHECK_FALSE(d["paths"][0].contains("module"));
  // main > run > {hot 70% | 0%, cold 30% | 100%}: both over 50% of one side.
  REQUIRE(d["tree"].size() == 1);
  const ordered_json& run = d["tree"][0]["children"][0];
  CHECK(run["name"] == "run");
  REQUIRE(run["children"].size() == 2);
  CHECK(run["children"][0]["name"] == "cold");
  CHECK(run["children"][0]["other_share"].get<double>() == doctest::Approx(1.0));
  CHECK(run["children"][1]["name"] == "hot");
  CHECK(run["children"][1]["side"] == "base");
  CHECK(d["pruned"] == 0);
  q.min_percent = 80;  // hot (70%) goes
  d = ReportOf(base, q, &other)["diff"];
  CHECK(d["tree"][0]["children"][0]["children"].size() == 1);
  CHECK(d["pruned"] == 1);
}

TEST_CASE("Report JSON: off-CPU parts name threads by tid; wakers nest") {
  auto c = testing::MakeOffCpuCapture();
  ReportQuery q;
  q.views.by_state = true;
  q.top = 1;
  ordered_json j = ReportOf(c, q);
  const ordered_json& o = j["by_state"];
  CHECK(o["total_ns"] == 1118);
  CHECK(o["states"]["sleeping"] ==
        ordered_json::parse(R"({"intervals": 2, "short": 5, "total_ns": 510})"));
  REQUIRE(o["threads"].size() == 4);  // the text shows the top one; JSON all
  CHECK(o["threads"][0]["tid"] == 101);
  CHECK(o["threads"][0]["state"] == "sleeping");
  REQUIRE_FALSE(o["wakers"].empty());
  CHECK(Keys(o["wakers"][0]) == std::vector<std::string>{"tid", "count", "total_ns", "wakers"});
  CHECK(j["off_cpu"]["status"] == "on");
}

TEST_CASE("Report JSON: the writer prints the document and a newline") {
  auto c = testing::MakeTestCapture();
  auto m = analysis::BuildReport(c, {});
  REQUIRE(m.ok());
  std::string text = testing::ToString([&](FILE* f) { formats::WriteReportJson(f, *m); });
  CHECK(text == formats::ReportJson(*m) + "\n");
  // Indented by one space.
  CHECK(text.rfind("{\n \"header\": {\n  \"command\": [\n   \"app\",", 0) == 0);
}
