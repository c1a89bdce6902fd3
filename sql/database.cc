#include "sql/database.h"

#include <re2/re2.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/presentation.h"
#include "capture/container.h"
#include "sql/tables.h"

namespace microscope::sql {

using capture::kNone;

namespace {

// ---- the tables -------------------------------------------------------

struct Shared {
  const Corpus* corpus = nullptr;
  const std::atomic<bool>* cancel = nullptr;
};

struct VTab : sqlite3_vtab {
  const TableSpec* spec = nullptr;
  Shared* shared = nullptr;
};

struct Cursor : sqlite3_vtab_cursor {
  size_t part = 0;
  size_t part_end = 0;  // parts [part, part_end)
  uint64_t row = 0;
  uint64_t rows = 0;  // of the current part
  bool single = false;
  int64_t rowid = 0;
  // sample_frames: the current sample's callsite at `depth`.
  uint32_t node = kNone;
  uint32_t depth = 0;
};

enum IndexBits : int { kById = 1, kByCapture = 2 };

// An id compared with `=`: an integer, or a real with an integer's value
// (the constraint is omitted, so SQLite does not check the row again).
std::optional<int64_t> IdValue(sqlite3_value* v) {
  const int type = sqlite3_value_numeric_type(v);
  if (type == SQLITE_INTEGER) return sqlite3_value_int64(v);
  if (type == SQLITE_FLOAT) {
    const double d = sqlite3_value_double(v);
    if (d >= -9.2e18 && d <= 9.2e18 && d == std::floor(d)) return int64_t(d);
  }
  return std::nullopt;
}

const Corpus& CorpusOf(sqlite3_vtab_cursor* c) {
  return *static_cast<VTab*>(c->pVtab)->shared->corpus;
}
const TableSpec& SpecOf(sqlite3_vtab_cursor* c) {
  return *static_cast<VTab*>(c->pVtab)->spec;
}
bool IsSampleFrames(const TableSpec& spec) {
  return spec.rows == nullptr;
}

int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** err) {
  auto* entry = static_cast<std::pair<const TableSpec*, Shared*>*>(aux);
  std::string schema = CreateStatement(*entry->first, false);
  int rc = sqlite3_declare_vtab(db, schema.c_str());
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
  }
  auto* v = new VTab();
  v->spec = entry->first;
  v->shared = entry->second;
  *out = v;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* v) {
  delete static_cast<VTab*>(v);
  return SQLITE_OK;
}

// The column an equality can find rows by: `id` (or sample_frames'
// `sample`), and `capture`.
int BestIndex(sqlite3_vtab* v, sqlite3_index_info* info) {
  const TableSpec& spec = *static_cast<VTab*>(v)->spec;
  const bool keyed = spec.has_id || IsSampleFrames(spec);
  int by_id = -1, by_capture = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (c.iColumn == 1 && keyed) by_id = i;
    if (c.iColumn == 0) by_capture = i;
  }
  int arg = 1;
  info->idxNum = 0;
  if (by_id >= 0) {
    info->idxNum |= kById;
    info->aConstraintUsage[by_id].argvIndex = arg++;
    info->aConstraintUsage[by_id].omit = 1;
  }
  if (by_capture >= 0) {
    info->idxNum |= kByCapture;
    info->aConstraintUsage[by_capture].argvIndex = arg++;
    info->aConstraintUsage[by_capture].omit = 1;
  }
  if (by_id >= 0) {
    info->estimatedCost = IsSampleFrames(spec) ? 20 : 1;
    info->estimatedRows = IsSampleFrames(spec) ? 20 : 1;
    if (!IsSampleFrames(spec)) info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  } else {
    info->estimatedCost = by_capture >= 0 ? 500000 : 1000000;
    info->estimatedRows = by_capture >= 0 ? 500000 : 1000000;
  }
  return SQLITE_OK;
}

int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new Cursor();
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* c) {
  delete static_cast<Cursor*>(c);
  return SQLITE_OK;
}

const Part& CurrentPart(Cursor* k) {
  return *CorpusOf(k).parts()[k->part];
}

// sample_frames: from the sample at k->row on, the first with a stack.
void SeekSample(Cursor* k) {
  const auto& parts = CorpusOf(k).parts();
  while (k->part < k->part_end) {
    const capture::Samples& s = parts[k->part]->capture.samples;
    while (k->row < s.size() && s.stack[k->row] == kNone && !k->single) ++k->row;
    if (k->row < s.size() && s.stack[k->row] != kNone) {
      k->node = s.stack[k->row];
      k->depth = 0;
      return;
    }
    if (k->single) break;
    ++k->part;
    k->row = 0;
  }
  k->part = k->part_end;
}

// Tables: from (part, row) on, the first part with a row left.
void Settle(Cursor* k) {
  const TableSpec& spec = SpecOf(k);
  const auto& parts = CorpusOf(k).parts();
  while (k->part < k->part_end) {
    k->rows = k->single ? std::min<uint64_t>(k->rows, spec.rows(*parts[k->part]))
                        : spec.rows(*parts[k->part]);
    if (k->row < k->rows) return;
    if (k->single) break;
    ++k->part;
    k->row = 0;
  }
  k->part = k->part_end;
}

int Filter(sqlite3_vtab_cursor* cur, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* k = static_cast<Cursor*>(cur);
  auto* vtab = static_cast<VTab*>(cur->pVtab);
  const TableSpec& spec = *vtab->spec;
  const Corpus& corpus = *vtab->shared->corpus;
  k->part = 0;
  k->part_end = corpus.parts().size();
  k->row = 0;
  k->single = false;
  k->rowid = 0;
  int arg = 0;
  if ((idx_num & kById) != 0 && arg < argc) {
    sqlite3_value* v = argv[arg++];
    const IdKind kind = IsSampleFrames(spec) ? IdKind::kSample : spec.id_kind;
    const std::optional<int64_t> id = IdValue(v);
    auto [part, row] = id ? corpus.Locate(kind, *id) : std::pair<const Part*, uint32_t>{nullptr, 0};
    if (part == nullptr) {
      k->part = k->part_end;
      return SQLITE_OK;
    }
    k->part = part->index;
    k->part_end = part->index + 1;
    k->row = row;
    k->rows = row + 1;
    k->single = true;
  }
  if ((idx_num & kByCapture) != 0 && arg < argc) {
    sqlite3_value* v = argv[arg++];
    const int64_t want = IdValue(v).value_or(-1);
    if (want < int64_t(k->part) || want >= int64_t(k->part_end)) {
      k->part = k->part_end;
      return SQLITE_OK;
    }
    k->part = size_t(want);
    k->part_end = size_t(want) + 1;
  }
  if (spec.prepare != nullptr) {
    analysis::Cancel cancel(vtab->shared->cancel);
    for (size_t i = k->part; i < k->part_end; ++i) {
      Status s = spec.prepare(*corpus.parts()[i], cancel);
      if (!s.ok()) {
        sqlite3_free(vtab->zErrMsg);
        vtab->zErrMsg = sqlite3_mprintf("%s: %s", spec.name, s.message().c_str());
        return SQLITE_ERROR;
      }
    }
  }
  if (IsSampleFrames(spec)) {
    SeekSample(k);
  } else {
    Settle(k);
  }
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* cur) {
  auto* k = static_cast<Cursor*>(cur);
  ++k->rowid;
  if (IsSampleFrames(SpecOf(k))) {
    const capture::Stacks& stacks = CurrentPart(k).capture.stacks;
    k->node = stacks.parent[k->node];
    ++k->depth;
    if (k->node != kNone) return SQLITE_OK;
    if (k->single) {
      k->part = k->part_end;
      return SQLITE_OK;
    }
    ++k->row;
    SeekSample(k);
    return SQLITE_OK;
  }
  ++k->row;
  Settle(k);
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* cur) {
  auto* k = static_cast<Cursor*>(cur);
  return k->part >= k->part_end;
}

int SampleFramesColumn(Cursor* k, sqlite3_context* ctx, int col) {
  const Part& p = CurrentPart(k);
  const capture::Capture& c = p.capture;
  const uint32_t s = uint32_t(k->row);
  const capture::FrameId frame = c.stacks.frame[k->node];
  Out o(ctx);
  switch (col) {
    case 0:
      o.Int(p.index);
      break;
    case 1:
      o.Id(p, IdKind::kSample, s);
      break;
    case 2:
      o.Int(int64_t(c.samples.time[s]));
      break;
    case 3:
      o.Id(p, IdKind::kThread, c.samples.thread[s]);
      break;
    case 4:
      o.Int(k->depth);
      break;
    case 5:
      o.Id(p, IdKind::kStack, k->node);
      break;
    case 6:
      o.Id(p, IdKind::kFrame, frame);
      break;
    case 7:
      o.Id(p, IdKind::kFunction, c.frames[frame].function);
      break;
    case 8:
      o.Text(p.FrameName(frame));
      break;
    case 9:
      o.Int(int64_t(c.samples.weight[s]));
      break;
    case 10:
      o.Int(c.samples.CountAt(s));
      break;
    default:
      o.Null();
  }
  return SQLITE_OK;
}

int Column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  auto* k = static_cast<Cursor*>(cur);
  const TableSpec& spec = SpecOf(k);
  if (IsSampleFrames(spec)) return SampleFramesColumn(k, ctx, col);
  Out o(ctx);
  if (col < 0 || size_t(col) >= spec.columns.size()) {
    o.Null();
    return SQLITE_OK;
  }
  spec.columns[col].get(CurrentPart(k), uint32_t(k->row), o);
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
  auto* k = static_cast<Cursor*>(cur);
  const TableSpec& spec = SpecOf(k);
  if (spec.has_id) {
    *out = int64_t(CurrentPart(k).base[size_t(spec.id_kind)] + k->row);
  } else {
    *out = k->rowid;
  }
  return SQLITE_OK;
}

sqlite3_module MakeModule() {
  sqlite3_module m{};
  m.iVersion = 0;
  m.xCreate = nullptr;  // eponymous only: `SELECT ... FROM samples` needs no CREATE
  m.xConnect = Connect;
  m.xBestIndex = BestIndex;
  m.xDisconnect = Disconnect;
  m.xDestroy = Disconnect;
  m.xOpen = Open;
  m.xClose = Close;
  m.xFilter = Filter;
  m.xNext = Next;
  m.xEof = Eof;
  m.xColumn = Column;
  m.xRowid = Rowid;
  return m;
}
const sqlite3_module kModule = MakeModule();

// ---- the functions ----------------------------------------------------

const Corpus& CorpusOf(sqlite3_context* ctx) {
  return *static_cast<Shared*>(sqlite3_user_data(ctx))->corpus;
}

// The callsite a stack id names, or {null, 0}.
std::pair<const Part*, uint32_t> StackArg(sqlite3_context* ctx, sqlite3_value* v) {
  if (sqlite3_value_numeric_type(v) != SQLITE_INTEGER) return {nullptr, 0};
  return CorpusOf(ctx).Locate(IdKind::kStack, sqlite3_value_int64(v));
}

void Leaf(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto [part, node] = StackArg(ctx, argv[0]);
  if (part == nullptr) return sqlite3_result_null(ctx);
  Out(ctx).Text(part->FrameName(part->capture.stacks.frame[node]));
}

void FrameAt(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto [part, node] = StackArg(ctx, argv[0]);
  if (part == nullptr || sqlite3_value_numeric_type(argv[1]) != SQLITE_INTEGER) {
    return sqlite3_result_null(ctx);
  }
  int64_t depth = sqlite3_value_int64(argv[1]);
  if (depth < 0) return sqlite3_result_null(ctx);
  const capture::Stacks& stacks = part->capture.stacks;
  for (; depth > 0 && node != kNone; --depth) node = stacks.parent[node];
  if (node == kNone) return sqlite3_result_null(ctx);
  Out(ctx).Text(part->FrameName(stacks.frame[node]));
}

// stack_contains' compiled pattern and what it learnt: per callsite and
// per frame of the query's captures, whether it matched (-1: not asked yet).
struct Pattern {
  std::unique_ptr<RE2> re;
  std::vector<std::vector<int8_t>> stack_memo;  // per part, per callsite
  std::vector<std::vector<int8_t>> frame_memo;  // per part, per frame
};

void StackContains(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* pattern = static_cast<Pattern*>(sqlite3_get_auxdata(ctx, 1));
  if (pattern == nullptr) {
    const unsigned char* text = sqlite3_value_text(argv[1]);
    if (text == nullptr)
      return sqlite3_result_error(ctx, "stack_contains: the pattern is NULL", -1);
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_unique<RE2>(reinterpret_cast<const char*>(text), options);
    if (!re->ok()) {
      std::string e = "stack_contains: bad regular expression: " + re->error() +
                      " (RE2 syntax: no backreferences or lookaround)";
      return sqlite3_result_error(ctx, e.c_str(), -1);
    }
    auto* p = new Pattern{std::move(re), {}, {}};
    for (const auto& part : CorpusOf(ctx).parts()) {
      p->stack_memo.emplace_back(part->capture.stacks.size(), int8_t(-1));
      p->frame_memo.emplace_back(part->capture.frames.size(), int8_t(-1));
    }
    sqlite3_set_auxdata(ctx, 1, p, [](void* x) { delete static_cast<Pattern*>(x); });
    pattern = static_cast<Pattern*>(sqlite3_get_auxdata(ctx, 1));
    if (pattern == nullptr) return sqlite3_result_error_nomem(ctx);
  }
  auto [part, node] = StackArg(ctx, argv[0]);
  if (part == nullptr) return sqlite3_result_int(ctx, 0);
  std::vector<int8_t>& stacks = pattern->stack_memo[part->index];
  std::vector<int8_t>& frames = pattern->frame_memo[part->index];
  const capture::Stacks& st = part->capture.stacks;
  // Up to the first callsite whose answer is known; then down again.
  std::vector<uint32_t> path;
  uint32_t n = node;
  while (n != kNone && stacks[n] < 0) {
    path.push_back(n);
    n = st.parent[n];
  }
  int8_t above = n == kNone ? 0 : stacks[n];
  for (size_t i = path.size(); i-- > 0;) {
    const capture::FrameId f = st.frame[path[i]];
    if (frames[f] < 0) {
      std::string_view name = part->FrameName(f);
      frames[f] = RE2::PartialMatch(name, *pattern->re) ? 1 : 0;
    }
    above = int8_t(above | frames[f]);
    stacks[path[i]] = above;
  }
  sqlite3_result_int(ctx, stacks[node]);
}

void ReQuote(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const unsigned char* text = sqlite3_value_text(argv[0]);
  if (text == nullptr) return sqlite3_result_null(ctx);
  Out(ctx).Text(RE2::QuoteMeta(reinterpret_cast<const char*>(text)));
}

void DurationText(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int type = sqlite3_value_numeric_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  double ns = sqlite3_value_double(argv[0]);
  if (!(std::fabs(ns) < 1.8e19)) return sqlite3_result_null(ctx);  // NaN, inf, past uint64
  std::string text =
      ns < 0 ? "-" + analysis::Duration(uint64_t(-ns)) : analysis::Duration(uint64_t(ns));
  Out(ctx).Text(text);
}

// ---- the guards -------------------------------------------------------

constexpr const char* kReadPragmas[] = {"table_info",    "table_xinfo", "table_list",
                                        "function_list", "module_list", "pragma_list"};

int Authorize(void* denied, int action, const char* a, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      for (const char* p : kReadPragmas) {
        if (a != nullptr && sqlite3_stricmp(a, p) == 0) return SQLITE_OK;
      }
      break;
    default:
      break;
  }
  *static_cast<int*>(denied) = action;
  return SQLITE_DENY;
}

const char* ActionName(int action) {
  switch (action) {
    case SQLITE_ATTACH:
      return "ATTACH";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_PRAGMA:
      return "this PRAGMA";
    case SQLITE_INSERT:
      return "INSERT";
    case SQLITE_UPDATE:
      return "UPDATE";
    case SQLITE_DELETE:
      return "DELETE";
    case SQLITE_TRANSACTION:
      return "a transaction";
    default:
      return "a statement that changes the database";
  }
}

// The statement with a caret under byte `offset`, for an error.
std::string Caret(std::string_view sql, size_t offset) {
  size_t begin = sql.rfind('\n', offset == 0 ? 0 : offset - 1);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  if (offset > 0 && offset <= sql.size() && sql[offset - 1] == '\n') begin = offset;
  size_t end = sql.find('\n', offset);
  if (end == std::string_view::npos) end = sql.size();
  std::string line(sql.substr(begin, end - begin));
  return "\n  " + line + "\n  " + std::string(offset - begin, ' ') + "^";
}

class Watchdog {
 public:
  Watchdog(sqlite3* db, std::atomic<bool>* cancel, uint64_t timeout_ms)
      : thread_([=, this] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [this] { return done_; })) {
            cancel->store(true);
            sqlite3_interrupt(db);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

Value ColumnValue(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
      return int64_t(sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt, i);
    case SQLITE_NULL:
      return std::monostate{};
    default: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      return std::string(text == nullptr ? "" : text, size_t(sqlite3_column_bytes(stmt, i)));
    }
  }
}

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

}  // namespace

// The module entries and the functions' shared state live as long as the
// connection.
struct Registry {
  Shared shared;
  std::vector<std::pair<const TableSpec*, Shared*>> entries;
};

Result<std::unique_ptr<Database>> Database::Open(Corpus corpus) {
  std::unique_ptr<Database> db(new Database(std::move(corpus)));
  RETURN_IF_ERROR(db->Register());
  return db;
}

Database::~Database() {
  sqlite3_close_v2(db_);
  delete registry_;
}

Status Database::Register() {
  if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    return Status::Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  // A query's strings and blobs at most 256 MiB, and all of SQLite's memory
  // 4 GiB: zeroblob(1e12) is an error, not the machine's memory.
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, 256 << 20);
  sqlite3_hard_heap_limit64(int64_t(4) << 30);
  registry_ = new Registry();
  registry_->shared.corpus = &corpus_;
  registry_->shared.cancel = &cancel_;
  registry_->entries.reserve(Tables().size());
  for (const TableSpec& t : Tables()) {
    registry_->entries.emplace_back(&t, &registry_->shared);
    if (sqlite3_create_module_v2(db_, t.name, &kModule, &registry_->entries.back(), nullptr) !=
        SQLITE_OK) {
      return Status::Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
  }
  // Connect every table, and the pragmas' tables that a query may read,
  // now: connecting declares a schema, which the read-only guard of a
  // query would take for a write.
  for (const TableSpec& t : Tables()) {
    sqlite3_stmt* raw = nullptr;
    const std::string select = std::string("SELECT * FROM ") + t.name;
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return Status::Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
    sqlite3_finalize(raw);
  }
  for (const char* pragma : kReadPragmas) {
    sqlite3_stmt* raw = nullptr;
    const std::string select = std::string("SELECT * FROM pragma_") + pragma;
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return Status::Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
    sqlite3_finalize(raw);
  }
  struct Fn {
    const char* name;
    int args;
    void (*fn)(sqlite3_context*, int, sqlite3_value**);
  };
  const Fn fns[] = {{"leaf", 1, Leaf},
                    {"frame_at", 2, FrameAt},
                    {"stack_contains", 2, StackContains},
                    {"duration_text", 1, DurationText},
                    {"re_quote", 1, ReQuote}};
  for (const Fn& f : fns) {
    if (sqlite3_create_function_v2(db_, f.name, f.args, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                   &registry_->shared, f.fn, nullptr, nullptr,
                                   nullptr) != SQLITE_OK) {
      return Status::Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
  }
  return OkStatus();
}

Status Database::Run(std::string_view sql, RowSink& sink, uint64_t timeout_ms) {
  cancel_.store(false);
  int denied = 0;
  sqlite3_set_authorizer(db_, Authorize, &denied);
  timeout_ms = std::min<uint64_t>(timeout_ms, 86400000);  // a day: no overflow in wait_for
  Watchdog watchdog(db_, &cancel_, timeout_ms);
  auto timed_out = [&] {
    return Status::Error(StatusCode::kCancelled, "the query ran past its time bound of " +
                                                     analysis::Duration(timeout_ms * 1000000) +
                                                     " (--timeout)");
  };
  size_t done = 0;
  Status result = OkStatus();
  while (done < sql.size()) {
    const char* tail = nullptr;
    sqlite3_stmt* raw = nullptr;
    const std::string_view rest = sql.substr(done);
    int rc = sqlite3_prepare_v3(db_, rest.data(), int(rest.size()), 0, &raw, &tail);
    Stmt stmt(raw);
    if (rc != SQLITE_OK) {
      if (cancel_.load()) {
        result = timed_out();
        break;
      }
      if (rc == SQLITE_AUTH || denied != 0) {
        result = Status::Error(std::string("queries are read-only: ") + ActionName(denied) +
                               " is not allowed");
        break;
      }
      const int at = sqlite3_error_offset(db_);
      std::string message = sqlite3_errmsg(db_);
      if (at >= 0) {
        const size_t offset = done + size_t(at);
        message += " (at byte " + std::to_string(offset) + ")" + Caret(sql, offset);
      }
      result = Status::Error(message);
      break;
    }
    done = tail != nullptr ? size_t(tail - sql.data()) : sql.size();
    if (!stmt) continue;  // a comment or blank
    // VACUUM never asks the authorizer: every statement must only read.
    if (!sqlite3_stmt_readonly(stmt.get())) {
      result = Status::Error("queries are read-only: a statement that writes is not allowed");
      break;
    }
    const int columns = sqlite3_column_count(stmt.get());
    std::vector<std::string> names;
    for (int i = 0; i < columns; ++i) names.emplace_back(sqlite3_column_name(stmt.get(), i));
    if (columns > 0) sink.Begin(names);
    std::vector<Value> row(static_cast<size_t>(columns));
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      for (int i = 0; i < columns; ++i) row[size_t(i)] = ColumnValue(stmt.get(), i);
      sink.Row(row);
    }
    if (columns > 0) sink.End();
    if (rc != SQLITE_DONE) {
      result = cancel_.load() ? timed_out() : Status::Error(sqlite3_errmsg(db_));
      break;
    }
  }
  sqlite3_set_authorizer(db_, nullptr, nullptr);
  return result;
}

Status Database::Export(const std::string& path) {
  sqlite3* out = nullptr;
  if (sqlite3_open_v2(":memory:", &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    sqlite3_close_v2(out);
    return Status::Error(path + ": sqlite: cannot open a database in memory");
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> owner(out, sqlite3_close_v2);
  auto fail = [&](sqlite3* db) { return Status::Error(path + ": sqlite: " + sqlite3_errmsg(db)); };
  if (sqlite3_exec(out, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return fail(out);
  // What each column means, for whoever opens the file.
  if (sqlite3_exec(out,
                   "CREATE TABLE microscope_columns(\"table\" TEXT, \"column\" TEXT, type TEXT, "
                   "unit TEXT, meaning TEXT)",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    return fail(out);
  }
  Stmt doc;
  {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(out, "INSERT INTO microscope_columns VALUES(?,?,?,?,?)", -1, &raw,
                           nullptr) != SQLITE_OK) {
      return fail(out);
    }
    doc.reset(raw);
  }
  for (const TableSpec& t : Tables()) {
    for (const ColumnSpec& col : t.columns) {
      const char* values[] = {t.name, col.name, col.type, col.unit, col.doc};
      for (int i = 0; i < 5; ++i) sqlite3_bind_text(doc.get(), i + 1, values[i], -1, SQLITE_STATIC);
      if (sqlite3_step(doc.get()) != SQLITE_DONE) return fail(out);
      sqlite3_reset(doc.get());
    }
    if (t.export_sql != nullptr) continue;
    if (sqlite3_exec(out, CreateStatement(t, true).c_str(), nullptr, nullptr, nullptr) !=
        SQLITE_OK) {
      return fail(out);
    }
    std::string select = std::string("SELECT * FROM ") + t.name;
    std::string insert = std::string("INSERT INTO ") + t.name + " VALUES(";
    for (size_t i = 0; i < t.columns.size(); ++i) insert += i == 0 ? "?" : ",?";
    insert += ")";
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &raw, nullptr) != SQLITE_OK) return fail(db_);
    Stmt from(raw);
    if (sqlite3_prepare_v2(out, insert.c_str(), -1, &raw, nullptr) != SQLITE_OK) return fail(out);
    Stmt to(raw);
    const int n = int(t.columns.size());
    int rc;
    while ((rc = sqlite3_step(from.get())) == SQLITE_ROW) {
      for (int i = 0; i < n; ++i)
        sqlite3_bind_value(to.get(), i + 1, sqlite3_column_value(from.get(), i));
      if (sqlite3_step(to.get()) != SQLITE_DONE) return fail(out);
      sqlite3_reset(to.get());
    }
    if (rc != SQLITE_DONE) return fail(db_);
  }
  for (const TableSpec& t : Tables()) {
    if (t.export_sql == nullptr) continue;
    std::string view = std::string("CREATE VIEW ") + t.name + "(";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      view += std::string(i == 0 ? "" : ", ") + "\"" + t.columns[i].name + "\"";
    }
    view += ") AS " + std::string(t.export_sql);
    if (sqlite3_exec(out, view.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return fail(out);
  }
  if (sqlite3_exec(out, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail(out);
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(out, "main", &size, 0);
  if (bytes == nullptr) return Status::Error(path + ": sqlite: cannot serialize the database");
  Status written = capture::WriteFileAtomically(path, std::span(bytes, size_t(size)));
  sqlite3_free(bytes);
  return written;
}

}  // namespace microscope::sql
