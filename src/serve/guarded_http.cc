#include "src/serve/guarded_http.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/scoped_fd.h"

namespace microscope::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(50);  // how soon a wait sees Shutdown

// A socket as httplib reads and writes it, with deadlines over a whole
// request instead of a timeout per read.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int sock, const std::atomic<bool>* stopping) : sock_(sock), stopping_(stopping) {}
  void SetReadDeadline(Clock::time_point t) { read_deadline_ = t; }
  void SetWriteDeadline(Clock::time_point t) { write_deadline_ = t; }

  bool is_readable() const override { return pos_ < len_ || Wait(POLLIN, read_deadline_); }
  bool is_writable() const override { return Wait(POLLOUT, write_deadline_); }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (!Wait(POLLIN, read_deadline_)) return -1;
      ssize_t n;
      do {
        n = recv(sock_, buffer_, sizeof buffer_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = size_t(n);
    }
    const size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buffer_ + pos_, n);
    pos_ += n;
    return ssize_t(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Name(getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Name(getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Waits for `events` until `until`, in slices that look at the stop flag.
  bool Wait(short events, Clock::time_point until) const {
    for (;;) {
      if (stopping_->load()) return false;
      const auto left = until - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      pollfd p{sock_, events, 0};
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min<Clock::duration>(left, kSlice));
      int r = poll(&p, 1, int(ms.count()) + 1);
      if (r > 0) return true;  // ready, or hung up: the read or write says which
      if (r < 0 && errno != EINTR) return false;
    }
  }
  template <typename Get>
  void Name(Get get, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = -1;
    if (get(sock_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  const int sock_;
  const std::atomic<bool>* stopping_;
  Clock::time_point read_deadline_{};
  Clock::time_point write_deadline_{};
  char buffer_[4096];
  size_t pos_ = 0, len_ = 0;
};

bool IsLoopbackAddress(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ss_family != AF_INET6) return false;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

// An address and port as /proc/net/tcp{,6} prints them: each 32-bit word
// of the address as the host reads it, in hex, then the port.
std::string ProcNetName(const sockaddr_storage& a) {
  char text[64] = "";
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    std::snprintf(text, sizeof text, "%08X:%04X", v4->sin_addr.s_addr, ntohs(v4->sin_port));
  } else {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    uint32_t w[4];
    std::memcpy(w, &v6->sin6_addr, sizeof w);
    std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3],
                  ntohs(v6->sin6_port));
  }
  return text;
}

// Writes `status` with a JSON reason and closes, without reading the
// request (what it sent is drained so the close is not a reset that loses
// the answer).
void Refuse(int sock, const std::string& reason) {
  const std::string body = nlohmann::json{{"error", reason}}.dump();
  const std::string head =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; "
      "charset=utf-8\r\nConnection: close\r\nRetry-After: 5\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  const std::string all = head + body;
  pollfd p{sock, POLLOUT, 0};
  if (poll(&p, 1, 1000) > 0) (void)send(sock, all.data(), all.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(sock, SHUT_WR);
  char drain[4096];
  while (recv(sock, drain, sizeof drain, MSG_DONTWAIT) > 0) {
  }
  close(sock);
}

// The uid owning the TCP socket of `peer` (its local end) connected to
// `local`, asked of the kernel by that one socket (sock_diag: a lookup by
// its four-tuple, some 20 us, where reading /proc/net/tcp through took
// 1.8 ms a connection on this host); none when the kernel cannot say.
std::optional<uid_t> SockDiagUid(const sockaddr_storage& peer, const sockaddr_storage& local) {
  ScopedFd nl(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl.valid()) return std::nullopt;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_family = uint8_t(peer.ss_family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  msg.req.id.idiag_cookie[0] = msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (peer.ss_family == AF_INET) {
    const auto* p = reinterpret_cast<const sockaddr_in*>(&peer);
    const auto* l = reinterpret_cast<const sockaddr_in*>(&local);
    msg.req.id.idiag_sport = p->sin_port;
    msg.req.id.idiag_dport = l->sin_port;
    std::memcpy(msg.req.id.idiag_src, &p->sin_addr, 4);
    std::memcpy(msg.req.id.idiag_dst, &l->sin_addr, 4);
  } else {
    const auto* p = reinterpret_cast<const sockaddr_in6*>(&peer);
    const auto* l = reinterpret_cast<const sockaddr_in6*>(&local);
    msg.req.id.idiag_sport = p->sin6_port;
    msg.req.id.idiag_dport = l->sin6_port;
    std::memcpy(msg.req.id.idiag_src, &p->sin6_addr, 16);
    std::memcpy(msg.req.id.idiag_dst, &l->sin6_addr, 16);
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(nl.get(), &msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      ssize_t(sizeof msg))
    return std::nullopt;
  alignas(nlmsghdr) char reply[8192];
  const ssize_t n = recv(nl.get(), reply, sizeof reply, 0);
  if (n < ssize_t(sizeof(nlmsghdr))) return std::nullopt;
  const auto* h = reinterpret_cast<const nlmsghdr*>(reply);
  if (!NLMSG_OK(h, size_t(n)) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
      h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
    return std::nullopt;
  const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
  return uid_t(m->idiag_uid);
}

}  // namespace

std::optional<uid_t> LoopbackPeerUid(const sockaddr_storage& peer, const sockaddr_storage& local) {
  if (std::optional<uid_t> uid = SockDiagUid(peer, local)) return uid;
  const std::string want_local = ProcNetName(peer), want_remote = ProcNetName(local);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      char l[80], r[80];
      unsigned state = 0, uid = 0;
      if (std::sscanf(line.c_str(), " %*u: %79s %79s %x %*s %*s %*s %u", l, r, &state, &uid) != 4)
        continue;
      if (want_local == l && want_remote == r) return uid_t(uid);
    }
  }
  return std::nullopt;
}

std::string GuardedHttpServer::ClientOf(int sock) const {
  sockaddr_storage peer{}, local{};
  socklen_t pl = sizeof peer, ll = sizeof local;
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &pl) != 0 ||
      getsockname(sock, reinterpret_cast<sockaddr*>(&local), &ll) != 0)
    return "unknown";
  if (IsLoopbackAddress(peer)) {
    if (std::optional<uid_t> uid = LoopbackPeerUid(peer, local)) {
      return "uid " + std::to_string(*uid);
    }
  }
  char text[INET6_ADDRSTRLEN] = "";
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&peer)->sin_addr, text, sizeof text);
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

void GuardedHttpServer::Shutdown() {
  stopping_ = true;
  stop();
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  const std::string client = ClientOf(sock);
  {
    std::lock_guard lock(mutex_);
    size_t& mine = per_client_[client];
    std::string over;
    if (mine >= limits_.per_client) {
      over = "this client (" + client + ") has " + std::to_string(mine) +
             " connections open, the most one client may: close one, or wait";
    } else if (total_ >= limits_.total) {
      over = "the server has " + std::to_string(total_) +
             " connections open, the most it takes: try again shortly";
    }
    if (!over.empty()) {
      if (mine == 0) per_client_.erase(client);
      Refuse(sock, over);
      return false;
    }
    ++mine;
    ++total_;
  }
  DeadlineStream stream(sock, &stopping_);
  bool ok = false;
  const auto opened = Clock::now();
  for (size_t left = limits_.keep_alive_requests; left > 0 && !stopping_; --left) {
    // The first request's deadline runs from the connection's start; a
    // later one's from its first byte, after at most `idle` without one.
    const bool first = left == limits_.keep_alive_requests;
    stream.SetReadDeadline(first ? opened + limits_.request_read : Clock::now() + limits_.idle);
    if (!stream.is_readable()) break;  // idle too long, closed, or stopping
    const auto start = first ? opened : Clock::now();
    stream.SetReadDeadline(start + limits_.request_read);
    stream.SetWriteDeadline(start + limits_.request_read + limits_.response_write);
    bool closed = false;
    ok = process_request(stream, left == 1, closed, nullptr);
    if (!ok || closed) break;
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  std::lock_guard lock(mutex_);
  --total_;
  if (--per_client_[client] == 0) per_client_.erase(client);
  return ok;
}

}  // namespace microscope::serve
