#include <doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "base/file_policy.h"

namespace microscope {
namespace {

constexpr uid_t kNobody = 65534;

// A fresh directory under /tmp, removed with what is in it.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/file-policy-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    chmod(path.c_str(), 0755);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0644) {
    std::string p = path + "/" + name;
    FILE* f = fopen(p.c_str(), "w");
    REQUIRE(f != nullptr);
    fputs(text.c_str(), f);
    fclose(f);
    chmod(p.c_str(), mode);
    return p;
  }
  std::string path;
};

std::string Text(Result<ScopedFd> fd) {
  REQUIRE_MESSAGE(fd.ok(), fd.status().message());
  Result<std::vector<uint8_t>> bytes = ReadWhole(fd->get(), 1 << 20);
  REQUIRE(bytes.ok());
  return std::string(bytes->begin(), bytes->end());
}

std::string Refusal(Result<ScopedFd> fd) {
  REQUIRE(!fd.ok());
  return fd.status().message();
}

bool Root() {
  return geteuid() == 0;
}

TEST_CASE("OpenUntrusted: a regular file, its owner, and what is not a file") {
  TempDir t;
  const std::string file = t.Write("a.txt", "hello");
  CHECK(Text(OpenUntrusted(file)) == "hello");
  REQUIRE(std::filesystem::create_directory(t.path + "/sub"));
  CHECK(Text(OpenUntrusted(t.path + "/./sub/../a.txt")) == "hello");
  CHECK(Text(OpenUntrusted(file, {.owner = geteuid()})) == "hello");
  CHECK(Refusal(OpenUntrusted(file, {.owner = geteuid() + 1})).find("is owned by uid") !=
        std::string::npos);
  REQUIRE(mkfifo((t.path + "/fifo").c_str(), 0644) == 0);
  CHECK(Refusal(OpenUntrusted(t.path + "/fifo")).find("not a regular file") != std::string::npos);
  CHECK(Refusal(OpenUntrusted(t.path)).find("not a regular file") != std::string::npos);
  CHECK(Refusal(OpenUntrusted("relative/a.txt")).find("absolute") != std::string::npos);
  CHECK(OpenUntrusted(t.path + "/missing").status().code() == StatusCode::kNotFound);
  CHECK(Refusal(OpenUntrusted(file + "/x")).find("not a directory") != std::string::npos);
}

TEST_CASE("OpenUntrusted: follows root's links in root's directories, no one else's") {
  TempDir t;
  t.Write("real.txt", "real");
  REQUIRE(symlink("real.txt", (t.path + "/rel").c_str()) == 0);
  REQUIRE(symlink((t.path + "/real.txt").c_str(), (t.path + "/abs").c_str()) == 0);
  REQUIRE(std::filesystem::create_directory(t.path + "/d"));
  REQUIRE(symlink("../rel", (t.path + "/d/up").c_str()) == 0);
  if (Root()) {
    CHECK(Text(OpenUntrusted(t.path + "/rel")) == "real");
    CHECK(Text(OpenUntrusted(t.path + "/abs")) == "real");
    CHECK(Text(OpenUntrusted(t.path + "/d/up")) == "real");  // two links, one relative to d
    // Another user's link is not followed, wherever it is.
    REQUIRE(lchown((t.path + "/rel").c_str(), kNobody, kNobody) == 0);
    CHECK(Refusal(OpenUntrusted(t.path + "/rel")).find("symbolic link of uid 65534") !=
          std::string::npos);
    CHECK(Refusal(OpenUntrusted(t.path + "/d/up")).find("symbolic link of uid 65534") !=
          std::string::npos);
    // Root's link in a directory others can write (/tmp) is not followed.
    chmod(t.path.c_str(), 01777);
    CHECK(Refusal(OpenUntrusted(t.path + "/abs")).find("in a directory others can write") !=
          std::string::npos);
  } else {
    CHECK(Refusal(OpenUntrusted(t.path + "/rel")).find("not root's") != std::string::npos);
  }
  CHECK(Refusal(OpenUntrusted(t.path + "/abs", {.follow_links = false})).find("symbolic link") !=
        std::string::npos);
  // A loop ends.
  chmod(t.path.c_str(), 0755);
  REQUIRE(symlink("loop", (t.path + "/loop").c_str()) == 0);
  CHECK(!OpenUntrusted(t.path + "/loop").ok());
}

TEST_CASE("OpenUntrusted world_readable: what anyone on the host could read") {
  TempDir t;
  const std::string open_file = t.Write("open.txt", "open", 0644);
  const std::string closed = t.Write("closed.txt", "closed", 0600);
  const FilePolicy world{.world_readable = true};
  CHECK(Text(OpenUntrusted(open_file, world)) == "open");
  CHECK(Refusal(OpenUntrusted(closed, world)).find("not readable by all") != std::string::npos);
  REQUIRE(std::filesystem::create_directory(t.path + "/private"));
  chmod((t.path + "/private").c_str(), 0700);
  t.Write("private/inside.txt", "inside", 0644);
  CHECK(
      Refusal(OpenUntrusted(t.path + "/private/inside.txt", world)).find("not searchable by all") !=
      std::string::npos);
  CHECK(Text(OpenUntrusted(t.path + "/private/inside.txt")) == "inside");
}

TEST_CASE("Entries of a directory: never followed, regular, owned") {
  TempDir t;
  t.Write("a", "A");
  REQUIRE(symlink("a", (t.path + "/link").c_str()) == 0);
  Result<ScopedFd> dir = OpenDirectory(t.path);
  REQUIRE(dir.ok());
  CHECK(Text(OpenEntry(dir->get(), "a")) == "A");
  CHECK(Text(OpenEntry(dir->get(), "a", geteuid())) == "A");
  CHECK(Refusal(OpenEntry(dir->get(), "a", geteuid() + 1)).find("owned by") != std::string::npos);
  CHECK(Refusal(OpenEntry(dir->get(), "link")).find("symbolic link") != std::string::npos);
  CHECK(!OpenEntry(dir->get(), "../a").ok());
  CHECK(!OpenEntry(dir->get(), "..").ok());
  CHECK(!IsEntryName(std::string("a\0b", 3)));
  // A FIFO is refused without being opened: a writer waiting on it stays
  // waiting (opening it for reading would release the writer).
  REQUIRE(mkfifo((t.path + "/fifo").c_str(), 0600) == 0);
  std::atomic<int> writer{0};  // 1: opening, 2: opened
  std::thread w([&] {
    writer = 1;
    int fd = open((t.path + "/fifo").c_str(), O_WRONLY | O_CLOEXEC);
    writer = 2;
    if (fd >= 0) close(fd);
  });
  while (writer.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in its open()
  CHECK(Refusal(OpenEntry(dir->get(), "fifo")).find("not a regular file") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(writer.load() == 1);
  close(open((t.path + "/fifo").c_str(), O_RDONLY | O_CLOEXEC));  // releases it
  w.join();
  auto st = StatEntry(dir->get(), "link");
  REQUIRE(st.has_value());
  CHECK(S_ISLNK(st->st_mode));
  CHECK(!StatEntry(dir->get(), "missing").has_value());
}

TEST_CASE("OpenOwnDirectory: made, or refused when someone else put it there") {
  TempDir t;
  Result<ScopedFd> parent = OpenDirectory(t.path);
  REQUIRE(parent.ok());
  Result<ScopedFd> made = OpenOwnDirectory(parent->get(), "q", 0700);
  REQUIRE(made.ok());
  struct stat st;
  REQUIRE(stat((t.path + "/q").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  chmod((t.path + "/q").c_str(), 0777);
  REQUIRE(OpenOwnDirectory(parent->get(), "q", 0700).ok());
  REQUIRE(stat((t.path + "/q").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);  // set back
  REQUIRE(std::filesystem::create_directory(t.path + "/elsewhere"));
  REQUIRE(symlink((t.path + "/elsewhere").c_str(), (t.path + "/l").c_str()) == 0);
  CHECK(Refusal(OpenOwnDirectory(parent->get(), "l", 0700)).find("not a directory") !=
        std::string::npos);
  if (Root()) {
    REQUIRE(std::filesystem::create_directory(t.path + "/theirs"));
    REQUIRE(chown((t.path + "/theirs").c_str(), kNobody, kNobody) == 0);
    CHECK(Refusal(OpenOwnDirectory(parent->get(), "theirs", 0700)).find("owned by uid 65534") !=
          std::string::npos);
  }
}

TEST_CASE("WriteEntryAtomically replaces a planted link, never writes through it") {
  TempDir t;
  const std::string victim = t.Write("victim", "keep");
  REQUIRE(symlink(victim.c_str(), (t.path + "/out").c_str()) == 0);
  Result<ScopedFd> dir = OpenDirectory(t.path);
  REQUIRE(dir.ok());
  const std::string text = "new";
  REQUIRE(WriteEntryAtomically(dir->get(), "out", {(const uint8_t*)text.data(), text.size()}, 0600)
              .ok());
  CHECK(Text(OpenEntry(dir->get(), "out")) == "new");
  CHECK(Text(OpenEntry(dir->get(), "victim")) == "keep");
  struct stat st;
  REQUIRE(lstat((t.path + "/out").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(std::distance(std::filesystem::directory_iterator(t.path), {}) == 2);  // no temporary left
}

TEST_CASE("OpenUntrusted link_owner: the links of the user running microscope too") {
  TempDir t;
  t.Write("real.txt", "real");
  REQUIRE(symlink("real.txt", (t.path + "/rel").c_str()) == 0);
  if (Root()) {
    REQUIRE(lchown((t.path + "/rel").c_str(), kNobody, kNobody) == 0);
    REQUIRE(chown(t.path.c_str(), kNobody, kNobody) == 0);
    CHECK(Text(OpenUntrusted(t.path + "/rel", {.link_owner = kNobody})) == "real");
    CHECK(Refusal(OpenUntrusted(t.path + "/rel", {.link_owner = kNobody + 1}))
              .find("not root's or uid") != std::string::npos);
    chmod(t.path.c_str(), 0777);
    CHECK(Refusal(OpenUntrusted(t.path + "/rel", {.link_owner = kNobody}))
              .find("in a directory others can write") != std::string::npos);
  } else {
    CHECK(Text(OpenUntrusted(t.path + "/rel", {.link_owner = geteuid()})) == "real");
  }
}

TEST_CASE("OpenBeneath: inside the directory only") {
  TempDir t;
  const std::string outside = t.Write("secret", "secret");
  REQUIRE(std::filesystem::create_directories(t.path + "/root/src/sub"));
  t.Write("root/src/a.c", "a");
  REQUIRE(symlink("../a.c", (t.path + "/root/src/sub/up").c_str()) == 0);
  REQUIRE(symlink("../../secret", (t.path + "/root/src/out").c_str()) == 0);
  REQUIRE(symlink(outside.c_str(), (t.path + "/root/src/abs").c_str()) == 0);
  REQUIRE(mkfifo((t.path + "/root/src/fifo").c_str(), 0644) == 0);
  Result<ScopedFd> root = OpenDirectory(t.path + "/root");
  REQUIRE(root.ok());
  const FilePolicy mine{.link_owner = geteuid()};
  CHECK(Text(OpenBeneath(root->get(), "src/a.c")) == "a");
  CHECK(Text(OpenBeneath(root->get(), "./src/sub/../a.c")) == "a");
  CHECK(Text(OpenBeneath(root->get(), "src/sub/up", mine)) == "a");
  CHECK(Refusal(OpenBeneath(root->get(), "../secret")).find("leaves the directory") !=
        std::string::npos);
  CHECK(Refusal(OpenBeneath(root->get(), "src/../../secret")).find("leaves the directory") !=
        std::string::npos);
  CHECK(Refusal(OpenBeneath(root->get(), "src/out", mine)).find("leaves the directory") !=
        std::string::npos);
  CHECK(Refusal(OpenBeneath(root->get(), "src/abs", mine)).find("absolute") != std::string::npos);
  CHECK(Refusal(OpenBeneath(root->get(), "src/fifo")).find("not a regular file") !=
        std::string::npos);
  CHECK(Refusal(OpenBeneath(root->get(), "src/sub/up", {.follow_links = false}))
            .find("symbolic link") != std::string::npos);
  CHECK(OpenBeneath(root->get(), "src/missing.c").status().code() == StatusCode::kNotFound);
  if (Root()) {
    // A link of another user is not followed, even inside.
    REQUIRE(lchown((t.path + "/root/src/sub/up").c_str(), kNobody, kNobody) == 0);
    CHECK(Refusal(OpenBeneath(root->get(), "src/sub/up", {.link_owner = 0}))
              .find("symbolic link of uid 65534") != std::string::npos);
  }
}

TEST_CASE("OpenBeneath world_readable: every directory searchable by all, the file readable") {
  TempDir t;
  REQUIRE(std::filesystem::create_directories(t.path + "/root/open/shut"));
  t.Write("root/open/a.map", "a");
  t.Write("root/open/shut/b.map", "b");
  Result<ScopedFd> root = OpenDirectory(t.path + "/root");
  REQUIRE(root.ok());
  chmod((t.path + "/root").c_str(), 0755);
  chmod((t.path + "/root/open").c_str(), 0755);
  chmod((t.path + "/root/open/shut").c_str(), 0700);
  chmod((t.path + "/root/open/a.map").c_str(), 0644);
  chmod((t.path + "/root/open/shut/b.map").c_str(), 0644);
  const FilePolicy all{.world_readable = true};
  CHECK(Text(OpenBeneath(root->get(), "open/a.map", all)) == "a");
  CHECK(Refusal(OpenBeneath(root->get(), "open/shut/b.map", all))
            .find("open/shut is not searchable by all") != std::string::npos);
  chmod((t.path + "/root/open/a.map").c_str(), 0600);
  CHECK(Refusal(OpenBeneath(root->get(), "open/a.map", all)).find("not readable by all") !=
        std::string::npos);
  chmod((t.path + "/root").c_str(), 0700);
  CHECK(Refusal(OpenBeneath(root->get(), "open/a.map", all)).find("/ is not searchable by all") !=
        std::string::npos);
  CHECK(Text(OpenBeneath(root->get(), "open/a.map")) == "a");  // without the policy
}

TEST_CASE("ReadWhole is bounded") {
  TempDir t;
  t.Write("big", std::string(5000, 'x'));
  Result<ScopedFd> dir = OpenDirectory(t.path);
  REQUIRE(dir.ok());
  Result<ScopedFd> fd = OpenEntry(dir->get(), "big");
  REQUIRE(fd.ok());
  Result<std::vector<uint8_t>> r = ReadWhole(fd->get(), 4096);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace microscope
