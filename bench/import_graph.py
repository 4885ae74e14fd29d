"""The import graph of the emoharbor package: which module imports which (static, from the source).

``python bench/import_graph.py [SRC]`` prints, per package, the packages it imports, then totals: modules,
lines, edges between modules and between packages, and any import cycles between packages.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(root: Path, path: Path, modules: set[str]) -> set[str]:
    """The emoharbor modules ``path`` imports; ``from PACKAGE import MODULE`` counts as MODULE."""
    mod = module_name(root, path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("emoharbor")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                target = node.module or ""
            if target.startswith("emoharbor"):
                subs = {f"{target}.{a.name}" for a in node.names} & modules
                found |= subs or {target}
    return found - {mod}


def package_of(mod: str) -> str:
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else mod


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    files = sorted((root / "emoharbor").rglob("*.py"))
    modules = {module_name(root, f) for f in files}
    edges = {module_name(root, f): imports_of(root, f, modules) for f in files}
    lines = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    pkg_edges: dict[str, set[str]] = defaultdict(set)
    for mod, targets in edges.items():
        for t in targets:
            if package_of(t) != package_of(mod):
                pkg_edges[package_of(mod)].add(package_of(t))
    for pkg in sorted({package_of(m) for m in edges}):
        short = sorted(t.removeprefix("emoharbor.") for t in pkg_edges.get(pkg, ()))
        print(f"{pkg.removeprefix('emoharbor.') or 'emoharbor'} -> {', '.join(short) or '(nothing)'}")
    cycles = sorted(
        f"{a.removeprefix('emoharbor.')} <-> {b.removeprefix('emoharbor.')}"
        for a in pkg_edges
        for b in pkg_edges[a]
        if a < b and a in pkg_edges.get(b, ())
    )
    print(
        f"\nmodules {len(edges)}, lines {lines}, module edges {sum(map(len, edges.values()))}, "
        f"package edges {sum(map(len, pkg_edges.values()))}, package cycles {len(cycles)}"
    )
    for c in cycles:
        print(f"  cycle: {c}")


if __name__ == "__main__":
    main()
