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
  zoom          then zoomed into (+), until the timeline is drawn again at
                that range (from the columns the page has, stretched)
  zoom in page  the zoom from the key's event in the page (its timeStamp),
                without the harness's sending of the key
  zoom answered the same, until it is drawn from the server's answer
  pprof paint   pprof -http's /ui/flamegraph, its profile loaded
  speedscope    speedscope's page (npm's release, fetched once into
                ~/.cache/microscope/peers) loading the same profile
                (convert --to speedscope) from a local server, until its
                flame chart is drawn
Medians of --repeat runs, each from a fresh browser context; the
servers are run alternately.

Usage: bench/serve_view.py [--build build] [--sizes 10000,100000,1000000] [--threads 4]
                           [--repeat 5] [--speedscope VERSION|none]"""
import argparse
import http.client
import json
import os
import re
import shutil
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


def paint(node, driver, playwright, url, zoom=False, speedscope=False, pprof=False):
    mode = ["zoom"] if zoom else ["speedscope"] if speedscope else ["pprof"] if pprof else []
    p = subprocess.run([node, driver, url, "1"] + mode, capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ, PLAYWRIGHT_CORE=playwright))
    if p.returncode != 0:
        sys.exit("paint %s: %s" % (url, p.stderr[-2000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def fetch_speedscope(version):
    """speedscope's release files (its index.html's directory), from npm
    once into the cache; None, saying why, when they cannot be had."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "microscope", "peers",
                         "speedscope-" + version)
    release = os.path.join(cache, "package", "dist", "release")
    if os.path.exists(os.path.join(release, "index.html")):
        return release
    os.makedirs(cache, exist_ok=True)
    p = subprocess.run(["npm", "pack", "speedscope@" + version], cwd=cache, capture_output=True,
                       text=True, timeout=300)
    tgz = os.path.join(cache, "speedscope-%s.tgz" % version)
    if p.returncode != 0 or not os.path.exists(tgz):
        print("speedscope not measured: npm pack speedscope@%s: %s" % (version, p.stderr.strip()[-300:]))
        return None
    subprocess.run(["tar", "xzf", tgz, "-C", cache], check=True)
    return release


def speedscope_site(release, profile):
    """A directory serving speedscope's files and `profile` beside them."""
    site = tempfile.mkdtemp(prefix="speedscope-site-")
    for name in os.listdir(release):
        os.symlink(os.path.join(release, name), os.path.join(site, name))
    os.symlink(profile, os.path.join(site, "profile.speedscope.json"))
    return site


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--speedscope", default="1.25.0", help="its npm version, or none")
    ap.add_argument("--capture", help="a recording to measure (a real program's) instead of "
                    "synthesized ones (--sizes, --threads)")
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
    release = fetch_speedscope(a.speedscope) if a.speedscope != "none" else None
    # The page's own first query (web/src/state.ts reportQuery with its defaults).
    view = "/api/report?views=tree&min_percent=0.1&top=200"
    rows = []
    for n in [int(s) for s in a.sizes.split(",")] if not a.capture else [0]:
        cap, pb = "%s/s%d.mscap" % (d, n), "%s/s%d.pb.gz" % (d, n)
        threads = a.threads
        focuses = ["function_%d" % (10 + i) for i in range(a.repeat)]
        if a.capture:
            shutil.copy(a.capture, cap)
            head = json.loads(subprocess.run([ms, "report", "--json", "--threads", cap],
                                             check=True, capture_output=True, text=True).stdout)
            n, threads = head["header"]["samples"], len(head["threads"])
            # Uncached focus queries: on its own functions (regex-escaped).
            focuses = [re.escape(f["function"]) for f in head["functions"][:10]]
        else:
            subprocess.run([make, cap, str(n), "3", str(max(200, n // 50)), "skewed", str(threads)],
                           check=True)
        subprocess.run([ms, "convert", cap, "--to", "pprof", "-o", pb], check=True,
                       capture_output=True)
        r = {"samples": n, "threads": threads, "capture": a.capture or "synthesized", "capture_bytes": os.path.getsize(cap), "pprof_bytes": os.path.getsize(pb)}
        site = None
        if release:
            ss = "%s/s%d.speedscope.json" % (d, n)
            subprocess.run([ms, "convert", cap, "--to", "speedscope", "-o", ss], check=True,
                           capture_output=True)
            r["speedscope_bytes"] = os.path.getsize(ss)
            site = speedscope_site(release, ss)
        cold, computed, cached, p_cold, p_loaded, p_pprof, frames = [], [], [], [], [], [], {}
        p_speedscope = []
        select, zoom, zoom_answered, zoom_in_page = [], [], [], []
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
            focus = urllib.parse.quote(focuses[i % len(focuses)])
            computed.append(get(url, view + "&focus=" + focus)[0])
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
            zoom_answered.append(got["zoom_answered_ms"])
            zoom_in_page.append(got["zoom_in_page_ms"])
            stop(s)
            # pprof -http, its profile read at start.
            s, url, _ = start([pprof, "-no_browser", "-http=127.0.0.1:%d" % free_port(), pb],
                              r"Serving web UI on (http://127\.0\.0\.1:\d+)")
            got = paint("node", driver, playwright, url + "/ui/flamegraph", pprof=True)
            p_pprof.append(got["paint_ms"])
            frames["pprof"] = got["frames"]
            stop(s)
            # speedscope, its files and the profile from a local server.
            if site:
                port = free_port()
                s = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                      "--directory", site, str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                base = "http://127.0.0.1:%d" % port
                for _ in range(100):
                    try:
                        get(base + "/", "/index.html")
                        break
                    except OSError:
                        time.sleep(0.05)
                got = paint("node", driver, playwright,
                            base + "/index.html#profileURL=" +
                            urllib.parse.quote(base + "/profile.speedscope.json", safe=""),
                            speedscope=True)
                p_speedscope.append(got["paint_ms"])
                stop(s)
        r.update({"api_cold_ms": 1e3 * med(cold), "api_computed_ms": 1e3 * med(computed),
                  "api_cached_ms": 1e3 * med(cached), "api_tree_ms": 1e3 * med(whole),
                  "api_inverted_ms": 1e3 * med(inverted), "paint_cold_ms": med(p_cold),
                  "paint_loaded_ms": med(p_loaded), "pprof_paint_ms": med(p_pprof),
                  "select_ms": med(select), "zoom_ms": med(zoom),
                  "zoom_answered_ms": med(zoom_answered), "zoom_in_page_ms": med(zoom_in_page),
                  "speedscope_paint_ms": med(p_speedscope),
                  "frames": frames,
                  "spread": {"paint_cold": [min(p_cold), max(p_cold)],
                             "pprof": [min(p_pprof), max(p_pprof)],
                             "speedscope": [min(p_speedscope), max(p_speedscope)] if p_speedscope else None,
                             "select": [min(select), max(select)], "zoom": [min(zoom), max(zoom)],
                             "zoom_in_page": [min(zoom_in_page), max(zoom_in_page)],
                             "api_computed": [1e3 * min(computed), 1e3 * max(computed)]}})
        rows.append(r)
        print(json.dumps(r), flush=True)
    print()
    print("%9s %7s %10s %9s %9s %9s %9s %9s %10s %11s %9s %9s %12s %13s %10s %12s %11s" %
          ("samples", "threads", "answer", "api cold", "computed", "tree", "inverted", "cached",
           "paint cold", "paint loaded", "select", "zoom", "zoom in page", "zoom answered", "pprof",
           "pprof/loaded", "speedscope"))
    for r in rows:
        print("%9d %7d %9.0fK %7.0fms %7.1fms %7.1fms %7.1fms %7.1fms %8.0fms %9.0fms %7.0fms %7.0fms "
              "%10.0fms %11.0fms %8.0fms %11.2fx %9.0fms" %
              (r["samples"], r["threads"], r["answer_bytes"] / 1e3, r["api_cold_ms"],
               r["api_computed_ms"], r["api_tree_ms"], r["api_inverted_ms"], r["api_cached_ms"],
               r["paint_cold_ms"], r["paint_loaded_ms"], r["select_ms"], r["zoom_ms"],
               r["zoom_in_page_ms"], r["zoom_answered_ms"],
               r["pprof_paint_ms"], r["pprof_paint_ms"] / r["paint_loaded_ms"],
               r["speedscope_paint_ms"]))


if __name__ == "__main__":
    main()
