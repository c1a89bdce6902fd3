#include "src/record/snapshot_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace microscope::record {
namespace {

constexpr size_t kMaxMessage = 8192;
constexpr int kMaxPerTake = 16;
constexpr size_t kMaxRefused = 64;
// A request: this line, then the absolute path to write or nothing.
constexpr std::string_view kRequest = "snapshot\n";

// An abstract socket address (no file): "\0microscope/KIND/PID".
socklen_t Address(const char* kind, pid_t pid, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  std::string name = std::string("microscope/") + kind + "/" + std::to_string(pid);
  std::memcpy(a->sun_path + 1, name.data(), name.size());
  return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

Result<ScopedFd> Bind(const char* kind, pid_t pid) {
  ScopedFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::Error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un a;
  socklen_t len = Address(kind, pid, &a);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(fd.get(), 8) != 0) {
    return Status::Error(std::string("cannot listen for snapshot requests: ") +
                         std::strerror(errno));
  }
  return fd;
}

void Send(int fd, const std::string& text) {
  (void)send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Who holds the socket `fd` is connected to: its server's uid and pid.
bool PeerOf(int fd, ucred* cred) {
  socklen_t len = sizeof(*cred);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) == 0;
}

// Whether a socket's server may be believed: root's, or this user's own.
bool Trusted(const ucred& cred) {
  return cred.uid == 0 || cred.uid == geteuid();
}

std::string Holder(const ucred& cred) {
  return "uid " + std::to_string(cred.uid) + "'s process " + std::to_string(cred.pid);
}

}  // namespace

Result<std::unique_ptr<SnapshotServer>> SnapshotServer::Listen(pid_t target, std::string* note) {
  auto server = std::make_unique<SnapshotServer>();
  ASSIGN_OR_RETURN(ScopedFd own, Bind("recorder", getpid()));
  server->listening_.push_back(std::move(own));
  Result<ScopedFd> for_target = Bind("target", target);
  if (for_target.ok()) {
    server->listening_.push_back(std::move(for_target).value());
  } else {
    // Taken: by another recorder, or by someone squatting the name.
    std::string by = "another recorder";
    ScopedFd probe(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a;
    socklen_t len = Address("target", target, &a);
    ucred cred{};
    if (probe.valid() && connect(probe.get(), reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        PeerOf(probe.get(), &cred) && !Trusted(cred)) {
      by = Holder(cred) + " (not a recorder of root or of this user; `snapshot` will not ask it)";
    }
    *note = "snapshots of pid " + std::to_string(target) + " are taken by " + by +
            "; ask this one by its own pid " + std::to_string(getpid());
  }
  return server;
}

std::vector<int> SnapshotServer::fds() const {
  std::vector<int> out;
  for (const ScopedFd& fd : listening_) out.push_back(fd.get());
  return out;
}

std::vector<SnapshotServer::Request> SnapshotServer::Take() {
  std::vector<Request> out;
  // Those refused in an earlier round: what they sent is read, unwaited.
  while (!refused_.empty()) {
    char sink[kMaxMessage];
    while (recv(refused_.front().get(), sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
    refused_.pop_front();
  }
  for (const ScopedFd& l : listening_) {
    // A bounded number per call: a client connecting in a loop cannot hold
    // the recording loop (the rest wait in the backlog, itself bounded).
    for (int taken = 0; taken < kMaxPerTake; ++taken) {
      ScopedFd c(accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.valid()) break;
      // Who is asking, before anything is read from them.
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
          (cred.uid != 0 && cred.uid != geteuid())) {
        Answer(c.get(), Status::Error("refused: only root and the recorder's own user may ask"),
               "");
        // Closed later, its request read then: closing with it unread
        // resets the connection, and the client would lose the answer.
        if (refused_.size() >= kMaxRefused) refused_.pop_front();
        refused_.push_back(std::move(c));
        continue;
      }
      // The client sends its request as soon as it connects; it is read
      // before any answer, or the answer could be lost with it unread (a
      // client of root or of our user that sends nothing holds the loop
      // 200 ms at most; the rings are drained meanwhile by their own thread).
      pollfd p{c.get(), POLLIN, 0};
      char buffer[kMaxMessage];
      ssize_t n = poll(&p, 1, 200) == 1 ? recv(c.get(), buffer, sizeof(buffer), 0) : -1;
      std::string request = n > 0 ? std::string(buffer, size_t(n)) : "";
      if (!request.starts_with(kRequest) ||
          (request.size() > kRequest.size() && request[kRequest.size()] != '/')) {
        Answer(c.get(), Status::Error("malformed request"), "");
        continue;
      }
      out.push_back({std::move(c), request.substr(kRequest.size())});
    }
  }
  return out;
}

void SnapshotServer::Answer(int connection, const Status& status, const std::string& text) {
  Send(connection, status.ok() ? "ok\n" + text : "error\n" + status.message());
}

Result<std::string> RequestSnapshot(pid_t pid, const std::string& path, int timeout_ms) {
  ScopedFd fd;
  std::string untrusted;
  for (const char* kind : {"recorder", "target"}) {
    // Non-blocking: a server whose backlog is full (held full on purpose)
    // is not waited for.
    ScopedFd s(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a;
    socklen_t len = Address(kind, pid, &a);
    if (!s.valid() || connect(s.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) continue;
    fcntl(s.get(), F_SETFL, fcntl(s.get(), F_GETFL) & ~O_NONBLOCK);
    // Anyone can bind an abstract name first: the server is believed only
    // when it is root's or this user's own, before anything is sent to it.
    ucred cred{};
    if (!PeerOf(s.get(), &cred) || !Trusted(cred)) {
      untrusted = "@microscope/" + std::string(kind) + "/" + std::to_string(pid) + " is held by " +
                  Holder(cred) + ", not by a recorder of root or of this user: not asked";
      continue;
    }
    fd = std::move(s);
    break;
  }
  if (!fd.valid() && !untrusted.empty()) {
    return Status::Error(StatusCode::kPermissionDenied, untrusted);
  }
  if (!fd.valid()) {
    return Status::Error(StatusCode::kNotFound,
                         "no recording of pid " + std::to_string(pid) +
                             " answers (neither a recorder nor a recorded program has that pid)");
  }
  const std::string request = std::string(kRequest) + path;
  // A recorder that refuses answers at once and hangs up, perhaps before the
  // request is sent: its answer is read all the same.
  if (send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0 && errno != EPIPE) {
    return Status::Error(std::string("cannot ask the recorder: ") + std::strerror(errno));
  }
  pollfd p{fd.get(), POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1) {
    return Status::Error("the recorder did not answer within " + std::to_string(timeout_ms / 1000) +
                         " s");
  }
  char buffer[kMaxMessage];
  ssize_t n = recv(fd.get(), buffer, sizeof(buffer), 0);
  if (n <= 0) return Status::Error("the recorder ended without answering");
  std::string answer(buffer, size_t(n));
  if (answer.starts_with("ok\n")) return answer.substr(3);
  if (answer.starts_with("error\n")) return Status::Error(answer.substr(6));
  return Status::Error("the recorder's answer is malformed");
}

}  // namespace microscope::record
