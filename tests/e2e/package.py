"""The Debian package, round trip: built from a copy of the repository by
dpkg-buildpackage -b, lintian clean of errors, installed with dpkg, its files
where Debian expects them (binary, DWARF reader helper, man page per command, bash
completion, systemd unit that systemd-analyze accepts), a recording made and
reported with the installed binary, then removed and purged leaving nothing."""
import glob
import json
import os
import re
import shutil
import subprocess

from common import *

require_perf()  # root: dpkg installs into the system
SOURCE = os.environ["SOURCE_ROOT"]
d = tmpdir()
tree = d + "/microscope"
os.mkdir(tree)
files = run(["git", "-C", SOURCE, "ls-files", "-co", "--exclude-standard", "-z"]).stdout.split("\0")
for f in files:
    if not f or not os.path.isfile(os.path.join(SOURCE, f)):
        continue
    os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
    shutil.copy2(os.path.join(SOURCE, f), os.path.join(tree, f), follow_symlinks=False)

# noopt: Debian's own option for a quick build (-O0), and no debug info
# (dpkg-buildflags' DEB_*FLAGS_STRIP): the package's files, not its speed or
# its -dbgsym package, are under test here, and its compile is most of the
# test (without -g: 228 s, where the whole test took 273-428 s in CI). By
# clang, which compiles it at -O0 in 115 s where gcc took 163 s here (gcc
# compiles the same code in build/, clang in build-asan/).
env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck noopt parallel=%d" % os.cpu_count(),
           DEB_CFLAGS_STRIP="-g", DEB_CXXFLAGS_STRIP="-g", CC="clang", CXX="clang++")
p = run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree, env=env, timeout=3000)
if p.returncode != 0:
    print(p.stdout[-6000:])
    print(p.stderr[-3000:])
check(p.returncode == 0, "dpkg-buildpackage -b built the package")
debs = glob.glob(d + "/microscope_*_amd64.deb")
check(len(debs) == 1, "one package: %s" % debs)
deb = debs[0]

p = run(["lintian", "--fail-on", "error", "--suppress-tags", "no-manual-page", deb], timeout=600)
errors = [l for l in p.stdout.splitlines() if l.startswith("E:")]
check(p.returncode == 0 and not errors, "lintian finds no error (%s)" % (errors or p.stderr.strip()[:300]))
print("lintian:\n" + p.stdout)

p = run(["dpkg", "-i", deb])
check(p.returncode == 0, "dpkg -i installed it (%s)" % p.stderr)
try:
    listed = run(["dpkg", "-L", "microscope"]).stdout.split()
    arch = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    want = ["/usr/bin/microscope",
            "/usr/lib/%s/microscope/microscope-dwarf" % arch,
            "/usr/share/bash-completion/completions/microscope",
            "/lib/systemd/system/microscope@.service",
            "/usr/share/microscope/rules/cpu_bound.sql"]
    commands = ["convert", "doctor", "query", "record", "report", "serve", "snapshot", "symbolize",
                "syscalls", "triage"]
    want += ["/usr/share/man/man1/microscope.1.gz"]
    want += ["/usr/share/man/man1/microscope-%s.1.gz" % c for c in commands]
    missing = [w for w in want if w not in listed and w.replace("/lib/systemd", "/usr/lib/systemd") not in listed]
    check(not missing, "installed where Debian expects them (missing: %s)" % missing)
    p = run(["man", "-P", "cat", "microscope-record"], env=dict(os.environ, MANWIDTH="100"))
    check(p.returncode == 0 and "--continuous" in p.stdout and "--rolling" in p.stdout,
          "man microscope-record documents the flags of the installed binary")
    p = run(["bash", "-c", "source /usr/share/bash-completion/completions/microscope; "
             "COMP_WORDS=(microscope record --pre); COMP_CWORD=2; _microscope; echo \"${COMPREPLY[*]}\"; "
             "COMP_WORDS=(microscope record --preset ''); COMP_CWORD=3; _microscope; echo \"${COMPREPLY[*]}\""])
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines[:2] == ["--preset", "quick default deep"],
          "bash completion completes flags and their choices: %s" % lines)
    unit = [f for f in listed if f.endswith("microscope@.service")][0]
    inst = d + "/microscope@demo.service"
    shutil.copy(unit, inst)
    p = run(["systemd-analyze", "verify", "--man=no", inst])
    check(p.returncode == 0, "systemd-analyze verify accepts the unit (%s)" % p.stderr.strip())
    # A recording with the installed binary, named through its installed
    # DWARF reader: not the build tree's (which the tests' environment
    # names), and with no line tables cached (a cached table needs no reader).
    installed = {k: v for k, v in os.environ.items() if k != "MICROSCOPE_DWARF_HELPER"}
    installed["MICROSCOPE_CACHE_DIR"] = d + "/empty-cache"
    out = d + "/installed.mscap"
    p = run(["/usr/bin/microscope", "record", "-q", "--symbolize", "later", "-o", out, "--",
             fixture("split"), "300"], env=installed)
    check(p.returncode == 0, "the installed binary records (%s)" % p.stderr)
    p = run(["/usr/bin/microscope", "symbolize", out], env=installed)
    lines = re.search(r"(\d+) with file:line", p.stdout)
    check(p.returncode == 0 and lines and int(lines.group(1)) > 0 and "DWARF reader" not in p.stdout,
          "the installed binary reads DWARF lines through its installed reader: %s" %
          [l for l in p.stdout.splitlines() if "file:line" in l or "problem" in l][:3])
    p = run(["/usr/bin/microscope", "report", "--json", "--granularity", "line", out], env=installed)
    check(p.returncode == 0 and "split.c:" in p.stdout, "and reports them")
    p = run(["/usr/bin/microscope", "query", "--format", "csv", out,
             "SELECT name FROM function_costs ORDER BY self DESC LIMIT 1"], env=installed)
    flat = json.loads(run(["/usr/bin/microscope", "report", "--json", out], env=installed).stdout)
    check(p.returncode == 0 and p.stdout.split() == ["name", flat["functions"][0]["function"]],
          "and queries them as report counts them: %s" % p.stdout.split())
finally:
    p = run(["dpkg", "--purge", "microscope"])
check(p.returncode == 0, "dpkg --purge removed it (%s)" % p.stderr)
left = [f for f in listed if os.path.isfile(f) and not f.startswith("/usr/share/doc/")]
check(not left, "nothing it installed is left: %s" % left)
check(not os.path.exists("/usr/bin/microscope"), "no /usr/bin/microscope")
