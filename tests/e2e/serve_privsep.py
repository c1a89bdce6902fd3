"""serve started as root separates privileges (docs/security.md, "serve's
privilege separation"): the process that listens runs as nobody (or
--user), with no groups and no new privileges, its parent a root broker
that opens what is served. A root-only (0600) capture in a root-only
directory, a root-only --continuous directory's segments and a source file
under a root-only --source-root are still served (the broker opened them);
SIGTERM to the broker stops both within a second with the server's status."""
import gzip
import pwd
import re
import shutil
import signal
import urllib.parse
import urllib.error
import urllib.request

from common import *

require(os.geteuid() == 0, "serve separates privileges only when started as root")
nobody = pwd.getpwnam("nobody").pw_uid
d = tmpdir()  # 0700: only root can search it
os.chmod(d, 0o700)
make_capture(d + "/private.mscap", "threads")
os.chmod(d + "/private.mscap", 0o600)
one = json.loads(run([MICROSCOPE, "report", "--json", d + "/private.mscap"]).stdout)["header"]["samples"]
# Two segments of a continuous recording in the same directory: served as
# one capture named after it.
for i, name in enumerate(["microscope-20250101T000000.000Z-100-1.mscap",
                          "microscope-20250101T000010.000Z-100-2.mscap"]):
    shutil.copy(d + "/private.mscap", d + "/" + name)
    os.chmod(d + "/" + name, 0o600)

# A profile naming a source file that lives, moved, under a root-only
# --source-root.
def field(tag, value):
    def varint(n):
        out = b""
        while True:
            out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                return out
    if isinstance(value, int):
        return varint(tag << 3) + varint(value)
    return varint(tag << 3 | 2) + varint(len(value)) + value


strings = ["", "samples", "count", "compute", "/build/src/compute.c"]
profile = (field(1, field(1, 1) + field(2, 2)) + field(2, field(1, b"\x01") + field(2, b"\x09")) +
           field(4, field(1, 1) + field(4, field(1, 1) + field(2, 3))) +
           field(5, field(1, 1) + field(2, 3) + field(4, 4)) +
           b"".join(field(6, s.encode()) for s in strings))
with open(d + "/imported.pb.gz", "wb") as f:
    f.write(gzip.compress(profile))
check(run([MICROSCOPE, "convert", d + "/imported.pb.gz", "-o", d + "/imported.mscap"]).returncode == 0,
      "the profile imports")
os.chmod(d + "/imported.mscap", 0o600)
src = d + "/src"
os.makedirs(src)
os.chmod(src, 0o700)
code = ["int compute(void) {", "  int x = 0;", "  x += 42;  /* the hot line */", "  return x;", "}"]
with open(src + "/compute.c", "w") as f:
    f.write("\n".join(code) + "\n")
os.chmod(src + "/compute.c", 0o600)


def listener(port):
    """The pid whose descriptor is the socket listening on 127.0.0.1:port
    (None when no process, or more than one, holds it). The server's own
    threads open and close descriptors while it is read (the preload reads
    the capture), so a descriptor gone between the listing and its link is
    passed over, not the whole process."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if int(parts[1].split(":")[1], 16) == port and parts[3] == "0A":
                    inodes.add(parts[9])
    holders = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue  # the process ended
        for fd in fds:
            try:
                link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
            except OSError:
                continue  # the descriptor was closed meanwhile
            if link.startswith("socket:[") and link[8:-1] in inodes:
                holders.add(int(pid))
    if len(holders) != 1:
        print("the listening socket's holders: %s (inodes %s)" % (sorted(holders), sorted(inodes)))
        return None
    return holders.pop()


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def serve(*args):
    s = subprocess.Popen([MICROSCOPE, "serve", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    url = s.stdout.readline().strip()
    m = re.match(r"http://127\.0\.0\.1:(\d+)/", url)
    check(m is not None, "serve prints its URL: %r" % url)
    return s, url, int(m.group(1))


def get(url, path, **params):
    base, _, query = url.partition("?")
    full = base + path + "?" + (query + "&" if query else "") + urllib.parse.urlencode(params)
    with urllib.request.urlopen(full, timeout=60) as r:
        return json.loads(r.read())


def stop(s, name):
    start = time.time()
    s.send_signal(signal.SIGTERM)
    rc = s.wait(timeout=10)
    took = time.time() - start
    check(rc == 0 and took < 1.0, "%s: SIGTERM to the broker stops it with the server's status 0 "
          "in %.2f s (status %d)" % (name, took, rc))


s, url, port = serve(d, "--source-root", src, "--trim-path", "/build/src")
try:
    pid = listener(port)
    check(pid is not None and pid != s.pid, "the listening process (%s) is not the one started (%d)" % (pid, s.pid))
    st = status(pid)
    check(st["Uid"].split() == [str(nobody)] * 4 and st["Gid"].split()[0] != "0",
          "the listening process runs as nobody: Uid %s, Gid %s" % (st["Uid"], st["Gid"]))
    check(st.get("Groups", "").strip() == "" and st["NoNewPrivs"].strip() == "1",
          "with no groups (%r) and no new privileges (%s)" % (st.get("Groups"), st["NoNewPrivs"]))
    check(int(st["PPid"]) == s.pid and status(s.pid)["Uid"].split()[0] == "0",
          "its parent is the broker, still root")
    caps = {c["name"]: c["bytes"] for c in get(url, "api/captures")["captures"]}
    dirname = os.path.basename(d)
    check(set(caps) == {"private.mscap", "imported.mscap", dirname} and all(caps.values()),
          "/api/captures lists the root-only files with their sizes: %s" % caps)
    rep = get(url, "api/report", capture="private.mscap")
    check(rep["header"]["samples"] == one, "the root-only capture is served (%d samples)" % one)
    rep = get(url, "api/report", capture=dirname)
    check(rep["header"]["samples"] == 2 * one,
          "the root-only directory's two segments are served as one (%d samples)" % rep["header"]["samples"])
    f = get(url, "api/report", capture="imported.mscap", source="compute")["source"]["files"][0]
    check(f.get("text") == code and f["path"] == "/build/src/compute.c",
          "the source file under the root-only --source-root is shown: %s" % f.get("unreadable"))
finally:
    stop(s, "serve")

uid, gid, _ = attacker()
name = pwd.getpwuid(uid).pw_name
s, url, port = serve(d + "/private.mscap", "--user", name)
try:
    pid = listener(port)
    check(pid is not None and pid != s.pid, "--user: the listening process (%s) is not the one "
          "started (%d)" % (pid, s.pid))
    st = status(pid)
    check(st["Uid"].split() == [str(uid)] * 4 and st["Gid"].split() == [str(gid)] * 4,
          "--user %s: the server runs as %d:%d (%s, %s)" % (name, uid, gid, st["Uid"], st["Gid"]))
    check(get(url, "api/report")["header"]["samples"] == one, "and serves the root-only capture")
finally:
    stop(s, "serve --user")
# A directory others can write (a shared spool, 1777): what another user
# plants there is not served. Their own file named as a segment is not
# merged into the directory's capture, their link named as a segment is not
# followed, and a served name they swapped for a link to a root-only
# capture is refused, never opened by the root broker.
shared = d + "/shared"
os.makedirs(shared)
os.chmod(shared, 0o1777)
for name in ["microscope-20250101T000000.000Z-100-1.mscap", "microscope-20250101T000010.000Z-100-2.mscap"]:
    shutil.copy(d + "/private.mscap", shared + "/" + name)
planted = shared + "/microscope-20250101T000020.000Z-200-1.mscap"
shutil.copy(d + "/private.mscap", planted)
os.lchown(planted, uid, gid)
linked = shared + "/microscope-20250101T000030.000Z-200-2.mscap"
os.symlink(d + "/private.mscap", linked)
os.lchown(linked, uid, gid)
swapped = shared + "/run.mscap"
os.symlink(d + "/private.mscap", swapped)
os.lchown(swapped, uid, gid)
s, url, port = serve(shared)  # its .mscap files, and its segments as one capture
try:
    rep = get(url, "api/report", capture="shared")
    check(rep["header"]["samples"] == 2 * one,
          "the shared directory is served as its two root segments, not the planted file or link "
          "(%d samples, %d each)" % (rep["header"]["samples"], one))
    def refused(name, what):
        try:
            got = get(url, "api/report", capture=name)
            fail("%s was read: %d samples" % (what, got["header"]["samples"]))
        except urllib.error.HTTPError as e:
            body = e.read().decode()
            check("symbolic link of uid %d" % uid in body, "%s is refused: %d %s" % (what, e.code, body[:200]))

    refused("run.mscap", "a served name swapped for another user's link")
    # Listed again as the page asks: root's capture added since is read
    # through the broker; another user's link added since is listed, and
    # refused when opened.
    shutil.copy(d + "/private.mscap", shared + "/later.mscap")
    later_link = shared + "/later-link.mscap"
    os.symlink(d + "/private.mscap", later_link)
    os.lchown(later_link, uid, gid)
    names = []
    for _ in range(50):
        names = [c["name"] for c in get(url, "api/captures")["captures"]]
        if "later.mscap" in names:
            break
        time.sleep(0.1)
    check("later.mscap" in names and "later-link.mscap" in names and
          get(url, "api/report", capture="later.mscap")["header"]["samples"] == one,
          "a capture added to the shared directory is listed and read through the broker: %s" % names)
    refused("later-link.mscap", "another user's link added to the directory")
finally:
    stop(s, "serve of a shared directory")

p = run([MICROSCOPE, "serve", "--user", "no-such-user-here", d + "/private.mscap"])
check(p.returncode == 1 and "--user no-such-user-here: no such user" in p.stderr,
      "an unknown --user is one error: %r" % p.stderr)
