#!/usr/bin/env python3
"""File-level import graph of a Rust crate, its circles and its file sizes.

Usage::

    python3 scripts/rust_imports.py [crates/xlat/src]            # circles and long files
    python3 scripts/rust_imports.py --edges [crates/xlat/src]    # every edge, one per line

An edge ``a.rs -> b.rs`` means that code in ``a.rs`` names an item that ``b.rs`` defines: by a
``use`` or by a path in the code (``crate::os::phys::PhysMem``, ``super::Os``, ``phys::PhysMem``
where ``phys`` is a child module or a module brought in by ``use``). A path resolves to the
deepest module on it that exists, then through that module's re-exports (``pub use``) to the file
that defines the item: ``crate::os::Os`` is an edge to ``os/mod.rs`` when ``Os`` is defined there,
to ``os/state.rs`` when ``os/mod.rs`` says ``pub use state::Os``. A re-export itself is not an
edge (it names, it does not use), nor is a ``mod x;`` declaration.

Test code is left out: ``#[cfg(test)]`` items (inline ``mod tests { .. }`` and files declared
under ``#[cfg(test)]``), because a test module may use everything around it.

A *circle* is a strongly connected component of more than one file: files that can only be
understood together. ``tests/test_architecture.py`` asserts there are none and that no non-test
source file is longer than ``MAX_LINES``.

What must stay true: the parser is lexical (comments and string literals removed, ``use`` trees
expanded); macros that build paths from tokens are not followed. It errs toward reporting an
edge (a name that happens to equal a child module's followed by ``::`` counts).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MAX_LINES = 1200

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(src: str) -> str:
    """The source with comments, string and char literals blanked (newlines kept).

    >>> strip_comments_and_strings('let a = "crate::x"; // crate::y\\nb')
    'let a = ""; \\nb'
    """
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:]) and (i == 0 or not src[i - 1].isalnum()):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * src.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}') or a lifetime ('a): blank only the literal.
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def strip_cfg_test(text: str) -> tuple[str, set[str]]:
    """Remove ``#[cfg(test)]`` items; return the rest and the names of test-only child files.

    >>> strip_cfg_test("a\\n#[cfg(test)]\\nmod tests {\\n use super::*;\\n}\\nb")[0].split()
    ['a', 'b']
    >>> strip_cfg_test("#[cfg(test)]\\nmod tests;\\n")[1]
    {'tests'}
    """
    test_files: set[str] = set()
    pat = re.compile(r"#\[cfg\(test\)\]\s*")
    while True:
        m = pat.search(text)
        if not m:
            return text, test_files
        start, k = m.start(), m.end()
        # Further attributes on the same item.
        while text.startswith("#[", k):
            k = text.find("]", k) + 1
            while k < len(text) and text[k].isspace():
                k += 1
        mod_decl = re.match(rf"(pub(\([^)]*\))?\s+)?mod\s+({_IDENT})\s*;", text[k:])
        if mod_decl:
            test_files.add(mod_decl.group(3))
            end = k + mod_decl.end()
        else:
            brace, semi = text.find("{", k), text.find(";", k)
            if semi >= 0 and (brace < 0 or semi < brace):
                end = semi + 1
            else:
                end = _matching_brace(text, brace) + 1
        text = text[:start] + "\n" * text.count("\n", start, end) + text[end:]


def use_leaves(tree: str) -> list[tuple[str, list[str]]]:
    """(name brought into scope, path) for each leaf of a ``use`` tree; ``self`` folded in, a
    glob ends in ``*``.

    >>> use_leaves("crate::a::{b as c, d::{self, e}, f::*}")  # doctest: +NORMALIZE_WHITESPACE
    [('c', ['crate', 'a', 'b']), ('d', ['crate', 'a', 'd']), ('e', ['crate', 'a', 'd', 'e']),
     ('*', ['crate', 'a', 'f', '*'])]
    """
    out: list[tuple[str, list[str]]] = []

    def walk(prefix: list[str], t: str) -> None:
        t = t.strip()
        if not t:
            return
        brace = t.find("{")
        if brace < 0:
            alias = re.search(rf"\s+as\s+({_IDENT})\s*$", t)
            if alias:
                t = t[: alias.start()]
            segs = prefix + [x.strip() for x in t.split("::") if x.strip()]
            if segs and segs[-1] == "self":
                segs = segs[:-1]
            if segs:
                out.append((alias.group(1) if alias else segs[-1], segs))
            return
        head = [x.strip() for x in t[:brace].split("::") if x.strip()]
        inner = t[brace + 1 : t.rfind("}")]
        depth, part = 0, ""
        for ch in inner + ",":
            if ch == "," and depth == 0:
                walk(prefix + head, part)
                part = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            part += ch

    walk([], tree)
    return out


class Crate:
    """The module tree of a crate rooted at ``src`` (``lib.rs``), file by file."""

    def __init__(self, src: Path):
        self.src = src
        self.files: dict[tuple[str, ...], Path] = {}  # module path -> file defining it
        self.text: dict[Path, str] = {}
        self.test_only: set[Path] = set()
        self._reexports: dict[tuple[str, ...], dict[str, list[str]]] = {}
        self._load((), src / "lib.rs", test=False)

    def _child_file(self, parent_file: Path, name: str) -> Path | None:
        base = parent_file.parent
        if parent_file.name not in ("lib.rs", "mod.rs", "main.rs"):
            base = base / parent_file.stem
        for cand in (base / f"{name}.rs", base / name / "mod.rs"):
            if cand.exists():
                return cand
        return None

    def _load(self, modpath: tuple[str, ...], path: Path, test: bool) -> None:
        self.files[modpath] = path
        raw = strip_comments_and_strings(path.read_text())
        text, test_children = strip_cfg_test(raw)
        if test:
            self.test_only.add(path)
        self.text[path] = text
        for m in re.finditer(rf"(?:pub(?:\([^)]*\))?\s+)?mod\s+({_IDENT})\s*;", raw):
            name = m.group(1)
            child = self._child_file(path, name)
            if child is None:
                continue
            # A `#[path]` or out-of-tree module is not followed.
            self._load(modpath + (name,), child, test or name in test_children)

    def module_of(self, path: Path) -> tuple[str, ...]:
        return next(k for k, v in self.files.items() if v == path)

    def resolve(self, segs: list[str], depth: int = 0) -> Path | None:
        """The file defining what an absolute path names: the deepest existing module along it,
        then, for the item after it, through that module's re-exports."""
        best, k_best = None, 0
        for k in range(len(segs) + 1):
            f = self.files.get(tuple(segs[:k]))
            if f is not None:
                best, k_best = f, k
            elif k > 0:
                break
        if best is None or k_best >= len(segs) or depth > 20:
            return best
        target = self.reexports(tuple(segs[:k_best])).get(segs[k_best])
        if target is not None:
            return self.resolve(target + segs[k_best + 1 :], depth + 1) or best
        return best

    def reexports(self, modpath: tuple[str, ...]) -> dict[str, list[str]]:
        """Names a module re-exports (``pub use``), each with the absolute path it stands for."""
        cached = self._reexports.get(modpath)
        if cached is not None:
            return cached
        out: dict[str, list[str]] = {}
        self._reexports[modpath] = out
        text = self.text[self.files[modpath]]
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for raw, segs in use_leaves(m.group(1)):
                a = self._absolute(modpath, segs)
                if a is not None and segs[-1] != "*":
                    out[raw] = a
        return out

    def _children(self, modpath: tuple[str, ...]) -> set[str]:
        return {k[-1] for k in self.files if len(k) == len(modpath) + 1 and k[:-1] == modpath}

    def _absolute(self, modpath, segs, aliases=None):
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            return segs[1:]
        if head == "self":
            return list(modpath) + segs[1:]
        if head == "super":
            base = list(modpath)
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
            return base + segs
        if head in self._children(modpath):
            return list(modpath) + segs
        if aliases and head in aliases:
            return aliases[head] + segs[1:]
        return None  # std, a dependency or a local item

    def edges(self) -> dict[Path, set[Path]]:
        """Every non-test file's edges to the other files it names."""
        out: dict[Path, set[Path]] = {}
        for modpath, path in self.files.items():
            if path in self.test_only:
                continue
            text = self.text[path]
            targets: set[Path] = set()
            children = self._children(modpath)
            aliases: dict[str, list[str]] = {}

            def absolute(segs: list[str], modpath=modpath, aliases=aliases):
                return self._absolute(modpath, segs, aliases)

            for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
                for raw, segs in use_leaves(m.group(2)):
                    a = absolute([s for s in segs if s != "*"])
                    if a is None:
                        continue
                    if tuple(a) in self.files:
                        aliases[raw] = a
                    f = self.resolve(a)
                    # A re-export names an item for others; it is not a use by this file.
                    if f is not None and not m.group(1):
                        targets.add(f)
            names = {"crate", "self", "super"} | children | set(aliases)
            for m in re.finditer(rf"(?<![A-Za-z0-9_:])({_IDENT})((?:::{_IDENT})+)", text):
                if m.group(1) not in names:
                    continue
                # The `use` lines were handled above (their trees may hold braces).
                line_start = text.rfind("\n", 0, m.start()) + 1
                if re.match(r"\s*(pub(\([^)]*\))?\s+)?use\b", text[line_start : m.start()]):
                    continue
                segs = [m.group(1)] + [s for s in m.group(2).split("::") if s]
                a = absolute(segs)
                if a is not None:
                    f = self.resolve(a)
                    if f is not None:
                        targets.add(f)
            targets.discard(path)
            targets -= self.test_only
            out[path] = targets
        return out


def circles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan), each sorted."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
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
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def long_files(crate: Crate, max_lines: int = MAX_LINES) -> list[tuple[Path, int]]:
    """Non-test source files longer than ``max_lines`` lines."""
    out = []
    for path in crate.files.values():
        if path in crate.test_only:
            continue
        n = path.read_text().count("\n")
        if n > max_lines:
            out.append((path, n))
    return sorted(out)


def main(argv: list[str]) -> int:
    show_edges = "--edges" in argv
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0] if args else "crates/xlat/src")
    crate = Crate(src)
    edges = crate.edges()
    if show_edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a.relative_to(src)} -> {b.relative_to(src)}")
        return 0
    bad = 0
    for comp in circles(edges):
        bad += 1
        members = set(comp)
        print(f"circle of {len(comp)} files:")
        for a in comp:
            inside = sorted(str(b.relative_to(src)) for b in edges[a] if b in members)
            print(f"  {a.relative_to(src)} -> {', '.join(inside)}")
    for path, n in long_files(crate):
        bad += 1
        print(f"{path.relative_to(src)}: {n} lines (limit {MAX_LINES})")
    if not bad:
        print(f"{len(edges)} files, no circle, none over {MAX_LINES} lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
