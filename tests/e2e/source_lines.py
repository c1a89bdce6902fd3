"""report --source FUNCTION and report --asm FUNCTION (and serve's source
and assembly views, which show the same JSON): a function's source lines,
or its machine code, with the samples at each, read on this host from the
files the capture names, or why they cannot be read.

Native: the threads fixture's burn_units (inlined from burn.h into three
workers), whose lines' costs must be the ones report --granularity line
gives. Python: a script of the test's own whose hot loop must hold nearly
all of its function's samples; then the script is cut short (not the file
that was profiled), made binary, and removed (not readable), and the report
says so.

Assembly: work_c (burn_units inlined in it) disassembled as objdump -d
does, instruction by instruction, its samples all on its instructions and
adding up to what report --inlines off counts for it; thread_c's samples
on its call to work_c; a file with another build ID under the capture's
path is refused, saying so; libc's internal _int_free (its symbols in
libc6-dbg's debug file) alike against objdump."""
import re
import shutil

from common import *

require_perf()
d = tmpdir()

# Native code with DWARF lines.
cap = os.path.join(d, "threads.mscap")
record(cap, [fixture("threads"), "400"])
src = report(cap, "--source", "burn_units")["source"]
by_line = {f["function"]: f for f in report(cap, "--granularity", "line")["functions"]
           if f["function"].startswith("burn_units ")}
check(src["function"] == "burn_units" and len(src["files"]) == 1 and
      src["files"][0]["path"].endswith("/burn.h"), "burn_units' lines are in burn.h: %s" %
      [f["path"] for f in src["files"]])
f = src["files"][0]
for line in f["lines"]:
    want = by_line.get("burn_units burn.h:%d" % line["line"])
    check(want is not None and want["self"]["samples"] == line["self"]["samples"] and
          want["total"]["samples"] == line["total"]["samples"],
          "burn.h:%d: %d self, %d total samples, as --granularity line counts them (%s)" %
          (line["line"], line["self"]["samples"], line["total"]["samples"],
           want and (want["self"]["samples"], want["total"]["samples"])))
flat = functions(report(cap))
check(sum(l["self"]["samples"] for l in f["lines"]) == flat["burn_units"][0] and
      src["total"]["samples"] == flat["burn_units"][1],
      "its lines' self samples add up to burn_units' self (%d), its total is burn_units' (%d)" %
      flat["burn_units"])
with open(f["path"]) as h:
    text = h.read().split("\n")
check(f["text"] == text[f["first"] - 1:f["first"] - 1 + len(f["text"])] and
      f["first"] <= f["lines"][0]["line"] and
      f["first"] + len(f["text"]) > f["lines"][-1]["line"],
      "the text is the file's lines %d-%d, around the costed ones" %
      (f["first"], f["first"] + len(f["text"]) - 1))
hot = max(f["lines"], key=lambda l: l["self"]["samples"])
code = f["text"][hot["line"] - f["first"]]
out = run([MICROSCOPE, "report", "--source", "burn_units", cap]).stdout
row = "%7s %7s %6d  %s" % (hot["self"]["text"], hot["total"]["text"], hot["line"], code)
check(row in out.split("\n"), "report --source prints the hottest line with its code: %r" % row)

# Errors: a function the capture does not have.
p = run([MICROSCOPE, "report", "--source", "no_such_function", cap])
check(p.returncode != 0 and "no function named 'no_such_function'" in p.stderr and
      p.stderr.count("\n") == 1, "an unknown function is one error line: %r" % p.stderr)

# Assembly: the same capture's work_c, against objdump's disassembly.
binary = fixture("threads")
asm = report(cap, "--asm", "work_c")["assembly"]
check(len(asm["modules"]) == 1 and asm["modules"][0]["path"] == binary and
      "unreadable" not in asm["modules"][0], "work_c's code is in %s: %s" %
      (binary, [(m["path"], m.get("unreadable")) for m in asm["modules"]]))
m = asm["modules"][0]
check(len(m["ranges"]) == 1 and m["ranges"][0]["symbol"] == "work_c",
      "one symbol holds its samples: %s" % [r["symbol"] for r in m["ranges"]])
insns = m["ranges"][0]["instructions"]
dump = run(["objdump", "-d", "--disassemble=work_c", binary]).stdout
want = [int(l.split(":")[0], 16) for l in dump.split("\n")
        if re.match(r"^\s+[0-9a-f]+:\t[0-9a-f]{2} .*\t\S", l)]
check([i["address"] for i in insns] == want and want,
      "its instructions start where objdump's do (%d, from %#x)" % (len(want), want[0] if want else 0))
off = functions(report(cap, "--inlines", "off"))["work_c"]
self_sum = sum(i["self"]["samples"] for i in insns if "self" in i)
check(self_sum == off[0] and m["outside"]["samples"] == 0 and
      asm["total"]["samples"] == off[1] and asm["not_native"]["samples"] == 0,
      "its instructions' self samples (%d) are work_c's own with inlines folded (%d), total %d "
      "of %d, none outside its code" % (self_sum, off[0], asm["total"]["samples"], off[1]))
hot = max(insns, key=lambda i: i.get("self", {}).get("samples", 0))
out = run([MICROSCOPE, "report", "--asm", "work_c", cap]).stdout
row = "%7s %7s %10x:  %s" % (hot["self"]["text"], hot["total"]["text"], hot["address"], hot["text"])
check(row in out.split("\n"), "report --asm prints the hottest instruction: %r" % row)
caller = report(cap, "--asm", "thread_c")["assembly"]["modules"][0]
calls = [i for r in caller["ranges"] for i in r["instructions"] if "total" in i]
check(len(calls) == 1 and calls[0]["text"].startswith("call") and
      calls[0].get("target") == "work_c" and calls[0]["total"]["samples"] == off[1] and
      calls[0]["self"]["samples"] == 0,
      "thread_c's samples are all on its call to work_c: %s" %
      [(i["text"], i.get("target"), i["total"]["samples"]) for i in calls])
# Another program under the recorded path's name: refused by build ID.
root = os.path.join(d, "root")
os.makedirs(root)
shutil.copy(fixture("spin2"), os.path.join(root, os.path.basename(binary)))
m = report(cap, "--asm", "work_c", "--source-root", root, "--trim-path",
           os.path.dirname(binary))["assembly"]["modules"][0]
check("is not the file recorded: its build ID is" in m.get("unreadable", "") and
      "ranges" not in m and m["addresses"],
      "a file with another build ID is not disassembled: %r" % m.get("unreadable"))

# A stripped library (Debian's libc.so.6, exports only in .dynsym): its
# internal _int_free is found in libc6-dbg's debug file by build ID.
cap_alloc = os.path.join(d, "alloc.mscap")
record(cap_alloc, [fixture("alloc"), "30000000"])
m = report(cap_alloc, "--asm", "_int_free")["assembly"]["modules"][0]
check(m["path"].endswith("/libc.so.6") and [r["symbol"] for r in m.get("ranges", [])] == ["_int_free"],
      "_int_free's code is read with the debug file's symbols: %s %r" %
      (m["path"], m.get("unreadable")))
r = m["ranges"][0]
dump = run(["objdump", "-d", "--start-address=%#x" % r["start"],
            "--stop-address=%#x" % (r["start"] + r["size"]), m["path"]]).stdout
want = [int(l.split(":")[0], 16) for l in dump.split("\n")
        if re.match(r"^\s+[0-9a-f]+:\t[0-9a-f]{2} .*\t\S", l)]
check([i["address"] for i in r["instructions"]] == want and want,
      "its instructions start where objdump's do (%d)" % len(want))
off = functions(report(cap_alloc, "--inlines", "off"))["_int_free"]
check(sum(i["self"]["samples"] for i in r["instructions"] if "self" in i) == off[0] and
      m["outside"]["samples"] == 0, "its instructions' self samples are _int_free's own (%d)" % off[0])

# Python, walked by BPF: the lines of a script of our own.
script = os.path.join(d, "hot.py")
with open(script, "w") as h:
    h.write("import time\n"
            "\n"
            "def hot(n):\n"
            "    x = 0\n"
            "    for i in range(n):\n"
            "        x += i * i\n"
            "    return x\n"
            "\n"
            "t = time.monotonic()\n"
            "while time.monotonic() - t < 0.4:\n"
            "    hot(20000)\n")
python = os.path.realpath("/usr/bin/python3.11")
cap = os.path.join(d, "hot.mscap")
record(cap, [python, script], extra=("--python", "bpf"))
src = report(cap, "--source", "hot")["source"]
files = {f["path"]: f for f in src["files"]}
check(script in files, "hot's lines are in %s: %s" % (script, list(files)))
f = files[script]
# Python frames are rarely the innermost (the interpreter runs them): the
# lines' totals say where hot() was.
loop = sum(l["total"]["samples"] for l in f["lines"] if l["line"] in (5, 6))
check(src["total"]["samples"] > 100 and loop >= 0.9 * src["total"]["samples"],
      "the loop (lines 5-6) holds %d of hot's %d samples" % (loop, src["total"]["samples"]))
check(f["text"][6 - f["first"]] == "        x += i * i", "the script's line 6 as written")

# The file on this host is not the one profiled, or is gone: said, with the
# costed lines still listed.
with open(script, "w") as h:
    h.write("import time\n")
f = report(cap, "--source", "hot")["source"]["files"][0]
check("not the file that was profiled" in f.get("unreadable", "") and "text" not in f and
      f["lines"], "a shorter file: %r" % f.get("unreadable"))
with open(script, "wb") as h:
    h.write(b"import time\n\0" * 10)
f = report(cap, "--source", "hot")["source"]["files"][0]
check("is not a text file" in f.get("unreadable", ""), "a binary file: %r" % f.get("unreadable"))
os.unlink(script)
f = report(cap, "--source", "hot")["source"]["files"][0]
check("not readable on this host: No such file or directory" in f.get("unreadable", ""),
      "a missing file: %r" % f.get("unreadable"))
os.mkfifo(script)
f = report(cap, "--source", "hot")["source"]["files"][0]
check("not a regular file" in f.get("unreadable", ""), "a FIFO is not read: %r" % f.get("unreadable"))
out = run([MICROSCOPE, "report", "--source", "hot", cap]).stdout
check("(%s is not a regular file)" % script in out, "report --source says why in its text")
