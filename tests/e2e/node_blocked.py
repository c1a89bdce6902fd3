"""JavaScript frames where a Node program blocks, as in its CPU samples: the
runtimes' BPF walk runs at off-CPU intervals and slow system calls too
(bpf/runtimes.bpf.h), on Debian's Node 20 and on Node 22, 24 and 26.

The fixture's blocked mode (tests/fixtures/node/workload.js) makes its main
thread wait 20 times 10 ms in Atomics.wait (waitAtomics), read a FIFO a
child writes a byte to every 10 ms, 20 times (readPipe), and write 64 MiB
at once (writeBig). Recorded with --off-cpu --syscalls --syscall-stack-min
1ms, the main thread's off-CPU intervals and its calls of a millisecond or
more must have those functions as their JavaScript callers: the walk finds
the frame-pointer chain in the stack where the C library's wrapper left
rbp holding something else."""
from common import *

require_perf()
nodes = fetch_nodes()
WORKLOAD = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "fixtures", "node", "workload.js"))
d = tmpdir()
CALLERS = ("waitAtomics", "readPipe", "writeBig")

for major, node in sorted(nodes.items(), key=lambda kv: int(kv[0])):
    cap = os.path.join(d, "blocked-%s.mscap" % major)
    p = run([MICROSCOPE, "record", "-q", "--node", "bpf", "--off-cpu", "--syscalls",
             "--syscall-stack-min", "1ms", "-o", cap, "--", node, WORKLOAD, "blocked"],
            timeout=120, cwd=d)
    check(p.returncode == 0 and "blocked done" in p.stdout,
          "node %s: blocked recorded (exit %d): %s" % (major, p.returncode, p.stderr[-1000:]))
    main = str(report(cap)["header"]["target_pid"])
    off = functions(report(cap, "--metric", "offcpu", "--thread", main, "--top", "1000"))
    intervals = {fn: off.get(fn, (0, 0))[1] for fn in CALLERS}
    # 20 waits of 10 ms each are 20 intervals; a read of the FIFO blocks
    # when the child has not written yet (about half of them here).
    check(intervals["waitAtomics"] >= 14 and intervals["readPipe"] >= 4,
          "node %s: off-CPU intervals of the main thread under its JavaScript callers: %s"
          % (major, intervals))
    calls = {}
    for c in report(cap, "--syscalls", "--thread", main, "--top", "1000")["syscalls"]["slowest"]:
        js = [f for f in c["stack"] if f in CALLERS]
        key = (c["syscall"], js[0] if js else None)
        calls[key] = calls.get(key, 0) + 1
    check(calls.get(("futex", "waitAtomics"), 0) >= 14 and calls.get(("read", "readPipe"), 0) >= 4
          and calls.get(("write", "writeBig"), 0) == 1,
          "node %s: calls of a millisecond or more with their JavaScript caller: %s"
          % (major, sorted((k, v) for k, v in calls.items() if k[1])))
