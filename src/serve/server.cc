#include "src/serve/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
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
#include "formats/report_json.h"
#include "formats/source_text.h"
#include "src/serve/broker.h"
#include "src/serve/web_assets.h"

namespace microscope::serve {
namespace {

constexpr size_t kLoadedCaptures = 4;   // kept in memory, the least recently used dropped
constexpr size_t kCachedAnswers = 256;  // report answers kept, likewise
constexpr size_t kMaxRequestBytes = 64 << 10;

std::string ErrorJson(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

void Answer(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  // With a parameter, the type is not one httplib compresses: its brotli
  // took 300 ms for a 600 kB answer, and on the loopback compression only
  // costs (e2e serve_api checks the answers go out plain).
  res.set_content(body, "application/json; charset=utf-8");
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  Answer(res, status, ErrorJson(message));
}

bool IsLoopback(const std::string& bind) {
  in_addr v4;
  if (inet_pton(AF_INET, bind.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return bind == "::1" || bind == "localhost";
}

// A small least-recently-used map.
template <typename V>
class Lru {
 public:
  explicit Lru(size_t capacity) : capacity_(capacity) {}
  const V* Get(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  void Erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    order_.erase(it->second);
    index_.erase(it);
  }
  void Clear() {
    order_.clear();
    index_.clear();
  }
  const V& Put(const std::string& key, V value) {
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

 private:
  size_t capacity_;
  std::list<std::pair<std::string, V>> order_;
  std::map<std::string, typename std::list<std::pair<std::string, V>>::iterator> index_;
};

}  // namespace

struct Server::State {
  ServeOptions options;
  bool loopback_only = true;
  int port = 0;
  std::map<std::string, std::string> paths;  // base name: path
  std::shared_ptr<Broker> broker;  // opens what is served (broker.h)
  httplib::Server http;
  // Queries are answered one at a time (two cores; the model building is
  // the work): one lock over the captures and the answers.
  std::mutex mutex;
  Lru<std::shared_ptr<const capture::Capture>> loaded{kLoadedCaptures};
  Lru<std::pair<int, std::string>> answers{kCachedAnswers};
  std::map<std::string, std::string> listings;  // per served directory, its segments
  // Reads the captures (as many as are kept loaded) while the first page
  // loads: pprof reads its profile before serving; a capture of 1M samples
  // takes ~100 ms to read, which the first query would otherwise wait.
  std::thread preload;

  void Preload() {
    size_t n = 0;
    for (const auto& [name, path] : paths) {
      if (n++ == kLoadedCaptures) break;
      std::lock_guard lock(mutex);  // a query waits for one capture at most
      int status = 0;
      (void)Load(name, &status);  // an error is the query's to report
    }
  }

  // The capture served as `name` ("" names the only one).
  Result<std::shared_ptr<const capture::Capture>> Load(std::string name, int* status) {
    if (name.empty()) {
      if (paths.size() != 1) {
        *status = 400;
        return Status::Error(StatusCode::kInvalidArgument,
                             "parameter capture is needed: " + std::to_string(paths.size()) +
                                 " captures are served (GET /api/captures lists them)");
      }
      name = paths.begin()->first;
    }
    auto path = paths.find(name);
    if (path == paths.end()) {
      *status = 404;
      return Status::Error(StatusCode::kNotFound, "no capture named '" + name + "' is served");
    }
    if (const auto* c = loaded.Get(name)) return *c;
    Result<capture::Capture> read = ReadServed(*broker, name);
    if (!read.ok()) {
      *status = 422;
      return read.status();
    }
    return loaded.Put(name, std::make_shared<const capture::Capture>(std::move(read).value()));
  }

  // The answer to a report query: status and JSON body.
  std::pair<int, std::string> Report(const httplib::Request& req) {
    std::vector<std::pair<std::string, std::string>> params(req.params.begin(), req.params.end());
    std::string key;
    for (const auto& [k, v] : params) key += k + '\0' + v + '\0';
    std::lock_guard lock(mutex);
    RefreshListings();
    if (const auto* cached = answers.Get(key)) return *cached;
    return answers.Put(key, Compute(params));
  }

  // Served directories whose segments changed are read again, and answers
  // computed from them go.
  void RefreshListings() {
    for (const auto& [name, path] : paths) {
      std::string listing = ServedListing(*broker, name);
      if (listing.empty() || listings[name] == listing) continue;
      listings[name] = std::move(listing);
      loaded.Erase(name);
      answers.Clear();
    }
  }

  std::pair<int, std::string> Compute(
      const std::vector<std::pair<std::string, std::string>>& params) {
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
    q.capture_name = parsed->capture.empty() ? paths.begin()->first : parsed->capture;
    q.other_name = parsed->diff;
    Result<analysis::ReportModel> model = analysis::BuildReport(**capture, q, other.get());
    if (!model.ok()) return {422, ErrorJson(model.status().message())};
    if (model->source) {
      formats::ReadSourceText(&*model->source,
                              [this](const std::string& path) { return broker->OpenSource(path); });
    }
    return {200, formats::ReportJson(*model, /*indent=*/false)};
  }

  std::string Captures() const {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, path] : paths) {
      list.push_back({{"name", name}, {"bytes", ServedBytes(*broker, name)}});
    }
    return nlohmann::json{{"captures", list}}.dump(-1, ' ', false,
                                                   nlohmann::json::error_handler_t::replace);
  }
};

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}
Server::~Server() {
  if (state_->preload.joinable()) state_->preload.join();
}

int Server::port() const {
  return state_->port;
}

std::string Server::url() const {
  const std::string& b = state_->options.bind;
  const std::string host = b.find(':') != std::string::npos ? "[" + b + "]" : b;
  return "http://" + host + ":" + std::to_string(state_->port) + "/";
}

void Server::Run() {
  state_->preload = std::thread([st = state_.get()] { st->Preload(); });
  state_->http.listen_after_bind();
}
void Server::Stop() {
  state_->http.stop();
}

Result<std::unique_ptr<Server>> Server::Open(const ServeOptions& options) {
  auto s = std::make_unique<State>();
  s->options = options;
  s->loopback_only = IsLoopback(options.bind);
  s->broker = options.broker;
  if (s->broker == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<DirectBroker> direct,
                     DirectBroker::Open(options.captures, options.source));
    s->broker = std::move(direct);
  }
  for (const std::string& path : options.captures) {
    if (!s->paths.emplace(CaptureName(path), path).second) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "two captures are named " + CaptureName(path) + ": serve one of them");
    }
  }
  State* st = s.get();
  httplib::Server& http = s->http;
  // A worker serves one connection for as long as it is kept alive, and a
  // browser keeps up to six open: with two workers, a second client (or the
  // page's own next request) waited out a 5 s keep-alive. The answers are
  // computed one at a time anyway (State::mutex).
  http.new_task_queue = [] { return new httplib::ThreadPool(16); };
  http.set_keep_alive_timeout(2);
  http.set_payload_max_length(kMaxRequestBytes);
  http.set_read_timeout(10);
  http.set_keep_alive_max_count(100);
  http.set_default_headers({
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
      {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"},
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
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.Get("/api/captures", [st](const httplib::Request&, httplib::Response& res) {
    Answer(res, 200, st->Captures());
  });
  http.Get("/api/report", [st](const httplib::Request& req, httplib::Response& res) {
    auto [status, body] = st->Report(req);
    Answer(res, status, body);
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
  if (options.port == 0) {
    s->port = http.bind_to_any_port(options.bind);
    if (s->port <= 0) {
      return Status::Error("cannot listen on " + options.bind + ": " + std::strerror(errno));
    }
  } else {
    if (!http.bind_to_port(options.bind, options.port)) {
      return Status::Error("cannot listen on " + options.bind + " port " +
                           std::to_string(options.port) + ": " + std::strerror(errno));
    }
    s->port = options.port;
  }
  return std::unique_ptr<Server>(new Server(std::move(s)));
}

std::string CaptureName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string UrlEncode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::vector<std::string>> CapturesToServe(const std::string& file_or_dir) {
  std::error_code ec;
  std::vector<std::string> out;
  if (std::filesystem::is_directory(file_or_dir, ec)) {
    // A --continuous directory's segments are one capture, named after it
    // and read again as segments come and go; other captures are their own.
    bool segments = false;
    for (const auto& entry : std::filesystem::directory_iterator(file_or_dir, ec)) {
      if (capture::IsSegmentName(entry.path().filename().string())) {
        segments = true;
      } else if (entry.path().extension() == ".mscap" && entry.is_regular_file(ec)) {
        out.push_back(entry.path().string());
      }
    }
    if (segments) {
      std::string dir = std::filesystem::path(file_or_dir).lexically_normal().string();
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      out.push_back(dir);
    }
    if (ec) return Status::Error(file_or_dir + ": " + ec.message());
    std::sort(out.begin(), out.end());
    if (out.empty()) return Status::Error(file_or_dir + ": no .mscap file in this directory");
    return out;
  }
  if (!std::filesystem::is_regular_file(file_or_dir, ec)) {
    return Status::Error(file_or_dir + ": " +
                         (std::filesystem::exists(file_or_dir, ec) ? "not a regular file"
                                                                   : "no such file or directory"));
  }
  out.push_back(file_or_dir);
  return out;
}

bool HostAllowed(const std::string& host, int port, bool loopback_only) {
  const std::string suffix = ":" + std::to_string(port);
  if (host.size() <= suffix.size() ||
      host.compare(host.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string name = host.substr(0, host.size() - suffix.size());
  if (name == "localhost") return true;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    in6_addr v6;
    const std::string literal = name.substr(1, name.size() - 2);
    if (inet_pton(AF_INET6, literal.c_str(), &v6) != 1) return false;
    return !loopback_only || IN6_IS_ADDR_LOOPBACK(&v6);
  }
  in_addr v4;
  if (inet_pton(AF_INET, name.c_str(), &v4) != 1) return false;
  return !loopback_only || (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace microscope::serve
