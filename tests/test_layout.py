"""The layout holds: imports go down the layers only, no module imports itself back through
others, no router imports another router, and what runs in production never imports what
measures it or the command line.

    cli             the `cheapqa` command           may import anything below
    bench           what measures                   service and below
    service         what runs in production         store, encoder, connections, the client
    store           document states at rest         encoder, connections, the client
    encoder         the reader model                nothing of ours
                    (inside it, model/ and text/ never import training/: serving loads
                    neither the trainer nor the data builder)
    connections     Redis and SQLite helpers        nothing of ours
    cheapqa_client  the light client (client/),     nothing of ours; only the standard
                    the API's response bodies       library, httpx and pydantic

Every import counts, also those inside functions (they run too).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAY_IMPORT: dict[str, set[str]] = {
    "cheapqa_client": set(),
    "connections": set(),
    "encoder": set(),
    "store": {"encoder", "connections", "cheapqa_client"},
    "service": {"store", "encoder", "connections", "cheapqa_client"},
    "bench": {"service", "store", "encoder", "connections", "cheapqa_client"},
    "cli": {"bench", "service", "store", "encoder", "connections", "cheapqa_client"},
}
PRODUCTION = ("cheapqa_client", "connections", "encoder", "store", "service")
# The light client is a distribution of its own, in client/; the others sit at the top.
SOURCE_ROOTS = {"cheapqa_client": ROOT / "client"}
# What cheapqa-client's pyproject.toml installs with it (the import names are the same).
CLIENT_NEEDS = {
    re.split(r"[^A-Za-z0-9_.-]", requirement, maxsplit=1)[0]
    for requirement in tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
}


def module_name(path: Path, source_root: Path) -> str:
    parts = path.relative_to(source_root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in MAY_IMPORT:
        source_root = SOURCE_ROOTS.get(package, ROOT)
        for path in sorted((source_root / package).rglob("*.py")):
            found[module_name(path, source_root)] = path
    return found


def imported(name: str, path: Path) -> Iterator[str]:
    """The project modules a module imports (absolute, as the tree writes them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                package = name.split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            yield module
            # `from service import indexing` imports the module service.indexing.
            yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: {m for m in imported(name, path) if m in known and m != name}
        for name, path in known.items()
    }


GRAPH = import_graph()


def top(module: str) -> str:
    return module.split(".")[0]


def test_the_graph_sees_the_tree() -> None:
    assert {"service.app", "store.codec", "bench.lookup", "cli.main"} <= set(GRAPH)
    assert "service.indexing" in GRAPH["service.deps"]
    assert "cheapqa_client.schemas" in GRAPH["cheapqa_client.client"]


def test_the_light_client_needs_only_httpx_and_pydantic() -> None:
    """What cheapqa-client's pyproject promises; tests/test_light_client.py installs it alone."""
    assert set(CLIENT_NEEDS) == {"httpx", "pydantic"}
    outside = {
        f"{name} imports {module}"
        for name, path in modules().items()
        if top(name) == "cheapqa_client"
        for module in imported(name, path)
        if top(module) not in {"cheapqa_client", "__future__", *CLIENT_NEEDS}
        and top(module) not in sys.stdlib_module_names
    }
    assert outside == set()


def test_imports_go_down_the_layers_only() -> None:
    upward = [
        f"{name} imports {dep}"
        for name, deps in GRAPH.items()
        for dep in sorted(deps)
        if top(dep) != top(name) and top(dep) not in MAY_IMPORT[top(name)]
    ]
    assert upward == []


@pytest.mark.parametrize("package", PRODUCTION)
def test_production_never_imports_bench_or_cli(package: str) -> None:
    bad = [
        f"{name} imports {dep}"
        for name, deps in GRAPH.items()
        if top(name) == package
        for dep in deps
        if top(dep) in ("bench", "cli")
    ]
    assert bad == []


def test_serving_rooms_never_import_training() -> None:
    """encoder.model and encoder.text are what the service runs; encoder.training is not."""
    serving = ("encoder.model", "encoder.text")
    bad = [
        f"{name} imports {dep}"
        for name, deps in GRAPH.items()
        if name.startswith(serving)
        for dep in sorted(deps)
        if dep.startswith("encoder.training")
    ]
    assert [n for n in GRAPH if n.startswith("encoder.training.")], "no training modules found"
    assert bad == []


def test_production_outside_encoder_never_imports_training() -> None:
    """The service and the store use the reader and its text handling, never the trainer."""
    bad = [
        f"{name} imports {dep}"
        for name, deps in GRAPH.items()
        if top(name) in ("connections", "store", "service")
        for dep in sorted(deps)
        if dep.startswith("encoder.training")
    ]
    assert bad == []


def test_no_import_cycles() -> None:
    """Depth-first search over modules; any back edge is a cycle."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    cycles: list[list[str]] = []

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        for dep in sorted(GRAPH[name]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_no_router_imports_another_router() -> None:
    routers = {name for name in GRAPH if name.startswith("service.routers.")}
    assert routers, "no routers found"
    crossing = [f"{name} imports {dep}" for name in routers for dep in GRAPH[name] & routers]
    assert crossing == []


def test_service_holds_no_measuring_code() -> None:
    names = [name for name in GRAPH if top(name) == "service"]
    assert not [n for n in names if any(w in n for w in ("bench", "loadtest", "soak", "stages"))]
    # The command line lives in cli/ (and the client's, in cheapqa_client.cli).
    command_line = ("service.cli", "service.commands")
    command_line_prefixes = tuple(f"{p}." for p in command_line)
    assert not [n for n in names if n in command_line or n.startswith(command_line_prefixes)]


def test_the_mode_literal_is_written_once() -> None:
    """`Mode` and MODES are defined in encoder/model/modes.py; nothing else spells the four out."""
    spelled = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Subscript | ast.Set):
                strings = {
                    n.value
                    for n in ast.walk(node)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                }
                if {"none", "linear", "gated", "softmax"} <= strings:
                    spelled.append(name)
    assert sorted(set(spelled)) == ["encoder.model.modes"]


def test_the_command_line_starts_without_torch() -> None:
    """Command modules import their libraries inside the handler: `cheapqa --help` stays
    quick, and a uvicorn worker process (which imports the main module again) answers its
    supervisor's health pings before it loads anything heavy."""
    code = (
        "import sys, cli.main; print(sorted(m for m in ('torch', 'fastapi') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
