// record --continuous DIR --push URL: each published segment, as pprof, to
// a continuous-profiling store's HTTP ingest (Pyroscope's POST /ingest with
// format=pprof, which Grafana Pyroscope and its agents' receivers take).
// Segments are converted as they are published and queued on disk
// (DIR/.push), bounded in bytes; a thread of its own sends the oldest first
// and retries with backoff, so that collection never waits on the network.
// The queue is a directory of the recorder's own user, mode 0700, used
// through a descriptor: a DIR other users can write cannot point it, or
// the segments it reads, elsewhere (docs/security.md).
// What the store refuses for good (a 4xx) is moved aside (DIR/.push/refused);
// what could not be sent by the end stays queued and is sent by the next
// recorder started on DIR.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::cli {

struct PushOptions {
  std::string url;  // http://HOST[:PORT][/PREFIX]; /ingest is added unless it ends so
  std::string app;  // the application name the store files profiles under
  std::string dir;  // the continuous directory: the queue is DIR/.push
  uint64_t queue_bytes = 64ull << 20;
  uint32_t frequency = 0;  // sampleRate
  // Backoff after a failed attempt: doubling from `first_retry_ms` to at most `max_retry_ms`.
  uint32_t first_retry_ms = 1000;
  uint32_t max_retry_ms = 60000;
};

struct PushCounts {
  uint64_t sent = 0;
  uint64_t failed_attempts = 0;  // answered 5xx, 408, 429, or no answer: retried
  uint64_t refused = 0;          // answered another 4xx: moved to DIR/.push/refused
  uint64_t dropped = 0;          // the queue was full: the oldest went
  uint64_t queued = 0;           // waiting now (counted from the queue when asked)
};

class Pusher {
 public:
  // Checks the URL, creates the queue and starts sending what a recorder
  // before left in it. `say` gets one line per change worth telling.
  static Result<std::unique_ptr<Pusher>> Start(const PushOptions& options,
                                               std::function<void(const std::string&)> say);
  ~Pusher();
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  // A segment was published at `path`: converts it and queues it.
  void Publish(const std::string& path);
  // Sends what is queued for up to `flush_ms`, then stops; the rest stays.
  void Stop(int flush_ms);
  PushCounts counts() const;

 private:
  Pusher() = default;
  void Loop();
  bool SendOne(const std::string& file);  // true: done with it (sent or refused)
  void Enqueue(const std::string& name, const std::vector<uint8_t>& bytes);
  std::vector<std::pair<std::string, uint64_t>> Queued();  // under mutex_ once started

  PushOptions options_;
  std::function<void(const std::string&)> say_;
  std::string host_;            // scheme://host:port
  std::string path_;            // /.../ingest
  std::string queue_;           // DIR/.push, for messages
  ScopedFd dir_fd_;             // DIR
  ScopedFd queue_fd_;           // DIR/.push: ours, 0700
  ScopedFd refused_fd_;         // DIR/.push/refused
  std::set<std::string> told_;  // queue entries passed over, told once
  std::string hostname_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  PushCounts counts_;
  bool stopping_ = false;
  uint64_t flush_until_ = 0;  // CLOCK_MONOTONIC ns: stop sending after
  bool failing_ = false;      // the last attempt failed (told once per streak)
  std::thread thread_;
};

// Splits "http://host:port/prefix" into ("http://host:port", "/prefix/ingest").
Result<std::pair<std::string, std::string>> IngestEndpoint(const std::string& url);

}  // namespace microscope::cli
