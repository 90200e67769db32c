#!/usr/bin/env python3
"""Lists the functions in C++ sources longer than a limit (default 80 lines), longest first.

A function here is a definition that starts at column 0 (the tree's style indents no namespace)
and ends at the next `}` at column 0, or a method defined inside a class body (indented two
spaces) that ends at the next `}` indented the same; initialised tables (`... = {`) and lambdas
are not functions.

  tools/lint/long_functions.py src            # every function over 80 lines
  tools/lint/long_functions.py --limit 60 src/sim
"""
import argparse
import os
import re
import sys

NOT_FUNCTIONS = ("namespace", "struct", "class", "enum", "using", "template", "#",
                 "static_assert", "return", "if", "for", "while", "switch", "case", "else")


def functions(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for indent in ("", "  "):
        start = re.compile("^" + indent + r"[A-Za-z_~][^;]*\(")
        i = 0
        while i < len(lines):
            line = lines[i]
            body = line[len(indent):]
            lambda_ = re.search(r"\[[^\]]*\]\s*\(", line)
            if start.match(line) and not body.startswith(NOT_FUNCTIONS) and not lambda_:
                # The signature runs until the line that opens the body (or a `;`: a declaration).
                j = i
                while j < len(lines) and not lines[j].rstrip().endswith("{") and ";" not in lines[j]:
                    j += 1
                opener = lines[j].split("(")[0] if j < len(lines) else ""
                if j < len(lines) and lines[j].rstrip().endswith("{") and "=" not in opener:
                    k = j + 1
                    while k < len(lines) and not lines[k].startswith(indent + "}"):
                        k += 1
                    name = re.sub(r"\s+", " ", line.split("(")[0]).strip().split(" ")[-1]
                    yield name, i + 1, k - i + 1
                    i = k
            i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--limit", type=int, default=80)
    a = ap.parse_args()
    found = []
    for root in a.paths:
        walk = [(root, [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
        for d, _, files in walk:
            for name in files:
                if not name.endswith((".cc", ".h")):
                    continue
                p = d if os.path.isfile(d) else os.path.join(d, name)
                for fn, line, n in functions(p):
                    if n > a.limit:
                        found.append((n, p, line, fn))
    for n, p, line, fn in sorted(found, reverse=True):
        print(f"{n:5d}  {p}:{line}  {fn}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
