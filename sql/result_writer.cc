#include "sql/result_writer.h"

#include <cinttypes>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace microscope::sql {

namespace {

std::string Text(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", std::get<double>(v));
    // The shortest text that reads back the same.
    for (int precision = 1; precision < 17; ++precision) {
      char shorter[64];
      snprintf(shorter, sizeof shorter, "%.*g", precision, std::get<double>(v));
      if (strtod(shorter, nullptr) == std::get<double>(v)) return shorter;
    }
    return buf;
  }
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  return "";
}

// Columns a terminal can line up: a cell's width in characters (UTF-8
// continuation bytes take none).
size_t Width(std::string_view s) {
  size_t w = 0;
  for (unsigned char ch : s) w += (ch & 0xC0) != 0x80;
  return w;
}

class TableWriter : public RowSink {
 public:
  explicit TableWriter(FILE* out) : out_(out) {}
  void Begin(const std::vector<std::string>& columns) override {
    columns_ = columns;
    rows_.clear();
    numeric_.assign(columns.size(), true);
  }
  void Row(const std::vector<Value>& values) override {
    std::vector<std::string> row;
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::holds_alternative<std::string>(values[i])) numeric_[i] = false;
      // A person reads NULL apart from an empty text.
      row.push_back(std::holds_alternative<std::monostate>(values[i]) ? "NULL"
                                                                      : Cell(Text(values[i])));
    }
    rows_.push_back(std::move(row));
  }
  void End() override {
    std::vector<size_t> width(columns_.size());
    for (size_t i = 0; i < columns_.size(); ++i) width[i] = Width(columns_[i]);
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], Width(row[i]));
    }
    auto line = [&](const std::vector<std::string>& cells, bool header) {
      std::string text;
      for (size_t i = 0; i < cells.size(); ++i) {
        const size_t pad = width[i] - Width(cells[i]);
        const bool right = !header && numeric_[i];
        if (i > 0) text += "  ";
        if (right) text.append(pad, ' ');
        text += cells[i];
        if (!right && i + 1 < cells.size()) text.append(pad, ' ');
      }
      fprintf(out_, "%s\n", text.c_str());
    };
    line(columns_, true);
    std::vector<std::string> rule;
    for (size_t w : width) rule.push_back(std::string(w, '-'));
    line(rule, true);
    for (const auto& row : rows_) line(row, false);
    fprintf(out_, "(%zu row%s)\n", rows_.size(), rows_.size() == 1 ? "" : "s");
  }

 private:
  // One line per cell: a newline or tab would break the table.
  static std::string Cell(std::string s) {
    for (char& ch : s) {
      if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
    }
    return s;
  }
  FILE* out_;
  std::vector<std::string> columns_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

class CsvWriter : public RowSink {
 public:
  explicit CsvWriter(FILE* out) : out_(out) {}
  void Begin(const std::vector<std::string>& columns) override {
    std::vector<Value> header(columns.begin(), columns.end());
    Row(header);
  }
  void Row(const std::vector<Value>& values) override {
    std::string line;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) line += ',';
      std::string cell = Text(values[i]);
      if (cell.find_first_of(",\"\r\n") != std::string::npos) {
        std::string quoted = "\"";
        for (char ch : cell) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        cell = quoted + "\"";
      }
      line += cell;
    }
    fprintf(out_, "%s\r\n", line.c_str());
  }
  void End() override {}

 private:
  FILE* out_;
};

std::string Json(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "null";
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) {
    const double d = std::get<double>(v);
    return std::isfinite(d) ? Text(v) : "null";
  }
  return nlohmann::json(std::get<std::string>(v))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class JsonWriter : public RowSink {
 public:
  JsonWriter(FILE* out, bool lines) : out_(out), lines_(lines) {}
  void Begin(const std::vector<std::string>& columns) override {
    keys_.clear();
    for (const std::string& c : columns) keys_.push_back(Json(c) + ":");
    first_ = true;
    if (!lines_) fputs("[", out_);
  }
  void Row(const std::vector<Value>& values) override {
    std::string obj = lines_ ? "{" : (first_ ? "\n{" : ",\n{");
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) obj += ",";
      obj += keys_[i];
      obj += Json(values[i]);
    }
    obj += lines_ ? "}\n" : "}";
    fputs(obj.c_str(), out_);
    first_ = false;
  }
  void End() override {
    if (!lines_) fputs(first_ ? "]\n" : "\n]\n", out_);
  }

 private:
  FILE* out_;
  bool lines_;
  bool first_ = true;
  std::vector<std::string> keys_;
};

}  // namespace

bool ParseOutputFormat(std::string_view text, OutputFormat* format) {
  if (text == "table")
    *format = OutputFormat::kTable;
  else if (text == "csv")
    *format = OutputFormat::kCsv;
  else if (text == "json")
    *format = OutputFormat::kJson;
  else if (text == "ndjson")
    *format = OutputFormat::kNdjson;
  else
    return false;
  return true;
}

OutputFormat ChooseFormat(std::string_view chosen, bool human, bool stdout_is_terminal) {
  OutputFormat f;
  if (!chosen.empty() && ParseOutputFormat(chosen, &f)) return f;
  return human || stdout_is_terminal ? OutputFormat::kTable : OutputFormat::kJson;
}

std::unique_ptr<RowSink> MakeWriter(OutputFormat format, FILE* out) {
  switch (format) {
    case OutputFormat::kTable:
      return std::make_unique<TableWriter>(out);
    case OutputFormat::kCsv:
      return std::make_unique<CsvWriter>(out);
    case OutputFormat::kJson:
      return std::make_unique<JsonWriter>(out, false);
    case OutputFormat::kNdjson:
      return std::make_unique<JsonWriter>(out, true);
  }
  return std::make_unique<JsonWriter>(out, false);
}

}  // namespace microscope::sql
