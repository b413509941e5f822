#!/usr/bin/env python3
"""import-graph.py [CHECKOUT] [--why]: the `use` graph between the top-level
modules of crates/varve/src (the files and folders directly under src/),
checked against the layer order of ARCHITECTURE.md.

A module depends on another when its non-test code names `crate::other`, or
a name the crate root re-exports from it (`crate::Error` is `error`). It
prints every module's dependencies, then every import that points up (from a
lower layer to a higher one) and every cycle; with --why, the file and line
of each upward import. Exit status 1 if any import points up or any cycle
exists, so CI can run it.

Needs only python3. Test code is left out: a `#[cfg(test)]` item and
everything after it in a file, and files named tests.rs or in tests/.
"""
import os
import re
import sys

# Bottom up; a module may import from its own layer and those below.
LAYERS = [
    ("ground", ["error", "keys", "filenames", "internal_iter", "snapshot", "range_del", "sync", "util"]),
    ("io", ["io"]),
    ("formats and stores", ["batch", "wal", "memtable", "sst", "blob"]),
    ("merging", ["iter"]),
    ("versions", ["version"]),
    ("compaction", ["compaction"]),
    ("options", ["options"]),
    ("database", ["db"]),
    ("tools", ["tools", "fuzzing"]),
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    why = "--why" in sys.argv
    root = os.path.join(args[0] if args else ".", "crates/varve/src")
    layer_of = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}
    lib = open(os.path.join(root, "lib.rs"), encoding="utf-8").read()
    # Names the crate root re-exports -> the module that holds them.
    rootname = {}
    for m in re.finditer(r"pub use ([a-z_][a-z0-9_]*)(?:::[A-Za-z0-9_]+)*::(\{[^}]*\}|[A-Za-z0-9_]+)", lib):
        for name in re.findall(r"[A-Za-z0-9_]+", m.group(2)):
            rootname[name] = m.group(1)
    deps = {}  # module -> {dep: [(file, line)]}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs") or f == "tests.rs" or f.startswith("loom_tests"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if os.sep + "tests" + os.sep in os.sep + rel:
                continue
            top = rel.split(os.sep)[0].removesuffix(".rs")
            if top == "lib":
                continue
            deps.setdefault(top, {})
            text = open(path, encoding="utf-8", errors="replace").read()
            text = text.split("#[cfg(test)]")[0]
            for no, line in enumerate(text.split("\n"), 1):
                code = line.split("//")[0]
                found = set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)\b", code))
                for group in re.findall(r"\bcrate::\{([^}]*)\}?", code):
                    found |= {rootname[x] for x in re.findall(r"\b([A-Za-z][A-Za-z0-9_]*)\b", group) if x in rootname}
                for name in re.findall(r"\bcrate::([A-Z][A-Za-z0-9_]*)", code):
                    if name in rootname:
                        found.add(rootname[name])
                for d in found:
                    if d in rootname.values() or d in layer_of:
                        if d != top:
                            deps[top].setdefault(d, []).append((rel, no))
    bad = 0
    print("modules and what they import (layer in brackets):")
    for m in sorted(deps, key=lambda m: (layer_of.get(m, 99), m)):
        ds = sorted(deps[m], key=lambda d: (layer_of.get(d, 99), d))
        print(f"  [{layer_of.get(m, '?')}] {m} -> {', '.join(ds) if ds else '-'}")
    unknown = sorted(m for m in deps if m not in layer_of)
    if unknown:
        print(f"modules missing from the layer list: {', '.join(unknown)}")
        bad += len(unknown)
    up = [(m, d) for m in deps for d in deps[m] if layer_of.get(d, -1) > layer_of.get(m, 99)]
    print(f"imports that point up: {len(up)}")
    for m, d in sorted(up):
        print(f"  {m} -> {d}")
        if why:
            for rel, no in deps[m][d]:
                print(f"      {rel}:{no}")
    bad += len(up)
    cycles = strongly_connected({m: set(ds) for m, ds in deps.items()})
    print(f"cycles: {len(cycles)}" + ("; " + " | ".join(", ".join(c) for c in cycles) if cycles else ""))
    bad += len(cycles)
    sys.exit(1 if bad else 0)


def strongly_connected(graph):
    """Tarjan's algorithm; returns the components of more than one module."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    main()
