#include "src/cli/push.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "analysis/filter.h"
#include "analysis/profile.h"
#include "base/clock.h"
#include "base/open_file.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "formats/pprof.h"
#include "src/serve/server.h"

namespace microscope::cli {
namespace {

constexpr const char* kSuffix = ".pb.gz";

// The queue's files, oldest first (names start with the segment's start).
std::vector<std::pair<std::string, uint64_t>> Queued(const std::string& dir) {
  std::vector<std::pair<std::string, uint64_t>> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= std::strlen(kSuffix) || !name.ends_with(kSuffix) || name[0] == '.') continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode))
      out.emplace_back(name, uint64_t(st.st_size));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Result<std::pair<std::string, std::string>> IngestEndpoint(const std::string& url) {
  const std::string scheme = "http://";
  if (!url.starts_with(scheme)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--push " + url +
                             ": an http:// URL (this build sends no TLS; put a "
                             "TLS proxy in front of the store)");
  }
  size_t slash = url.find('/', scheme.size());
  std::string host = url.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : url.substr(slash);
  if (host.size() == scheme.size()) {
    return Status::Error(StatusCode::kInvalidArgument, "--push " + url + ": no host");
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (!path.ends_with("/ingest")) path += "/ingest";
  return std::make_pair(host, path);
}

Result<std::unique_ptr<Pusher>> Pusher::Start(const PushOptions& options,
                                              std::function<void(const std::string&)> say) {
  ASSIGN_OR_RETURN(auto endpoint, IngestEndpoint(options.url));
  std::unique_ptr<Pusher> p(new Pusher());
  p->options_ = options;
  p->say_ = std::move(say);
  p->host_ = endpoint.first;
  p->path_ = endpoint.second;
  p->queue_ = options.dir + "/.push";
  for (const std::string& d : {p->queue_, p->queue_ + "/refused"}) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::Error(std::string("cannot create the push queue: ") + std::strerror(errno))
          .WithContext(d);
    }
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p->hostname_ = host;
  const size_t left = Queued(p->queue_).size();
  if (left > 0) {
    p->say_("push: " + std::to_string(left) + " profiles an earlier recorder left queued in " +
            p->queue_ + " are sent first");
  }
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

Pusher::~Pusher() {
  if (thread_.joinable()) Stop(0);
}

void Pusher::Publish(const std::string& path) {
  Result<capture::Capture> c = capture::ReadCapture(path);
  if (!c.ok()) {
    say_("push: " + c.status().WithContext(path).message());
    return;
  }
  const capture::Settings& s = c->settings;
  const uint64_t from_ns = s.realtime_start.value_or(RealtimeNowNs());
  const uint64_t from = from_ns / 1'000'000'000;
  const uint64_t until = (from_ns + (s.end_time - s.start_time) + 999'999'999) / 1'000'000'000;
  std::vector<uint8_t> pprof =
      formats::WritePprof(*c, analysis::SampleFilter(), analysis::DefaultMetric(*c));
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "%012llu-%012llu-", static_cast<unsigned long long>(from),
                static_cast<unsigned long long>(until));
  std::string base = path.substr(path.rfind('/') + 1);
  Enqueue(prefix + base + kSuffix, pprof);
}

void Pusher::Enqueue(const std::string& name, const std::vector<uint8_t>& bytes) {
  std::lock_guard lock(mutex_);
  // Room first: the oldest profiles go when the queue would pass its bound.
  auto queued = Queued(queue_);
  uint64_t total = bytes.size();
  for (const auto& [n, size] : queued) total += size;
  for (const auto& [n, size] : queued) {
    if (total <= options_.queue_bytes) break;
    if (unlink((queue_ + "/" + n).c_str()) == 0) {
      total -= size;
      ++counts_.dropped;
    }
  }
  if (bytes.size() > options_.queue_bytes) {
    ++counts_.dropped;
  } else if (Status w = capture::WriteFileAtomically(queue_ + "/" + name, bytes); !w.ok()) {
    say_("push: " + w.message());
    ++counts_.dropped;
  }
  wake_.notify_all();
}

bool Pusher::SendOne(const std::string& name) {
  const std::string file = queue_ + "/" + name;
  Result<std::vector<uint8_t>> bytes = ReadRegularFile(file);
  if (!bytes.ok()) return true;  // gone (dropped for room meanwhile)
  // NAME: FROM-UNTIL-SEGMENT.pb.gz
  const std::string from = name.substr(0, 12), until = name.substr(13, 12);
  const std::string query =
      path_ + "?name=" + serve::UrlEncode(options_.app + "{hostname=" + hostname_ + "}") +
      "&from=" + std::to_string(std::stoull(from)) +
      "&until=" + std::to_string(std::stoull(until)) + "&format=pprof" +
      "&spyName=microscope&sampleRate=" + std::to_string(options_.frequency);
  httplib::Client client(host_);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  client.set_write_timeout(30, 0);
  httplib::MultipartFormDataItems items{{"profile", std::string(bytes->begin(), bytes->end()),
                                         "profile.pb.gz", "application/octet-stream"}};
  httplib::Result r = client.Post(query, items);
  std::string why;
  bool retry = true;
  if (r && r->status >= 200 && r->status < 300) {
    unlink(file.c_str());
    std::lock_guard lock(mutex_);
    ++counts_.sent;
    if (failing_) say_("push: " + host_ + " takes profiles again");
    failing_ = false;
    return true;
  }
  if (r) {
    why = "answered " + std::to_string(r->status);
    retry = r->status >= 500 || r->status == 408 || r->status == 429;
  } else {
    why = "no answer (" + httplib::to_string(r.error()) + " error)";
  }
  std::lock_guard lock(mutex_);
  if (!retry) {
    rename(file.c_str(), (queue_ + "/refused/" + name).c_str());
    ++counts_.refused;
    say_("push: " + host_ + path_ + " refused " + name + " (" + why + "); kept in " + queue_ +
         "/refused");
    return true;
  }
  ++counts_.failed_attempts;
  if (!failing_)
    say_("push: " + host_ + path_ + ": " + why + "; retrying, the profiles wait in " + queue_);
  failing_ = true;
  return false;
}

void Pusher::Loop() {
  uint32_t backoff = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    auto queued = Queued(queue_);
    const bool flushing = stopping_;
    if (flushing && (queued.empty() || MonotonicNowNs() >= flush_until_)) return;
    if (queued.empty()) {
      wake_.wait(lock);
      continue;
    }
    lock.unlock();
    const bool done = SendOne(queued.front().first);
    lock.lock();
    if (done) {
      backoff = 0;
      continue;
    }
    backoff = backoff == 0 ? options_.first_retry_ms : std::min(options_.max_retry_ms, backoff * 2);
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff);
    if (stopping_) {
      const uint64_t now = MonotonicNowNs();
      if (now >= flush_until_) return;
      until = std::min(
          until, std::chrono::steady_clock::now() + std::chrono::nanoseconds(flush_until_ - now));
    }
    wake_.wait_until(lock, until, [&] { return stopping_ && !flushing; });
  }
}

void Pusher::Stop(int flush_ms) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    flush_until_ = MonotonicNowNs() + uint64_t(std::max(flush_ms, 0)) * 1'000'000ull;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

PushCounts Pusher::counts() const {
  std::lock_guard lock(mutex_);
  PushCounts c = counts_;
  c.queued = Queued(queue_).size();  // what the queue holds, counted when asked
  return c;
}

}  // namespace microscope::cli
