// httplib's server with its per-connection loop replaced, against local
// users who open connections and trickle bytes (slowloris): httplib waits
// its read timeout per read, so one byte every few seconds held a worker
// for ever, and 16 such connections held them all.
//
// Here each connection is admitted against a cap per client and a cap in
// all (over either: 503 with the reason, closed); one request's head and
// body must arrive within a total deadline, an idle kept-alive connection
// is closed after a shorter one, and a response must be taken within its
// own. On the loopback every local user is 127.0.0.1, so a loopback client
// is known by the uid that owns its socket (/proc/net/tcp, tcp6); another
// by its address.
#pragma once

#include <httplib.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace microscope::serve {

struct ConnectionLimits {
  size_t per_client = 8;  // a browser opens 6 to a server
  size_t total = 32;
  std::chrono::milliseconds request_read{5000};  // one request's head and body
  std::chrono::milliseconds idle{2000};          // between kept-alive requests
  std::chrono::milliseconds response_write{60000};
  size_t keep_alive_requests = 100;
};

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(ConnectionLimits limits) : limits_(limits) {}
  // Ends every connection's loop within 50 ms (a wait is cut short, a
  // kept-alive connection closed), then stops listening.
  void Shutdown();
  // Threads for connections: more than one client may hold, so that a
  // client at its cap cannot keep another out.
  size_t Workers() const { return limits_.total + 8; }
  // The listening socket (bound): -1 before.
  int listening_fd() const { return int(svr_sock_); }

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Who the peer is: "uid N" on the loopback, else its address.
  std::string ClientOf(int sock) const;

  const ConnectionLimits limits_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<std::string, size_t> per_client_;  // open connections of each client
  size_t total_ = 0;
};

// The uid owning the TCP socket whose local end is `peer` and remote end
// `local` (a loopback connection's other end, seen from this host), from
// /proc/net/tcp or tcp6; none when it is not there (already closed).
std::optional<uid_t> LoopbackPeerUid(const sockaddr_storage& peer, const sockaddr_storage& local);

}  // namespace microscope::serve
