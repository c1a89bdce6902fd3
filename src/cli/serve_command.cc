#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/hex.h"
#include "src/cli/commands.h"
#include "src/serve/broker.h"
#include "src/serve/server.h"

namespace microscope::cli {
namespace {

struct ServeCommandOptions {
  std::string target;
  std::string diff;  // another capture, compared with the target in the view
  std::string user;  // started as root: who the server runs as (empty: nobody)
  serve::ServeOptions serve;
  bool open = false;  // open the URL in a browser once listening
  bool no_token = false;
  std::string query_timeout = "10s";
  std::string cache_size = "256M";
};

// Starts `url`'s opener as a desktop does: $BROWSER when set (its first
// command, as Python's webbrowser reads it), else xdg-open, without waiting
// for it; says so on stderr when that cannot be done (the URL is printed
// either way). Its pid, or 0.
pid_t SpawnOpener(const std::string& url, std::string* opener_out) {
  const char* env = std::getenv("BROWSER");
  std::string opener = env != nullptr && *env != '\0' ? env : "xdg-open";
  opener = opener.substr(0, opener.find(':'));
  *opener_out = opener;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // not serve's blocked SIGINT and SIGTERM
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  char* argv[] = {opener.data(), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  int err = posix_spawnp(&pid, opener.c_str(), nullptr, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    std::fprintf(stderr, "microscope: warning: --open: cannot run %s (%s): open %s yourself\n",
                 opener.c_str(), std::strerror(err), url.c_str());
    return 0;
  }
  return pid;
}

// Says so when the opener started by SpawnOpener fails.
void WatchOpener(pid_t pid, const std::string& opener, const std::string& url) {
  if (pid == 0) return;
  std::thread([pid, opener, url] {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "microscope: warning: --open: %s failed: open %s yourself\n",
                   opener.c_str(), url.c_str());
    }
  }).detach();
}

// The captures served and the options' values; the exit status when they
// are refused (said on stderr), else 0.
int ResolveServe(ServeCommandOptions& o, std::string* view) {
  Result<std::vector<std::string>> captures = serve::CapturesToServe(o.target);
  if (!captures.ok()) {
    PrintError(captures.status().message());
    return 1;
  }
  o.serve.captures = *captures;
  std::error_code ec;
  if (std::filesystem::is_directory(o.target, ec)) o.serve.directory = o.target;
  o.serve.require_token = !o.no_token;
  if (!ParseDurationOption("--query-timeout", o.query_timeout, &o.serve.query_timeout_ns) ||
      !ParseSizeOption("--cache-size", o.cache_size, &o.serve.cache_bytes)) {
    return 1;
  }
  if (!o.diff.empty()) {
    Result<std::vector<std::string>> other = serve::CapturesToServe(o.diff);
    if (!other.ok() || other->size() != 1 || captures->size() != 1) {
      PrintError(!other.ok() ? other.status().message()
                             : "--diff compares two capture files, not directories");
      return 1;
    }
    o.serve.captures.push_back(other->front());
    *view = "capture=" + UrlEncode(serve::CaptureName(captures->front())) +
            "&diff=" + UrlEncode(serve::CaptureName(other->front()));
  }
  if (geteuid() != 0 && !o.user.empty()) {
    PrintError("--user " + o.user + ": serve changes its user only when started as root");
    return 2;
  }
  return 0;
}

// Prints where it serves, then serves until SIGINT or SIGTERM (`stop`, blocked).
void ServeUntilSignal(const ServeCommandOptions& o, serve::Server* s, const std::string& view,
                      const sigset_t& stop) {
  std::printf("%s\n", s->url(view).c_str());
  const size_t served = o.serve.captures.size();
  std::fprintf(stderr, "microscope: serving %zu capture%s at %s (Ctrl-C stops)\n", served,
               served == 1 ? "" : "s", s->url().c_str());
  std::fflush(stdout);
  std::mutex ending;
  std::condition_variable ended_cv;
  bool ended = false;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop, &sig);
    s->Stop();
    // Stop cancels the queries computing; whatever one is still in, serve
    // ends within half a second of the signal (it writes nothing that
    // could be left half done).
    std::unique_lock lock(ending);
    if (!ended_cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return ended; })) {
      std::fflush(nullptr);
      _exit(0);
    }
  });
  s->Run();
  {
    std::lock_guard lock(ending);
    ended = true;
  }
  ended_cv.notify_all();
  pthread_kill(waiter.native_handle(), SIGTERM);  // when Run ended by itself
  waiter.join();
}

int RunServe(ServeCommandOptions& o) {
  std::string view;  // the page's query: what the printed URL opens
  if (int failed = ResolveServe(o, &view); failed != 0) return failed;
  Result<std::unique_ptr<serve::DirectBroker>> direct =
      serve::DirectBroker::Open(o.serve.captures, o.serve.source, o.serve.directory);
  if (!direct.ok()) {
    PrintError(direct.status().message());
    return 1;
  }
  // SIGINT and SIGTERM stop the server from a thread of their own, so the
  // server's threads never run a handler.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // Bound first (as root: any port), then, started as root, serve forks
  // before any thread: a broker that stays root opens what is served, and
  // the server runs as --user (broker.h). The browser is opened by the
  // server's process while it is still the user who started serve.
  Result<std::unique_ptr<serve::Server>> server = serve::Server::Open(o.serve);
  if (!server.ok()) {
    PrintError(server.status().message());
    return 1;
  }
  serve::Server* s = server->get();
  pid_t opener = 0;
  std::string opener_name;
  if (geteuid() == 0) {
    Result<std::unique_ptr<serve::Broker>> client =
        serve::SeparatePrivileges(std::move(direct).value(), o.user, s->listening_fd(), [&] {
          if (o.open) opener = SpawnOpener(s->url(view), &opener_name);
        });
    if (!client.ok()) {
      PrintError(client.status().message());
      return 1;
    }
    s->SetBroker(std::move(client).value());
  } else {
    s->SetBroker(std::move(direct).value());
    if (o.open) opener = SpawnOpener(s->url(view), &opener_name);
  }
  WatchOpener(opener, opener_name, s->url(view));
  if (o.serve.bind != "127.0.0.1" && o.serve.bind != "::1" && o.serve.bind != "localhost") {
    std::fprintf(stderr, "microscope: warning: --bind %s: whoever reaches this address %s\n",
                 o.serve.bind.c_str(),
                 o.no_token ? "can read the captures served (read-only, without authentication)"
                            : "with the printed URL can read the captures served (read-only; "
                              "plain HTTP: the token crosses the network in the clear)");
  }
  ServeUntilSignal(o, s, view, stop);
  return 0;
}

}  // namespace

Runner AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<ServeCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve captures read-only over HTTP on 127.0.0.1, in a browser view and a JSON API. "
      "The view (flame graph, call "
      "tree, functions, timeline; its state in its URL) runs over the API's report queries "
      "(GET /api/captures; GET /api/report with report's options as parameters: views, "
      "metric, granularity, look, inlines, min_percent, top, lane_width, thread, pid, time, "
      "focus, exclude (RE2 regexes), capture, diff; GET /api/export?format=pprof|chrome|"
      "speedscope|folded with the same filters: what convert writes for them). Prints the URL "
      "with its access token "
      "(--open opens it), then serves until Ctrl-C.");
  cmd->add_option("target", o->target, "a capture file, or a directory of .mscap files")
      ->required();
  cmd->add_option("--diff", o->diff,
                  "another capture file, served too, that the view compares the first with "
                  "(red: a larger share in it, blue: a smaller one)");
  cmd->add_option("--port", o->serve.port, "the port to listen on (default: a free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--bind", o->serve.bind,
                  "the address to listen on; another than the loopback lets others read the "
                  "captures")
      ->capture_default_str();
  AddSourceRootOptions(cmd, &o->serve.source);
  cmd->add_option("--user", o->user,
                  "started as root, the user the server runs as (default: nobody); root stays "
                  "only in a broker process that opens the captures and source files served")
      ->type_name("NAME");
  cmd->add_flag("--no-token", o->no_token,
                "serve the API without the printed URL's random token (by default every "
                "/api request needs it: a cookie once the page is opened, or "
                "Authorization: Bearer TOKEN); anyone on the host could then read the captures");
  cmd->add_option("--query-timeout", o->query_timeout,
                  "cancel a query still computing after TIME, answering 503 (e.g. 30s)")
      ->capture_default_str();
  cmd->add_option("--cache-size", o->cache_size,
                  "keep answers up to SIZE bytes of JSON (K, M, G suffixes; e.g. 64M)")
      ->capture_default_str();
  cmd->add_flag("--open", o->open,
                "open the view in a browser ($BROWSER when set, else xdg-open) once serving");
  return [o]() { return RunServe(*o); };
}

}  // namespace microscope::cli
