// How microscope opens a path it did not choose. It runs as root beside
// programs and users it must not trust, so a path named by a capture, by a
// profiled program (its perf map, its jitdump) or found in a directory other
// users can write is never followed blindly (docs/security.md):
//
// - A path is resolved one component at a time from "/", each with openat
//   and O_NOFOLLOW, so nothing is resolved twice.
// - A symbolic link is followed only when root owns it and the directory
//   that holds it is root's and writable by root alone (merged /usr's /lib,
//   /etc/alternatives): systemd's chase rules. One owned by another user, or
//   in a directory another user can write, is refused. At most 32 links.
// - What is opened must be a regular file (a FIFO never blocks, a device is
//   never read), and owned by the given uid where ownership is the proof (a
//   target's perf map: the target's uid; a queue file: ours).
// - `world_readable` asks for a file anyone on the host could read: every
//   directory on the way searchable by all, the file readable by all (what
//   `serve` shows to clients it does not know).
// - Reads are bounded.
//
// Directories a user may write (a --continuous DIR, its .push queue) are
// opened once and their entries reached relative to that descriptor,
// never through a path that could be re-pointed between two steps.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope {

struct FilePolicy {
  std::optional<uid_t> owner;   // the file must be owned by this uid
  bool world_readable = false;  // readable by anyone, through directories anyone can search
  bool follow_links = true;     // root's links as above; false: no symbolic link at all
  // Links of this uid are followed too, in directories of root or of this
  // uid that no one else can write: those of the user who runs `report`,
  // who could read what they point to anyway.
  std::optional<uid_t> link_owner;
};

// Opens the absolute `path` for reading under `policy`. Errors say which
// component was refused and why; the caller adds the path.
Result<ScopedFd> OpenUntrusted(const std::string& path, const FilePolicy& policy = {});

// Opens `relative` inside the directory `root` for reading, never leaving
// it: resolved one component at a time from `root` as OpenUntrusted does,
// a ".." above `root` and an absolute link are refused, and a link is
// followed only under `policy` (root's or link_owner's, in a directory no
// one else can write); what is opened must be a regular file. For a tree
// the person running microscope named (--source-root).
Result<ScopedFd> OpenBeneath(int root, const std::string& relative, const FilePolicy& policy = {});

// Whether `name` is one entry of a directory: not empty, no '/', not "." or
// "..", no NUL.
bool IsEntryName(std::string_view name);

// The entry `name` of the directory `dir`, opened for reading: never
// followed when it is a symbolic link, refused unless a regular file (owned
// by `owner` when given).
Result<ScopedFd> OpenEntry(int dir, std::string_view name, std::optional<uid_t> owner = {});

// The names in the directory `dir` (not "." or ".."), read from its start
// through a descriptor of its own.
std::vector<std::string> EntryNames(int dir);

// lstat of an entry of `dir` (a symbolic link is itself); nullopt when
// there is no such entry.
std::optional<struct stat> StatEntry(int dir, std::string_view name);

// The directory `name` in `parent`, which this process's user owns: made
// with `mode` when absent, opened without following a symbolic link, and
// refused when it is a link, not a directory, or another user's; its mode is
// then set to `mode`.
Result<ScopedFd> OpenOwnDirectory(int parent, std::string_view name, mode_t mode);

// A directory the person running microscope named (a --continuous DIR).
Result<ScopedFd> OpenDirectory(const std::string& path);

// The rest of an open file, at most `limit` bytes (more is an error).
Result<std::vector<uint8_t>> ReadWhole(int fd, uint64_t limit);

// Writes `bytes` as the entry `name` of `dir` (mode `mode`): a temporary
// created there with O_EXCL, fsync, renameat over `name`, fsync of `dir`.
// A link planted under `name` is replaced, never written through.
Status WriteEntryAtomically(int dir, std::string_view name, std::span<const uint8_t> bytes,
                            mode_t mode);

}  // namespace microscope
