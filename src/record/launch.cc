#include "src/record/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace microscope::record {
namespace {

Status Errno(const char* what) {
  return Status::Error(std::string(what) + ": " + std::strerror(errno));
}

// What the recorder was given for SIGCHLD, for the program to get back.
struct InheritedChildSignal {
  sigset_t mask;
  struct sigaction action;
};

// The recorder hears its child's stops and ends in SIGCHLD's default way,
// whatever it inherited: the exec of an interpreter is held (stopped until
// its runtime is laid out, bpf/sampler.bpf.c) only when the parent would
// not take the stop for an end, and a SIGCHLD left blocked by whatever
// started the recorder (a CI runner, a service manager) looked like a
// parent reading it (0 held, its first 45 ms of Python unwalked); one left
// ignored would have the kernel reap the program before its status is read.
InheritedChildSignal HearChildrenByDefault() {
  InheritedChildSignal inherited;
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  pthread_sigmask(SIG_UNBLOCK, &child, &inherited.mask);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &inherited.action);
  return inherited;
}

// The child: waits at the gate, then execs with the signal state the
// recorder inherited. Exec failure is reported through `err_fd`
// (close-on-exec, so success closes it silently).
[[noreturn]] void RunChild(int gate_fd, int err_fd, const std::vector<std::string>& command,
                           char* const* envp, const InheritedChildSignal& inherited) {
  char c;
  ssize_t n;
  do {
    n = read(gate_fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);  // the recorder went away: do not run unprofiled
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (inherited.action.sa_handler == SIG_IGN) sigaction(SIGCHLD, &inherited.action, nullptr);
  pthread_sigmask(SIG_SETMASK, &inherited.mask, nullptr);
  execvpe(argv[0], argv.data(), envp);
  int err = errno;
  ssize_t ignored = write(err_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

}  // namespace

Result<std::unique_ptr<LaunchedChild>> LaunchedChild::Fork(
    const std::vector<std::string>& command, const std::vector<std::string>& environment) {
  if (command.empty()) return Status::Error(StatusCode::kInvalidArgument, "no program to launch");
  // Our environment with `environment` in place of the same names, built
  // before the fork (the child only execs).
  std::vector<std::string> env = environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    const std::string_view name = var.substr(0, var.find('='));
    if (std::none_of(environment.begin(), environment.end(), [&](const std::string& ours) {
          return ours.size() > name.size() && ours.compare(0, name.size(), name) == 0 &&
                 ours[name.size()] == '=';
        })) {
      env.emplace_back(var);
    }
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The gate is a socket so that opening it after the child died fails with
  // EPIPE instead of raising SIGPIPE in the recorder (send MSG_NOSIGNAL).
  int gate[2], err[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) != 0) return Errno("socketpair");
  ScopedFd gate_ours(gate[0]), gate_child(gate[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  ScopedFd err_ours(err[0]), err_child(err[1]);
  const InheritedChildSignal inherited = HearChildrenByDefault();
  pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    gate_ours.Reset();  // or the child's read would never see our end close
    err_ours.Reset();
    RunChild(gate_child.get(), err_child.get(), command, envp.data(), inherited);
  }
  // The child's ends close here: a read of exec_error_ ends at its exec.
  return std::unique_ptr<LaunchedChild>(
      new LaunchedChild(pid, std::move(gate_ours), std::move(err_ours), command[0]));
}

LaunchedChild::~LaunchedChild() {
  if (released_ || reaped_) return;
  gate_.Reset();  // the child sees the gate close and exits without running
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Status LaunchedChild::Release() {
  char go = 1;
  ssize_t sent;
  do {
    sent = send(gate_.get(), &go, 1, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  released_ = true;
  gate_.Reset();
  if (sent != 1) {
    Wait();
    return Status::Error("cannot release the launched program");
  }
  int err = 0;
  ssize_t n;
  do {
    n = read(exec_error_.get(), &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  exec_error_.Reset();
  if (n == sizeof(err)) {
    Wait();
    return Status::Error(StatusCode::kNotFound,
                         "cannot run " + program_ + ": " + std::strerror(err));
  }
  return OkStatus();
}

bool LaunchedChild::Exited(int* wait_status) {
  if (!reaped_ && waitpid(pid_, &wait_status_, WNOHANG) == pid_) reaped_ = true;
  if (reaped_) *wait_status = wait_status_;
  return reaped_;
}

int LaunchedChild::Wait() {
  while (!reaped_) {
    if (waitpid(pid_, &wait_status_, 0) == pid_) {
      reaped_ = true;
    } else if (errno != EINTR) {
      break;
    }
  }
  return wait_status_;
}

int ExitStatusForShell(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace microscope::record
