"""scripts/check-includes on this tree passes, and on a copy of it with
wrong includes added (the kinds the rooms once had: the unwinder including
symbols, record/ including a runtime, a runtime including another, serve
including the recorder) fails, naming each file and line."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CHECK = os.path.join(ROOT, "scripts", "check-includes")


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


p = run(ROOT)
if p.returncode != 0:
    fail("this tree's includes:\n" + p.stdout + p.stderr)
print(p.stdout.strip())

copy = tempfile.mkdtemp(prefix="microscope-include-check.")
try:
    for top in ("base", "capture", "analysis", "formats", "src", "bpf", "sdk", "docs"):
        shutil.copytree(os.path.join(ROOT, top), os.path.join(copy, top))
    wrong = {
        "src/unwind/unwinder.cc": "src/symbols/elf_image.h",
        "src/record/session.cc": "src/runtimes/python/source.h",
        "src/runtimes/node/walk.cc": "src/runtimes/python/walk.h",
        "src/serve/server.cc": "src/record/processor.h",
        "capture/reader.cc": "analysis/report.h",
    }
    lines = {}
    for path, header in wrong.items():
        with open(os.path.join(copy, path)) as f:
            lines[path] = sum(1 for _ in f) + 1
        with open(os.path.join(copy, path), "a") as f:
            f.write('#include "%s"\n' % header)
    p = run(copy)
    if p.returncode != 1:
        fail("wrong includes added, check-includes exited %d:\n%s" % (p.returncode, p.stdout))
    for path, header in wrong.items():
        want = "%s:%d: includes %s" % (path, lines[path], header)
        if want not in p.stdout:
            fail("not reported: %s\n%s" % (want, p.stdout))
    if "5 wrong includes" not in p.stdout:
        fail("more than the five added reported:\n" + p.stdout)
    print("the five wrong includes added are each reported, with file and line")
finally:
    shutil.rmtree(copy)
