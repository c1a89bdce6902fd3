"""Ground truth from a peer: the -O2 -fomit-frame-pointer fixtures recorded by
`perf record --call-graph dwarf,16384` and by microscope (default: auto).
For each hot function, the distribution of caller chains (the callers'
addresses, leaf to root) must agree; the agreement is the overlap of the two
distributions (sum over chains of the smaller share)."""
import collections
import random
import shutil
import statistics

from common import *

require_perf()
if shutil.which("perf") is None:
    fail("perf (Debian package linux-perf) is needed for this comparison")
d = tmpdir()


def perf_chains(data, hot):
    """Caller chains of the samples whose leaf is hot (without inlined
    functions: microscope names inline frames only after symbolization with
    debug information)."""
    chains = collections.Counter()
    for frames in perf_user_stacks(data):
        if frames and frames[0][1] in hot:
            chains[tuple(a for a, _ in frames[1:])] += 1
    return chains


def our_chains(capture, hot):
    out = run([os.environ["CAPTURE_STACKS"], capture]).stdout
    chains = collections.Counter()
    for line in out.splitlines():
        leaf, callers, _ = line.split("\t")
        if leaf not in hot:
            continue
        chains[tuple(int(x, 16) for x in callers.split(",") if x)] += 1
    return chains


def edges(chains):
    """Caller edges (callee's return site, caller's return site) weighted by
    samples: robust where recursion makes exact chains too many to sample."""
    out = collections.Counter()
    for chain, n in chains.items():
        for edge in zip(chain, chain[1:]):
            out[edge] += n
    return out


def agreement(a, b):
    ta, tb = sum(a.values()), sum(b.values())
    if ta == 0 or tb == 0:
        return 0.0
    return sum(min(a[k] / ta, b[k] / tb) for k in set(a) | set(b))


def coverage(a, b):
    """Share of a's samples on chains that b recorded too."""
    return sum(n for chain, n in a.items() if chain in b) / max(1, sum(a.values()))


def noise_floor(a, b):
    """The chain agreement two recordings of one and the same distribution
    (the two pooled) fall below only by chance: four standard deviations
    under the mean of simulated pairs of the same sizes. With ~250 samples
    over ~20 chains the mean is near 87%, so a fixed threshold would fail
    on sampling noise alone."""
    pooled = a + b
    keys, weights = list(pooled), list(pooled.values())
    rng = random.Random(15)
    sims = []
    for _ in range(400):
        sa = collections.Counter(rng.choices(keys, weights, k=sum(a.values())))
        sb = collections.Counter(rng.choices(keys, weights, k=sum(b.values())))
        sims.append(agreement(sa, sb))
    return statistics.mean(sims) - 4 * statistics.stdev(sims)


cases = [
    ("recurse", [fixture("unwind"), "recurse"], {"leaf_hot"}),
    ("qsort", [fixture("unwind"), "qsort"], {"cmp_hot"}),
    ("thread", [fixture("unwind"), "thread"], {"leaf_hot"}),
    ("signal", [fixture("unwind"), "signal"], {"signal_burn"}),
    ("dlopen", [fixture("unwind"), "dlopen", fixture("libunwind_plugin.so")], {"plugin_inner"}),
    # Samples after an epilogue's pop %rbp: RBP's CFI slot lies below the copy.
    ("epilogue", [fixture("unwind"), "epilogue"], {"epilogue_hot"}),
    ("c++", [fixture("unwind_cpp")], {"burn_compare(unsigned int, unsigned int)", "burn_compare"}),
]
rates = []
for name, cmd, hot in cases:
    data = d + "/perf-%s.data" % name
    p = run(["perf", "record", "-q", "--call-graph", "dwarf,16384", "-F", "999", "-o", data, "--"] + cmd)
    check(p.returncode == 0, "%s: perf record ran" % name)
    cap = d + "/%s.mscap" % name
    record(cap, cmd)
    pc, mc = perf_chains(data, hot), our_chains(cap, hot)
    # One known difference: microscope records a signal trampoline's frame
    # (__restore_rt) at its exact address, so that it is named; perf keeps
    # the return address - 1, one byte before the symbol, and leaves it
    # unnamed. Compare those frames at the exact address.
    ours = {a for chain in mc for a in chain}
    pc = collections.Counter({tuple(a + 1 if a not in ours and a + 1 in ours else a for a in chain): n
                              for chain, n in pc.items()})
    rate = agreement(pc, mc)
    edge_rate = agreement(edges(pc), edges(mc))
    rates.append((name, rate, edge_rate))
    print("%-8s perf %4d hot samples in %3d chains; microscope %4d in %3d chains; "
          "chain agreement %.1f%%, caller-edge agreement %.1f%%" %
          (name, sum(pc.values()), len(pc), sum(mc.values()), len(mc), 100 * rate, 100 * edge_rate))
    check(sum(pc.values()) > 50 and sum(mc.values()) > 50, "%s: both sampled the hot function" % name)
    check(edge_rate >= 0.9,
          "%s: caller edges agree with perf's (%.1f%%)" % (name, 100 * edge_rate))
    if len(pc) <= 30:
        # Few distinct chains: nearly every sample's whole chain is one the
        # other recorded too (an unwinder that truncates or strays makes
        # chains perf never has), and the two distributions differ no more
        # than sampling noise makes two recordings of one program differ.
        cov_ours, cov_perf = coverage(mc, pc), coverage(pc, mc)
        check(min(cov_ours, cov_perf) >= 0.92,
              "%s: %.1f%% of microscope's samples are on chains perf recorded, %.1f%% of perf's on ours"
              % (name, 100 * cov_ours, 100 * cov_perf))
        floor = 1.0 if len(pc | mc) == 1 else noise_floor(pc, mc)
        check(rate >= floor - 1e-9, "%s: caller chains agree with perf's (%.1f%%, noise floor %.1f%%)"
              % (name, 100 * rate, 100 * floor))
print("summary: " + "; ".join("%s chains %.1f%% edges %.1f%%" % (n, 100 * r, 100 * e) for n, r, e in rates))
