"""The import graph, read from the source: the core never imports Streamlit or the app, and the app's folders are
layers, each importing only from itself and the ones before it.

Every ``import`` counts, a function's late one included (``ast.walk`` sees them all), so a cycle cannot hide in a
lazy import either.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attention_viz"
UI = PACKAGE / "ui"
# attention_viz/ui's layers, lowest first: the one module of Streamlit's internals, then the folders by job.
LAYERS = ("internals", "text", "view", "server", "frame", "attention_map", "shared", "pages")


def imported(source: str, module: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``source``, a relative one resolved from ``module``'s own name
    (``from . import x`` in ``a.b.c`` is ``a.b.x``). ``from p import x`` names ``p.x``: ``x`` may be a module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, *([base] if base else [])])
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str | None:
    """The layer of a module of ``attention_viz.ui`` (``None`` for the package itself): its folder under ui/,
    or its own name if it sits directly in ui/."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


def upward_imports(sources: dict[str, str]) -> list[str]:
    """What breaks the layers in ``{module name: source}``: an import of a later layer, or a module in no layer."""
    broken = []
    for module, source in sources.items():
        own = layer(module)
        if own is None:
            continue
        if own not in LAYERS:
            broken.append(f"{module} is in no layer: move it into one of the folders {LAYERS[1:]}")
            continue
        for line, name in imported(source, module):
            target = layer(name) if name.startswith("attention_viz.ui.") else None
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(own):
                broken.append(f"{module}:{line} imports {name}: {own!r} is below {target!r}")
    return broken


def _sources(paths) -> dict[str, str]:
    return {module_name(path): path.read_text(encoding="utf-8") for path in sorted(paths)}


def test_the_core_imports_neither_streamlit_nor_the_app():
    core = [path for path in PACKAGE.rglob("*.py") if UI not in path.parents]
    assert len(core) > 50  # models, extraction, analysis, figures and the modules beside them
    found = [
        f"{module}:{line} imports {name}"
        for module, source in _sources(core).items()
        for line, name in imported(source, module)
        if name.split(".")[0] == "streamlit" or name == "attention_viz.ui" or name.startswith("attention_viz.ui.")
    ]
    assert found == []


def test_every_module_of_the_app_sits_in_a_layer_and_imports_no_later_one():
    sources = _sources(UI.rglob("*.py"))
    assert {layer(module) for module in sources} - {None} == set(LAYERS)  # every layer holds modules
    assert upward_imports(sources) == []


def test_an_import_of_a_later_layer_and_a_module_outside_the_folders_are_found():
    sources = {
        "attention_viz.ui.view.state": "def f():\n    from attention_viz.ui.shared import controls\n",
        "attention_viz.ui.frame.screen": "from ..server import cache\nfrom ..pages import compare\n",
        "attention_viz.ui.text.i18n": "import attention_viz.ui.text.safe_text\nfrom attention_viz.ui import internals",
        "attention_viz.ui.sidebar": "",
    }
    assert upward_imports(sources) == [
        "attention_viz.ui.view.state:2 imports attention_viz.ui.shared.controls: 'view' is below 'shared'",
        "attention_viz.ui.frame.screen:2 imports attention_viz.ui.pages.compare: 'frame' is below 'pages'",
        f"attention_viz.ui.sidebar is in no layer: move it into one of the folders {LAYERS[1:]}",
    ]


@pytest.mark.parametrize("folder", [name for name in LAYERS if name not in ("internals", "pages")])
def test_each_folder_says_what_it_offers(folder):
    docstring = ast.get_docstring(ast.parse((UI / folder / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and len(docstring.split()) >= 10


def test_no_page_imports_torch_or_transformers():
    """Pages hold layout: what they draw comes from the core and the server's caches, never a forward of their own."""
    pages = _sources((UI / "pages").glob("*.py"))
    assert len(pages) >= 9
    found = [
        f"{module}:{line} imports {name}"
        for module, source in pages.items()
        for line, name in imported(source, module)
        if name.split(".")[0] in ("torch", "transformers")
    ]
    assert found == []
    assert imported("import torch.nn\nfrom transformers import AutoModel\n", "attention_viz.ui.pages.x") == [
        (1, "torch.nn"),
        (2, "transformers.AutoModel"),
    ]  # what the check above reads as such imports
