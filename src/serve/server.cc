#include "src/serve/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "analysis/report.h"
#include "analysis/report_params.h"
#include "capture/reader.h"
#include "capture/segments.h"
#include "formats/assembly_text.h"
#include "formats/convert.h"
#include "formats/report_json.h"
#include "src/serve/broker.h"
#include "src/serve/guarded_http.h"
#include "src/serve/http_answers.h"
#include "src/serve/server_parts.h"
#include "src/serve/web_assets.h"

namespace microscope::serve {
namespace {

constexpr size_t kLoadedCaptures = 4;   // kept in memory, the least recently used dropped
constexpr size_t kCachedAnswers = 256;  // report answers kept, likewise (and by bytes)
constexpr size_t kMaxRequestBytes = 64 << 10;
// What one query may build: call tree nodes (each ~64 bytes, and ~200 of
// JSON when shown), and the answer's bytes.
constexpr size_t kMaxTreeNodes = 2 << 20;
constexpr size_t kMaxAnswerBytes = 128 << 20;

using Clock = std::chrono::steady_clock;

// A report query's answer: its status and JSON body; an export's, its
// bytes, their type and the name a browser saves them under.
struct ReportAnswer {
  int status = 200;
  std::string body;
  std::string type;      // empty: JSON
  std::string filename;  // an export's
};

// An export's file name: the capture's (letters, digits, '.', '_', '-'
// kept), its extension dropped, the format's added.
std::string ExportName(const std::string& capture, const std::string& format) {
  std::string base = capture.substr(0, capture.rfind(".mscap"));
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (base.empty()) base = "capture";
  return base + std::string(formats::ExportExtension(format));
}

// A request's parameters but the token (which says who asks, not what).
std::vector<std::pair<std::string, std::string>> QueryParams(const httplib::Request& req) {
  std::vector<std::pair<std::string, std::string>> params;
  for (const auto& [k, v] : req.params) {
    if (k != "token") params.emplace_back(k, v);
  }
  return params;
}

}  // namespace

struct Server::State {
  ServeOptions options;
  bool loopback_only = true;
  int port = 0;
  // The names served (the broker knows their paths). A served
  // directory's captures come and go (Relist); guarded by paths_mutex, as
  // are the rest.
  std::set<std::string> paths;
  std::mutex paths_mutex;
  // The directory's capture files at its last listing (mtime 0: named at
  // the start, not yet listed), the ones past kMaxServedCaptures, and when.
  std::map<std::string, capture::SegmentFile> listed;
  size_t unlisted = 0;
  Clock::time_point relisted_at{};
  std::shared_ptr<Broker> broker;  // opens what is served (broker.h)
  GuardedHttpServer http{ConnectionLimits{}};
  std::string token;  // empty with --no-token
  // Guards the caches, the listings and the queries running; held only to
  // look things up and store them, never while a capture is read or a
  // query computed, so one slow query keeps no other client waiting.
  std::mutex mutex;
  Lru<std::shared_ptr<const capture::Capture>> loaded{kLoadedCaptures};
  Lru<std::shared_ptr<const ReportAnswer>> answers{kCachedAnswers};
  std::map<std::string, std::string> listings;  // per served directory, its segments
  // A query computing: the same query asked meanwhile waits for its answer.
  std::map<std::string, std::shared_future<std::shared_ptr<const ReportAnswer>>> computing;
  // At most `slots` queries compute at once (the host's CPUs, at least 2);
  // the others wait for a turn, which counts against their deadline.
  size_t slots = std::max(2u, std::thread::hardware_concurrency());
  size_t busy = 0;
  std::condition_variable turn;
  // The queries computing, cancelled by the watchdog past their deadline
  // and all at once by Stop.
  struct Running {
    std::atomic<bool> cancel{false};
    Clock::time_point deadline;
    bool timed_out = false;  // under `mutex`
  };
  std::set<Running*> running;
  bool stopping = false;
  // What queries built goes back to the system once none has run for a
  // second (the watchdog's): trimming after each query made the next one
  // fault its memory in again, 15% of a tree query's CPU. Between trims the
  // few malloc arenas (Open) reuse what a query freed.
  bool trim_due = false;
  Clock::time_point last_query;
  std::condition_variable watch;
  std::thread watchdog;
  // Reads the captures (as many as are kept loaded) while the first page
  // loads: pprof reads its profile before serving; a capture of 1M samples
  // takes ~100 ms to read, which the first query would otherwise wait.
  std::thread preload;

  // The routes, their headers and error answers (Open); then the port.
  void Route();
  Status Listen(const ServeOptions& options);

  std::set<std::string> Paths() {
    std::lock_guard lock(paths_mutex);
    return paths;
  }
  bool Served(const std::string& name) {
    std::lock_guard lock(paths_mutex);
    return paths.contains(name);
  }
  // What no capture parameter names: the only capture served, else "".
  std::string OnlyName() {
    std::lock_guard lock(paths_mutex);
    return paths.size() == 1 ? *paths.begin() : "";
  }

  // The served directory (serve DIR) listed again, at most once per
  // `every`: captures added to it are served from then on, removed ones
  // no longer, and one rewritten (another size or time) is read again.
  void Relist(Clock::duration every) {
    if (broker->directory().empty()) return;
    {
      std::lock_guard lock(paths_mutex);
      const auto now = Clock::now();
      if (now - relisted_at < every) return;
      relisted_at = now;
    }
    size_t left = 0;
    Result<std::vector<capture::SegmentFile>> files = broker->ListCaptures(&left);
    if (!files.ok()) return;  // what was listed stays
    std::vector<std::string> changed;
    {
      std::lock_guard lock(paths_mutex);
      std::map<std::string, capture::SegmentFile> now;
      for (capture::SegmentFile& f : *files) {
        const std::optional<ServedCapture> c = broker->Find(f.name);
        if (!c || c->directory) continue;
        auto before = listed.find(f.name);
        if (before != listed.end() && before->second.mtime_ns != 0 &&
            (before->second.bytes != f.bytes || before->second.mtime_ns != f.mtime_ns)) {
          changed.push_back(f.name);
        }
        paths.insert(f.name);
        now.emplace(f.name, std::move(f));
      }
      for (const auto& [name, f] : listed) {
        if (now.contains(name)) continue;
        paths.erase(name);
        changed.push_back(name);
      }
      listed = std::move(now);
      unlisted = left;
    }
    if (changed.empty()) return;
    std::lock_guard lock(mutex);
    for (const std::string& name : changed) loaded.Erase(name);
    answers.Clear();
  }

  void Preload() {
    size_t n = 0;
    for (const std::string& name : Paths()) {
      if (n++ == kLoadedCaptures) break;
      int status = 0;
      (void)Load(name, &status);  // an error is the query's to report
    }
  }

  // The capture served as `name` ("" names the only one).
  Result<std::shared_ptr<const capture::Capture>> Load(std::string name, int* status) {
    if (name.empty()) {
      name = OnlyName();
      if (name.empty()) {
        *status = 400;
        return Status::Error(StatusCode::kInvalidArgument,
                             "parameter capture is needed: " + std::to_string(Paths().size()) +
                                 " captures are served (GET /api/captures lists them)");
      }
    }
    // One just added to a served directory is found without waiting for
    // the page's next listing.
    if (!Served(name)) Relist(std::chrono::milliseconds(100));
    if (!Served(name)) {
      *status = 404;
      return Status::Error(StatusCode::kNotFound, "no capture named '" + name + "' is served");
    }
    {
      std::lock_guard lock(mutex);
      if (const auto* c = loaded.Get(name)) return *c;
    }
    // Read without the lock: two queries may read the same capture once
    // each, and no other query waits for it.
    Result<capture::Capture> read = ReadServed(*broker, name);
    if (!read.ok()) {
      *status = 422;
      return read.status();
    }
    auto c = std::make_shared<const capture::Capture>(std::move(read).value());
    std::lock_guard lock(mutex);
    return loaded.Put(name, std::move(c));
  }

  // The answer to a report query: cached, or computed once for everyone
  // asking it meanwhile.
  std::shared_ptr<const ReportAnswer> Report(const httplib::Request& req) {
    const std::vector<std::pair<std::string, std::string>> params = QueryParams(req);
    std::string key;
    for (const auto& [k, v] : params) key += k + '\0' + v + '\0';
    std::promise<std::shared_ptr<const ReportAnswer>> promise;
    {
      std::unique_lock lock(mutex);
      RefreshListings();
      if (const auto* cached = answers.Get(key)) return *cached;
      if (auto it = computing.find(key); it != computing.end()) {
        auto pending = it->second;
        lock.unlock();
        return pending.get();
      }
      computing.emplace(key, promise.get_future().share());
    }
    auto answer = std::make_shared<const ReportAnswer>(ComputeInTurn(params));
    {
      std::lock_guard lock(mutex);
      // A cancelled query is not its answer; one over the cache's bound is
      // not kept.
      if (answer->status != 503 && answer->body.size() <= answers.max_bytes()) {
        answers.Put(key, answer, answer->body.size());
      }
      computing.erase(key);
    }
    promise.set_value(answer);
    return answer;
  }

  // Compute with a turn and a deadline (an export too: cancelled at it as
  // a report is, whatever its format).
  ReportAnswer ComputeInTurn(const std::vector<std::pair<std::string, std::string>>& params,
                             bool exporting = false) {
    const double timeout_s = double(options.query_timeout_ns) / 1e9;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g s", timeout_s);
    Running r;
    r.deadline = Clock::now() + std::chrono::nanoseconds(options.query_timeout_ns);
    {
      std::unique_lock lock(mutex);
      if (!turn.wait_until(lock, r.deadline, [&] { return stopping || busy < slots; })) {
        return {503, ErrorJson("the query waited its whole deadline (" + std::string(seconds) +
                               ", serve --query-timeout) for one of the " + std::to_string(slots) +
                               " queries computing at once to end: try again shortly")};
      }
      if (stopping) return {503, ErrorJson("the server is stopping")};
      ++busy;
      running.insert(&r);
    }
    watch.notify_all();
    ReportAnswer answer = exporting ? ComputeExport(params, r.cancel) : Compute(params, r.cancel);
    bool timed_out = false;
    {
      std::lock_guard lock(mutex);
      --busy;
      running.erase(&r);
      timed_out = r.timed_out;
      trim_due = true;
      last_query = Clock::now();
    }
    turn.notify_one();
    watch.notify_all();
    if (answer.status == 503) {
      answer.body =
          ErrorJson(timed_out ? "the query was cancelled: it computed past its deadline of " +
                                    std::string(seconds) +
                                    " (serve --query-timeout); narrow it (focus, thread, time, "
                                    "a coarser granularity, fewer views)"
                              : "the query was cancelled: the server is stopping");
    }
    return answer;
  }

  // Cancels each query computing past its deadline.
  void Watch() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      const auto quiet = last_query + std::chrono::seconds(1);
      if (trim_due && running.empty() && Clock::now() >= quiet) {
        trim_due = false;
        lock.unlock();
        malloc_trim(0);
        lock.lock();
        continue;
      }
      auto next = Clock::time_point::max();
      const auto now = Clock::now();
      for (Running* r : running) {
        if (now >= r->deadline) {
          r->timed_out = true;
          r->cancel = true;
        } else {
          next = std::min(next, r->deadline);
        }
      }
      if (trim_due) next = std::min(next, quiet);
      if (next == Clock::time_point::max()) {
        watch.wait(lock);
      } else {
        watch.wait_until(lock, next);
      }
    }
  }

  // Served directories whose segments changed are read again, and answers
  // computed from them go.
  void RefreshListings() {
    for (const std::string& name : Paths()) {
      std::string listing = ServedListing(*broker, name);
      if (listing.empty() || listings[name] == listing) continue;
      listings[name] = std::move(listing);
      loaded.Erase(name);
      answers.Clear();
    }
  }

  // The capture (its selection: the report's filters, metric, look and
  // inlines) as another profiler's file: format=pprof|chrome|speedscope|folded.
  ReportAnswer ComputeExport(std::vector<std::pair<std::string, std::string>> params,
                             const std::atomic<bool>& cancel) {
    std::string format;
    std::erase_if(params, [&](const auto& kv) {
      if (kv.first != "format") return false;
      format = kv.second;
      return true;
    });
    if (formats::ExportExtension(format).empty()) {
      return {400, ErrorJson("format=" + format +
                             ": an export is format=pprof, chrome, speedscope or folded")};
    }
    Result<analysis::ReportParams> parsed = analysis::ParseReportParams(params);
    if (!parsed.ok()) return {400, ErrorJson(parsed.status().message())};
    if (!parsed->diff.empty()) return {400, ErrorJson("an export is of one capture, not a diff")};
    int status = 0;
    auto capture = Load(parsed->capture, &status);
    if (!capture.ok()) return {status, ErrorJson(capture.status().message())};
    const analysis::ReportQuery& q = parsed->query;
    formats::ExportOptions how;
    how.filter = q.filter;
    how.metric = q.metric.value_or(analysis::DefaultMetric(**capture));
    how.inlines = q.inlines;
    how.look = q.look;
    how.merge = q.merge;
    how.collapse = q.collapse;
    how.cancel = analysis::Cancel(&cancel);
    Result<std::string> bytes = formats::ExportToMemory(**capture, format, how, kMaxAnswerBytes);
    if (!bytes.ok() && bytes.status().code() == StatusCode::kCancelled) return {503, ""};
    if (!bytes.ok()) return {422, ErrorJson(bytes.status().message())};
    const std::string name = parsed->capture.empty() ? OnlyName() : parsed->capture;
    return {200, std::move(bytes).value(),
            format == "pprof"    ? "application/octet-stream"
            : format == "folded" ? "text/plain; charset=utf-8"
                                 : "application/json; charset=utf-8",
            ExportName(name, format)};
  }

  // 503 with no message when cancelled (ComputeInTurn says why).
  ReportAnswer Compute(const std::vector<std::pair<std::string, std::string>>& params,
                       const std::atomic<bool>& cancel) {
    Result<analysis::ReportParams> parsed = analysis::ParseReportParams(params);
    if (!parsed.ok()) return {400, ErrorJson(parsed.status().message())};
    int status = 0;
    auto capture = Load(parsed->capture, &status);
    if (!capture.ok()) return {status, ErrorJson(capture.status().message())};
    std::shared_ptr<const capture::Capture> other;
    if (!parsed->diff.empty()) {
      auto read = Load(parsed->diff, &status);
      if (!read.ok()) return {status, ErrorJson(read.status().message())};
      other = *read;
    }
    analysis::ReportQuery& q = parsed->query;
    q.capture_name = parsed->capture.empty() ? OnlyName() : parsed->capture;
    q.other_name = parsed->diff;
    q.cancel = analysis::Cancel(&cancel);
    q.max_tree_nodes = kMaxTreeNodes;
    Result<analysis::ReportModel> model = analysis::BuildReport(**capture, q, other.get());
    if (!model.ok() && model.status().code() == StatusCode::kCancelled) return {503, ""};
    if (!model.ok()) return {422, ErrorJson(model.status().message())};
    formats::ReadViewFiles(&*model,
                           [this](const std::string& path) { return broker->OpenSource(path); });
    std::string json = formats::ReportJson(*model, /*indent=*/false, /*drawn_only=*/true);
    if (json.size() > kMaxAnswerBytes) {
      return {422, ErrorJson("the answer would be " + std::to_string(json.size() >> 20) +
                             " MiB, more than the " + std::to_string(kMaxAnswerBytes >> 20) +
                             " MiB a query may return: narrow it (min_percent, top, focus, "
                             "thread, time)")};
    }
    return {200, std::move(json)};
  }

  // Each capture served and its size: a served directory's files as
  // listed (a link's, and a --continuous directory's, through the broker).
  std::string Captures() {
    Relist(std::chrono::seconds(1));
    std::map<std::string, uint64_t> sizes;
    size_t left;
    {
      std::lock_guard lock(paths_mutex);
      for (const auto& [name, f] : listed) sizes[name] = f.bytes;
      left = unlisted;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& name : Paths()) {
      auto size = sizes.find(name);
      list.push_back(
          {{"name", name},
           {"bytes",
            size != sizes.end() && size->second != 0 ? size->second : ServedBytes(*broker, name)}});
    }
    nlohmann::json out{{"captures", list}};
    if (left > 0) out["unlisted"] = left;
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
};

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}
Server::~Server() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->watch.notify_all();
  if (state_->watchdog.joinable()) state_->watchdog.join();
  if (state_->preload.joinable()) state_->preload.join();
}

int Server::port() const {
  return state_->port;
}

std::string Server::url(const std::string& query) const {
  const std::string& b = state_->options.bind;
  const std::string host = b.find(':') != std::string::npos ? "[" + b + "]" : b;
  std::string q = state_->token.empty() ? "" : "token=" + state_->token;
  if (!query.empty()) q += (q.empty() ? "" : "&") + query;
  return "http://" + host + ":" + std::to_string(state_->port) + "/" + (q.empty() ? "" : "?" + q);
}

void Server::Run() {
  state_->preload = std::thread([st = state_.get()] { st->Preload(); });
  state_->watchdog = std::thread([st = state_.get()] { st->Watch(); });
  state_->http.listen_after_bind();
}
void Server::Stop() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    for (State::Running* r : state_->running) r->cancel = true;
  }
  state_->watch.notify_all();
  state_->turn.notify_all();
  state_->http.Shutdown();
}

void Server::SetBroker(std::shared_ptr<Broker> broker) {
  state_->broker = std::move(broker);
}

int Server::listening_fd() const {
  return state_->http.listening_fd();
}

void Server::State::Route() {
  State* st = this;
  // A worker serves one connection for as long as it is kept alive, and a
  // browser keeps up to six open: more workers than the connections all
  // clients may hold, so a connection over a cap is refused at once
  // (guarded_http.h holds the caps and the deadlines).
  http.new_task_queue = [this] { return new httplib::ThreadPool(http.Workers()); };
  http.set_payload_max_length(kMaxRequestBytes);
  http.set_default_headers({
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
      // blob: images: the page draws its own flame graph's SVG on a canvas
      // to save it as PNG (nothing from elsewhere).
      {"Content-Security-Policy",
       "default-src 'self'; img-src 'self' blob:; frame-ancestors 'none'"},
      {"Cache-Control", "no-store"},
  });
  http.set_pre_routing_handler([st](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      Fail(res, 405, "method " + req.method + " is not allowed: this server is read-only");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string host = req.get_header_value("Host");
    if (!HostAllowed(host, st->port, st->loopback_only)) {
      Fail(
          res, 403,
          "Host '" + host + "' is not this server (" +
              (st->loopback_only ? "127.0.0.1, [::1] or localhost" : "an IP address or localhost") +
              " with port " + std::to_string(st->port) + "); refused against DNS rebinding");
      return httplib::Server::HandlerResponse::Handled;
    }
    return Admit(req, res, host, st->token, st->port) ? httplib::Server::HandlerResponse::Unhandled
                                                      : httplib::Server::HandlerResponse::Handled;
  });
  http.Get("/api/captures", [st](const httplib::Request&, httplib::Response& res) {
    Answer(res, 200, st->Captures());
  });
  http.Get("/api/report", [st](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<const ReportAnswer> answer = st->Report(req);
    Answer(req, res, answer->status, answer->body, "application/json; charset=utf-8",
           !st->loopback_only);
  });
  // Downloads: not cached (an answer of its own size), computed in turn.
  http.Get("/api/export", [st](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(st->mutex);
      st->RefreshListings();
    }
    ReportAnswer answer = st->ComputeInTurn(QueryParams(req), /*exporting=*/true);
    if (answer.type.empty()) return Answer(res, answer.status, answer.body);
    res.set_header("Content-Disposition", "attachment; filename=\"" + answer.filename + "\"");
    // pprof's file is gzipped already.
    Answer(req, res, answer.status, std::move(answer.body), answer.type,
           !st->loopback_only && answer.type != "application/octet-stream");
  });
  // The browser view: its files, by exact path; nothing else.
  auto asset = [](const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.path == "/" ? "/index.html" : req.path;
    for (const WebAsset& a : WebAssets()) {
      if (path == a.path) {
        res.set_content(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size(), a.type);
        return;
      }
    }
    res.status = 404;
    res.set_content(WebAssets().empty()
                        ? "This microscope was built without its browser view (no npm at build "
                          "time): the JSON API answers at /api/captures and /api/report.\n"
                        : "Nothing is served at " + req.path + ".\n",
                    "text/plain; charset=utf-8");
  };
  http.Get("/", asset);
  http.Get("/favicon.svg", asset);
  http.Get(R"(/assets/[A-Za-z0-9._-]+)", asset);
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      Fail(res, 404,
           "nothing is served at " + req.path +
               " (the view: /; the API: /api/captures, /api/report)");
    } else if (res.status == 414) {
      Fail(res, 414, "the request's URL is longer than this server reads");
    } else {
      Fail(res, res.status, "the request was refused (HTTP " + std::to_string(res.status) + ")");
    }
  });
}

Status Server::State::Listen(const ServeOptions& options) {
  if (options.port == 0) {
    port = http.bind_to_any_port(options.bind);
    if (port <= 0) {
      return Status::Error("cannot listen on " + options.bind + ": " + std::strerror(errno));
    }
  } else {
    if (!http.bind_to_port(options.bind, options.port)) {
      return Status::Error("cannot listen on " + options.bind + " port " +
                           std::to_string(options.port) + ": " + std::strerror(errno));
    }
    port = options.port;
  }
  return OkStatus();
}

Result<std::unique_ptr<Server>> Server::Open(const ServeOptions& options) {
  auto s = std::make_unique<State>();
  // One malloc arena: what a query frees, the next one reuses, whichever
  // thread computes it (with an arena per worker thread each kept its
  // largest query's peak). Set before any thread starts.
  mallopt(M_ARENA_MAX, 1);
  s->options = options;
  s->loopback_only = IsLoopback(options.bind);
  s->broker = options.broker;
  if (s->broker == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<DirectBroker> direct,
                     DirectBroker::Open(options.captures, options.source, options.directory));
    s->broker = std::move(direct);
  }
  for (const std::string& path : options.captures) {
    if (!s->paths.insert(CaptureName(path)).second) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "two captures are named " + CaptureName(path) + ": serve one of them");
    }
    // The directory's files as named at the start, its first listing's to
    // confirm (not a change: the preload keeps what it read).
    if (!options.directory.empty() && !capture::IsDirectory(path)) {
      s->listed[CaptureName(path)] = capture::SegmentFile{CaptureName(path), 0, 0};
    }
  }
  if (options.require_token) {
    s->token = RandomToken();
    if (s->token.empty()) {
      return Status::Error(std::string("cannot make the access token (getrandom: ") +
                           std::strerror(errno) + ")");
    }
  }
  s->answers.set_max_bytes(options.cache_bytes);
  s->Route();
  RETURN_IF_ERROR(s->Listen(options));
  return std::unique_ptr<Server>(new Server(std::move(s)));
}

}  // namespace microscope::serve
