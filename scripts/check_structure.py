#!/usr/bin/env python3
"""Checks the shape of coil's source tree (DESIGN.md, "Layout"); run by CTest as `structure`.

1. Folders import one way. Each folder of src/ has a layer; a file may include headers of
   its own folder and of lower layers only (folders of one layer never include each other):

     support < expr < graph < frontend, io < ir < passes, lowering < scheduler
             < codegen < runtime < driver < tools, python

   The public API (include/coil/) includes no header of src/, so that it can be installed,
   and the Python module (src/python/) includes the public API only.
2. No source file is longer than 900 lines.

(That the emitters call no planner is tests/unit/cpp_plan_test.cpp's TheEmitterCallsNoPlanner.)
Prints every violation as FILE:LINE: message and exits 1 when there is one.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = {
    "support": 0, "expr": 1, "graph": 2, "frontend": 3, "io": 3, "ir": 4, "passes": 5, "lowering": 5,
    "scheduler": 6, "codegen": 7, "runtime": 8, "driver": 9, "tools": 10, "python": 10,
}
# Folders that may include only the public API (include/coil/).
PUBLIC_ONLY = {"python"}
MAX_LINES = 900
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def sources(*dirs):
    for d in dirs:
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".h", ".cpp"):
                yield p


def check_layers(problems):
    for path in sources("src"):
        folder = path.relative_to(ROOT / "src").parts[0]
        if folder not in LAYERS:
            problems.append(f"{path.relative_to(ROOT)}:1: folder src/{folder} has no layer in scripts/check_structure.py")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if m and folder in PUBLIC_ONLY and m.group(1) != "coil":
                problems.append(f"{path.relative_to(ROOT)}:{number}: src/{folder} binds the public API only, "
                                f"not {m.group(1)}/")
                continue
            if not m or m.group(1) not in LAYERS or m.group(1) == folder:
                continue
            if LAYERS[m.group(1)] >= LAYERS[folder]:
                problems.append(f"{path.relative_to(ROOT)}:{number}: src/{folder} includes {m.group(1)}/, "
                                f"which is not below it")
    for path in sources("include"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) != "coil":
                problems.append(f"{path.relative_to(ROOT)}:{number}: the public API includes {m.group(1)}/ of src")


def check_lengths(problems):
    for path in sources("src", "include", "tools"):
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}:{lines}: {lines} lines; split it (at most {MAX_LINES})")


def main():
    problems = []
    check_layers(problems)
    check_lengths(problems)
    for p in problems:
        print(p)
    print(f"structure: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
