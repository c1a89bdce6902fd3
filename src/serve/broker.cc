#include "src/serve/broker.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "base/file_policy.h"
#include "capture/reader.h"
#include "src/serve/broker_wire.h"

namespace microscope::serve {
namespace {

Status Errno(const std::string& what) {
  const int err = errno;
  return Status::Error(CodeOfErrno(err), what + ": " + std::strerror(err));
}

// Sends one message (and `fd`, when valid) on the stream socket `sock`.
bool SendMessage(int sock, const std::string& body, int fd) {
  const uint32_t n = uint32_t(body.size());
  std::string bytes(reinterpret_cast<const char*>(&n), sizeof(n));
  bytes += body;
  size_t done = 0;
  while (done < bytes.size()) {
    iovec iov{bytes.data() + done, bytes.size() - done};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (done == 0 && fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t w = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += size_t(w);
  }
  return true;
}

// Reads exactly `n` bytes; false at EOF, on an error or a timeout.
bool ReadExactly(int sock, char* out, size_t n, ScopedFd* fd) {
  size_t done = 0;
  while (done < n) {
    iovec iov{out + done, n - done};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int got;
        std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        // One descriptor is expected; any other is closed.
        if (fd != nullptr && !fd->valid()) {
          *fd = ScopedFd(got);
        } else {
          close(got);
        }
      }
    }
    done += size_t(r);
  }
  return true;
}

// One message of at most `limit` bytes (and its descriptor, if any).
bool ReceiveMessage(int sock, size_t limit, std::string* body, ScopedFd* fd) {
  uint32_t n = 0;
  if (!ReadExactly(sock, reinterpret_cast<char*>(&n), sizeof(n), fd) || n > limit) return false;
  body->resize(n);
  return ReadExactly(sock, body->data(), n, fd);
}

// The broker as the server's process sees it: each call one request and
// its reply, one at a time.
class BrokerClient : public Broker {
 public:
  BrokerClient(std::map<std::string, ServedCapture> served, std::string directory, ScopedFd sock)
      : Broker(std::move(served), std::move(directory)), sock_(std::move(sock)) {}

  Result<std::vector<capture::SegmentFile>> ListCaptures(size_t* left_out) override {
    std::vector<capture::SegmentFile> files;
    uint64_t left = 0;
    ScopedFd none;
    Status s = Call({BrokerOp::kListCaptures, "", ""}, &files, &none, &left);
    if (!s.ok()) return s;
    // What the broker serves, the server asks for: no more than it listed.
    if (files.size() > kMaxServedCaptures) {
      return Status::Error(StatusCode::kDataLoss, "the broker listed too many captures");
    }
    AddListed(files);
    if (left_out != nullptr) *left_out = size_t(left);
    return files;
  }

  Result<ScopedFd> OpenCapture(const std::string& name) override {
    return Open({BrokerOp::kOpenCapture, name, ""});
  }
  Result<std::vector<capture::SegmentFile>> ListSegments(const std::string& name) override {
    std::vector<capture::SegmentFile> segments;
    ScopedFd none;
    Status s = Call({BrokerOp::kListSegments, name, ""}, &segments, &none);
    if (!s.ok()) return s;
    return segments;
  }
  Result<ScopedFd> OpenSegment(const std::string& name, const std::string& entry) override {
    return Open({BrokerOp::kOpenSegment, name, entry});
  }
  Result<ScopedFd> OpenSource(const std::string& path) override {
    return Open({BrokerOp::kOpenSource, "", path});
  }

 private:
  Result<ScopedFd> Open(const BrokerRequest& request) {
    std::vector<capture::SegmentFile> none;
    ScopedFd fd;
    Status s = Call(request, &none, &fd);
    if (!s.ok()) return s;
    if (!fd.valid()) return Status::Error(StatusCode::kInternal, "the broker sent no descriptor");
    return fd;
  }

  Status Call(const BrokerRequest& request, std::vector<capture::SegmentFile>* segments,
              ScopedFd* fd, uint64_t* left_out = nullptr) {
    const std::string body = EncodeRequest(request);
    if (body.size() > kMaxBrokerRequest) {
      return Status::Error(StatusCode::kInvalidArgument, "a name too long to ask the broker for");
    }
    std::lock_guard lock(mutex_);
    std::string reply;
    if (!SendMessage(sock_.get(), body, -1) ||
        !ReceiveMessage(sock_.get(), kMaxBrokerReply, &reply, fd)) {
      return Status::Error(StatusCode::kUnavailable, "the file broker is gone");
    }
    return DecodeReply(reply, segments, left_out);
  }

  std::mutex mutex_;
  ScopedFd sock_;
};

// The broker's answer to one request: its status, a listing, a descriptor.
Status Handle(DirectBroker& direct, const BrokerRequest& r,
              std::vector<capture::SegmentFile>* segments, uint64_t* left_out, ScopedFd* fd) {
  Result<ScopedFd> opened = Status::Error(StatusCode::kInternal, "no such operation");
  switch (r.op) {
    case BrokerOp::kListCaptures: {
      size_t left = 0;
      Result<std::vector<capture::SegmentFile>> listed = direct.ListCaptures(&left);
      if (!listed.ok()) return listed.status();
      *segments = std::move(listed).value();
      *left_out = left;
      return OkStatus();
    }
    case BrokerOp::kOpenCapture:
      opened = direct.OpenCapture(r.name);
      break;
    case BrokerOp::kListSegments: {
      Result<std::vector<capture::SegmentFile>> listed = direct.ListSegments(r.name);
      if (!listed.ok()) return listed.status();
      *segments = std::move(listed).value();
      return OkStatus();
    }
    case BrokerOp::kOpenSegment:
      opened = direct.OpenSegment(r.name, r.arg);
      break;
    case BrokerOp::kOpenSource:
      opened = direct.OpenSource(r.arg);
      break;
  }
  if (!opened.ok()) return opened.status();
  *fd = std::move(opened).value();
  return OkStatus();
}

int ExitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The parent: answers `child`'s requests on `sock` until it exits, and
// stops it on SIGINT or SIGTERM (`signals`, a signalfd). Returns its exit
// status.
int RunBroker(DirectBroker& direct, int sock, int signals, pid_t child) {
  // A request is read within a second once begun: a server stuck halfway
  // (or a hostile one) cannot hold the broker from its signals.
  timeval second{1, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof(second));
  bool reading = true;
  // No more requests: shut down, so that a server waiting for a reply is
  // not left waiting; its exit ends the broker.
  auto stop_reading = [&] {
    reading = false;
    shutdown(sock, SHUT_RDWR);
  };
  for (;;) {
    pollfd fds[2] = {{signals, POLLIN, 0}, {reading ? sock : -1, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      kill(child, SIGKILL);
      int status = 0;
      waitpid(child, &status, 0);
      return ExitStatusOf(status);
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      if (read(signals, &info, sizeof(info)) == sizeof(info) && info.ssi_signo != SIGCHLD) {
        kill(child, SIGTERM);
      }
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) return ExitStatusOf(status);
    }
    if (reading && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      std::string body;
      ScopedFd none;
      if (!ReceiveMessage(sock, kMaxBrokerRequest, &body, nullptr)) {
        // The server closed its end (it is ending) or sent what is not a
        // request.
        stop_reading();
        continue;
      }
      Result<BrokerRequest> request = DecodeRequest(body);
      std::vector<capture::SegmentFile> segments;
      uint64_t left_out = 0;
      ScopedFd fd;
      Status s =
          request.ok() ? Handle(direct, *request, &segments, &left_out, &fd) : request.status();
      if (!SendMessage(sock, EncodeReply(s, segments, left_out), fd.get())) stop_reading();
    }
  }
}

// The child: no new privileges, no groups, then `uid` and `gid`; dies with
// the broker. Exits when any step fails: a server that stayed root must
// not answer.
void DropPrivileges(uid_t uid, gid_t gid, pid_t broker, const std::string& user) {
  auto die = [&](const char* what) {
    std::fprintf(stderr, "microscope: error: serve: cannot become %s (%s): %s\n", user.c_str(),
                 what, std::strerror(errno));
    _exit(1);
  };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
  if (setgroups(0, nullptr) != 0) die("setgroups");
  if (setresgid(gid, gid, gid) != 0) die("setgid");
  if (setresuid(uid, uid, uid) != 0) die("setuid");
  if (setuid(0) == 0 || geteuid() != uid || getegid() != gid) die("root could be taken back");
  // After the change of credentials, which clears it.
  if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0) die("pdeathsig");
  if (getppid() != broker) _exit(1);  // the broker is gone already
}

}  // namespace

std::optional<ServedCapture> Broker::Find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = served_.find(name);
  if (it == served_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, ServedCapture> Broker::served() const {
  std::lock_guard lock(mutex_);
  return served_;
}

void Broker::AddListed(const std::vector<capture::SegmentFile>& listed) {
  std::lock_guard lock(mutex_);
  for (const capture::SegmentFile& f : listed) {
    served_.try_emplace(f.name, ServedCapture{f.name, directory_ + "/" + f.name, false});
  }
}

Result<std::vector<capture::SegmentFile>> DirectBroker::ListCaptures(size_t* left_out) {
  if (directory().empty()) {
    return Status::Error(StatusCode::kNotFound, "no directory of captures is served");
  }
  Result<ScopedFd> dir = OpenDirectory(directory());
  if (!dir.ok()) return dir.status().WithContext(directory());
  std::vector<capture::SegmentFile> files;
  for (const std::string& name : EntryNames(dir->get())) {
    // Captures by name, as CapturesToServe took them at the start; a
    // --continuous writer's segments are the directory's capture.
    if (name.size() <= 6 || name.compare(name.size() - 6, 6, ".mscap") != 0 ||
        capture::IsSegmentName(name)) {
      continue;
    }
    std::optional<struct stat> st = StatEntry(dir->get(), name);
    if (!st || !(S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))) continue;
    // A link's size is its target's, read when it is opened (by the file
    // policy), not here.
    files.push_back({name, S_ISREG(st->st_mode) ? uint64_t(st->st_size) : 0,
                     uint64_t(st->st_mtim.tv_sec) * 1000000000ull + uint64_t(st->st_mtim.tv_nsec)});
  }
  std::sort(
      files.begin(), files.end(),
      [](const capture::SegmentFile& a, const capture::SegmentFile& b) { return a.name < b.name; });
  // The first by name, whatever order the directory keeps.
  const size_t left = files.size() > kMaxServedCaptures ? files.size() - kMaxServedCaptures : 0;
  files.resize(files.size() - left);
  AddListed(files);
  if (left_out != nullptr) *left_out = left;
  return files;
}

Result<std::unique_ptr<DirectBroker>> DirectBroker::Open(const std::vector<std::string>& captures,
                                                         const formats::SourceOptions& source,
                                                         const std::string& directory) {
  std::map<std::string, ServedCapture> served;
  for (const std::string& path : captures) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (!served.emplace(name, ServedCapture{name, path, capture::IsDirectory(path)}).second) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "two captures are named " + name + ": serve one of them");
    }
  }
  formats::SourceOptions options = source;
  options.for_anyone = true;  // serve's clients may be anyone on the host
  ASSIGN_OR_RETURN(formats::SourceFiles files, formats::SourceFiles::Open(options));
  std::string dir = directory;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return std::unique_ptr<DirectBroker>(
      new DirectBroker(std::move(served), std::move(dir), std::move(files)));
}

Result<ScopedFd> DirectBroker::OpenCapture(const std::string& name) {
  const std::optional<ServedCapture> c = Find(name);
  if (!c || c->directory) {
    return Status::Error(StatusCode::kNotFound, "no capture file is served as '" + name + "'");
  }
  // Named by the person serving, but it may sit in a directory others can
  // write: opened by the file policy, so a name swapped for another user's
  // link is refused rather than followed (root's links, and this user's in
  // directories no one else can write, are followed).
  Result<ScopedFd> fd =
      OpenUntrusted(std::filesystem::absolute(c->path).string(), {.link_owner = getuid()});
  if (!fd.ok()) return fd.status().WithContext(c->path);
  return fd;
}

Result<std::vector<capture::SegmentFile>> DirectBroker::ListSegments(const std::string& name) {
  const std::optional<ServedCapture> c = Find(name);
  if (!c || !c->directory) {
    return Status::Error(StatusCode::kNotFound, "no directory is served as '" + name + "'");
  }
  return capture::ListSegments(c->path);
}

Result<ScopedFd> DirectBroker::OpenSegment(const std::string& name, const std::string& entry) {
  const std::optional<ServedCapture> c = Find(name);
  if (!c || !c->directory) {
    return Status::Error(StatusCode::kNotFound, "no directory is served as '" + name + "'");
  }
  Result<ScopedFd> dir = OpenDirectory(c->path);
  if (!dir.ok()) return dir.status().WithContext(c->path);
  return capture::OpenSegment(dir->get(), entry);
}

Result<ScopedFd> DirectBroker::OpenSource(const std::string& path) {
  return sources_.OpenFile(path);
}

Result<std::unique_ptr<Broker>> SeparatePrivileges(std::unique_ptr<DirectBroker> direct,
                                                   const std::string& user, int child_only_fd,
                                                   const std::function<void()>& before_drop) {
  const std::string name = user.empty() ? "nobody" : user;
  errno = 0;
  const passwd* pw = getpwnam(name.c_str());
  if (pw == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--user " + name + ": no such user" +
                             (errno != 0 ? std::string(" (") + std::strerror(errno) + ")" : ""));
  }
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  if (uid == 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--user " + name + ": is root; serve drops to an unprivileged user");
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Errno("cannot make the broker's socket");
  }
  ScopedFd mine(pair[0]), theirs(pair[1]);
  // SIGCHLD, SIGINT and SIGTERM are the broker's to read (signalfd), blocked
  // before the fork so none is lost.
  sigset_t signals, old;
  sigemptyset(&signals);
  sigaddset(&signals, SIGCHLD);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, &old);
  const pid_t broker = getpid();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    Status s = Errno("cannot fork the broker");
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return s;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    mine.Reset();
    std::map<std::string, ServedCapture> served = direct->served();
    std::string directory = direct->directory();
    direct.reset();  // the source root's descriptor stays the broker's
    if (before_drop) before_drop();
    DropPrivileges(uid, gid, broker, name);
    return std::unique_ptr<Broker>(
        new BrokerClient(std::move(served), std::move(directory), std::move(theirs)));
  }
  theirs.Reset();
  if (child_only_fd >= 0) close(child_only_fd);
  ScopedFd sfd(signalfd(-1, &signals, SFD_CLOEXEC));
  if (!sfd.valid()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return Errno("cannot read signals");
  }
  std::exit(RunBroker(*direct, mine.get(), sfd.get(), child));
}

Result<capture::Capture> ReadServed(Broker& broker, const std::string& name) {
  const std::optional<ServedCapture> c = broker.Find(name);
  if (!c) {
    return Status::Error(StatusCode::kNotFound, "no capture named '" + name + "' is served");
  }
  if (c->directory) {
    ASSIGN_OR_RETURN(
        capture::DirectoryCapture d,
        capture::ReadSegmentsFrom(
            c->path,
            {.list = [&] { return broker.ListSegments(name); },
             .open = [&](const std::string& entry) { return broker.OpenSegment(name, entry); }}));
    return std::move(d.capture);
  }
  Result<ScopedFd> fd = broker.OpenCapture(name);
  if (!fd.ok()) return fd.status();
  Result<capture::Capture> read = capture::ReadCaptureFrom(fd->get());
  if (!read.ok()) return read.status().WithContext(c->path);
  return read;
}

std::string ServedListing(Broker& broker, const std::string& name) {
  const std::optional<ServedCapture> c = broker.Find(name);
  if (!c || !c->directory) return "";
  std::string out;
  if (auto files = broker.ListSegments(name); files.ok()) {
    for (const capture::SegmentFile& f : *files) out += f.name + "\n";
  }
  return out;
}

uint64_t ServedBytes(Broker& broker, const std::string& name) {
  const std::optional<ServedCapture> c = broker.Find(name);
  if (!c) return 0;
  uint64_t bytes = 0;
  if (c->directory) {
    if (auto files = broker.ListSegments(name); files.ok()) {
      for (const capture::SegmentFile& f : *files) bytes += f.bytes;
    }
  } else if (Result<ScopedFd> fd = broker.OpenCapture(name); fd.ok()) {
    struct stat st;
    if (fstat(fd->get(), &st) == 0) bytes = uint64_t(st.st_size);
  }
  return bytes;
}

}  // namespace microscope::serve
