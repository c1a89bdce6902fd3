"""Malformed capture files: report gives 'microscope: error: FILE: what and
where' and exit 1, never a crash: wrong magic, newer major version, truncation,
flipped bytes, indexes out of range, a stack cycle; and what is no capture
file at all (a directory, a FIFO, /dev/zero, a missing file, one that grows
while read) to every command that reads one."""
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

# Not a capture file at all, to every command that reads one: a directory,
# a FIFO (nobody writing: opening it must not wait), /dev/zero (reading it
# must not go on forever), a missing file. One error line naming the file,
# exit 1, well inside the timeout; nothing written under the output's name.
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo)
missing = os.path.join(d, "missing.mscap")
out = os.path.join(d, "out")
for path, needle in ((d, "not a regular file"), (fifo, "not a regular file"),
                     ("/dev/zero", "not a regular file"), (missing, "No such file")):
    for cmd in (["report"], ["convert", "--to", "pprof", "-o", out], ["convert", "--to", "folded", "-o", out],
                ["symbolize", "-o", out]):
        try:
            p = run([MICROSCOPE, *cmd, path], timeout=20)
        except subprocess.TimeoutExpired:
            fail("%s %s: no answer in 20 s" % (" ".join(cmd), path))
        lines = p.stderr.strip().splitlines()
        check(p.returncode == 1 and len(lines) == 1 and
              lines[0].startswith("microscope: error: %s: " % path) and needle in lines[0] and
              not os.path.exists(out),
              "%s %s: one error line (%r), exit %d, no output" % (" ".join(cmd), path, lines, p.returncode))

# A capture that grows while it is read (a writer appending to it): read
# as it was when opened, or refused; never a hang or a crash.
grow = os.path.join(d, "grow.mscap")
with open(grow, "wb") as f:
    f.write(data)
good_plain = run([MICROSCOPE, "report", good]).stdout
writer = subprocess.Popen(["sh", "-c", "for i in $(seq 2000); do printf 'xxxxxxxxxxxxxxxx' >> %s; done" % grow])
p = run([MICROSCOPE, "report", grow], timeout=20)
writer.wait()
# Which of the two depends on how far the writer got: exactly the intact
# report (read before anything was appended), or refused with the file's
# name (its size no longer the header's); nothing else.
check((p.returncode == 0 and p.stdout == good_plain) or
      (p.returncode == 1 and p.stderr.startswith("microscope: error: " + grow + ": ") and not p.stdout),
      "a capture growing while read: exit %d, %s %r" %
      (p.returncode, "the intact report" if p.stdout == good_plain else "other output", p.stderr[-200:]))
p = run([MICROSCOPE, "report", grow])
check(p.returncode == 1 and "truncated or padded" in p.stderr,
      "once grown, refused as padded: %r" % p.stderr.strip()[-200:])

# symbolize with a debug directory that does not exist: frames stay
# unnamed, the summary says where it looked; no crash.
nowhere = os.path.join(d, "no-such-dir")
p = run([MICROSCOPE, "symbolize", "--debug-dir", nowhere, "-o", os.path.join(d, "sym.mscap"), good],
        timeout=60)
check(p.returncode == 0 and "looked debug dir %s/.build-id/" % nowhere in p.stdout and
      "not there" in p.stdout, "symbolize with a missing debug dir: exit %d, the summary says it looked "
      "there and found nothing: %r %r" % (p.returncode, p.stdout[-400:], p.stderr[-200:]))
# The same report, but for the two lines that say it was symbolized.
symbolized = [l for l in run([MICROSCOPE, "report", "--tree", os.path.join(d, "sym.mscap")]).stdout.splitlines()
              if not l.startswith(("symbols ", "note        symbolized on "))]
check(symbolized == good_report.splitlines(), "and the capture it wrote reports as the original")
