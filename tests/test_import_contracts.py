"""Imports run one way: engines -> catalog core; entries -> the SDK (catalog/sdk.py) -> engines.

Read from the sources with ast (no import, no dependency), so a violation anywhere in src/ fails
here, in a lazy import inside a function as much as at the top of a module.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torchdoctor
from torchdoctor.catalog import all_pitfalls

PACKAGE = Path(torchdoctor.__file__).parent
ENGINES = ("lint", "explain", "watch", "ckpt", "report")
# The command line and the plugins that start an engine.
FRONT_ENDS = ("torchdoctor.cli", "torchdoctor.flake8_plugin", "torchdoctor.__main__")
# The public API: `import torchdoctor`, `torchdoctor.auto`.
API = ("torchdoctor", "torchdoctor.auto")
CATALOG_CORE = (
    "torchdoctor.catalog",
    "torchdoctor.catalog._model",
    "torchdoctor.catalog._registry",
    "torchdoctor.catalog._docs",
)
SDK = "torchdoctor.catalog.sdk"
# Engines that import another engine, and why. A pair not listed here fails the test, and so
# does one listed here that no longer imports the other (remove it then).
ENGINE_TO_ENGINE = {
    ("explain", "lint"): "explain reads the failing file as check does (decode, split_lines) "
    "and runs the static checks on it to find a root cause",
    ("watch", "explain"): "a crashed run is explained with the explainer; watch reads user "
    "frames with explain.parse.is_user_path",
    ("lint", "report"): "check's findings and fixes are report.finding objects",
    ("explain", "report"): "explain renders through report (Finding)",
    ("watch", "report"): "watch's findings are report.finding objects",
    ("ckpt", "report"): "ckpt's findings are report.finding objects",
}


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    # Modules it imports, outside `if TYPE_CHECKING:` (those run nowhere).
    imports: set[str] = field(default_factory=set)


@lru_cache(maxsize=None)
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    for module in found.values():
        module.imports = _imports(module, set(found))
    return found


def _imports(module: Module, known: set[str]) -> set[str]:
    is_package = module.path.name == "__init__.py"
    targets: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module.name, is_package, node.level, node.module)
            # `from torchdoctor import __version__` reads a string, not the API's functions
            if not (base == "torchdoctor" and all(a.name == "__version__" for a in node.names)):
                targets.add(base)
            # `from torchdoctor.catalog import _registry` imports a module, not a name
            targets.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(module.tree)
    return {t for t in targets if t in known and t != module.name}


def _is_type_checking(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Name)
        and test.id == "TYPE_CHECKING"
        or isinstance(test, ast.Attribute)
        and test.attr == "TYPE_CHECKING"
    )


def _absolute(name: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    parts = name.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def area_of(name: str) -> str | None:
    """The catalog area a module belongs to (an entry or an area's private helper), else None."""
    parts = name.split(".")
    if (
        len(parts) >= 3
        and parts[:2] == ["torchdoctor", "catalog"]
        and (PACKAGE / "catalog" / parts[2]).is_dir()
    ):
        return parts[2]
    return None


def engine_of(name: str) -> str | None:
    """The engine a module belongs to; "cli" for the front ends, "api" for the public API."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[1] in ENGINES:
        return parts[1]
    return "cli" if name in FRONT_ENDS else "api" if name in API else None


def unit_of(name: str) -> str:
    """The part of the house a module belongs to, for the cycle check."""
    if area_of(name):
        return "catalog entries"
    if name == SDK:
        return "catalog sdk"
    if name in CATALOG_CORE:
        return "catalog core"
    return engine_of(name) or name.split(".")[1]


def entry_offenders() -> dict[str, set[str]]:
    """Entry modules -> what they import outside their area other than the SDK."""
    offenders = {}
    for name, module in modules().items():
        area = area_of(name)
        if area is None:
            continue
        own = f"torchdoctor.catalog.{area}"
        outside = {
            t
            for t in module.imports
            if t != SDK and t != own and not t.startswith(own + ".") and t.startswith("torchdoctor")
        }
        if outside:
            offenders[name] = outside
    return offenders


# --- tests ----------------------------------------------------------------------------------


def test_the_module_graph_sees_the_known_imports():
    graph = modules()
    assert "torchdoctor.catalog._registry" in graph["torchdoctor.lint.checker"].imports
    assert "torchdoctor.lint.context" in graph[SDK].imports
    # a lazy import inside a function counts; one under TYPE_CHECKING does not
    assert "torchdoctor.explain.hooks" in graph["torchdoctor"].imports
    assert "torchdoctor.watch.session" not in graph["torchdoctor.watch.monitor"].imports
    assert area_of("torchdoctor.catalog.tooling.td700_syntax_error") == "tooling"
    assert area_of(SDK) is None and area_of("torchdoctor.catalog._model") is None


def test_engines_never_import_an_entry():
    wrong = {
        name: sorted(t for t in module.imports if area_of(t))
        for name, module in modules().items()
        if not area_of(name)
    }
    assert {name: found for name, found in wrong.items() if found} == {}


def test_engines_import_from_the_catalog_only_its_core():
    wrong = {
        name: sorted(t for t in module.imports if t == SDK)
        for name, module in modules().items()
        if engine_of(name)
    }
    assert {name: found for name, found in wrong.items() if found} == {}


def test_engines_import_other_engines_only_where_a_reason_is_written():
    pairs = {
        (engine_of(name), engine_of(target))
        for name, module in modules().items()
        if engine_of(name) in ENGINES
        for target in module.imports
        if engine_of(target) in ENGINES
    }
    pairs = {(a, b) for a, b in pairs if a != b}
    assert pairs - set(ENGINE_TO_ENGINE) == set(), "an engine imports another: say why here"
    assert set(ENGINE_TO_ENGINE) - pairs == set(), "no longer imported: remove the reason"


def test_no_import_cycle_between_parts_of_the_house():
    edges: dict[str, set[str]] = {}
    for name, module in modules().items():
        unit = unit_of(name)
        edges.setdefault(unit, set()).update(unit_of(t) for t in module.imports)
    cycles = [sorted(component) for component in _strongly_connected(edges) if len(component) > 1]
    assert cycles == []


def _strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm; the graph has a few dozen nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def test_no_engine_names_a_pitfall():
    """Engines reach a pitfall through the registry (by role, by selector), never by its code or
    name: string constants are read, docstrings and comments are not."""
    names = {p.name for p in all_pitfalls()}
    code = re.compile(r"\bTD\d{3}\b")
    found = []
    for name, module in modules().items():
        if not engine_of(name):
            continue
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(module.tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and (code.search(node.value) or node.value in names)
            ):
                found.append(f"{module.path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_entries_import_only_the_sdk_and_their_area():
    offenders = entry_offenders()
    assert offenders == {}, (
        "entries that import outside catalog.sdk and their own area:\n"
        + "\n".join(
            f"  {name}: {', '.join(sorted(outside))}" for name, outside in sorted(offenders.items())
        )
    )
