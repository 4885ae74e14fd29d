"""The import graph of the emoharbor package: which module imports which (static, from the source), checked.

``python bench/import_graph.py [SRC]`` prints, per package, the packages it imports, then totals: modules,
lines, edges between modules and between packages, package cycles and upward edges. A package is a
subpackage (``assess``) or a top-level module (``config``), or a module the layer table names on its own
(``evaluate.kind``: a run kind, which ties its package's run to the report above it); every import counts,
also one inside a function, except those under ``if TYPE_CHECKING:`` (type hints only: nothing is imported
when the program runs).

It checks two things and exits with status 1 if either is found (CI runs it; `.ci/run`):
- **cycles of any length**: the strongly connected components of the package graph, each printed with the
  imports that make it (file:line), so one knows what to move;
- **upward edges**: the layer order is declared in ``pyproject.toml`` (next to SRC's folder) as
  ``[tool.emoharbor] layers``, lowest first, one string of space-separated packages per layer. A package may
  import packages of its own layer or lower ones, never a higher one; a package missing from the table is
  an error too.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "emoharbor"


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    where: str  # file:line of the import


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(root: Path, path: Path, modules: set[str]) -> list[Edge]:
    """The emoharbor modules ``path`` imports; ``from PACKAGE import MODULE`` counts as MODULE."""
    mod = module_name(root, path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    where = path.relative_to(root.parent) if root.parent in path.parents else path
    found: list[Edge] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if _type_checking(block) for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        targets: set[str] = set()
        if isinstance(node, ast.Import):
            targets = {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] == PACKAGE:
                subs = {f"{target}.{a.name}" for a in node.names} & modules
                targets = subs or {target}
        found += [Edge(mod, t, f"{where}:{node.lineno}") for t in sorted(targets - {mod})]
    return found


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block (``typing.TYPE_CHECKING`` too)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


OWN_PARTS: set[str] = set()  # modules the layer table names on their own (``evaluate.kind``)


def package_of(mod: str) -> str:
    """``emoharbor.assess.judge`` -> ``assess``; the root package itself is ``emoharbor``; a module the layer
    table names on its own is its own part (``emoharbor.evaluate.kind`` -> ``evaluate.kind``)."""
    parts = mod.split(".")
    own = ".".join(parts[1:])
    if own in OWN_PARTS:
        return own
    return parts[1] if len(parts) > 1 else mod


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        members.append(m)
                        if m == node:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def load_layers(pyproject: Path) -> dict[str, int]:
    """Each package's layer (0 lowest) from ``[tool.emoharbor] layers`` in ``pyproject``."""
    if not pyproject.is_file():
        sys.exit(f"{pyproject}: not found (it declares the layer order, [tool.emoharbor] layers)")
    table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get(PACKAGE, {})
    layers = table.get("layers")
    if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
        sys.exit(f"{pyproject}: [tool.{PACKAGE}] layers: expected a list of strings, lowest layer first")
    return {pkg: i for i, line in enumerate(layers) for pkg in line.split()}


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "src")
    layer = load_layers(root.resolve().parent / "pyproject.toml")
    OWN_PARTS.update(p for p in layer if "." in p)
    files = sorted((root / PACKAGE).rglob("*.py"))
    modules = {module_name(root, f) for f in files}
    module_edges = [e for f in files for e in imports_of(root, f, modules)]
    lines = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    by_package: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    for e in module_edges:
        if package_of(e.source) != package_of(e.target):
            by_package[package_of(e.source), package_of(e.target)].append(e)
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in by_package:
        graph[a].add(b)
    packages = sorted({package_of(m) for m in modules})
    for pkg in packages:
        print(f"{pkg} -> {', '.join(sorted(graph.get(pkg, ()))) or '(nothing)'}")

    cycles = components(graph)
    undeclared = [p for p in packages if p not in layer]
    upward = sorted((a, b) for a, b in by_package if a in layer and b in layer and layer[a] < layer[b])
    print(
        f"\nmodules {len(modules)}, lines {lines}, module edges {len({(e.source, e.target) for e in module_edges})}, "
        f"package edges {len(by_package)}, package cycles {len(cycles)}, upward edges {len(upward)}"
    )
    for members in cycles:
        print(f"  cycle: {', '.join(members)} (each reaches every other through imports)")
        for a in members:
            for b in members:
                for e in by_package.get((a, b), ()):
                    print(f"    {a} -> {b}: {e.where} ({e.source} imports {e.target})")
    for a, b in upward:
        print(f"  upward: {a} (layer {layer[a]}) -> {b} (layer {layer[b]})")
        for e in by_package[a, b]:
            print(f"    {e.where} ({e.source} imports {e.target})")
    for p in undeclared:
        print(f"  undeclared: {p} is in no layer of [tool.{PACKAGE}] layers")
    return 1 if cycles or upward or undeclared else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
