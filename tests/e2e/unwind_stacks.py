"""Whole stacks without frame pointers: fixtures built -O2
-fomit-frame-pointer (C and C++), recorded with the default call graph
(auto: CFI) and with -g dwarf. For each, the complete expected chain from the
outermost frame through main (or the thread start) to the hot leaf must hold
in at least 95% of the hot function's samples (99% in the epilogue case,
whose samples all lie after a `pop %rbp`: stacks once cut to one frame)."""
import collections

from common import *

require_perf()
d = tmpdir()

START = ["_start", "__libc_start_main", "__libc_start_call_main", "main"]
CASES = [
    ("recurse", [fixture("unwind"), "recurse"], "leaf_hot",
     START + ["run_recurse"] + ["recurse"] * 41 + ["leaf_hot"]),
    ("qsort", [fixture("unwind"), "qsort"], "cmp_hot",
     START + ["run_qsort", "__qsort_r", "msort_with_tmp.part.0", "cmp_hot"]),
    ("thread", [fixture("unwind"), "thread"], "leaf_hot",
     ["__clone3", "start_thread", "thread_start", "thread_work", "leaf_hot"]),
    ("signal", [fixture("unwind"), "signal"], "signal_burn",
     START + ["run_signal", "raise", "__pthread_kill_implementation", "__restore_rt", "on_signal",
              "signal_burn"]),
    ("dlopen", [fixture("unwind"), "dlopen", fixture("libunwind_plugin.so")], "plugin_inner",
     START + ["run_dlopen", "call_plugin", "plugin_burn", "plugin_inner"]),
    ("vdso", [fixture("unwind"), "vdso"], "__vdso_clock_gettime",
     START + ["run_vdso", "clock_gettime", "__vdso_clock_gettime"]),
    ("epilogue", [fixture("unwind"), "epilogue"], "epilogue_hot",
     START + ["run_epilogue", "epilogue_hot"]),
    ("c++", [fixture("unwind_cpp")], "burn_compare(unsigned int, unsigned int)",
     START + ["run_cpp(Worker&)", "SortingWorker::Run(int)", "burn_compare(unsigned int, unsigned int)"]),
]


# A function libc exports is named as it exports it (qsort_r, the default
# version of its aliases); code it does not export as libc6-dbg's DWARF
# names it (as addr2line and pprof do), or by the symbol table without it.
ALIASES = {
    "__libc_start_main": ("__libc_start_main_impl",),
    "__qsort_r": ("__GI___qsort_r", "qsort_r"),
    "msort_with_tmp.part.0": ("msort_with_tmp",),
    "raise": ("__GI_raise",),
    "clock_gettime": ("__GI___clock_gettime", "__clock_gettime"),
    "__clone3": ("clone3",),
}


def same_function(got, want):
    return got == want or got in ALIASES.get(want, ())


def matches(path, expected):
    """The path starts at the expected outermost frame and contains the
    expected frames in order (qsort's merge sort recurses a varying number of
    times between them; recurse must match exactly)."""
    if not same_function(path[0], expected[0]) or not same_function(path[-1], expected[-1]):
        return False
    it = iter(path)
    return all(any(same_function(p, e) for p in it) for e in expected)


for mode in ("auto", "dwarf"):
    for name, cmd, leaf, expected in CASES:
        out = "%s/%s-%s.mscap" % (d, name, mode)
        record(out, cmd, ["-g", mode])
        rep = report(out, "--tree", "--min-percent", "0")
        rows = leaf_samples(rep, leaf)
        total = sum(n for _, n in rows)
        good = sum(n for p, n in rows if matches(p, expected))
        if name in ("recurse", "epilogue"):
            good = sum(n for p, n in rows
                       if len(p) == len(expected) and all(map(same_function, p, expected)))
        check(total > 100, "%s/%s: %d samples in %s" % (mode, name, total, leaf))
        if good < 0.95 * total:
            worst = sorted((n, p) for p, n in rows if not matches(p, expected))[-1]
            print("most common other chain (%d): %s" % worst)
        need = 0.99 if name == "epilogue" else 0.95
        check(good >= need * total,
              "%s/%s: complete expected chain in %d of %d samples (%.1f%%)" %
              (mode, name, good, total, 100.0 * good / total))
        if name == "epilogue":
            # RBP's rule names a slot below the copy there; the stacks must
            # still end as complete, not cfa-outside-copy.
            hot = [line.split("\t") for line in run([os.environ["CAPTURE_STACKS"], out]).stdout.splitlines()]
            hot = [f for f in hot if f[0] == leaf]
            ends = collections.Counter(f[2] for f in hot)
            check(ends["complete"] >= 0.99 * len(hot),
                  "%s/epilogue: %d of %d stacks in %s end complete (%s)" %
                  (mode, ends["complete"], len(hot), leaf, dict(sorted(ends.items()))))
        if name == "vdso":
            # Samples that land in a PLT stub unwind through ld's CFA expression.
            plt = leaf_samples(rep, "clock_gettime@plt")
            plt_good = sum(n for p, n in plt if matches(p, START + ["run_vdso", "clock_gettime@plt"]))
            check(plt_good == sum(n for _, n in plt),
                  "%s/vdso: %d of %d PLT-stub samples complete" % (mode, plt_good, sum(n for _, n in plt)))
        h = rep["header"]
        check(h["call_graph"] == mode and h["stack_copy"] == 16384, "%s/%s: settings stored" % (mode, name))
        check(h["stack_ends"]["complete"] >= 0.95 * h["samples"],
              "%s/%s: %d of %d stacks complete" % (mode, name, h["stack_ends"]["complete"], h["samples"]))

# Frame pointers alone stop early in this build: the reason CFI exists.
out = d + "/recurse-fp.mscap"
record(out, [fixture("unwind"), "recurse"], ["-g", "fp"])
rows = leaf_samples(report(out, "--tree", "--min-percent", "0"), "leaf_hot")
fp_good = sum(n for p, n in rows if list(p) == CASES[0][3])
check(fp_good < 0.5 * sum(n for _, n in rows), "-g fp misses the chain (%d of %d)" % (fp_good, sum(n for _, n in rows)))

# Presets choose rate and stack copy; explicit flags override them.
out = d + "/preset.mscap"
record(out, [fixture("split"), "50"], ["--preset", "quick"])
h = report(out)["header"]
check(h["frequency"] == 499 and h["stack_copy"] == 8192, "quick preset: 499 Hz, 8 KiB")
record(out, [fixture("split"), "50"], ["--preset", "deep", "-F", "777", "--stack-copy", "4096"])
h = report(out)["header"]
check(h["frequency"] == 777 and h["stack_copy"] == 4096, "explicit -F and --stack-copy override the preset")
record(out, [fixture("split"), "50"], ["--preset", "deep"])
h = report(out)["header"]
check(h["frequency"] == 3999 and h["stack_copy"] == 65528, "deep preset: 3999 Hz, 65528 bytes")
p = run([MICROSCOPE, "record", "--stack-copy", "100", "-o", out, "--", fixture("split"), "1"])
check(p.returncode != 0 and "multiple of 8" in p.stderr, "--stack-copy 100 refused: %r" % p.stderr.strip())
