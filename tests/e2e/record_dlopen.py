"""A library dlopened mid-run: its frames are named and attributed to it."""
from common import *

require_perf()
d = tmpdir()
out = d + "/dlopen.mscap"
lib = fixture("libfixture_plugin.so")
record(out, [fixture("dlopen"), lib])
rep = report(out, "--tree", "--min-percent", "0")
by_name = {f["function"]: f for f in rep["functions"]}
check("plugin_inner" in by_name, "plugin_inner named")
check(by_name["plugin_inner"]["module"] == "libfixture_plugin.so",
      "plugin_inner in libfixture_plugin.so (%s)" % by_name["plugin_inner"]["module"])
pi = by_name["plugin_inner"]["total"]["samples"]
chain = samples_under_chain(rep, ["main", "call_plugin", "plugin_burn", "plugin_inner"])
check(chain >= 0.95 * pi, "main > call_plugin > plugin_burn > plugin_inner in %d of %d" % (chain, pi))
before = by_name["before_load"]["total"]["samples"]
check(1.4 <= pi / max(before, 1) <= 2.8, "plugin/before_load = %.2f (work ratio 2)" % (pi / max(before, 1)))
