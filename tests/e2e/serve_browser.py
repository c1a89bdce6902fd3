"""The browser view in a real Chromium (Debian's, driven by playwright-core
from web/'s locked packages): web/browser/view.test.mjs loads `microscope
serve` over two captures recorded here, clicks a function in the flame
graph and finds the tree focused on it, searches, selects a time range on
the timeline and finds the totals changed (each figure against the API's
own answer), opens a diff, reloads the URL and gets the same view, moves
through the tree with the keyboard, and sees no error in the page.
Screenshots of each step go to build/meson-logs/screenshots/."""
import shutil
import signal

from common import *

require_perf()
web = os.environ.get("WEB_DIR")
require(web, "the browser view was not built (npm missing; scripts/setup installs nodejs)")
chromium = "/usr/bin/chromium"
require(os.path.exists(chromium), "no %s (scripts/setup installs chromium)" % chromium)
d = tmpdir()
record(d + "/threads.mscap", [fixture("threads"), "400"])
record(d + "/split.mscap", [fixture("split"), "300"])
# A real program of size: g++ compiling a file that includes the whole C++
# library (some 3,000 samples, thousands of functions, many of one sample).
with open(d + "/unit.cc", "w") as f:
    f.write("#include <bits/stdc++.h>\nint main() { std::vector<int> v(10); std::sort(v.begin(), v.end()); }\n")
record(d + "/gxx.mscap", ["g++", "-O2", "-c", d + "/unit.cc", "-o", d + "/unit.o"])
for name in ("unit.cc", "unit.o"):
    os.remove(os.path.join(d, name))
# The program's zones (probes): 200 "sleep" and 200 "spin" zones.
record(d + "/probes.mscap", [fixture("probes"), "timed", "200"], ["--probes", "all"])
# Another tool's trace on threads.mscap's timeline (microscope import): a
# span from 50 to 150 ms and an instant, placed by an offset.
with open(d + "/other.json", "w") as f:
    json.dump([{"name": "phase", "ph": "X", "ts": 50000, "dur": 100000, "pid": "other tool", "tid": 1},
               {"name": "tick", "ph": "i", "ts": 120000, "pid": "other tool", "tid": 1}], f)
p = run([MICROSCOPE, "import", d + "/other.json", "--into", d + "/threads.mscap", "--offset", "0ms"])
check(p.returncode == 0, "a trace imported onto threads.mscap: %s" % p.stderr)
os.remove(d + "/other.json")
# An attach: until its sampling events were on, the process ran unsampled,
# a gap ("not yet attached") the lanes hatch at the start.
target = subprocess.Popen([fixture("longrun"), "60"], stdout=subprocess.PIPE, text=True)
try:
    check(target.stdout.readline().strip() == "ready", "the attach's target started")
    p = run([MICROSCOPE, "record", "-q", "-o", d + "/attach.mscap", "--pid", str(target.pid), "--duration", "1s"])
    check(p.returncode == 0, "an attach recorded: %s" % p.stderr)
finally:
    target.kill()
    target.wait()
# A --continuous recording's segments, staged: a second server serves a
# directory holding the first, and the page sees the rest arrive.
staged, live = tmpdir(), tmpdir()
p = run([MICROSCOPE, "record", "-q", "--continuous", staged, "--segment", "300ms", "--",
         fixture("threads"), "1200"])
segments = sorted(os.listdir(staged))
check(p.returncode == 0 and len(segments) >= 2, "a continuous recording wrote segments: %s %s" %
      (segments, p.stderr))
shutil.copy(os.path.join(staged, segments[0]), live)
os.remove(os.path.join(staged, segments[0]))
shots = os.path.join(os.environ.get("LOG_DIR", d), "screenshots")
shutil.rmtree(shots, ignore_errors=True)
os.makedirs(shots)

server = subprocess.Popen([MICROSCOPE, "serve", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
live_server = subprocess.Popen([MICROSCOPE, "serve", live], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
try:
    url = server.stdout.readline().strip()
    serve_url(url)
    live_url = live_server.stdout.readline().strip()
    check(live_url.startswith("http://127.0.0.1:"), "serve printed its URL for the live directory")
    check(url.startswith("http://127.0.0.1:"), "serve printed its URL, with its token: %r" % url)
    p = run(["node", "--test", "--test-reporter=spec", os.path.join(web, "browser", "view.test.mjs")],
            env=dict(os.environ, SERVE_URL=url, SCREENSHOTS=shots, LIVE_URL=live_url, LIVE_DIR=live,
                     STAGED_DIR=staged,
                     PLAYWRIGHT_CORE=os.path.join(web, "node_modules", "playwright-core", "index.mjs")),
            timeout=300)
    print(p.stdout[-6000:])
    check(p.returncode == 0, "the browser tests pass: %s" % p.stderr[-3000:])
    taken = sorted(os.listdir(shots))
    check(len(taken) >= 6, "a screenshot of each step in %s: %s" % (shots, taken))
finally:
    for s in (server, live_server):
        s.send_signal(signal.SIGINT)
        s.wait(timeout=30)
