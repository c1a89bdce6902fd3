"""The source view shows a file only to who could read it (docs/security.md,
"The source view"), and the assembly view a program's code alike. A
program of the test's own names a root-only (0600) canary as a source file
with `#line`, and an imported pprof profile names it as a function's file;
another user asks `serve` (run as root) for both: the canary's bytes never
appear, the reason does; a world-readable file is shown; a link the other
user plants is not followed; `report --source` run as that user cannot
read the canary either. The program's code is shown to that user while
anyone can read the program, and not once it is root's alone. Then the
source tree is moved into a root-only directory and found again with
--source-root and --trim-path (read with the server's rights, its planted
link still refused)."""
import gzip
import secrets
import signal
import urllib.parse

from common import *

require_perf()
uid, gid, as_attacker = attacker()
d = tmpdir()
os.chmod(d, 0o755)
secret = "CANARY-" + secrets.token_hex(8)
canary = os.path.join(d, "canary.c")
with open(canary, "w") as f:
    f.write("".join("%s line %d\n" % (secret, i) for i in range(1, 11)))
os.chmod(canary, 0o600)

orig = os.path.join(d, "orig")
os.makedirs(orig + "/drop")
os.chmod(orig, 0o755)
os.chmod(orig + "/drop", 0o777)  # a directory the other user can write
prog_c = orig + "/prog.c"
planted = orig + "/drop/planted.c"
with open(prog_c, "w") as f:
    f.write("""#include <stdint.h>
#include <time.h>
static volatile uint64_t sink;
void leak(uint64_t n);
void planted(uint64_t n);
__attribute__((noinline)) void shown(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) sink += i * i;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
int main(void) {
  double t = now();
  while (now() - t < 0.6) {
    shown(20000);
    leak(20000);
    planted(20000);
  }
  return 0;
}
__attribute__((noinline)) void leak(uint64_t n) {
#line 2 "%s"
  for (uint64_t i = 0; i < n; i++) sink += i ^ (i >> 3);
}
__attribute__((noinline)) void planted(uint64_t n) {
#line 2 "%s"
  for (uint64_t i = 0; i < n; i++) sink += i + 7;
}
""" % (canary, planted))
os.chmod(prog_c, 0o644)
prog = os.path.join(d, "prog")
p = run(["cc", "-g", "-O1", "-fno-omit-frame-pointer", "-o", prog, prog_c])
check(p.returncode == 0, "the fixture compiles: %s" % p.stderr)
cap = os.path.join(d, "prog.mscap")
record(cap, [prog])
os.chmod(cap, 0o644)
# The other user plants a link to the canary where prog.c says planted.c is.
p = run(as_attacker + ["ln", "-s", canary, planted])
check(p.returncode == 0, "the other user plants a link at %s: %s" % (planted, p.stderr))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(tag, value):
    if isinstance(value, int):
        return varint(tag << 3) + varint(value)
    return varint(tag << 3 | 2) + varint(len(value)) + value


# An imported profile: one function whose file is the canary, another
# whose file anyone can read (prog.c).
strings = ["", "samples", "count", "imported_leak", canary, "imported_shown", prog_c]
profile = (field(1, field(1, 1) + field(2, 2)) +
           field(2, field(1, varint(1)) + field(2, varint(10))) +
           field(2, field(1, varint(2)) + field(2, varint(5))) +
           field(4, field(1, 1) + field(4, field(1, 1) + field(2, 3))) +
           field(4, field(1, 2) + field(4, field(1, 2) + field(2, 7))) +
           field(5, field(1, 1) + field(2, 3) + field(4, 4)) +
           field(5, field(1, 2) + field(2, 5) + field(4, 6)) +
           b"".join(field(6, s.encode()) for s in strings))
pb = os.path.join(d, "imported.pb.gz")
with open(pb, "wb") as f:
    f.write(gzip.compress(profile))
imported = os.path.join(d, "imported.mscap")
p = run([MICROSCOPE, "convert", pb, "-o", imported])
check(p.returncode == 0, "the pprof profile imports: %s" % p.stderr)
os.chmod(imported, 0o644)


def serve(*args):
    s = subprocess.Popen([MICROSCOPE, "serve", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    url = s.stdout.readline().strip()
    check(url.startswith("http://127.0.0.1:"), "serve %s prints its URL: %r" % (args, url))
    return s, url


def stop(s):
    s.send_signal(signal.SIGTERM)
    check(s.wait(timeout=10) == 0, "serve stops on SIGTERM")


FETCH = """import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=60)
    print(r.status)
    sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
    sys.stdout.write(e.read().decode())
"""


def view_as_attacker(url, view, function, capture, **extra):
    """serve's answer for the source or assembly view (`view`: source, asm)
    of `function`, as the other user asks for it (`extra`: more parameters)."""
    base, _, query = url.partition("?")
    params = urllib.parse.urlencode({view: function, "views": "flat", "capture": capture, **extra})
    api = base + "api/report?" + (query + "&" if query else "") + params
    p = run(as_attacker + [sys.executable, "-c", FETCH, api])
    check(p.returncode == 0, "the other user's request ran: %s" % p.stderr)
    status, _, body = p.stdout.partition("\n")
    check(secret not in body, "the canary's bytes are not in serve's answer for %s" % function)
    check(status == "200", "%s=%s: HTTP %s: %s" % (view, function, status, body[:300]))
    return json.loads(body)


def source_as_attacker(url, function, capture):
    """The source view of `function` as the other user asks serve for it."""
    files = view_as_attacker(url, "source", function, capture)["source"]["files"]
    check(len(files) == 1, "%s's lines are in one file: %s" % (function, [f["path"] for f in files]))
    return files[0]


def lines_of(path):
    with open(path) as f:
        return f.read().split("\n")


def shows(f, path, why):
    check("text" in f and f["text"] == lines_of(path)[f["first"] - 1:f["first"] - 1 + len(f["text"])],
          "%s: the text of %s (%s)" % (why, path, f.get("unreadable")))


def refuses(f, want, why):
    check("text" not in f and f.get("unreadable", "").startswith("not shown: ") and
          want in f["unreadable"], "%s: %r" % (why, f.get("unreadable")))


server, url = serve(d)
try:
    f = source_as_attacker(url, "shown", "prog.mscap")
    check(f["path"] == prog_c, "shown's file is prog.c: %s" % f["path"])
    shows(f, prog_c, "a world-readable file is shown to anyone")
    f = source_as_attacker(url, "leak", "prog.mscap")
    check(f["path"] == canary and f["lines"], "leak's lines are the canary's (#line)")
    refuses(f, "is not readable by all", "a root-only file named by #line is not shown")
    f = source_as_attacker(url, "planted", "prog.mscap")
    refuses(f, "symbolic link of uid %d" % uid, "a link the other user planted is not followed")
    f = source_as_attacker(url, "imported_leak", "imported.mscap")
    refuses(f, "is not readable by all", "a root-only file an imported pprof names is not shown")
    shows(source_as_attacker(url, "imported_shown", "imported.mscap"), prog_c,
          "an imported pprof's world-readable file is shown")
    # The assembly view opens the program's file by the same rules.
    m = view_as_attacker(url, "asm", "shown", "prog.mscap")["assembly"]["modules"][0]
    check(m["path"] == prog and [r["symbol"] for r in m.get("ranges", [])] == ["shown"],
          "a world-readable program's code is shown to anyone: %r" % m.get("unreadable"))
    code = [i["text"] for i in m["ranges"][0]["instructions"]]
    os.chmod(prog, 0o700)
    try:
        # (Another query: the server keeps its answers.)
        m = view_as_attacker(url, "asm", "shown", "prog.mscap", top="7")["assembly"]["modules"][0]
        check("ranges" not in m and m.get("unreadable", "").startswith("not shown: ") and
              "is not readable by all" in m["unreadable"] and m["addresses"],
              "a root-only program's code is not shown: %r" % m.get("unreadable"))
        p = run(as_attacker + [MICROSCOPE, "report", "--json", "--asm", "shown", cap])
        m = json.loads(p.stdout)["assembly"]["modules"][0]
        check("ranges" not in m and "Permission denied" in m.get("unreadable", "") and
              not any(c in p.stdout for c in code if len(c) > 12),
              "report --asm as the other user cannot read it either: %r" % m.get("unreadable"))
    finally:
        os.chmod(prog, 0o755)
finally:
    stop(server)

# report run by the other user reads as that user.
for name, c in (("leak", cap), ("imported_leak", imported)):
    p = run(as_attacker + [MICROSCOPE, "report", "--json", "--source", name, c])
    check(p.returncode == 0 and secret not in p.stdout + p.stderr,
          "report --source %s as the other user: no canary bytes (%d: %s)" % (name, p.returncode, p.stderr))
    f = json.loads(p.stdout)["source"]["files"][0]
    check("text" not in f and "Permission denied" in f.get("unreadable", ""),
          "report --source %s as the other user says why: %r" % (name, f.get("unreadable")))
p = run(as_attacker + [MICROSCOPE, "report", "--source", "leak", cap])
check(p.returncode == 0 and secret not in p.stdout and "Permission denied" in p.stdout,
      "report --source's text says why, without the canary")
p = run([MICROSCOPE, "report", "--json", "--source", "planted", cap])
f = json.loads(p.stdout)["source"]["files"][0]
check(secret not in p.stdout and "symbolic link of uid %d" % uid in f.get("unreadable", ""),
      "root's report does not follow the other user's link: %r" % f.get("unreadable"))
f = report(cap, "--source", "shown")["source"]["files"][0]
shows(f, prog_c, "report --source shows the user's own readable file")

# The tree moved into a directory only root can search: found again under
# --source-root with --trim-path, read with the server's rights.
moved = os.path.join(d, "moved")
os.rename(orig, moved)
os.chmod(moved, 0o700)
server, url = serve(d, "--source-root", moved, "--trim-path", orig)
try:
    f = source_as_attacker(url, "shown", "prog.mscap")
    check(f["path"] == prog_c, "the view names the capture's path: %s" % f["path"])
    shows(f, moved + "/prog.c", "--source-root/--trim-path find the moved file")
    refuses(source_as_attacker(url, "planted", "prog.mscap"), "symbolic link of uid %d" % uid,
            "a link the other user planted under --source-root is not followed")
    refuses(source_as_attacker(url, "leak", "prog.mscap"), "outside --source-root",
            "the canary outside the source root is still not shown")
finally:
    stop(server)
server, url = serve(d)
try:
    refuses(source_as_attacker(url, "shown", "prog.mscap"), "No such file",
            "without --source-root, the moved file is not found")
finally:
    stop(server)
f = report(cap, "--source", "shown", "--source-root", moved, "--trim-path", orig)["source"]["files"][0]
shows(f, moved + "/prog.c", "report --source-root/--trim-path find the moved file")
p = run([MICROSCOPE, "report", "--source", "shown", "--trim-path", orig, cap])
check(p.returncode == 2 and "--trim-path needs --source-root" in p.stderr,
      "--trim-path alone is an error: %r" % p.stderr)
