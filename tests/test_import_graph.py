"""bench/import_graph.py on tiny package trees: it finds a cycle of three packages (with the imports that make
it), an import from a lower layer into a higher one (also one under ``if TYPE_CHECKING:``, and a module named
in a string: a registry's ``module:Class`` path, a built module name, a registry's tuple of its own modules),
and a package no layer declares; a run kind's module is part of its package; a clean tree passes. And the
package itself passes it (as CI checks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "import_graph.py"
REPO = SCRIPT.parents[1]


def tree(root: Path, files: dict[str, str], layers: list[str], drivers: tuple[str, ...] = ()) -> Path:
    """``files`` (paths under src/emoharbor: their text) and a pyproject.toml declaring ``layers`` (and the
    packages that drive runs)."""
    src = root / "src"
    for name, text in {"__init__.py": "", **files}.items():
        path = src / "emoharbor" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    lines = ", ".join(f'"{layer}"' for layer in layers)
    named = ", ".join(f'"{d}"' for d in drivers)
    (root / "pyproject.toml").write_text(
        f"[tool.emoharbor]\nlayers = [{lines}]\ndrivers = [{named}]\n", encoding="utf-8"
    )
    return src


def check(src: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(src), *args], capture_output=True, text=True, check=False)


LAYERS = ["errors", "models", "store", "report", "emoharbor"]
CLEAN = {
    "errors.py": "",
    "models/__init__.py": "",
    "models/base.py": "from ..errors import *\n",
    "store/__init__.py": "",
    "store/db.py": "from ..models import base\nfrom . import rows\n",
    "store/rows.py": "import emoharbor.errors\n",
    "report/__init__.py": "",
    "report/page.py": "from emoharbor.store.db import x\n\ndef f():\n    from ..models.base import y\n",
}


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    r = check(tree(tmp_path, CLEAN, LAYERS))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "report -> models, store" in r.stdout
    assert "package cycles 0, upward edges 0" in r.stdout


def test_a_feature_importing_another_features_run_is_found_and_a_driver_may(tmp_path: Path) -> None:
    features = {"features/__init__.py": "", "features/run.py": "", "other/__init__.py": "",
                "other/table.py": "from ..features.run import go\n", "commands/__init__.py": "",
                "commands/cli.py": "from ..features import run\n"}  # fmt: skip
    layers = ["errors", "models", "store", "report", "features other", "commands", "emoharbor"]
    r = check(tree(tmp_path / "a", {**CLEAN, **features}, layers, drivers=("commands",)))
    assert r.returncode == 1
    assert "imports of another feature's run 1" in r.stdout
    assert (
        "another's run: src/emoharbor/other/table.py:1 (emoharbor.other.table imports emoharbor.features.run)"
        in r.stdout
    )
    del features["other/table.py"]
    r = check(tree(tmp_path / "b", {**CLEAN, **features}, layers, drivers=("commands",)))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_cycle_of_three_is_found_with_its_imports(tmp_path: Path) -> None:
    files = {**CLEAN, "models/base.py": "from ..errors import *\nfrom ..report import page\n"}
    r = check(tree(tmp_path, files, ["errors", "models store report", "emoharbor"]))  # one layer: no edge is upward
    assert r.returncode == 1
    assert "package cycles 1, upward edges 0" in r.stdout
    assert "cycle: models, report, store" in r.stdout
    assert "models -> report: src/emoharbor/models/base.py:2" in r.stdout
    assert "store -> models: src/emoharbor/store/db.py:1" in r.stdout
    assert "report -> store: src/emoharbor/report/page.py:1" in r.stdout


def test_an_upward_edge_is_found_even_inside_a_function(tmp_path: Path) -> None:
    files = {**CLEAN, "store/rows.py": "def g():\n    from ..report.page import f\n", "report/page.py": ""}
    r = check(tree(tmp_path, files, LAYERS))
    assert r.returncode == 1
    assert "package cycles 0, upward edges 1" in r.stdout
    assert "upward: store (layer 2) -> report (layer 3)" in r.stdout
    assert "src/emoharbor/store/rows.py:2 (emoharbor.store.rows imports emoharbor.report.page)" in r.stdout


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..report.page import f\n",
         "rows.py:4 (emoharbor.store.rows imports emoharbor.report.page, type-only)"),
        ('TABLE = {"page": "emoharbor.report.page:Page"}\n',
         "rows.py:1 (emoharbor.store.rows names emoharbor.report.page in a string)"),
    ],
)  # fmt: skip
def test_a_type_only_import_and_a_module_named_in_a_string_are_edges(tmp_path: Path, text: str, seen: str) -> None:
    r = check(tree(tmp_path, {**CLEAN, "store/rows.py": text, "report/page.py": ""}, LAYERS))
    assert r.returncode == 1
    assert "upward: store (layer 2) -> report (layer 3)" in r.stdout
    assert f"src/emoharbor/store/{seen}" in r.stdout


def test_built_names_and_a_registrys_own_modules_are_edges(tmp_path: Path) -> None:
    files = {
        **CLEAN,
        "report/page.py": "",
        "report/table.py": "",
        "models/pick.py": 'WHERE = {"a": "page"}\n\ndef f(n):\n    return f"emoharbor.report.{n}"\n',
        "store/reg.py": 'BUILT_IN = ("db", "rows")\nOTHER = ("page",)\n\ndef f():\n    g(__package__, BUILT_IN)\n',
    }
    r = check(tree(tmp_path, files, LAYERS), "--edges")
    named = "edge models -> report: src/emoharbor/models/pick.py:1 (emoharbor.models.pick names emoharbor.report.page"
    assert named in r.stdout
    assert "report.table" not in r.stdout  # a module of that package the strings do not name
    assert "upward: models (layer 1) -> report (layer 3)" in r.stdout
    assert "store -> models, report" not in r.stdout  # "page" in OTHER is no module of store's


def test_a_kind_module_is_part_of_its_package(tmp_path: Path) -> None:
    files = {**CLEAN, "store/kind.py": "from ..report.page import f\n", "report/page.py": ""}
    r = check(tree(tmp_path, files, LAYERS))
    assert r.returncode == 1
    assert "upward: store (layer 2) -> report (layer 3)" in r.stdout
    named = check(tree(tmp_path, files, [*LAYERS, "store.kind"]))
    assert named.returncode == 1 and "names packages, not modules (store.kind)" in named.stderr


def test_each_circle_of_a_cycle_is_shown(tmp_path: Path) -> None:
    files = {**CLEAN, "models/base.py": "from ..report import page\n", "store/db.py": "from ..models import base\n"}
    r = check(tree(tmp_path, files, ["errors", "models store report", "emoharbor"]))
    assert "cycle: models, report, store" in r.stdout
    assert "models -> report -> store -> models" in r.stdout


def test_a_package_in_no_layer_fails(tmp_path: Path) -> None:
    r = check(tree(tmp_path, {**CLEAN, "web.py": ""}, LAYERS))
    assert r.returncode == 1
    assert "undeclared: web is in no layer" in r.stdout


def test_the_package_itself_holds_its_layers() -> None:
    r = check(REPO / "src")
    assert r.returncode == 0, r.stdout
    assert "package cycles 0, upward edges 0" in r.stdout
