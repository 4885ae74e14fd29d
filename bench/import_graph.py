"""The import graph of the emoharbor package: which module imports which (static, from the source), checked.

``python bench/import_graph.py [SRC] [--edges]`` prints, per package, the packages it imports, then totals:
modules, lines, edges between modules and between packages, package cycles and upward edges (``--edges``:
every import between packages too, each with where it is and how it was found). A package is a subpackage
(``assess``; its run kind's module ``assess/kind.py`` is part of it, like any other of its modules) or a
top-level module (``config``). An edge is what a reader of the source sees as one module needing another:
- an import, also one inside a function, and one under ``if TYPE_CHECKING:`` (a type-only import: nothing is
  imported when the program runs, but the importer still speaks of the imported module's types);
- a module named in a string: ``"emoharbor.heart.kind:HeartKind"`` (a registry's ``module:name`` path, such
  as ``kinds.TABLE``'s) or ``"emoharbor.report"`` (``importlib.resources``); and the names of modules under
  a package the module imports by a built name: ``f"emoharbor.commands.{name}"`` (``cli.COMMANDS``'
  values), and the names in a module-level tuple handed to a call with ``__package__``
  (``registry.lookup(..., __package__, BUILT_IN)``: the names in ``BUILT_IN`` are modules of the caller's
  own package).

It checks three things and exits with status 1 if any is found (CI runs it; `.ci/run`):
- **cycles of any length**: the strongly connected components of the package graph, each printed with the
  imports that make it (file:line), so one knows what to move;
- **upward edges**: the layer order is declared in ``pyproject.toml`` (next to SRC's folder) as
  ``[tool.emoharbor] layers``, lowest first, one string of space-separated packages per layer. A package may
  import packages of its own layer or lower ones, never a higher one; a package missing from the table is
  an error too;
- **another feature's run**: a package's module named ``run`` (``emoharbor.seekers.run``) holds that package's
  run; no other package imports it but those that drive runs, declared as ``[tool.emoharbor] drivers``
  (the commands): what two features share lives in a package below both.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "emoharbor"
MODULE_PATH = re.compile(rf"{PACKAGE}(\.\w+)+(:\w+)?")  # "emoharbor.heart.kind:HeartKind", "emoharbor.report"
BUILT_NAME = re.compile(rf"({PACKAGE}(\.\w+)*)\.")  # the start of f"emoharbor.commands.{name}"


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    where: str  # file:line of the import
    how: str = "import"  # "import", "type-only" (under ``if TYPE_CHECKING:``) or "string" (a module named in one)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(root: Path, path: Path, modules: set[str]) -> list[Edge]:
    """The emoharbor modules ``path`` imports or names; ``from PACKAGE import MODULE`` counts as MODULE."""
    mod = module_name(root, path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    where = path.relative_to(root.parent) if root.parent in path.parents else path
    found: list[Edge] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if _type_checking(block) for n in ast.walk(block)}
    for node in ast.walk(tree):
        how = "type-only" if id(node) in typing_only else "import"
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
        else:
            continue
        found += [Edge(mod, t, f"{where}:{node.lineno}", how) for t in sorted(targets - {mod})]
    named = sorted(set(named_in_strings(tree, package, modules)), key=lambda n: (n[1], n[0]))
    found += [Edge(mod, t, f"{where}:{line}", "string") for t, line in named if t != mod]
    return found


def named_in_strings(tree: ast.Module, package: str, modules: set[str]) -> list[tuple[str, int]]:
    """The modules a module names in its strings (see the module's docstring), with the line of each."""
    strings = [(n.value, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    found = []
    for text, line in strings:
        if MODULE_PATH.fullmatch(text):
            target = _known(text.partition(":")[0], modules)
            if target:
                found.append((target, line))
    bases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            start = BUILT_NAME.fullmatch(str(node.values[0].value))
            if start and start.group(1) in modules:
                bases.add(start.group(1))
    for base in sorted(bases):
        found += [(f"{base}.{text}", line) for text, line in strings if f"{base}.{text}" in modules]
    tuples = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
              if isinstance(t, ast.Name) and isinstance(node.value, (ast.Tuple, ast.List))}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(_names_package(a) for a in node.args):
            for arg in node.args:
                names = tuples.get(arg.id) if isinstance(arg, ast.Name) else None
                for item in names.elts if names is not None else ():
                    if isinstance(item, ast.Constant) and f"{package}.{item.value}" in modules:
                        found.append((f"{package}.{item.value}", item.lineno))
    return found


def _known(dotted: str, modules: set[str]) -> str:
    """The longest start of ``dotted`` that is a module of the package ("" if none)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules:
            return ".".join(parts[:n])
    return ""


def _names_package(node: ast.AST) -> bool:
    """``__package__`` (or ``__package__ or ""``) as an argument."""
    return any(isinstance(n, ast.Name) and n.id == "__package__" for n in ast.walk(node))


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block (``typing.TYPE_CHECKING`` too)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def package_of(mod: str) -> str:
    """``emoharbor.assess.judge`` -> ``assess`` (``emoharbor.evaluate.kind`` -> ``evaluate``); the root package
    itself is ``emoharbor``."""
    parts = mod.split(".")
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


def circles(graph: dict[str, set[str]], members: list[str]) -> list[list[str]]:
    """For each package of a cycle, the shortest circle through it (within ``members``), each circle once, its
    lowest name first: what a reader follows to see why the packages reach each other."""
    inside = set(members)
    found: dict[tuple[str, ...], list[str]] = {}
    for start in members:
        paths = {start: [start]}
        todo = [start]
        circle: list[str] | None = None
        while todo and circle is None:
            step = []
            for node in todo:
                for child in sorted(graph.get(node, set()) & inside):
                    if child == start:
                        circle = paths[node]
                        break
                    if child not in paths:
                        paths[child] = [*paths[node], child]
                        step.append(child)
                if circle is not None:
                    break
            todo = step
        if circle is not None:
            low = circle.index(min(circle))
            turned = [*circle[low:], *circle[:low]]
            found.setdefault(tuple(turned), turned)
    return sorted(found.values(), key=lambda c: (len(c), c))


def load_table(pyproject: Path) -> dict[str, object]:
    """``[tool.emoharbor]`` of ``pyproject``."""
    if not pyproject.is_file():
        sys.exit(f"{pyproject}: not found (it declares the layer order, [tool.emoharbor] layers)")
    table: dict[str, object] = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get(PACKAGE, {})
    return table


def load_layers(pyproject: Path) -> dict[str, int]:
    """Each package's layer (0 lowest) from ``[tool.emoharbor] layers`` in ``pyproject``."""
    layers = load_table(pyproject).get("layers")
    if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
        sys.exit(f"{pyproject}: [tool.{PACKAGE}] layers: expected a list of strings, lowest layer first")
    modules = [pkg for line in layers for pkg in line.split() if "." in pkg]
    if modules:
        sys.exit(f"{pyproject}: [tool.{PACKAGE}] layers names packages, not modules ({', '.join(modules)})")
    return {pkg: i for i, line in enumerate(layers) for pkg in line.split()}


def load_drivers(pyproject: Path) -> set[str]:
    """The packages that may import another package's run (``[tool.emoharbor] drivers``; none if absent)."""
    drivers = load_table(pyproject).get("drivers", [])
    if not isinstance(drivers, list) or not all(isinstance(x, str) for x in drivers):
        sys.exit(f"{pyproject}: [tool.{PACKAGE}] drivers: expected a list of package names")
    return set(drivers)


def runs_of_others(edges: list[Edge], drivers: set[str]) -> list[Edge]:
    """The edges from a package that drives no runs to another package's ``run`` module."""
    out = []
    for e in edges:
        parts = e.target.split(".")
        owner = package_of(e.target)
        if len(parts) == 3 and parts[2] == "run" and package_of(e.source) not in (owner, *drivers):
            out.append(e)
    return out


def said(e: Edge) -> str:
    """How ``e`` reads: "(emoharbor.a imports emoharbor.b)", with ", type-only", or "(emoharbor.a names
    emoharbor.b in a string)"."""
    if e.how == "string":
        return f"({e.source} names {e.target} in a string)"
    return f"({e.source} imports {e.target}{', type-only' if e.how == 'type-only' else ''})"


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--edges"]
    root = Path(args[0] if args else "src")
    pyproject = root.resolve().parent / "pyproject.toml"
    layer, drivers = load_layers(pyproject), load_drivers(pyproject)
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
    if "--edges" in argv:
        print()
        for (a, b), edges in sorted(by_package.items()):
            for e in edges:
                print(f"edge {a} -> {b}: {e.where} {said(e)}")

    cycles = components(graph)
    undeclared = [p for p in packages if p not in layer]
    upward = sorted((a, b) for a, b in by_package if a in layer and b in layer and layer[a] < layer[b])
    foreign = runs_of_others(module_edges, drivers)
    print(
        f"\nmodules {len(modules)}, lines {lines}, module edges {len({(e.source, e.target) for e in module_edges})}, "
        f"package edges {len(by_package)}, package cycles {len(cycles)}, upward edges {len(upward)}, "
        f"imports of another feature's run {len(foreign)}"
    )
    for members in cycles:
        print(f"  cycle: {', '.join(members)} (each reaches every other through imports); its shortest circles:")
        for circle in circles(graph, members):
            print(f"    {' -> '.join([*circle, circle[0]])}")
            for a, b in zip(circle, [*circle[1:], circle[0]], strict=True):
                first, more = by_package[a, b][0], len(by_package[a, b]) - 1
                print(f"      {a} -> {b}: {first.where} {said(first)}{f' and {more} more' if more else ''}")
    for a, b in upward:
        print(f"  upward: {a} (layer {layer[a]}) -> {b} (layer {layer[b]})")
        for e in by_package[a, b]:
            print(f"    {e.where} {said(e)}")
    for e in foreign:
        print(f"  another's run: {e.where} {said(e)}: what both need belongs below both")
    for p in undeclared:
        print(f"  undeclared: {p} is in no layer of [tool.{PACKAGE}] layers")
    return 1 if cycles or upward or undeclared or foreign else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
