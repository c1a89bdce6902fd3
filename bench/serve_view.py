#!/usr/bin/env python3
"""The browser view at 10k, 100k and 1M samples: API latency and time to
the first flame graph in Debian's Chromium, against Google's pprof -http
on the same profile (convert --to pprof) drawing its flame graph.

Captures are synthesized (bench/make_capture, skewed as real profiles are:
a few hot paths and a long tail; samples/50 distinct stacks of depth 20).
For each size:
  api cold      the view's query on a fresh server (the capture read and
                decoded, then the report computed)
  api computed  a new query on a loaded capture (a focus on another
                function each time: nothing cached)
  api tree, api inverted
                the whole tree (callers first, or inverted) on a loaded
                capture, uncached (another min_percent each time)
  api cached    the same query again
  paint cold    Chromium, from navigation to the flame graph's first
                frames, with the server just started (nothing loaded)
  paint loaded  the same with the capture loaded but the page's queries
                not cached (as pprof, which reads its profile at start)
  select        then a fifth of the timeline selected by a drag, until the
                flame graph is drawn again for it (a query, uncached)
  zoom          then zoomed into (+), until the timeline is drawn again
  pprof paint   pprof -http's /ui/flamegraph, its profile loaded
Medians of --repeat runs, each from a fresh browser context; the two
servers are run alternately.

Usage: bench/serve_view.py [--build build] [--sizes 10000,100000,1000000] [--threads 4]
                           [--repeat 5]"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse


def start(cmd, pattern):
    """A server and its URL, read from its output."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    for line in p.stdout:
        m = re.search(pattern, line)
        if m:
            return p, m.group(1), time.monotonic() - t0
    sys.exit("%s did not start" % " ".join(cmd))


def free_port():
    """A port free now (pprof prints the port it was given, not the one bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def get(url, path):
    """(seconds, bytes) of one GET."""
    u = urllib.parse.urlparse(url)
    token = urllib.parse.parse_qs(u.query).get("token", [""])[0]  # the URL serve printed
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    t0 = time.monotonic()
    c.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    body = r.read()
    dt = time.monotonic() - t0
    if r.status != 200:
        sys.exit("GET %s: %d %s" % (path, r.status, body[:300]))
    return dt, len(body)


def paint(node, driver, playwright, url, zoom=False):
    p = subprocess.run([node, driver, url, "1"] + (["zoom"] if zoom else []), capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ, PLAYWRIGHT_CORE=playwright))
    if p.returncode != 0:
        sys.exit("paint %s: %s" % (url, p.stderr[-2000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    ms = os.path.abspath(os.path.join(a.build, "microscope"))
    make = os.path.join(a.build, "bench", "make_capture")
    pprof = os.path.join(a.build, "tests", "pprof")
    web = os.path.join(a.build, "web-build", "web")
    playwright = os.path.abspath(os.path.join(web, "node_modules", "playwright-core", "index.mjs"))
    driver = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve_paint.mjs")
    for need in (ms, make, pprof, playwright, "/usr/bin/chromium"):
        if not os.path.exists(need):
            sys.exit("missing %s (scripts/build builds it; scripts/setup installs chromium)" % need)
    d = tempfile.mkdtemp(prefix="serve-view-")
    # The page's own first query (web/src/state.ts reportQuery with its defaults).
    view = "/api/report?views=tree&min_percent=0.1&top=200"
    rows = []
    for n in [int(s) for s in a.sizes.split(",")]:
        cap, pb = "%s/s%d.mscap" % (d, n), "%s/s%d.pb.gz" % (d, n)
        subprocess.run([make, cap, str(n), "3", str(max(200, n // 50)), "skewed", str(a.threads)],
                       check=True)
        subprocess.run([ms, "convert", cap, "--to", "pprof", "-o", pb], check=True,
                       capture_output=True)
        r = {"samples": n, "threads": a.threads, "capture_bytes": os.path.getsize(cap), "pprof_bytes": os.path.getsize(pb)}
        cold, computed, cached, p_cold, p_loaded, p_pprof, frames = [], [], [], [], [], [], {}
        select, zoom = [], []
        whole, inverted = [], []
        for i in range(a.repeat):
            # microscope, cold: a fresh server, the page at once.
            s, url, _ = start([ms, "serve", cap], r"(http://127\.0\.0\.1:\d+/\S*)")
            got = paint("node", driver, playwright, url)
            p_cold.append(got["paint_ms"])
            frames["microscope"] = got["frames"]
            stop(s)
            # The API on a fresh server: cold, then computed and cached.
            s, url, _ = start([ms, "serve", cap], r"(http://127\.0\.0\.1:\d+/\S*)")
            dt, size = get(url, view)
            cold.append(dt)
            r["answer_bytes"] = size
            computed.append(get(url, view + "&focus=function_%d" % (10 + i))[0])
            cached.append(get(url, view)[0])
            whole.append(get(url, view.replace("min_percent=0.1", "min_percent=0.1%d1" % i))[0])
            inverted.append(get(url, view.replace("views=tree", "views=inverted").replace(
                "min_percent=0.1", "min_percent=0.1%d2" % i))[0])
            stop(s)
            # microscope, loaded: the capture read by another query first.
            s, url, _ = start([ms, "serve", cap], r"(http://127\.0\.0\.1:\d+/\S*)")
            get(url, "/api/report?views=threads")
            got = paint("node", driver, playwright, url, zoom=True)
            p_loaded.append(got["paint_ms"])
            select.append(got["select_ms"])
            zoom.append(got["zoom_ms"])
            stop(s)
            # pprof -http, its profile read at start.
            s, url, _ = start([pprof, "-no_browser", "-http=127.0.0.1:%d" % free_port(), pb],
                              r"Serving web UI on (http://127\.0\.0\.1:\d+)")
            got = paint("node", driver, playwright, url + "/ui/flamegraph")
            p_pprof.append(got["paint_ms"])
            frames["pprof"] = got["frames"]
            stop(s)
        r.update({"api_cold_ms": 1e3 * med(cold), "api_computed_ms": 1e3 * med(computed),
                  "api_cached_ms": 1e3 * med(cached), "api_tree_ms": 1e3 * med(whole),
                  "api_inverted_ms": 1e3 * med(inverted), "paint_cold_ms": med(p_cold),
                  "paint_loaded_ms": med(p_loaded), "pprof_paint_ms": med(p_pprof),
                  "select_ms": med(select), "zoom_ms": med(zoom),
                  "frames": frames,
                  "spread": {"paint_cold": [min(p_cold), max(p_cold)],
                             "pprof": [min(p_pprof), max(p_pprof)],
                             "select": [min(select), max(select)], "zoom": [min(zoom), max(zoom)],
                             "api_computed": [1e3 * min(computed), 1e3 * max(computed)]}})
        rows.append(r)
        print(json.dumps(r), flush=True)
    print()
    print("%9s %7s %10s %9s %9s %9s %9s %9s %10s %11s %9s %9s %10s %12s" %
          ("samples", "threads", "answer", "api cold", "computed", "tree", "inverted", "cached",
           "paint cold", "paint loaded", "select", "zoom", "pprof", "pprof/loaded"))
    for r in rows:
        print("%9d %7d %9.0fK %7.0fms %7.1fms %7.1fms %7.1fms %7.1fms %8.0fms %9.0fms %7.0fms %7.0fms "
              "%8.0fms %11.2fx" %
              (r["samples"], r["threads"], r["answer_bytes"] / 1e3, r["api_cold_ms"],
               r["api_computed_ms"], r["api_tree_ms"], r["api_inverted_ms"], r["api_cached_ms"],
               r["paint_cold_ms"], r["paint_loaded_ms"], r["select_ms"], r["zoom_ms"],
               r["pprof_paint_ms"], r["pprof_paint_ms"] / r["paint_loaded_ms"]))


if __name__ == "__main__":
    main()
