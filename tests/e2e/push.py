"""record --continuous DIR --push URL against a local receiver that checks
each request as Pyroscope's ingest takes it (POST /ingest, name, from,
until, format=pprof, a multipart "profile" part) and validates each profile
with Google's pprof: every segment arrives; a receiver that is down, then
up, gets the queued ones by retries; a 503 is retried, a 400 moved aside;
a full queue drops the oldest and says how many."""
import email.parser
import email.policy
import http.server
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse

from common import *

require_perf()
PPROF = os.environ.get("PPROF")
require(PPROF, "Google's pprof, which validates what is pushed, was not built (scripts/setup installs golang-go)")
d = tmpdir()


class Receiver:
    """An HTTP server on 127.0.0.1 taking /ingest; `answers` is a list of
    status codes to give the first requests (then 200)."""

    def __init__(self, port=0, answers=()):
        receiver = self
        self.requests = []
        self.bodies = []
        self.received = []  # each request as it came, checked when asked for
        self.checked = 0
        self._problems = []
        self.answers = list(answers)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                url = urllib.parse.urlparse(self.path)
                q = urllib.parse.parse_qs(url.query)
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                receiver.bodies.append(body)
                status = receiver.answers.pop(0) if receiver.answers else 200
                # Answered at once, as an ingest does, and checked later:
                # pprof's check of each profile took the receiver long
                # enough on a loaded machine that the recorder's 5 s at its
                # end did not send the last 3 of a backlog of 36.
                receiver.received.append((url.path, q, self.headers.get("Content-Type", ""), body,
                                          status))
                self.send_response(status)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def check(self, path, q, content_type, body, status):
        assert path == "/ingest", path
        for key in ("name", "from", "until", "format"):
            assert key in q, "no %s in %s" % (key, q)
        assert q["format"] == ["pprof"], q["format"]
        assert re.match(r"^split\{hostname=[^}]+\}$", q["name"][0]), q["name"]
        start, end = int(q["from"][0]), int(q["until"][0])
        assert 1.7e9 < start <= end <= start + 5, (start, end)
        assert content_type.startswith("multipart/form-data"), content_type
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
        parts = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                 for part in message.iter_parts()}
        assert "profile" in parts, "no profile part: %s" % list(parts)
        profile = parts["profile"]
        path = "%s/received-%d.pb.gz" % (d, len(self.requests))
        with open(path, "wb") as f:
            f.write(profile)
        p = run([PPROF, "-raw", path])
        assert p.returncode == 0, "pprof refuses it: " + p.stderr
        # The newest segment can hold only the program's exit, so whether a
        # profile has the fixture's hot function is checked once all arrived.
        self.requests.append((status, start, end, path, "burn_units" in p.stdout))

    def check_received(self):
        while self.checked < len(self.received):
            try:
                self.check(*self.received[self.checked])
            except Exception as e:  # noqa: BLE001 - every problem is the test's
                self._problems.append(repr(e))
            self.checked += 1

    @property
    def problems(self):
        self.check_received()
        return self._problems

    def ok(self):
        self.check_received()
        return [r for r in self.requests if r[0] == 200]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def free_port():
    r = Receiver()
    port = r.port
    r.stop()
    return port


def segments(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(".mscap"))


def record_split(directory, url, seconds, *extra):
    return run([MICROSCOPE, "record", "-q", "--continuous", directory, "--segment", "500ms",
                "--push", url, *extra, "--", fixture("split"), str(seconds)], timeout=120)


# Every segment arrives, valid, with its time span.
recv = Receiver()
try:
    out = d + "/up"
    os.mkdir(out)
    p = record_split(out, "http://127.0.0.1:%d" % recv.port, 2500)
    check(p.returncode == 0, "recording with --push exited 0 (%s)" % p.stderr)
    check(not recv.problems, "every request was as the ingest takes it: %s" % recv.problems[:2])
    n = len(segments(out))
    check(len(recv.ok()) == n and n >= 4, "%d segments, %d profiles received" % (n, len(recv.ok())))
    check("%d sent, 0 attempts failed" % n in p.stderr, "the recorder counts them: %s" % p.stderr.strip())
    check(os.listdir(out + "/.push") == ["refused"], "nothing left queued")
    older = recv.ok()[:-1]  # sent oldest first
    check(all(r[4] for r in older), "every profile but the newest has the fixture's hot function: %s"
          % [r[3] for r in older if not r[4]])
finally:
    recv.stop()

# A receiver down, then up: retried with backoff until it takes them all.
port = free_port()
out = d + "/late"
os.mkdir(out)
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--continuous", out, "--segment", "500ms",
                        "--push", "http://127.0.0.1:%d/" % port, "--", fixture("split"), "4000"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
# The receiver comes up once the recorder has said it retries (not after a
# fixed time, which a slow recorder can take before its first segment).
said = []
def read_stderr():
    for line in rec.stderr:
        said.append(line)
reading = threading.Thread(target=read_stderr)
reading.start()
deadline = time.time() + 60
while not any("retrying" in line for line in said) and rec.poll() is None and time.time() < deadline:
    time.sleep(0.05)
recv = Receiver(port)
try:
    # stderr is the reading thread's alone (communicate would read it too).
    so = rec.stdout.read()
    rec.wait(timeout=120)
    reading.join()
    se = "".join(said)
    check(rec.returncode == 0, "recording with the receiver down at first exited 0 (%s)" % se)
    n = len(segments(out))
    check("retrying" in se, "the recorder said it retries: %s" % se.strip().splitlines()[:1])
    check(len(recv.ok()) == n, "all %d segments arrived once the receiver was up (%d)" % (n, len(recv.ok())))
    m = re.search(r"push: (\d+) sent, (\d+) attempts failed", se)
    check(m and int(m.group(1)) == n and int(m.group(2)) >= 1, "counted: %s" % (m and m.group(0)))
    starts = [r[1] for r in recv.ok()]
    check(starts == sorted(starts), "sent oldest first")
finally:
    recv.stop()

# A 503 is retried; a 400 is moved aside and counted.
recv = Receiver(answers=[503, 400])
try:
    out = d + "/answers"
    os.mkdir(out)
    p = record_split(out, "http://127.0.0.1:%d" % recv.port, 2000)
    check(p.returncode == 0, "exited 0 (%s)" % p.stderr)
    n = len(segments(out))
    refused = os.listdir(out + "/.push/refused")
    check(len(refused) == 1 and "refused" in p.stderr, "the profile answered 400 was kept aside: %s" % refused)
    check(len(recv.ok()) == n - 1, "the others arrived, the one answered 503 on retry: %d of %d" % (len(recv.ok()), n))
finally:
    recv.stop()

# A full queue: the receiver never answers; 3 KiB of queue (three profiles
# of about 950 bytes) keeps the newest,
# drops and counts the rest, and leaves them for the next start.
port = free_port()
out = d + "/full"
os.mkdir(out)
p = record_split(out, "http://127.0.0.1:%d" % port, 3000, "--push-queue", "3K")
check(p.returncode == 0, "exited 0 with nowhere to push (%s)" % p.stderr)
m = re.search(r"push: 0 sent, (\d+) attempts failed, 0 refused, (\d+) dropped \(queue full\), (\d+) still queued", p.stderr)
check(m is not None, "counted: %s" % p.stderr.strip().splitlines()[-1:])
queued = [f for f in os.listdir(out + "/.push") if f.endswith(".pb.gz")]
size = sum(os.path.getsize(out + "/.push/" + f) for f in queued)
check(int(m.group(2)) >= 1 and size <= 3072 and len(queued) == int(m.group(3)),
      "%s dropped, %d queued in %d bytes" % (m.group(2), len(queued), size))
# The next recorder on the directory sends what was left.
recv = Receiver(port)
try:
    p = record_split(out, "http://127.0.0.1:%d" % port, 300)
    check("left queued" in p.stderr, "the next start says it sends what was left: %s" % p.stderr.strip().splitlines()[:1])
    check(len(recv.ok()) >= len(queued) + 1, "it sent them and its own: %d" % len(recv.ok()))
finally:
    recv.stop()

# DIR writable by another user, who tries to make the root recorder send,
# move or delete what it cannot read: a root-only directory holds a canary.
uid, gid, as_user = attacker()
os.chmod(d, 0o711)  # the user can reach the directories made for it, and list nothing else
secret = d + "/secret"
os.mkdir(secret, 0o700)
canary = b"CANARY-" + os.urandom(16).hex().encode()
with open(secret + "/000000000001-000000000002-x.mscap.pb.gz", "wb") as f:
    f.write(canary)  # named as a queued profile would be
os.chmod(secret + "/000000000001-000000000002-x.mscap.pb.gz", 0o600)
before = tree_state(secret)


def users_dir(name):
    path = d + "/" + name
    os.mkdir(path)
    os.chown(path, uid, gid)
    return path


def canary_safe(recv, what):
    check(all(canary not in b for b in recv.bodies), "%s: the canary's bytes were never sent" % what)
    check(tree_state(secret) == before, "%s: nothing in the root-only directory moved, changed or went" % what)


# The queue planted beforehand: a link to the root-only directory, or a
# directory of the user's own. The recorder refuses to use it.
for kind in ("link", "theirs"):
    out = users_dir("planted-" + kind)
    if kind == "link":
        run(as_user + ["ln", "-s", secret, out + "/.push"])
    else:
        run(as_user + ["mkdir", out + "/.push"])
    recv = Receiver()
    try:
        p = record_split(out, "http://127.0.0.1:%d" % recv.port, 300)
        check(p.returncode != 0 and "cannot use the push queue" in p.stderr and
              ("not a directory" in p.stderr or "owned by uid %d" % uid in p.stderr),
              "a planted .push (%s) is refused: %s" % (kind, p.stderr.strip()[-300:]))
        canary_safe(recv, "planted .push (%s)" % kind)
    finally:
        recv.stop()

# The queue swapped while the recorder runs: the user renames the real one
# away and puts a link to the root-only directory in its place; the
# recorder goes on with the queue it opened.
port = free_port()
out = users_dir("swapped")
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--continuous", out, "--segment", "300ms",
                        "--push", "http://127.0.0.1:%d/" % port, "--", fixture("split"), "3000"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 60
while time.time() < deadline and rec.poll() is None and not (
        os.path.isdir(out + "/.push") and any(n.endswith(".pb.gz") for n in os.listdir(out + "/.push"))):
    time.sleep(0.05)
check(os.stat(out + "/.push").st_mode & 0o777 == 0o700, "the queue is the recorder's alone (0700)")
run(as_user + ["mv", out + "/.push", out + "/old"])
run(as_user + ["ln", "-s", secret, out + "/.push"])
recv = Receiver(port)
try:
    so, se = rec.communicate(timeout=120)
    check(rec.returncode == 0, "the recording with its queue swapped exited 0: %s" % se)
    n = len(segments(out))
    check(len(recv.ok()) == n and not recv.problems,
          "every segment arrived from the queue it opened: %d of %d (%s)" % (len(recv.ok()), n, recv.problems[:1]))
    canary_safe(recv, "a swapped .push")
    check(os.readlink(out + "/.push") == secret, "the user's link was left as it was")
finally:
    recv.stop()

# What is in a queue that is not a queued profile (a name of another form,
# a link) is passed over with a line, never sent or a crash.
out = d + "/odd"
os.makedirs(out + "/.push")
with open(out + "/.push/x.pb.gz", "wb") as f:
    f.write(b"not a profile")
os.symlink(secret + "/000000000001-000000000002-x.mscap.pb.gz",
           out + "/.push/000000000003-000000000004-y.mscap.pb.gz")
recv = Receiver()
try:
    p = record_split(out, "http://127.0.0.1:%d" % recv.port, 300)
    check(p.returncode == 0, "a queue with odd entries: the recording exited 0 (%s)" % p.stderr[-300:])
    check("x.pb.gz passed over: not a queued profile's name" in p.stderr and
          "y.mscap.pb.gz passed over: a symbolic link" in p.stderr,
          "the odd entries are named, once each: %s" % p.stderr.strip().splitlines()[:3])
    check(len(recv.ok()) == len(segments(out)) and not recv.problems, "the segments arrived")
    canary_safe(recv, "a link in the queue")
finally:
    recv.stop()

for args, want in ((["--push", "http://127.0.0.1:1", "--", "true"], "give --continuous DIR"),
                   (["--continuous", d, "--push", "https://x", "--", "true"], "an http:// URL"),
                   (["--continuous", d, "--push-app", "x", "--", "true"], "go with --push URL")):
    p = run([MICROSCOPE, "record", *args])
    check(p.returncode == 2 and want in p.stderr, "%s refused: %s" % (" ".join(args), p.stderr.strip()))
