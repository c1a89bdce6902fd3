#!/usr/bin/env python3
"""Writes microscope's man pages (one per command) and its bash completion
from the built binary's own --help, so that both say what the CLI does.

  gen_cli_docs.py MICROSCOPE OUTDIR COMMAND...

OUTDIR gets microscope.1, microscope-COMMAND.1 for each subcommand, and
microscope (the bash completion). The COMMANDs are the subcommands the
build expects to install pages of: another set is an error, so that a new
command cannot go without its page."""
import os
import re
import subprocess
import sys

OPTION = re.compile(r"^  (-\S+)(.*)$")
SECTION = re.compile(r"^([A-Z][A-Za-z -]*):$")


def run_help(binary, *args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True).stdout
    # The usage line names the binary as it was called: name it as a user would.
    return re.sub(r"Usage: \S+", "Usage: microscope", out)


def parse(text):
    """{description: [lines], usage: str, sections: [(title, [(flags, arg, help)])]}."""
    lines = text.splitlines()
    usage_at = next(i for i, l in enumerate(lines) if l.startswith("Usage:"))
    page = {"description": lines[:usage_at], "usage": lines[usage_at][len("Usage: "):], "sections": []}
    current = None
    for line in lines[usage_at + 1:]:
        m = SECTION.match(line)
        if m:
            current = (m.group(1), [])
            page["sections"].append(current)
            continue
        if current is None or not line.strip():
            continue
        if line.startswith("  ") and not line.startswith("   "):
            # "  -o,--output TEXT=x   help" or "  name TYPE   help" or a subcommand.
            body = line[2:]
            parts = re.split(r"\s{2,}", body, maxsplit=1)
            head = parts[0]
            help_text = parts[1] if len(parts) > 1 else ""
            words = head.split(" ", 1)
            current[1].append([words[0], words[1] if len(words) > 1 else "", help_text])
        elif current[1]:
            # A continuation: the help on its own line, or more of it.
            entry = current[1][-1]
            entry[2] = (entry[2] + "\n" + line.strip()) if entry[2] else line.strip()
    return page


def roff(text):
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + l) if l.startswith((".", "'")) else l for l in out.split("\n"))


def man_page(name, summary, page, see_also, version):
    title = name.upper()
    out = ['.TH "%s" "1" "" "microscope %s" "User Commands"' % (title, version), ".SH NAME",
           "%s \\- %s" % (roff(name), roff(summary)), ".SH SYNOPSIS", ".B " + roff(page["usage"]), ".SH DESCRIPTION"]
    description = page["description"]
    for line in description:
        if line.startswith("  "):
            out += [".nf", roff(line.strip()), ".fi"]
        elif line.strip():
            out.append(roff(line.strip()))
        else:
            out.append(".PP")
    for title, entries in page["sections"]:
        out.append(".SH " + roff(title.upper()))
        for flags, arg, help_text in entries:
            out.append(".TP")
            out.append("\\fB%s\\fR %s" % (roff(flags), roff(arg)))
            out.append(roff(help_text.replace("\n", " ")))
    if see_also:
        out += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(1)" % roff(s) for s in see_also)]
    return "\n".join(out) + "\n"


def option_words(entries):
    """Every flag spelling, and {flag: [choices]} for those that take one of a set."""
    flags, choices = [], {}
    for flag, arg, _ in entries:
        if not flag.startswith("-"):
            continue
        spellings = re.sub(r"\{[^}]*\}", "", flag).split(",")
        flags += spellings
        m = re.search(r":\{([^}]*)\}", arg)
        if m:
            for s in spellings:
                choices[s] = m.group(1).split(",")
    return flags, choices


def completion(commands):
    """A bash completion function over the subcommands' flags and choices."""
    lines = ["# bash completion for microscope (generated from its --help by scripts/gen_cli_docs.py)",
             "_microscope() {",
             '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
             "  for ((i = 1; i < COMP_CWORD; i++)); do",
             '    case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac',
             "  done",
             '  if [[ -z "$cmd" ]]; then',
             '    COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))' % " ".join(sorted(commands)),
             "    return",
             "  fi",
             '  case "$cmd" in']
    for name, page in sorted(commands.items()):
        entries = [e for _, es in page["sections"] for e in es]
        flags, choices = option_words(entries)
        lines.append("    %s)" % name)
        if choices:
            lines.append('      case "$prev" in')
            for flag, values in sorted(choices.items()):
                lines.append('        %s) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;' % (flag, " ".join(values)))
            lines.append("      esac")
        lines.append('      if [[ "$cur" == -* ]]; then')
        lines.append('        COMPREPLY=($(compgen -W "%s" -- "$cur"))' % " ".join(flags))
        lines.append("      else")
        lines.append('        COMPREPLY=($(compgen -f -- "$cur"))')
        lines.append("      fi")
        lines.append("      ;;")
    lines += ["  esac", "}", "complete -o filenames -F _microscope microscope", ""]
    return "\n".join(lines)


def main():
    binary, outdir, expected = sys.argv[1], sys.argv[2], sorted(sys.argv[3:])
    os.makedirs(outdir, exist_ok=True)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
    top = parse(run_help(binary))
    subcommands = next(entries for title, entries in top["sections"] if title == "Subcommands")
    commands = {}
    summaries = {}
    found = sorted(name for name, _, _ in subcommands)
    if found != expected:
        sys.exit("gen_cli_docs.py: the binary's commands are %s, the build lists %s: update "
                 "packaging/meson.build" % (found, expected))
    for name, _, help_text in subcommands:
        commands[name] = parse(run_help(binary, name))
        summaries[name] = help_text.split("\n")[0].rstrip(".")
    pages = {"microscope": man_page("microscope", top["description"][0].split(": ", 1)[-1], top,
                                    ["microscope-" + n for n in sorted(commands)], version)}
    for name, page in commands.items():
        pages["microscope-" + name] = man_page("microscope-" + name, summaries[name], page, ["microscope"], version)
    for name, text in pages.items():
        with open(os.path.join(outdir, name + ".1"), "w") as f:
            f.write(text)
    with open(os.path.join(outdir, "microscope"), "w") as f:
        f.write(completion(commands))


if __name__ == "__main__":
    main()
