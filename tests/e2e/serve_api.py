"""microscope serve's JSON API on 127.0.0.1, over real recordings of the
threads and split fixtures: /api/captures lists a directory's captures;
/api/report answers exactly what `report --json` prints for the same
options (views, filters, metric, diff); bad parameters are 400 with a
message, an unknown capture 404, an unreadable one 422 naming the file
(and the server goes on); only GET and HEAD are answered (405 otherwise);
a Host header that is not this server by IP literal or localhost is 403
(DNS rebinding); nothing but the API is served, so no path reaches a
file; Ctrl-C stops it with status 0."""
import http.client
import re
import shutil
import signal
import socket
import time
import urllib.parse

from common import *

require_perf()
d = tmpdir()
record(d + "/threads.mscap", [fixture("threads"), "300"])
record(d + "/split.mscap", [fixture("split"), "300"])
with open(d + "/bad.mscap", "wb") as f:
    f.write(b"not a capture" * 100)

server = subprocess.Popen([MICROSCOPE, "serve", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
url = server.stdout.readline().strip()
m = re.match(r"http://127\.0\.0\.1:(\d+)/\?token=[0-9a-f]{32}$", url)
check(m is not None, "serve prints its URL first, with its token: %r" % url)
_, port, token = serve_url(url)


def request(method, path, host=None, body=None):
    """The API's token goes as a header (serve_hostile checks the others)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": "Bearer " + token}
    if host is not None:
        headers["Host"] = host
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def get_json(path, want=200):
    status, headers, data = request("GET", path)
    check(status == want, "GET %s: %d (want %d): %s" % (path, status, want, data[:300]))
    check(headers.get("Content-Type", "").startswith("application/json"),
          "GET %s answers JSON: %s" % (path, headers.get("Content-Type")))
    return json.loads(data)


def api(**params):
    return "/api/report?" + urllib.parse.urlencode(params)


def cli(name, *flags):
    p = run([MICROSCOPE, "report", "--json", *flags, name], cwd=d)
    check(p.returncode == 0, "report %s %s: %s" % (name, flags, p.stderr))
    return json.loads(p.stdout)


try:
    caps = get_json("/api/captures")["captures"]
    check([c["name"] for c in caps] == ["bad.mscap", "split.mscap", "threads.mscap"] and
          all(c["bytes"] == os.path.getsize(os.path.join(d, c["name"])) for c in caps),
          "/api/captures lists the directory's captures with their sizes: %s" % caps)

    # The directory listed again: a capture added after the start is
    # served, one rewritten is read again, one removed is gone.
    def listed_soon(want):
        for _ in range(50):
            names = [c["name"] for c in get_json("/api/captures")["captures"]]
            if want(names):
                return names
            time.sleep(0.1)
        return names

    def samples_of(name):
        return get_json(api(capture=name))["header"]["samples"]

    shutil.copy(d + "/split.mscap", d + "/added.mscap")
    names = listed_soon(lambda n: "added.mscap" in n)
    split_samples, threads_samples = samples_of("split.mscap"), samples_of("threads.mscap")
    check("added.mscap" in names and samples_of("added.mscap") == split_samples,
          "a capture added to the served directory is listed and read: %s" % names)
    time.sleep(0.01)  # another modification time, whatever the clock's grain
    shutil.copy(d + "/threads.mscap", d + "/added.mscap.tmp")
    os.rename(d + "/added.mscap.tmp", d + "/added.mscap")
    for _ in range(50):
        get_json("/api/captures")  # as the page asks every 2 s
        got = samples_of("added.mscap")
        if got == threads_samples:
            break
        time.sleep(0.1)
    check(got == threads_samples and split_samples != threads_samples,
          "a capture rewritten in the directory is read again: %d samples (%d before)"
          % (got, split_samples))
    os.remove(d + "/added.mscap")
    names = listed_soon(lambda n: "added.mscap" not in n)
    check("added.mscap" not in names and request("GET", api(capture="added.mscap"))[0] == 404,
          "a capture removed from the directory is no longer served: %s" % names)

    # The API's answers are report --json's, byte for byte in meaning.
    cases = [
        ({}, []),
        ({"views": "tree,threads,lanes", "min_percent": "0"},
         ["--tree", "--threads", "--lanes", "--min-percent", "0"]),
        ({"views": "inverted,flat", "top": "5"}, ["--inverted", "--flat", "--top", "5"]),
        ({"thread": "worker-b", "views": "tree"}, ["--thread", "worker-b", "--tree"]),
        ({"focus": "work_c", "exclude": "work_a", "time": "0s..0.2s"},
         ["--focus", "work_c", "--exclude", "work_a", "--time", "0s..0.2s"]),
        ({"granularity": "address", "inlines": "off", "views": "lanes", "lane_width": "200"},
         ["--granularity", "address", "--inlines", "off", "--lanes", "--lane-width", "200"]),
        ({"source": "burn_units", "views": "threads", "thread": "worker-c"},
         ["--source", "burn_units", "--threads", "--thread", "worker-c"]),
    ]
    # Answers are sized to what the views draw: the functions list (every
    # function the filter kept) comes with the flat tables and the trees only.
    def drawn(want, params):
        views = params.get("views", "")
        if "source" in params or "diff" in params or (views and not {"flat", "tree", "inverted"} & set(views.split(","))):
            want.pop("functions")
        return want
    for params, flags in cases:
        got = get_json(api(capture="threads.mscap", **params))
        want = drawn(cli("threads.mscap", *flags), params)
        check(got == want, "/api/report %s equals report --json %s (%d samples)" %
              (params, " ".join(flags), want["all"]["samples"]))
    # The transforms: merge and collapse, each repeatable.
    got = get_json("/api/report?" + urllib.parse.urlencode(
        [("capture", "threads.mscap"), ("views", "tree,flat"), ("min_percent", "0"), ("merge", "work_a"),
         ("merge", "work_b"), ("collapse", "libc.so.6")]))
    want = cli("threads.mscap", "--tree", "--flat", "--min-percent", "0", "--merge", "work_a",
               "--merge", "work_b", "--collapse", "libc.so.6")
    names = {f["function"] for f in got["functions"]}
    check(got == want and not {"work_a", "work_b"} & names and "libc.so.6" in names,
          "/api/report with merge (twice) and collapse equals report --merge --collapse: %d "
          "functions, libc as one" % len(names))
    # Focus on a call path (a subtree): the stacks that begin with it, shown
    # from its last function; the export writes the same stacks.
    whole = cli("threads.mscap", "--tree", "--min-percent", "0")

    def path_to(nodes, name):
        for n in nodes:
            if n["function"] == name:
                return [name]
            below = path_to(n["children"], name)
            if below:
                return [n["function"]] + below
        return None
    chain = path_to(whole["tree"], "work_b")
    got = get_json(api(capture="threads.mscap", views="tree,flat", min_percent="0",
                       focus_path=";".join(chain)))
    want = cli("threads.mscap", "--tree", "--flat", "--min-percent", "0", "--focus-path", ";".join(chain))
    run([MICROSCOPE, "convert", "threads.mscap", "--to", "folded", "-o", "focused.folded",
         "--focus-path", ";".join(chain)], cwd=d)
    with open(os.path.join(d, "focused.folded")) as f:
        folded = f.read()
    os.unlink(os.path.join(d, "focused.folded"))
    check(got == want and [r["function"] for r in got["tree"]] == ["work_b"] and
          folded and all(l.startswith("work_b;") or l.startswith("work_b ") for l in folded.splitlines()),
          "/api/report with focus_path %s equals report --focus-path: one root, work_b, %d of %d "
          "samples; convert writes its stacks from work_b" %
          (";".join(chain), got["tree"][0]["total"]["samples"],
           sum(r["total"]["samples"] for r in whole["tree"])))
    lanes_only = get_json(api(capture="threads.mscap", views="lanes"))
    check("functions" not in lanes_only and "functions" in cli("threads.mscap", "--lanes"),
          "a lanes answer carries no functions list (%d bytes); report --json --lanes does" %
          len(json.dumps(lanes_only)))
    got = get_json(api(capture="split.mscap", diff="threads.mscap"))
    check(got == drawn(cli("split.mscap", "--diff", "threads.mscap"), {"diff": 1}) and "diff" in got,
          "/api/report with diff equals report --diff")
    # The text people read comes from one place: the API's header lines are
    # the terminal's header, line for line, and a cost's text is the share
    # the terminal's tables print.
    for params, flags in [({"focus": "work_c"}, ["--focus", "work_c"]), ({}, [])]:
        got = get_json(api(capture="threads.mscap", views="tree", **params))
        text = run([MICROSCOPE, "report", "--tree", *flags, "threads.mscap"], cwd=d).stdout
        header = text.split("\n\n")[0].split("\n")
        lines = ["%-12s%s" % (l["label"], l["text"]) for l in got["header"]["lines"]]
        check(lines == header and any(l.startswith("filter") for l in lines) == bool(flags),
              "the API's header lines are report's header (%d lines)" % len(lines))
        root = got["tree"][0]
        row = "%7s %7s  %s [%s]" % (root["total"]["text"], root["self"]["text"], root["function"],
                                    root["module"])
        check(row in text.split("\n"), "a tree node's texts are report's row: %r" % row)
    # Asked again: the cached answer is the same.
    check(get_json(api(capture="threads.mscap")) == cli("threads.mscap"), "a repeated query")

    # The source view's answer holds the file's text, read by the server.
    src = get_json(api(capture="threads.mscap", views="threads", source="burn_units"))["source"]
    check(src["files"] and src["files"][0]["path"].endswith("burn.h") and
          any("acc" in t for t in src["files"][0]["text"]),
          "source=burn_units: burn.h's lines with their text (%d lines)" %
          len(src["files"][0].get("text", [])) if src["files"] else "no files")
    e = get_json(api(capture="threads.mscap", source="no_such_function"), 422)["error"]
    check("no function named 'no_such_function'" in e, "an unknown source function is 422: %r" % e)

    # The page's stack chart: the busiest thread's samples in time order,
    # every one of them in a run, the runs in order and apart.
    whole = get_json(api(capture="threads.mscap", views="threads"))
    busiest = max(whole["threads"], key=lambda t: t["samples"])
    chart = get_json(api(capture="threads.mscap", views="stack_chart"))["stack_chart"]
    runs = chart["runs"]
    check(chart["tid"] == busiest["tid"] and chart["threads"] == len(whole["threads"]) and
          sum(r[3] for r in runs) == chart["samples"] == busiest["samples"] and
          all(a[1] <= b[0] for a, b in zip(runs, runs[1:])) and all(r[0] < r[1] for r in runs),
          "views=stack_chart: %d samples of %s (%d) in %d runs, in order" %
          (chart["samples"], chart["thread"], chart["tid"], len(runs)))
    names = {tuple(chart["names"][i] for i in chart["stacks"][r[2]]) for r in runs}
    check(any(p[-2:] == ("work_c", "burn_units") for p in names), "whose stacks name the functions: %s" % sorted(names)[:3])
    # The sidebar's: a function's callers and callees.
    n = get_json(api(capture="threads.mscap", views="threads", neighbors="work_b"))["neighbors"]
    check([c["function"] for c in n["callers"]] == ["thread_b"] and n["callees"][0]["function"] == "burn_units" and
          n["total"]["samples"] == sum(f["total"]["samples"] for f in cli("threads.mscap")["functions"] if f["function"] == "work_b"),
          "neighbors=work_b: called by thread_b, calling burn_units, %d samples" % n["total"]["samples"])
    e = get_json(api(capture="threads.mscap", neighbors="no_such_function"), 422)["error"]
    check("no function named 'no_such_function'" in e, "an unknown function's neighbors are 422: %r" % e)
    get_json(api(capture="threads.mscap", views="stack_chart,nonsense"), 400)

    # Answers go out plain even to a browser that accepts compression: on
    # the loopback, httplib's brotli only cost (300 ms for a 600 kB answer).
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", api(capture="threads.mscap", views="tree"),
                 headers={"Accept-Encoding": "gzip, deflate, br, zstd", "Authorization": "Bearer " + token})
    r = conn.getresponse()
    body = r.read()
    check(r.status == 200 and r.getheader("Content-Encoding") is None and json.loads(body),
          "an API answer is sent plain: %s" % r.getheader("Content-Encoding"))
    conn.close()

    # Exports (the page's downloads): what convert writes for the same
    # filters, byte for byte, named for the capture; pprof's own reader
    # reads the pprof one.
    sel = {"capture": "threads.mscap", "thread": "worker-b", "time": "0s..0.2s"}
    for fmt, ext in [("pprof", ".pb.gz"), ("chrome", ".json"), ("speedscope", ".speedscope.json"),
                     ("folded", ".folded")]:
        status, headers, data = request("GET", "/api/export?" + urllib.parse.urlencode(
            dict(sel, format=fmt)))
        out = os.path.join(d, "cli" + ext)
        p = run([MICROSCOPE, "convert", "threads.mscap", "--thread", "worker-b", "--time", "0s..0.2s",
                 "--to", fmt, "-o", out], cwd=d)
        with open(out, "rb") as f:
            theirs = f.read()
        check(status == 200 and p.returncode == 0 and data == theirs and
              headers.get("Content-Disposition") == 'attachment; filename="threads%s"' % ext,
              "/api/export format=%s: %d bytes, convert's %d, the same: %s; %s" %
              (fmt, len(data), len(theirs), data == theirs, headers.get("Content-Disposition")))
    pprof = os.environ.get("PPROF")
    if pprof and os.path.exists(pprof):
        pb = os.path.join(d, "export.pb.gz")
        with open(pb, "wb") as f:
            f.write(request("GET", "/api/export?" + urllib.parse.urlencode(dict(sel, format="pprof")))[2])
        top = run([pprof, "-top", "-sample_index=samples", pb])
        b = cli("threads.mscap", "--thread", "worker-b", "--time", "0s..0.2s")
        m = re.search(r"Total samples = (\d+)", top.stdout)
        check(top.returncode == 0 and m and int(m.group(1)) == b["all"]["samples"],
              "pprof reads the export: %s samples, report's %d" %
              (m and m.group(1), b["all"]["samples"]))
    for params, says in [({"format": "svg"}, "format"),
                         ({"format": "pprof", "diff": "split.mscap"}, "diff"),
                         ({"format": "pprof", "time": "x"}, "time")]:
        status, _, data = request("GET", "/api/export?" + urllib.parse.urlencode(
            dict(params, capture="threads.mscap")))
        check(status == 400 and says in json.loads(data)["error"],
              "/api/export %s: 400 naming %s: %s" % (params, says, data[:200]))

    # Bad parameters: 400, with a message that names the parameter.
    for params, says in [({"capture": "threads.mscap", "metric": "bogus"}, "metric"),
                         ({"capture": "threads.mscap", "views": "tree,nope"}, "views"),
                         ({"capture": "threads.mscap", "min_percent": "101"}, "min_percent"),
                         ({"capture": "threads.mscap", "top": "0"}, "top"),
                         ({"capture": "threads.mscap", "time": "2s..1s"}, "time"),
                         ({"capture": "threads.mscap", "colour": "red"}, "colour"),
                         ({}, "capture")]:
        e = get_json(api(**params), 400)["error"]
        check(says in e, "400 for %s: %r" % (params, e))
    e = get_json("/api/report?capture=threads.mscap&top=3&top=4", 400)["error"]
    check("twice" in e, "a parameter given twice is refused: %r" % e)
    e = get_json(api(capture="threads.mscap", metric="offcpu"), 422)["error"]
    check("off-CPU" in e or "offcpu" in e, "a metric the capture cannot give is 422: %r" % e)
    e = get_json(api(capture="threads.mscap", focus="a" * 5000), 422)["error"]
    check("longer than" in e, "a regex too long to compile safely is refused: %r" % e[-60:])
    e = get_json(api(capture="threads.mscap", focus="(" * 20000 + ")" * 20000), 414)["error"]
    check("URL" in e, "a URL too long is refused: %r" % e)
    e = get_json(api(capture="nope.mscap"), 404)["error"]
    check("nope.mscap" in e, "an unknown capture is 404: %r" % e)
    e = get_json(api(capture="bad.mscap"), 422)["error"]
    check(os.path.join(d, "bad.mscap") in e, "an unreadable capture is 422 naming the file: %r" % e)
    check(get_json(api(capture="split.mscap"))["all"]["samples"] > 0, "and the server goes on")

    # Read-only.
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]:
        status, headers, data = request(method, api(capture="threads.mscap"), body=b"x")
        check(status == 405 and headers.get("Allow") == "GET, HEAD" and b"read-only" in data,
              "%s is refused with 405: %d %s" % (method, status, data[:100]))
    status, headers, data = request("HEAD", api(capture="threads.mscap"))
    check(status == 200 and data == b"", "HEAD is answered without a body: %d" % status)

    # DNS rebinding: another name, another port, or another address is 403.
    for host in ["evil.example:%d" % port, "evil.example", "127.0.0.1:%d" % (port + 1),
                 "192.168.1.10:%d" % port, "127.0.0.1.evil.example:%d" % port, ""]:
        status, _, data = request("GET", "/api/captures", host=host)
        check(status == 403 and b"DNS rebinding" in data, "Host %r is refused: %d" % (host, status))
    for host in ["localhost:%d" % port, "127.0.0.1:%d" % port]:
        status, _, _ = request("GET", "/api/captures", host=host)
        check(status == 200, "Host %r is this server: %d" % (host, status))

    # No path reaches a file.
    with open(d + "/threads.mscap", "rb") as f:
        capture_head = f.read(64)
    for path in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/../../etc/passwd",
                 "/threads.mscap", "/" + d.lstrip("/") + "/threads.mscap", "/api/captures/..%2f..%2fetc%2fpasswd"]:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" %
                   (path, port)).encode())
        answer = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        s.close()
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
        # (401: an /api path without the token, refused before routing)
        check(status in (400, 401, 404) and b"root:" not in answer and capture_head not in answer,
              "GET %s reaches no file: %d" % (path, status))
finally:
    server.send_signal(signal.SIGINT)
    try:
        rc = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        rc = None
check(rc == 0, "Ctrl-C stops the server with status 0 (%s)" % rc)

# Bad targets: one error line, non-zero.
for target, says in [(d + "/missing.mscap", "no such file"), ("/dev/null", "not a regular file"),
                     (tmpdir(), "no .mscap file")]:
    p = run([MICROSCOPE, "serve", target], timeout=30)
    check(p.returncode != 0 and p.stderr.startswith("microscope: error: ") and says in p.stderr and
          p.stderr.count("\n") == 1, "serve %s: %r" % (target, p.stderr))

# A wider --bind warns, and then takes an IP literal of the machine as Host.
server = subprocess.Popen([MICROSCOPE, "serve", d + "/threads.mscap", "--bind", "0.0.0.0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    _, port, token = serve_url(server.stdout.readline())
    status, _, _ = request("GET", "/api/report", host="10.1.2.3:%d" % port)
    check(status == 200, "--bind 0.0.0.0: an IP literal Host is answered, the only capture "
          "without capture=: %d" % status)
    status, _, _ = request("GET", "/api/report", host="evil.example:%d" % port)
    check(status == 403, "--bind 0.0.0.0: a name is still refused: %d" % status)
    # Beyond the loopback, answers are gzipped for a client that takes it
    # (a network costs more than the compression); not for one that refuses.
    import gzip

    def fetch(encoding):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": "Bearer " + token}
        if encoding is not None:
            headers["Accept-Encoding"] = encoding
        c.request("GET", api(views="tree", min_percent="0"), headers=headers)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.getheader("Content-Encoding"), body

    plain_enc, plain = fetch(None)
    gz_enc, gz = fetch("br, gzip;q=0.8")
    no_enc, _ = fetch("gzip;q=0, br")
    check(plain_enc is None and gz_enc == "gzip" and gzip.decompress(gz) == plain and
          len(gz) < len(plain) / 3 and no_enc is None,
          "--bind 0.0.0.0: %d bytes plain, %d gzipped (%s), the same when inflated; gzip;q=0: %s" %
          (len(plain), len(gz), gz_enc, no_enc))
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
check("warning" in server.stderr.read(), "--bind 0.0.0.0 warns")

# serve A --diff B: both served, and the URL printed opens the comparison.
server = subprocess.Popen([MICROSCOPE, "serve", d + "/split.mscap", "--diff", d + "/threads.mscap"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    url = server.stdout.readline().strip()
    check(re.search(r"/\?token=[0-9a-f]{32}&capture=split\.mscap&diff=threads\.mscap$", url),
          "serve --diff prints the view's URL: %r" % url)
    _, port, token = serve_url(url)
    got = get_json("/api/report?capture=split.mscap&diff=threads.mscap")
    check(got == drawn(cli("split.mscap", "--diff", "threads.mscap"), {"diff": 1}),
          "and the API answers that diff")
    status, headers, page = request("GET", "/")
    if os.environ.get("WEB_DIR"):
        check(status == 200 and headers.get("Content-Type", "").startswith("text/html") and
              b"<script" in page, "GET / is the browser view: %d %s" % (status, headers.get("Content-Type")))
        script = re.search(rb'src="(/assets/[^"]+\.js)"', page).group(1).decode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", script, headers={"Accept-Encoding": "gzip, deflate, br"})
        r = conn.getresponse()
        r.read()
        check(r.status == 200 and r.getheader("Content-Encoding") is None and
              r.getheader("Content-Type").startswith("application/javascript"),
              "%s is sent plain as JavaScript: %s %s" % (script, r.getheader("Content-Type"),
                                                         r.getheader("Content-Encoding")))
        conn.close()
    else:
        check(status == 404 and b"built without its browser view" in page,
              "built without the view, GET / says so: %d %r" % (status, page[:100]))
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)

# A diff of two real programs of size: g++ compiling the same file at -O0
# and at -O2 (cc1plus, stripped: its functions are addresses, thousands of
# them, and some only in one of the two). The answers are the two call
# trees merged and pruned like any tree, never every call path.
gxx = os.path.join(d, "gxx")
os.mkdir(gxx)
with open(gxx + "/unit.cc", "w") as f:
    f.write("#include <bits/stdc++.h>\nint main() { std::map<int, std::string> m; m[1] = \"a\"; "
            "std::vector<int> v(10); std::sort(v.begin(), v.end()); return int(m.size() + v.size()); }\n")
for level in ("O0", "O2"):
    record(gxx + "/%s.mscap" % level, ["g++", "-" + level, "-c", gxx + "/unit.cc", "-o", gxx + "/unit.o"])
p = run([MICROSCOPE, "report", "--json", "--diff", gxx + "/O0.mscap", gxx + "/O2.mscap"])
check(p.returncode == 0, "report --diff of the two compiles: %s" % p.stderr[-500:])
check(len(p.stdout) < 5 << 20, "report --diff --json of the two compiles is under 5 MB: %d bytes" % len(p.stdout))
diff = json.loads(p.stdout)["diff"]
sides = {r["side"] for r in diff["total"]} | {r["side"] for r in diff["self"]}
check(diff["total_rows"] > 1000 and len(diff["total"]) <= 20,
      "the tables hold the top rows of %d functions: %d" % (diff["total_rows"], len(diff["total"])))
check(diff["pruned"] > 0 and diff["tree"], "the merged tree is pruned: %d nodes left out" % diff["pruned"])


def tree_shares(nodes, key):
    return sum(n[key] for n in nodes)


check(abs(tree_shares(diff["tree"], "base_share") - 1) < 0.01 and
      abs(tree_shares(diff["tree"], "other_share") - 1) < 0.01,
      "its roots hold each capture's whole: %.3f, %.3f" %
      (tree_shares(diff["tree"], "base_share"), tree_shares(diff["tree"], "other_share")))
all_rows = run([MICROSCOPE, "report", "--json", "--top", "100000", "--diff", gxx + "/O0.mscap",
                gxx + "/O2.mscap"])
one_side = [r for r in json.loads(all_rows.stdout)["diff"]["total"] if r["side"] != "both"]
check(one_side and all(r["base_value"] == 0 or r["other_value"] == 0 for r in one_side) and
      {r["side"] for r in one_side} <= {"base", "other"},
      "functions in one capture only are rows with their side: %d, e.g. %s" %
      (len(one_side), one_side[:1]))
server = subprocess.Popen([MICROSCOPE, "serve", gxx + "/O0.mscap", "--diff", gxx + "/O2.mscap"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    _, port, token = serve_url(server.stdout.readline())
    # The page's own query (web/src/state.ts: reportQuery).
    for views in ("tree", "inverted"):
        query = "/api/report?capture=O0.mscap&diff=O2.mscap&views=%s&min_percent=0.1&top=200" % views
        t0 = time.time()
        status, _, body = request("GET", query)
        took = time.time() - t0
        check(status == 200 and len(body) < 5 << 20,
              "the page's diff query (%s) answers %d bytes in %.2f s (under 5 MB)" % (views, len(body), took))
        got = json.loads(body)
        check(got["diff"]["tree"] and got[views], "with the merged tree and the %s" % views)
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)

# --open: the printed URL opened with $BROWSER (a script of the test that
# fetches it, as a browser would); a missing opener is a warning, and the
# server serves on.
opened = os.path.join(d, "opened")
opener = os.path.join(d, "opener")
with open(opener, "w") as f:
    f.write("#!/bin/sh\necho \"$1\" > %s.tmp && mv %s.tmp %s\n" % (opened, opened, opened))
os.chmod(opener, 0o755)
for browser, works in [(opener, True), (os.path.join(d, "no-such-browser"), False)]:
    server = subprocess.Popen([MICROSCOPE, "serve", d + "/split.mscap", "--diff", d + "/threads.mscap",
                               "--open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, BROWSER=browser))
    try:
        url = server.stdout.readline().strip()
        _, port, token = serve_url(url)
        if works:
            deadline = time.time() + 10 * LAG_FACTOR
            while not os.path.exists(opened) and time.time() < deadline:
                time.sleep(0.05)
            got = open(opened).read().strip() if os.path.exists(opened) else None
            check(got == url, "--open runs $BROWSER with the printed URL: %r" % got)
        status, _, _ = request("GET", "/api/captures")
        check(status == 200, "--open with %s: the server answers (%d)" % (browser, status))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    err = server.stderr.read()
    if not works:
        check("warning: --open: cannot run" in err and url in err,
              "a missing $BROWSER is a warning naming the URL: %r" % err)
