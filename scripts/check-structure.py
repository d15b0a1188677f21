#!/usr/bin/env python3
"""Checks the library's structure: the `use` graph between the files of host/src.

It reads every library file (not the `host` binary's `main.rs` and `cli/`, not test modules),
finds every path it names (`use` trees, `crate::`/`super::`/`self::` paths in code and in serde
attributes), resolves each to the file that defines it (following `pub use` re-exports, so a
facade hides no edge), and checks four rules:

1. no cycle between files (the binary's `cli/` files included: it has no layers, but its
   files may not import each other in a circle either);
2. no arrow from a lower layer to a higher one, the layers as docs/architecture.md lists them
   (its table between the `layers:begin` and `layers:end` markers, lowest layer first);
3. no import through a re-export of `lib.rs`: library code names the defining module;
4. no library function longer than 80 lines.

Prints the rooms (top-level modules), the arrows between them, and every violation; exits 1
when there is one. `--graph` prints the file-level arrows as well; `--root DIR` checks the
tree at DIR instead of this repository.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

# `--root DIR` checks another tree of the same shape (the tests give it small ones).
ROOT = (
    Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
    if "--root" in sys.argv
    else Path(__file__).resolve().parent.parent
)
SRC = ROOT / "host" / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# The binary's own modules: they may use anything of the library.
BINARY = {("main",), ("cli",)}
# A function longer than this many lines does more than one thing: split it.
MAX_FUNCTION_LINES = 80


def strip_code(text: str) -> tuple[str, list[str]]:
    """The text without comments and string contents; and the path-like strings it had."""
    out: list[str] = []
    strings: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            strings.append(text[i + 1 : j])
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out), strings


def drop_test_modules(code: str) -> tuple[str, set[str]]:
    """The code without `#[cfg(test)]` items; and the names of out-of-line test modules."""
    test_files: set[str] = set()
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])", code)
        if not m:
            return code, test_files
        if m.group(4) == ";":
            test_files.add(m.group(3))
            code = code[: m.start()] + code[m.end() :]
            continue
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[: m.start()] + code[j:]


def expand_tree(tree: str) -> list[tuple[list[str], str]]:
    """`a::{b, c::d as e}` -> [(['a','b'], 'b'), (['a','c','d'], 'e')]."""
    tree = re.sub(r"\s+", "", tree)
    results: list[tuple[list[str], str]] = []

    def walk(prefix: list[str], s: str) -> None:
        if "{" not in s:
            path, alias = s, None
            parts = [p for p in path.split("::") if p]
            if not parts:
                return
            last = parts[-1]
            if last == "self":
                parts = parts[:-1]
                last = parts[-1] if parts else "self"
            results.append((prefix + parts, alias or last))
            return
        head, _, rest = s.partition("{")
        inner = rest[: rest.rfind("}")]
        base = prefix + [p for p in head.split("::") if p]
        depth, start = 0, 0
        for k, ch in enumerate(inner + ","):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                item = inner[start:k]
                start = k + 1
                if item:
                    walk(base, item)

    walk([], tree)
    return results


def expand_use(tree: str) -> list[tuple[list[str], str]]:
    """Expands a use tree, keeping `as` aliases (read before the spaces are squeezed out)."""
    aliases: dict[str, str] = {}

    def keep_alias(m: re.Match[str]) -> str:
        key = f"ALIAS{len(aliases)}"
        aliases[key] = m.group(2)
        return m.group(1) + key

    marked = re.sub(r"(\w)\s+as\s+(\w+)", keep_alias, tree)
    out = []
    for path, name in expand_tree(marked):
        for key, alias in aliases.items():
            if path and path[-1].endswith(key):
                path = path[:-1] + [path[-1][: -len(key)]]
                name = alias
        out.append((path, name))
    return out


class Module:
    def __init__(self, path: tuple[str, ...], file: Path):
        self.path = path
        self.file = file
        self.reexports: dict[str, list[str]] = {}  # local name -> absolute path
        self.globs: list[list[str]] = []
        self.refs: list[tuple[list[str], bool]] = []  # (absolute path, via a use statement)
        self.children: set[str] = set()


def module_path(file: Path) -> tuple[str, ...]:
    rel = file.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def absolute(segments: list[str], here: tuple[str, ...], children: set[str]) -> list[str] | None:
    """A path as written in module `here`, made absolute; None for external crates."""
    if not segments:
        return None
    first = segments[0]
    if first == "crate":
        return segments[1:]
    if first in ("super", "self"):
        base = list(here)
        rest = segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        return base + rest
    if first in children:
        return list(here) + segments
    return None


def load() -> dict[tuple[str, ...], Module]:
    modules: dict[tuple[str, ...], Module] = {}
    test_only: set[tuple[str, ...]] = set()
    texts: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for file in sorted(SRC.rglob("*.rs")):
        path = module_path(file)
        code, strings = strip_code(file.read_text())
        code, tests = drop_test_modules(code)
        for name in tests:
            test_only.add(path + (name,))
        modules[path] = Module(path, file)
        texts[path] = (code, strings)
    for path in list(modules):
        if any(path[: len(t)] == t for t in test_only):
            del modules[path]
    for path, module in modules.items():
        module.children = {p[-1] for p in modules if len(p) == len(path) + 1 and p[:-1] == path}
    for path, module in modules.items():
        code, strings = texts[path]
        for m in re.finditer(r"(?:\b(pub)(\([^)]*\))?\s+)?\buse\s+([^;]+);", code):
            public = m.group(1) is not None
            for segments, name in expand_use(m.group(3)):
                target = absolute(segments, path, module.children)
                if target is None:
                    continue
                if public:
                    if name == "*":
                        module.globs.append(target[:-1])
                    else:
                        module.reexports[name] = target
                    # A facade re-exporting its own children adds no arrow; re-exporting
                    # from elsewhere depends on it.
                    if tuple(target[: len(path)]) != path or len(target) <= len(path):
                        module.refs.append((target, True))
                else:
                    module.refs.append((target, True))
        body = re.sub(r"\buse\s+[^;]+;", "", code)
        for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", body):
            segments = [m.group(1)] + m.group(2).split("::")[1:]
            target = absolute(segments, path, module.children)
            if target is not None:
                module.refs.append((target, False))
        for s in strings:
            if re.fullmatch(r"(crate|super)(::\w+)+", s):
                target = absolute(s.split("::"), path, module.children)
                if target is not None:
                    module.refs.append((target, False))
    return modules


def resolve(
    modules: dict[tuple[str, ...], Module], target: list[str], depth: int = 0
) -> tuple[tuple[str, ...], bool] | None:
    """The module that defines `target`; and whether the path went through a lib.rs re-export."""
    at: tuple[str, ...] = ()
    rest = list(target)
    while rest and at + (rest[0],) in modules:
        at, rest = at + (rest[0],), rest[1:]
    if not rest or depth > 8:
        return at, False
    module = modules.get(at)
    if module is None:
        return None
    if rest[0] in module.reexports:
        found = resolve(modules, module.reexports[rest[0]] + rest[1:], depth + 1)
        if found is None:
            return at, at == ()
        return found[0], found[1] or at == ()
    return at, False


ROOMS: set[str] = set()


def room(path: tuple[str, ...]) -> str:
    """The module's room: the longest prefix that docs/architecture.md lists."""
    for depth in range(len(path), 0, -1):
        name = "::".join(path[:depth])
        if name in ROOMS:
            return name
    return path[0] if path else "lib"


def layers() -> list[list[str]]:
    text = ARCHITECTURE.read_text()
    block = text.split("<!-- layers:begin -->")[1].split("<!-- layers:end -->")[0]
    rows = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            rows.append(re.findall(r"`(\w+(?:::\w+)*)`", cells[1]))
    return rows


def strongly_connected(nodes, edges) -> list[list]:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def name(path: tuple[str, ...], modules) -> str:
    return str(modules[path].file.relative_to(SRC)) if path in modules else "::".join(path)


def long_functions(limit: int) -> list[str]:
    """Library functions whose body is longer than `limit` lines (tests left out)."""
    found = []
    for file in sorted(SRC.rglob("*.rs")):
        if module_path(file)[:1] in {b[:1] for b in BINARY} or file.name == "tests.rs":
            continue
        code, _ = strip_code(file.read_text())
        code, _ = drop_test_modules(code)
        for m in re.finditer(r"\bfn\s+(\w+)[^;{]*\{", code):
            depth, j = 1, m.end()
            while j < len(code) and depth:
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
            lines = code.count("\n", m.start(), j) + 1
            if lines > limit:
                line = code.count("\n", 0, m.start()) + 1
                found.append(f"{file.relative_to(SRC)}:{line} fn {m.group(1)} is {lines} lines")
    return found


def binary_graph(modules, library) -> tuple[list, dict]:
    """The binary's files (`main.rs`, `cli/`) and the arrows between them (those into the
    library are its to take, and left out)."""
    binary = sorted(p for p in modules if p not in library)
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for path in binary:
        for target, _ in modules[path].refs:
            found = resolve(modules, target)
            if found is not None and found[0] != path and found[0] in binary:
                edges[path].add(found[0])
    return binary, edges


def main() -> int:
    ROOMS.update(r for row in layers() for r in row)
    modules = load()
    library = {p: m for p, m in modules.items() if p[:1] not in {b[:1] for b in BINARY} or p == ()}
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    through_lib: list[str] = []
    for path, module in library.items():
        for target, _ in module.refs:
            found = resolve(modules, target)
            if found is None:
                continue
            dest, via_lib = found
            if via_lib and path != ():
                through_lib.append(f"{name(path, modules)} names crate::{'::'.join(target)}")
            if dest != path and dest in library and dest != ():
                edges[path].add(dest)

    problems: list[str] = []
    for cycle in strongly_connected(sorted(library), edges):
        problems.append("cycle between files: " + " <-> ".join(name(p, modules) for p in cycle))
    binary, binary_edges = binary_graph(modules, library)
    for cycle in strongly_connected(sorted(binary), binary_edges):
        problems.append(
            "cycle between files of the binary: " + " <-> ".join(name(p, modules) for p in cycle)
        )

    room_edges: dict[str, set[str]] = defaultdict(set)
    for src, dests in edges.items():
        for dest in dests:
            if room(src) != room(dest) and src != ():
                room_edges[room(src)].add(room(dest))
    rooms = sorted({room(p) for p in library if p})
    for cycle in strongly_connected(rooms, room_edges):
        problems.append("cycle between modules: " + " <-> ".join(cycle))

    order = layers()
    level = {r: i for i, row in enumerate(order) for r in row}
    for r in rooms:
        if r not in level:
            problems.append(f"module `{r}` is in no layer of docs/architecture.md: add it there")
    for r in sorted({r for row in order for r in row} - set(rooms)):
        problems.append(f"docs/architecture.md lists `{r}`, which host/src does not have")
    upward = 0
    for src in sorted(room_edges):
        for dest in sorted(room_edges[src]):
            if src in level and dest in level and level[dest] > level[src]:
                upward += 1
                files = sorted(
                    f"{name(a, modules)} -> {name(b, modules)}"
                    for a, bs in edges.items()
                    for b in bs
                    if room(a) == src and room(b) == dest
                )
                problems.append(f"upward arrow {src} (layer {level[src]}) -> {dest} (layer {level[dest]}): {'; '.join(files)}")
    problems += [f"import through a lib.rs re-export: {t}" for t in sorted(set(through_lib))]
    problems += [f"long function (split it): {f}" for f in long_functions(MAX_FUNCTION_LINES)]

    arrows = sum(len(v) for v in room_edges.values())
    print(f"{len(rooms)} modules, {len(library) - 1} files, {sum(len(v) for v in edges.values())} file arrows, {arrows} module arrows, {upward} upward")
    if "--graph" in sys.argv:
        for src in sorted(edges):
            for dest in sorted(edges[src]):
                print(f"  {name(src, modules)} -> {name(dest, modules)}")
    else:
        for i, row in enumerate(order):
            print(f"  layer {i}: " + ", ".join(f"{r} -> {sorted(room_edges.get(r, ()))}" for r in row if r in rooms))
    for p in problems:
        print("error:", p)
    return 1 if problems else 0


def self_test() -> int:
    """Runs the check on small trees with one known fault each: it must find that fault."""
    import subprocess
    import tempfile

    table = "<!-- layers:begin -->\n| layer | modules |\n|---|---|\n| 0 | `low` |\n| 1 | `high` |\n<!-- layers:end -->\n"
    cases = {
        "a cycle": (
            {"low.rs": "pub mod a;\npub mod b;", "low/a.rs": "use super::b::B;\npub struct A;",
             "low/b.rs": "use super::a::A;\npub struct B;", "high.rs": ""},
            "cycle between files: low/a.rs <-> low/b.rs",
        ),
        "an upward arrow": (
            {"low.rs": "use crate::high::H;", "high.rs": "pub struct H;"},
            "upward arrow low (layer 0) -> high (layer 1)",
        ),
        "an import through lib.rs": (
            {"low.rs": "pub struct L;", "high.rs": "use crate::L;"},
            "import through a lib.rs re-export: high.rs names crate::L",
        ),
        "a long function": (
            {"low.rs": "fn long() {\n" + "    let _ = 1;\n" * 90 + "}", "high.rs": ""},
            "long function (split it): low.rs:1 fn long",
        ),
        "a cycle in the binary": (
            {"cli/mod.rs": "mod a;\nmod b;", "cli/a.rs": "pub fn f() {\n    super::b::g();\n}",
             "cli/b.rs": "use super::a::f;\npub fn g() {}", "low.rs": "pub struct L;", "high.rs": ""},
            "cycle between files of the binary: cli/a.rs <-> cli/b.rs",
        ),
        "nothing wrong": ({"low.rs": "pub struct L;", "high.rs": "use crate::low::L;"}, None),
    }
    failed = 0
    for name, (files, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            src = Path(root, "host", "src")
            (src / "low").mkdir(parents=True)
            Path(root, "docs").mkdir()
            Path(root, "docs", "architecture.md").write_text(table)
            (src / "lib.rs").write_text("mod high;\nmod low;\npub use low::L;\n")
            for path, text in files.items():
                (src / path).parent.mkdir(parents=True, exist_ok=True)
                (src / path).write_text(text + "\n")
            run = subprocess.run(
                [sys.executable, __file__, "--root", root], capture_output=True, text=True
            )
            ok = (run.returncode == 0) if expected is None else (
                run.returncode == 1 and expected in run.stdout
            )
            if not ok:
                failed += 1
                print(f"self-test: {name}: expected {expected!r}, got exit {run.returncode}:\n{run.stdout}")
    print(f"self-test: {len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(self_test() if "--self-test" in sys.argv else main())
