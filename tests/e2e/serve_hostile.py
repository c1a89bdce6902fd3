"""microscope serve beside hostile local users (docs/security.md, serve):
the API needs the printed URL's token (401 without it, 403 with another,
the cookie a page load with it sets works) and refuses a cross-site Origin
or Sec-Fetch-Site (403); a backtracking regex is answered at once
(RE2) while another client is; a slow query does not hold a quick one of
another client; 20 connections of another user trickling header bytes
(slowloris) leave a normal client answered, the ones over the per-client
cap refused with 503; a query past --query-timeout is 503 saying so; the
answers kept stay under --cache-size (the server's RSS after many distinct
large answers); SIGTERM during slow queries stops the server within 1 s.
Captures are built (capture_make), so it runs beside other tests; a 2M
sample synthetic capture gives queries of ~2 s and the cache's answers;
under the sanitizers a 400k one gives the cache's answers (a 2M answer took
11 s there: 129 s for the test, 39 s now)."""
import http.client
import re
import signal
import threading
import urllib.parse

from common import *

uid, gid, as_attacker = attacker()
d = tmpdir()
make_capture(d + "/threads.mscap", "threads")
p = run([os.environ["CAPTURE_MAKE"], d + "/big.mscap", "synthetic", "2000000", "80000"])
check(p.returncode == 0, "a capture of 2M samples: %s" % p.stderr)
# Under the sanitizers the --cache-size part asks a smaller capture for its
# answers (400k samples in 20,000 paths: answers of 373 kB, 0.6 s of CPU
# each, where one of 2M samples in 80,000 paths took 11 s). Not here: the
# 2M capture's first query leaves the allocator room for the rest (with the
# 400k one, glibc's per-thread arenas grew the RSS past the bound).
if SANITIZED:
    p = run([os.environ["CAPTURE_MAKE"], d + "/mid.mscap", "synthetic", "400000", "20000"])
    check(p.returncode == 0, "a capture of 400k samples: %s" % p.stderr)
os.chmod(d, 0o755)


def start(*extra, env=None):
    s = subprocess.Popen([MICROSCOPE, "serve", d, *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    _, port, token = serve_url(s.stdout.readline())
    return s, port, token


def get(port, path, headers=None, timeout=60):
    """(status, headers, JSON or bytes, seconds)."""
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    try:
        body = json.loads(body)
    except ValueError:
        pass
    return r.status, dict(r.getheaders()), body, time.monotonic() - t0


def stop(s):
    s.send_signal(signal.SIGTERM)
    try:
        s.wait(timeout=30)
    except subprocess.TimeoutExpired:
        s.kill()


def api(token, **params):
    return "/api/report?" + urllib.parse.urlencode(dict(params, token=token))


def family(pid):
    """`pid` and its descendants: serve started as root is a broker whose
    child answers HTTP (src/serve/broker.h)."""
    out = [pid]
    for p in out:
        try:
            for t in os.listdir("/proc/%d/task" % p):
                out += [int(c) for c in open("/proc/%d/task/%s/children" % (p, t)).read().split()]
        except OSError:
            pass
    return out


def cpu_seconds(pid):
    total = 0
    for p in family(pid):
        try:
            fields = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def status_kib(pid, key):
    """The sum of a /proc status field (VmRSS, VmHWM) over `pid`'s family."""
    total = 0
    for p in family(pid):
        try:
            for line in open("/proc/%d/status" % p):
                if line.startswith(key + ":"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


SLOW = dict(capture="big.mscap", views="tree,inverted,lanes,threads", granularity="line", look="native")

server, port, token = start()
try:
    # The token: required, compared, and set as a cookie by a page load.
    status, _, body, _ = get(port, "/api/captures")
    check(status == 401 and "token" in body["error"], "no token: 401 (%d %s)" % (status, body))
    status, _, body, _ = get(port, "/api/captures?token=" + "0" * 32)
    check(status == 403 and "not this server's" in body["error"], "a wrong token: 403 (%d %s)" % (status, body))
    status, headers, _, _ = get(port, "/?token=" + token)
    cookie = headers.get("Set-Cookie", "")
    check(cookie.startswith("microscope_token_%d=%s;" % (port, token)) and "HttpOnly" in cookie and
          "SameSite=Strict" in cookie and "Path=/" in cookie, "the page load sets the token's cookie: %r" % cookie)
    status, _, body, _ = get(port, "/api/captures", {"Cookie": "x=1; " + cookie.split(";")[0]})
    check(status == 200 and len(body["captures"]) == (3 if SANITIZED else 2), "the cookie is the token: %d" % status)
    for headers, says in [({"Origin": "http://evil.example"}, "Origin"),
                          ({"Origin": "http://127.0.0.1:%d" % (port + 1)}, "Origin"),
                          ({"Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site"),
                          ({"Sec-Fetch-Site": "same-site"}, "Sec-Fetch-Site")]:
        status, _, body, _ = get(port, "/api/captures?token=" + token, headers)
        check(status == 403 and says in body["error"], "%s: 403 %r" % (headers, body))
    status, _, _, _ = get(port, "/api/captures?token=" + token,
                          {"Origin": "http://127.0.0.1:%d" % port, "Sec-Fetch-Site": "same-origin"})
    check(status == 200, "this server's own page is answered: %d" % status)

    # A regex that backtracks for ever in libstdc++ is answered at once, while
    # another client is.
    get(port, api(token, capture="threads.mscap", views="threads"))  # loaded
    got = {}
    for param, pattern in (("focus", "(.*.*)*QQQ"), ("exclude", r"^(\w+\s?)*$")):
        got.clear()
        evil = threading.Thread(target=lambda: got.update(
            evil=get(port, api(token, capture="threads.mscap", **{param: pattern}))))
        evil.start()
        other = get(port, api(token, capture="threads.mscap", views="flat", top="3"))
        evil.join(30)
        check(not evil.is_alive() and got["evil"][0] == 200 and got["evil"][3] < 1.0 * LAG_FACTOR,
              "%s=%s answered in %.2f s" % (param, pattern, got["evil"][3]) if "evil" in got
              else "%s=%s: no answer in 30 s" % (param, pattern))
        check(other[0] == 200 and other[3] < 1.0 * LAG_FACTOR, "and another client in %.2f s" % other[3])

    # A slow query holds no other client.
    get(port, api(token, capture="big.mscap", views="threads"))  # loaded
    slow = threading.Thread(target=lambda: got.update(slow=get(port, api(token, **SLOW))))
    t0 = cpu_seconds(server.pid)
    slow.start()
    while cpu_seconds(server.pid) < t0 + 0.3 and slow.is_alive():
        time.sleep(0.02)
    quick = get(port, api(token, capture="threads.mscap", views="tree"))
    computing = slow.is_alive()
    slow.join(120)
    check(quick[0] == 200 and computing,
          "a quick query is answered (%.2f s) while a slow one computes (it took %.2f s)" %
          (quick[3], got["slow"][3]))

    # Slowloris: another user's 20 connections trickle header bytes.
    trickler = r'''
import socket, sys, time
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", %d))
    s.sendall(b"GET /api/captures HTTP/1.1\r\nHo")
    s.setblocking(False)
    socks.append(s)
print("trickling", flush=True)
refused = closed = 0
open_ = set(range(20))
end = time.time() + 12
while open_ and time.time() < end:
    for i in list(open_):
        try:
            data = socks[i].recv(4096)
        except BlockingIOError:
            try:
                socks[i].send(b"x")
            except OSError:
                open_.discard(i); closed += 1
            continue
        except OSError:
            data = b""
        if data.startswith(b"HTTP/1.1 503"):
            refused += 1
        elif not data or data.startswith(b"HTTP/1.1 400"):
            closed += 1  # cut at the request's deadline (httplib says 400)
        else:
            print("answered", data[:60], flush=True)
        open_.discard(i)
    time.sleep(0.3)
print("refused %%d closed %%d open %%d" %% (refused, closed, len(open_)), flush=True)
''' % port
    t = subprocess.Popen(as_attacker + ["python3", "-c", trickler], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    check(read_line(t.stdout, "trickling", 30), "another user's 20 connections trickle header bytes")
    answered = [get(port, api(token, capture="threads.mscap", views="flat", top=str(n)), timeout=30)
                for n in (4, 5, 6)]
    check(all(a[0] == 200 and a[3] < 2.0 * LAG_FACTOR for a in answered),
          "a normal client is answered meanwhile: %s" % ["%d in %.2f s" % (a[0], a[3]) for a in answered])
    out, err = t.communicate(timeout=60)
    last = out.strip().splitlines()[-1] if out.strip() else err
    m = re.match(r"refused (\d+) closed (\d+) open (\d+)", last)
    check(m and int(m.group(1)) >= 12 and int(m.group(2)) + int(m.group(1)) == 20 and "answered" not in out,
          "past its cap of connections the user is refused with 503, the rest cut at the "
          "request's deadline (5 s, within the 12 s they trickle): %r" % last)
finally:
    stop(server)

# --query-timeout: a query past it is cancelled, 503 saying so.
server, port, token = start("--query-timeout", "0.3s")
try:
    get(port, api(token, capture="big.mscap", views="threads"))
    status, _, body, dt = get(port, api(token, **SLOW))
    check(status == 503 and "deadline of 0.3 s" in body["error"] and "--query-timeout" in body["error"] and dt < 2.0 * LAG_FACTOR,
          "a query past --query-timeout 0.3s is 503 in %.2f s: %s" % (dt, body))
    # An export too, aggregated (pprof) or streamed (Chrome's trace): 2M
    # samples take seconds to write.
    for fmt in ("pprof", "chrome"):
        status, _, body, dt = get(port, "/api/export?" + urllib.parse.urlencode(
            {"token": token, "capture": "big.mscap", "format": fmt}))
        check(status == 503 and isinstance(body, dict) and "deadline of 0.3 s" in body.get("error", "") and
              dt < 2.0 * LAG_FACTOR,
              "a %s export past --query-timeout 0.3s is 503 in %.2f s: %s %s" % (fmt, dt, status, str(body)[:200]))
finally:
    stop(server)

# --cache-size: many distinct answers; the RSS stays bounded, and the first
# answers are evicted (asked again, they are computed again: the server's
# CPU time grows), while the last one is still kept.
# 1 MiB: 11 answers of 270 kB fill it twice (9 of 373 kB under the
# sanitizers).
cache = 1 << 20
# The default 10 s deadline is not what this part tests: a sanitized server
# on a loaded machine took longer for the first tree of 2M samples (503).
# Under the sanitizers ASan keeps freed memory in its quarantine (256 MiB
# by default), which the RSS would count: 16 MiB for this server, added to
# its bound (428 MB against 426 without). There the part checks the
# cache's eviction for memory errors; the bound itself, here.
quarantine = 16 << 20 if SANITIZED else 0
env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16")
server, port, token = start("--cache-size", "1M", "--query-timeout", "%ds" % int(60 * LAG_FACTOR),
                            env=env if SANITIZED else None)
try:
    def big(i):
        return api(token, capture="mid.mscap" if SANITIZED else "big.mscap", views="tree",
                   min_percent="0.0%d" % (i + 10), top="%d" % (20 + i))
    status, _, body, dt = get(port, big(0), timeout=120 * LAG_FACTOR)
    check(status == 200, "an answer of the cache's capture: %d in %.1f s (%s)" %
          (status, dt, body.get("error") if isinstance(body, dict) else ""))
    size = len(json.dumps(body))
    base = status_kib(server.pid, "VmHWM") * 1024  # the capture and one query's peak
    bound = base + 2 * cache + quarantine
    count = 2 * cache // size + 4
    worst = 0
    for i in range(1, count):
        status, _, _, _ = get(port, big(i))
        rss = status_kib(server.pid, "VmRSS") * 1024
        worst = max(worst, rss)
        if rss > bound:
            server.kill()
            fail("after %d answers of %d kB the RSS is %d MB, over %d MB (the peak of one query "
                 "and twice --cache-size)" % (i + 1, size // 1000, rss >> 20, bound >> 20))
        check(status == 200, "answer %d" % i)
    check(True, "%d answers of %d kB: the RSS at most %d MB, under %d MB" %
          (count, size // 1000, worst >> 20, bound >> 20))
    c0 = cpu_seconds(server.pid)
    get(port, big(count - 1))
    kept = cpu_seconds(server.pid) - c0
    c0 = cpu_seconds(server.pid)
    get(port, big(0))
    again = cpu_seconds(server.pid) - c0
    check(kept < 0.05 and again > 0.1, "the last answer is kept (%.2f s of CPU), the first was "
          "evicted past 1M of answers (%.2f s to compute it again)" % (kept, again))
finally:
    stop(server)

# SIGTERM while queries compute: the server ends within 1 s.
server, port, token = start("--query-timeout", "120s")
get(port, api(token, capture="big.mscap", views="threads"))
t0 = cpu_seconds(server.pid)
results = []


def ask(n):
    try:
        results.append(get(port, api(token, top=str(30 + n), **SLOW), timeout=120))
    except (OSError, http.client.HTTPException) as e:  # the server stopped
        results.append(e)


clients = [threading.Thread(target=ask, args=(n,)) for n in range(3)]
for c in clients:
    c.start()
while cpu_seconds(server.pid) < t0 + 0.5 and len(results) < 3:
    time.sleep(0.02)
check(len(results) < 3, "queries are computing (%d of 3 answered)" % len(results))
stopped = time.monotonic()
server.send_signal(signal.SIGTERM)
try:
    rc = server.wait(timeout=30)
except subprocess.TimeoutExpired:
    server.kill()
    rc = None
took = time.monotonic() - stopped
check(rc == 0 and took < 1.0 * LAG_FACTOR, "SIGTERM during slow queries: status %s in %.2f s" % (rc, took))
for c in clients:
    c.join(30)
