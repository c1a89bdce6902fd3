"""Malformed capture files: report gives 'microscope: error: FILE: what and
where' and exit 1, never a crash: wrong magic, newer major version, truncation,
flipped bytes, indexes out of range, a stack cycle."""
import os
import random

from common import *

d = tmpdir()
good = d + "/good.mscap"
make_capture(good, "split")
data = open(good, "rb").read()


def expect_error(path, what, needle):
    p = run([MICROSCOPE, "report", path])
    check(p.returncode == 1, "%s: exit status 1 (got %d)" % (what, p.returncode))
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    check(line.startswith("microscope: error: %s: " % path), "%s: error names the file: %r" % (what, line))
    check(needle in line, "%s: error says %r: %r" % (what, needle, line))
    check(not os.path.exists(path + ".tmp"), "no stray output")


def write(name, content):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(content)
    return path


expect_error(write("magic.mscap", b"XXXXXXXX" + data[8:]), "wrong magic", "wrong magic")
newer = bytearray(data)
newer[8] = 9
expect_error(write("newer.mscap", bytes(newer)), "newer major version", "newer than this microscope reads")
expect_error(write("trunc-header.mscap", data[:17]), "truncated header", "truncated")
expect_error(write("trunc-body.mscap", data[: len(data) // 2]), "truncated body", "truncated")
expect_error(write("empty.mscap", b""), "empty file", "truncated")

for mode, needle in (("stack-cycle", "is not an earlier node (a cycle"),
                     ("stack-range", "].stack = "),
                     ("thread-range", "samples[0].thread = "),
                     ("string-range", "functions[0].name = ")):
    out = os.path.join(d, mode + ".mscap")
    p = run([os.environ["CAPTURE_CORRUPT"], good, out, mode])
    check(p.returncode == 0, "corrupt tool wrote " + mode)
    expect_error(out, mode, needle)

# Flipped bytes anywhere: an error, or (reserved header bytes, bits zstd
# ignores) exactly the report of the intact file; never a crash, a hang, or
# a silently different answer.
good_report = run([MICROSCOPE, "report", "--tree", good]).stdout
rng = random.Random(42)
crashes = 0
errors = 0
for i in range(150):
    b = bytearray(data)
    at = rng.randrange(len(b))
    b[at] ^= 1 << rng.randrange(8)
    path = write("flip.mscap", bytes(b))
    p = run([MICROSCOPE, "report", "--tree", path], timeout=30)
    if p.returncode not in (0, 1):
        crashes += 1
        print("flip at %d: exit %d %s" % (at, p.returncode, p.stderr[-200:]))
    if p.returncode == 1:
        errors += 1
        if not p.stderr.startswith("microscope: error: " + path + ": "):
            fail("flip at %d: error without the file name: %r" % (at, p.stderr))
    elif p.stdout != good_report:
        fail("flip at %d was read as a different capture without an error" % at)
check(crashes == 0, "150 single-bit flips: no crash (%d refused)" % errors)
