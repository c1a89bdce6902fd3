#include "analysis/presentation.h"

#include <doctest.h>

namespace microscope::analysis {
namespace {

TEST_CASE("Presentation: shares, changes, quantities and durations as every view writes them") {
  CHECK(Share(12.3456) == "12.35%");
  CHECK(Share(0) == "0.00%");
  CHECK(Share(100) == "100.00%");
  CHECK(ShareChange(1.234) == "+1.23%");
  CHECK(ShareChange(-0.5) == "-0.50%");
  CHECK(Quantity(2013000000, "nanoseconds") == "2.013 s");
  CHECK(Quantity(512, "bytes") == "512.0 B");
  CHECK(Quantity(3 * 1024 * 1024 + 512 * 1024, "bytes") == "3.5 MiB");
  CHECK(Quantity(42, "count") == "42");
  CHECK(Quantity(7, "pages") == "7 pages");
  CHECK(Duration(12300) == "12.3 µs");
  CHECK(Duration(4567000) == "4.567 ms");
  CHECK(Duration(61234000000) == "61.234 s");
}

TEST_CASE("Presentation: a header's lines, one problem per line, the filter's kept count") {
  ReportModel m;
  m.header.summary.command = {"./prog", "--fast"};
  m.header.summary.mode = "launch";
  m.header.summary.duration_ns = 1500000000;
  m.header.summary.samples = 10;
  m.header.summary.value = 10000000;
  m.header.summary.unit = "nanoseconds";
  m.header.summary.metric = "cpu";
  m.header.summary.problems = {{"a", 2, "first"}, {"b", 1, "second"}};
  m.header.filter_text = "focus /x/";
  m.flat.all.samples = 4;
  m.flat.all.value = 4000000;
  std::vector<HeaderLine> lines = HeaderLines(m);
  auto find = [&](const std::string& label) -> std::string {
    for (const HeaderLine& l : lines)
      if (l.label == label) return l.text;
    return "(none)";
  };
  CHECK(find("command") == "./prog --fast");
  CHECK(find("duration") == "1.500 s");
  CHECK(find("samples") == "10 (0.010 s of cpu), 0 threads");
  CHECK(find("problems") == "2 x a (e.g. first)");
  CHECK(find("") == "1 x b (e.g. second)");
  CHECK(find("filter") == "focus /x/: 4 samples (0.004 s, 40.00% of all) kept");
}

}  // namespace
}  // namespace microscope::analysis

TEST_CASE("DisplayPath: from the package on, shortened from the left") {
  using microscope::analysis::DisplayPath;
  CHECK(DisplayPath("/usr/lib/python3/dist-packages/pygments/lexer.py") == "pygments/lexer.py");
  CHECK(DisplayPath("/home/u/.venv/lib/python3.13/site-packages/sympy/core/add.py") ==
        "sympy/core/add.py");
  CHECK(DisplayPath("/usr/lib/python3.13/json/decoder.py") == "json/decoder.py");
  CHECK(DisplayPath("/opt/py/lib/python3.14t/x.py") ==
        "/opt/py/lib/python3.14t/x.py");  // no version dir
  CHECK(DisplayPath("/srv/app/node_modules/typescript/lib/_tsc.js") == "typescript/lib/_tsc.js");
  CHECK(DisplayPath("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>");
  CHECK(DisplayPath("node:internal/modules/cjs/loader") == "node:internal/modules/cjs/loader");
  CHECK(DisplayPath("libc.so.6") == "libc.so.6");
  CHECK(DisplayPath("/work/a-project/with/a/rather/long/path/to/its/source/main.py", "", 30) ==
        ".../path/to/its/source/main.py");
  CHECK(
      DisplayPath("/work/a-project/with/a/rather/long/path/to/its/source/main.py", "", 30).size() ==
      30);
}

TEST_CASE("ProgramSources: the program's own files' directory, said once") {
  using microscope::analysis::DisplayPath;
  using microscope::analysis::ProgramSources;
  std::vector<std::string_view> paths = {"/srv/app/src/main.py", "/srv/app/src/util/io.py",
                                         "/usr/lib/python3.13/json/decoder.py", "libc.so.6",
                                         "<frozen importlib._bootstrap>"};
  CHECK(ProgramSources(paths) == "/srv/app/src/");
  CHECK(DisplayPath("/srv/app/src/util/io.py", "/srv/app/src/") == "util/io.py");
  CHECK(DisplayPath("/usr/lib/python3.13/json/decoder.py", "/srv/app/src/") == "json/decoder.py");
  paths.push_back("/tmp/other.py");  // nothing shared but "/"
  CHECK(ProgramSources(paths).empty());
  CHECK(ProgramSources(std::vector<std::string_view>{"/srv/a.py"}) == "/srv/");
}
