"""A hostile target cannot exhaust the recorder: what a profiled program
writes for the recorder to read (its perf map, its jitdump, GDB JIT
objects, probe rings) is held to one bound per recording
(--target-memory), and past it the recording goes on and is written, with
a note. Each bomb once got the root recorder OOM-killed:

- a 64 MiB perf map of tiny lines (~1 GB of symbols);
- a jitdump whose 30,000 code moves each copied a 2 MiB unwinding record;
- 300 GDB JIT entries naming one 3 MiB object, each read and parsed again;
- a probe ring whose next ring is itself, full: 32 MiB allocated per visit.

The recorder's peak RSS is watched while it runs and it is killed past
twice what is allowed, so a regression fails here without taking the
machine's memory. What is allowed: the peak of the same recording of the
well-behaved fixture, plus the bound, plus 48 MiB of slack (one read of a
file past the bound is kept; allocator noise)."""
import threading
import time

from common import *

require_perf()
d = tmpdir()
BOUND = 64 << 20
# Under the sanitizers memory is theirs (shadow, quarantine): the bombs run
# and what they say is checked, but not the recorder's RSS.
MEASURED = not SANITIZED


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def watched(args, limit_bytes):
    """Runs `args` (a recording), its peak RSS read every 20 ms; killed when
    past limit_bytes. (returncode, stdout, stderr, peak bytes, killed)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}

    def drain(name, stream):
        out[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", p.stdout), ("err", p.stderr))]
    for t in threads:
        t.start()
    peak, killed = 0, False
    deadline = time.monotonic() + 240 * LAG_FACTOR
    while p.poll() is None:
        hwm = status_kib(p.pid, "VmHWM")
        if hwm is not None:
            peak = max(peak, hwm * 1024)
        if peak > limit_bytes and not killed:
            killed = True
            p.kill()
        if time.monotonic() > deadline:
            p.kill()
            fail("%s did not end within 240 s" % args)
        time.sleep(0.02)
    for t in threads:
        t.join()
    return p.returncode, out.get("out", ""), out.get("err", ""), peak, killed


def cleanup(pid):
    for left in ("/tmp/perf-%s.map" % pid, "/tmp/jit-%s.dump" % pid):
        if pid.isdigit() and os.path.exists(left):
            os.unlink(left)


def record_watched(name, command, extra, allowed, bound=BOUND):
    cap = os.path.join(d, name + ".mscap")
    rc, out, err, peak, killed = watched(
        [MICROSCOPE, "record", "-q", "--target-memory", str(bound >> 20) + "M", "-o", cap, *extra, "--", *command],
        2 * allowed if MEASURED else 6 << 30)
    words = out.split()
    cleanup(words[-1] if words else "")
    if MEASURED:
        check(not killed, "%s: the recorder stayed under twice the allowed %d MiB (peak %d MiB)" %
              (name, allowed >> 20, peak >> 20))
    check(rc == 0 and os.path.exists(cap), "%s: the recording ended and was written (rc %d): %s" %
          (name, rc, err[-400:]))
    return cap, peak


def jit_values(rep):
    return rep["header"].get("sources", {}).get("jit", {}).get("values", {})


# The same recordings of well-behaved programs: the recorder's own peak.
_, base_jit = record_watched("perfmap", [fixture("jit"), "perfmap", "60000"], (), 8 << 30)
_, base_probes = record_watched("probes", [fixture("probes"), "attach", "2"], ("--probes", "all"), 8 << 30)
print("baseline peaks: jit %d MiB, probes %d MiB" % (base_jit >> 20, base_probes >> 20))
# Its peak varies with the machine's load (21-45 MiB here): at least 48 MiB.
base_jit, base_probes = max(base_jit, 48 << 20), max(base_probes, 48 << 20)

# Each bomb: under its baseline plus the bound, and the capture says why
# it stopped reading.
for mode, extra in (("mapbomb", ()), ("dumpbomb", ("-g", "dwarf")), ("gdbbomb", ("-g", "dwarf"))):
    allowed = base_jit + BOUND + (48 << 20)
    cap, peak = record_watched(mode, [fixture("jit"), mode, "60000"], extra, allowed)
    check(not MEASURED or peak <= allowed, "%s: peak RSS %d MiB within the allowed %d MiB (baseline %d MiB + %d MiB bound)" %
          (mode, peak >> 20, allowed >> 20, base_jit >> 20, BOUND >> 20))
    rep = report(cap, "--min-percent", "0")
    fns = {f["function"]: f for f in rep["functions"]}
    notes = rep["header"]["notes"]
    if mode == "mapbomb":
        # Its lines before jit_spin's are more than the bound: it is never
        # reached, and the note says why.
        said = [n for n in notes if "target memory" in n]
        check(said and "--target-memory" in said[0], "mapbomb: the note says the map was read no further: %s" %
              notes)
    elif mode == "dumpbomb":
        # Moved in place, 30,000 times, back to where it runs: named there.
        spin = fns.get("jit_spin_dump")
        check(spin is not None and spin["self"]["samples"] > 0.5 * rep["header"]["samples"],
              "dumpbomb: the code moved back and forth is named where it ends (%s of %d samples)" %
              (spin and spin["self"]["samples"], rep["header"]["samples"]))
    else:
        spin = fns.get("jit_spin_gdb")
        values = jit_values(rep)
        check(spin is not None and spin["self"]["samples"] > 0.5 * rep["header"]["samples"],
              "gdbbomb: the object, read once, names the code (%s of %d samples)" %
              (spin and spin["self"]["samples"], rep["header"]["samples"]))
        check(values.get("gdb_jit_objects") == 1 and values.get("gdb_jit_objects_aliased") == 299,
              "gdbbomb: one object read, 299 aliases refused: %s" % values)

# The ring that is its own next: a malformed list, counted; the program's
# zones before it are still recorded.
allowed = base_probes + BOUND + (48 << 20)
cap, peak = record_watched("cycle", [fixture("probes"), "cycle", "2"], ("--probes", "all"), allowed)
check(not MEASURED or peak <= allowed, "cycle: peak RSS %d MiB within the allowed %d MiB" % (peak >> 20, allowed >> 20))
rep = report(cap, "--min-percent", "0")
problems = {p["kind"]: p for p in rep["header"].get("problems", [])}
malformed = problems.get("probe rings malformed")
check(malformed is not None and "comes back" in malformed["example"] and
      "probe records malformed" in problems,
      "cycle: the ring list that comes back to itself is a malformed ring, its words copied once "
      "(and found not to be records): %s" % sorted(problems))

# A bound smaller than one ring's words: the ring is not copied at all, and
# the capture says the rings were read no further.
cap, peak = record_watched("cycle-small", [fixture("probes"), "cycle", "2"],
                           ("--probes", "all"), allowed, bound=16 << 20)
rep = report(cap, "--min-percent", "0")
problems = {p["kind"]: p for p in rep["header"].get("problems", [])}
check(any("target memory" in k for k in problems) and "probe records malformed" not in problems,
      "cycle under 16M: its 32 MiB of words never copied, and that said: %s" % sorted(problems))
