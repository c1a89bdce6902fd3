#include "src/cli/push.h"

#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "analysis/filter.h"
#include "analysis/profile.h"
#include "base/clock.h"
#include "base/file_policy.h"
#include "base/hex.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "formats/pprof.h"

namespace microscope::cli {
namespace {

constexpr const char* kSuffix = ".pb.gz";
constexpr uint64_t kMaxQueued = 1ull << 30;  // a queued profile is a segment's pprof

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// FROM-UNTIL-SEGMENT.pb.gz: twelve digits, twelve digits, a segment's name
// (letters, digits, '.', '-', '_').
bool IsQueuedName(std::string_view name) {
  const size_t suffix = std::strlen(kSuffix);
  if (name.size() <= 26 + suffix || !name.ends_with(kSuffix)) return false;
  if (!AllDigits(name.substr(0, 12)) || name[12] != '-' || !AllDigits(name.substr(13, 12)) ||
      name[25] != '-')
    return false;
  std::string_view segment = name.substr(26, name.size() - 26 - suffix);
  return !segment.empty() && segment[0] != '.' &&
         std::all_of(segment.begin(), segment.end(), [](char c) {
           return std::isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
         });
}

uint64_t NumberAt(std::string_view name, size_t at) {
  uint64_t v = 0;
  std::from_chars(name.data() + at, name.data() + at + 12, v);
  return v;
}

}  // namespace

// The queue's profiles, oldest first (names start with the segment's
// start). Only regular files of this recorder's user with a queued
// profile's name count; anything else is passed over, told once.
std::vector<std::pair<std::string, uint64_t>> Pusher::Queued() {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const std::string& name : EntryNames(queue_fd_.get())) {
    if (name == "refused" || name.find(".tmp.") != std::string::npos) continue;
    std::optional<struct stat> st = StatEntry(queue_fd_.get(), name);
    if (!st) continue;  // gone
    std::string why;
    if (!IsQueuedName(name)) {
      why = "not a queued profile's name";
    } else if (!S_ISREG(st->st_mode)) {
      why = S_ISLNK(st->st_mode) ? "a symbolic link" : "not a regular file";
    } else if (st->st_uid != geteuid()) {
      why = "owned by uid " + std::to_string(st->st_uid);
    }
    if (why.empty()) {
      out.emplace_back(name, uint64_t(st->st_size));
    } else if (told_.insert(name).second) {
      say_("push: " + queue_ + "/" + name + " passed over: " + why);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

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
  // DIR may be writable by others: the queue is a directory of this
  // recorder's user, mode 0700, opened once and never through a link.
  Result<ScopedFd> dir = OpenDirectory(options.dir);
  if (!dir.ok()) return dir.status().WithContext(options.dir);
  Result<ScopedFd> queue = OpenOwnDirectory(dir->get(), ".push", 0700);
  if (!queue.ok()) return queue.status().WithContext("cannot use the push queue " + p->queue_);
  p->queue_fd_ = std::move(*queue);
  Result<ScopedFd> refused = OpenOwnDirectory(p->queue_fd_.get(), "refused", 0700);
  if (!refused.ok()) return refused.status().WithContext("cannot use the push queue " + p->queue_);
  p->refused_fd_ = std::move(*refused);
  p->dir_fd_ = std::move(*dir);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p->hostname_ = host;
  const size_t left = p->Queued().size();
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
  // The segment just published, read from DIR without following a link:
  // only this recorder's own file.
  const std::string base = path.substr(path.rfind('/') + 1);
  Result<ScopedFd> fd = OpenEntry(dir_fd_.get(), base, geteuid());
  Result<capture::Capture> c =
      fd.ok() ? capture::ReadCaptureFrom(fd->get()) : Result<capture::Capture>(fd.status());
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
  Enqueue(prefix + base + kSuffix, pprof);
}

void Pusher::Enqueue(const std::string& name, const std::vector<uint8_t>& bytes) {
  std::lock_guard lock(mutex_);
  // Room first: the oldest profiles go when the queue would pass its bound.
  auto queued = Queued();
  uint64_t total = bytes.size();
  for (const auto& [n, size] : queued) total += size;
  for (const auto& [n, size] : queued) {
    if (total <= options_.queue_bytes) break;
    if (unlinkat(queue_fd_.get(), n.c_str(), 0) == 0) {
      total -= size;
      ++counts_.dropped;
    }
  }
  if (bytes.size() > options_.queue_bytes) {
    ++counts_.dropped;
  } else if (Status w = WriteEntryAtomically(queue_fd_.get(), name, bytes, 0600); !w.ok()) {
    say_("push: " + w.WithContext(queue_).message());
    ++counts_.dropped;
  }
  wake_.notify_all();
}

bool Pusher::SendOne(const std::string& name) {
  Result<ScopedFd> fd = OpenEntry(queue_fd_.get(), name, geteuid());
  Result<std::vector<uint8_t>> bytes =
      fd.ok() ? ReadWhole(fd->get(), kMaxQueued) : Result<std::vector<uint8_t>>(fd.status());
  if (!bytes.ok()) return true;  // gone (dropped for room meanwhile)
  // NAME: FROM-UNTIL-SEGMENT.pb.gz (Queued checked the form)
  const std::string query = path_ +
                            "?name=" + UrlEncode(options_.app + "{hostname=" + hostname_ + "}") +
                            "&from=" + std::to_string(NumberAt(name, 0)) +
                            "&until=" + std::to_string(NumberAt(name, 13)) + "&format=pprof" +
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
    unlinkat(queue_fd_.get(), name.c_str(), 0);
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
    renameat(queue_fd_.get(), name.c_str(), refused_fd_.get(), name.c_str());
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
    auto queued = Queued();
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
  c.queued =
      const_cast<Pusher*>(this)->Queued().size();  // what the queue holds, counted when asked
  return c;
}

}  // namespace microscope::cli
