"""What the runtime walkers' benchmarks (python_walk.py, node_walk.py)
share: timing a fixture by its own clock, and the walk's run time per
sample from the kernel's BPF statistics."""
import json
import statistics
import subprocess
import threading
import time


def timed(cmd, env):
    """The fixture's own time: the last line it prints (WORKLOAD_TIME=1)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return float(p.stdout.strip().splitlines()[-1])


def walk_stats():
    """(run_time_ns, run_cnt) of the program each sample runs first, or None:
    the user stack copier (bpf/stack.bpf.c: copy_stack_at_sample), whose run
    time includes the runtimes' walk it tail-calls (walk_runtimes_at_sample
    has no runs of its own)."""
    p = subprocess.run(["bpftool", "-j", "prog", "show", "name", "copy_stack_at_sample"],
                       capture_output=True, text=True)
    try:
        progs = json.loads(p.stdout)
    except ValueError:
        return None
    progs = progs if isinstance(progs, list) else [progs]
    for prog in progs:
        if "run_cnt" in prog:
            return prog.get("run_time_ns", 0), prog["run_cnt"]
    return None


def ns_per_sample(cmd, env):
    """Runs `cmd` (a recording) with BPF statistics on: the sampling
    programs' ns per sample, and the samples."""
    last = [None]
    done = threading.Event()

    def poll():
        while not done.is_set():
            s = walk_stats()
            if s:
                last[0] = s
            time.sleep(0.02)

    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    t = threading.Thread(target=poll)
    t.start()
    try:
        timed(cmd, env)
    finally:
        done.set()
        t.join()
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=True)
    ns, cnt = last[0] or (0, 0)
    return ns / max(1, cnt), cnt


def ns_per_walk(cmd, env, pairs=5):
    """The walk's ns per sample while `cmd` (a recording with `--node bpf`
    or `--python bpf`) runs: the sampling programs' cost per sample, less
    theirs on a run with that walker off just before, the median over
    `pairs` such pairs (the copy's cost moves from run to run by more than
    the walk costs); and the samples of the last run."""
    at = next(i for i, a in enumerate(cmd) if a in ("--node", "--python")) + 1
    differences = []
    for _ in range(pairs):
        off, _ = ns_per_sample(cmd[:at] + ["off"] + cmd[at + 1:], env)
        on, cnt = ns_per_sample(cmd, env)  # last: its capture is the one callers read
        differences.append(on - off)
    return statistics.median(differences), cnt
