// Test tool: checks LineOfInstruction against CPython's own co_lines().
// Reads lines "FIRSTLINENO LINETABLE_HEX START,END,LINE;..." (LINE "-" for
// none) from stdin, one per code object, as a Python dumper prints them;
// looks up every code unit of every range; prints the counts and the first
// mismatches; exits 1 on any mismatch.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "src/runtimes/python/line_table.h"

using namespace microscope::runtimes::python;

int main() {
  std::string text;
  size_t codes = 0, units = 0, bad = 0;
  while (std::getline(std::cin, text)) {
    std::istringstream in(text);
    int first = 0;
    std::string hex, ranges;
    in >> first >> hex >> ranges;
    std::vector<uint8_t> table;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      table.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
    ++codes;
    std::istringstream rs(ranges);
    std::string range;
    while (std::getline(rs, range, ';')) {
      unsigned start, end;
      char line[32];
      if (sscanf(range.c_str(), "%u,%u,%31s", &start, &end, line) != 3) continue;
      for (uint32_t unit = start / 2; unit < end / 2; ++unit) {
        ++units;
        LineLookup got = LineOfInstruction(table, first, unit);
        bool ok = line[0] == '-' ? got.kind == LineLookup::kNoLine
                                 : got.kind == LineLookup::kLine && got.line == std::stoi(line);
        if (!ok && ++bad <= 5) {
          fprintf(stderr, "mismatch: first line %d unit %u: CPython %s, ours kind %d line %d\n",
                  first, unit, line, int(got.kind), got.line);
        }
      }
    }
  }
  printf("%zu code objects, %zu code units, %zu mismatches\n", codes, units, bad);
  return bad == 0 && units > 0 ? 0 : 1;
}
