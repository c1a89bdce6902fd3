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
  (void)send(fd, text.data(), text.size(), MSG_NOSIGNAL);
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
    *note = "snapshots of pid " + std::to_string(target) +
            " go to another recorder; ask this one by its own pid " + std::to_string(getpid());
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
  for (const ScopedFd& l : listening_) {
    for (;;) {
      ScopedFd c(accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.valid()) break;
      // The client sends its request as soon as it connects; it is read
      // before any answer, or the answer could be lost with it unread (a
      // client that sends nothing holds the recording loop 200 ms at most;
      // the rings are drained meanwhile by their own thread).
      pollfd p{c.get(), POLLIN, 0};
      char buffer[kMaxMessage];
      ssize_t n = poll(&p, 1, 200) == 1 ? recv(c.get(), buffer, sizeof(buffer), 0) : -1;
      ucred cred{};
      socklen_t len = sizeof(cred);
      if (getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
          (cred.uid != 0 && cred.uid != geteuid())) {
        Answer(c.get(), Status::Error("refused: only root and the recorder's own user may ask"),
               "");
        continue;
      }
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
  for (const char* kind : {"recorder", "target"}) {
    ScopedFd s(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un a;
    socklen_t len = Address(kind, pid, &a);
    if (s.valid() && connect(s.get(), reinterpret_cast<sockaddr*>(&a), len) == 0) {
      fd = std::move(s);
      break;
    }
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
