"""What the runtime walkers' benchmarks (python_walk.py, node_walk.py)
share: timing a fixture by its own clock, and the sampler program's run time
per walk from the kernel's BPF statistics."""
import json
import subprocess
import threading
import time


def timed(cmd, env):
    """The fixture's own time: the last line it prints (WORKLOAD_TIME=1)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return float(p.stdout.strip().splitlines()[-1])


def walk_stats():
    """(run_time_ns, run_cnt) of the loaded sampler program
    (bpf/sampler.bpf.c: walk_runtimes_at_sample), or None."""
    p = subprocess.run(["bpftool", "-j", "prog", "show", "name", "walk_runtimes_at_sample"],
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


def ns_per_walk(cmd, env):
    """Runs `cmd` (a recording) with BPF statistics on: the sampler
    program's ns per run, and its runs."""
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
