"""The README and the documentation site (docs/, mkdocs.yml) against the app they describe, without a browser:
every image they show exists and is taken by docs/screenshots.py, every page of the app has its page with the
app's title, every docs page is in the site's navigation, every label the docs name in italics is one the app
shows, and the README stays short with its two commands first."""

import ast
import functools
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FIRST_SCREEN = 40  # lines of the README a newcomer sees before scrolling
INSTALL_AND_RUN = "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/streamlit run app.py"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
ITALIC = re.compile(r"(?<![*\w])\*([^*]+?)\*(?![*\w])")  # *a label the app shows*, not **bold**


def _docs_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@functools.cache
def _shots():
    """docs/screenshots.py's ``SHOTS`` (the script is imported, not run: it starts nothing on import)."""
    spec = importlib.util.spec_from_file_location("docs_screenshots", DOCS / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module.SHOTS


def _app_pages() -> dict[str, str]:
    """``{page id: the locale key of its title}`` from the ``pages`` dict of ``app.py``'s ``st.Page`` calls."""
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "pages"
    )
    found = {}
    for key, call in zip(pages.keys, pages.values, strict=True):
        path = call.args[0].value
        title = next(kw.value for kw in call.keywords if kw.arg == "title")
        assert Path(path).stem == key.value, f"page id {key.value} and its file {path} differ"
        found[key.value] = title.args[0].value  # t("app.page_compare")
    return found


def _english() -> dict:
    return tomllib.loads((ROOT / "attention_viz/ui/text/locales/en.toml").read_text())


def _english_strings(table: dict) -> list[str]:
    strings = []
    for value in table.values():
        if isinstance(value, dict):
            strings += _english_strings(value)
        elif isinstance(value, str):
            strings.append(value)
    return strings


def _nav_files(entries) -> list[str]:
    files = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        files += _nav_files(value) if isinstance(value, list) else [value]
    return files


def test_every_image_the_docs_and_readme_show_exists_and_is_taken_by_the_screenshot_script():
    shots = {shot.file for shot in _shots()}
    shown = set()
    for source in [README, *_docs_pages()]:
        for target in IMAGE.findall(source.read_text()):
            image = (source.parent / target).resolve()
            assert image.is_file(), f"{source.relative_to(ROOT)} shows {target}, which is not there"
            assert image.parent == DOCS / "img", f"{target}: screenshots live in docs/img/"
            assert image.name in shots, f"{target} is not taken by docs/screenshots.py (SHOTS)"
            shown.add(image.name)
    assert shown == shots  # nothing taken that no page shows
    assert {path.name for path in (DOCS / "img").iterdir()} == shots  # no image left over from an old page
    for shot in _shots():
        size = (DOCS / "img" / shot.file).stat().st_size
        assert 10_000 < size < 300_000, f"{shot.file}: {size} bytes"
        png = (DOCS / "img" / shot.file).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert (width, height) == (shot.width, shot.height), shot.file  # the window, not the whole page


def test_every_page_of_the_app_has_its_docs_page_with_its_title_and_a_screenshot_of_it():
    english = _english()
    shots = _shots()
    pages = _app_pages()
    assert len(pages) == 9
    for page, title_key in pages.items():
        doc = DOCS / "pages" / f"{page}.md"
        assert doc.is_file(), f"the app's page {page} has no docs/pages/{page}.md"
        section, name = title_key.split(".")
        first_line = doc.read_text().splitlines()[0]
        assert first_line == f"# {english[section][name]}", f"{doc.name}: the app calls it {english[section][name]}"
        shot = next((s for s in shots if s.query.split("&")[0] == f"?page={page}" and s.width == 1280), None)
        assert shot is not None, f"no screenshot of {page} in docs/screenshots.py"
        assert f"../img/{shot.file}" in doc.read_text(), f"{doc.name} does not show {shot.file}"
    assert {path.stem for path in (DOCS / "pages").glob("*.md")} == set(pages)  # no page the app has dropped


def test_every_label_the_docs_name_in_italics_is_one_the_app_shows():
    """The docs write a control's label in italics (*Words, not pieces*); each must still be in the English
    table, so a renamed or removed control cannot stay in the docs."""
    shown = " ".join(" ".join(_english_strings(_english())).split()).lower()
    for doc in [*(DOCS / "pages").glob("*.md"), DOCS / "app.md", DOCS / "getting-started.md"]:
        labels = [" ".join(label.split()) for label in ITALIC.findall(doc.read_text())]
        assert labels or doc.parent.name != "pages", f"{doc.name} names no control"
        for label in labels:
            assert label.lower() in shown, f"{doc.name} names *{label}*, which the app does not show"


def test_the_site_lists_every_docs_page_and_builds_offline():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_files(config["nav"])
    pages = [str(path.relative_to(DOCS)) for path in _docs_pages()]
    assert sorted(nav) == sorted(pages) and len(nav) == len(set(nav))
    assert config["strict"] is True and config["theme"] == {**config["theme"], "name": "material", "font": False}
    assert config["validation"]["anchors"] == "warn"  # strict turns a broken anchor into a failed build
    handler = config["plugins"][1]["mkdocstrings"]["handlers"]["python"]
    assert handler["paths"] == ["."]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert any(line.endswith(".venv/bin/mkdocs build --strict") for line in ci)
    assert "site/" in (ROOT / ".gitignore").read_text().splitlines()
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert all(re.search(rf"^{name}==\d", dev, re.M) for name in ("mkdocs", "mkdocs-material", "mkdocstrings-python"))


@pytest.mark.parametrize("source", ["README.md", *[str(p.relative_to(ROOT)) for p in sorted(DOCS.rglob("*.md"))]])
def test_every_relative_link_reaches_a_file(source):
    path = ROOT / source
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = (path.parent / target.split("#")[0]).resolve()
        assert file.exists(), f"{source} links to {target}, which is not there"
        if source != "README.md":
            assert file.is_relative_to(DOCS), f"{source} links outside docs/: the site cannot follow {target}"


def test_the_readme_is_short_with_the_two_commands_and_the_first_run_on_its_first_screen():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150
    fence = lines.index("```bash")
    assert fence <= 6  # the title, one sentence of what it is, then the commands
    block = lines[fence + 1 : lines.index("```", fence)]
    commands = [line for line in block if line and not line.startswith("#")]
    assert commands[0] == INSTALL_AND_RUN
    assert commands[1].startswith("python3 -m venv .venv && .venv/bin/pip install -r requirements-dev.txt && ")
    assert commands[1].endswith(" && .venv/bin/python -m pytest") and len(commands) == 2
    assert ".venv/bin/python -m pytest" in (ROOT / ".ci" / "run").read_text().splitlines()  # CI runs the same
    first_screen = " ".join(lines[:FIRST_SCREEN])
    for needed in (
        "http://localhost:8501",
        "Ctrl+C",
        "**Presentation**",
        "(docs/index.md)",
        "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0",
        "![",
    ):
        assert needed in first_screen, needed
    assert "## From Python" in lines and "## Command line" in lines and "## Documentation" in lines


def test_the_live_reload_options_in_the_docs_are_the_ones_their_test_runs():
    tree = ast.parse((ROOT / "tests" / "test_browser_fresh_server.py").read_text())
    options = next(
        ast.literal_eval(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "LIVE_RELOAD"
    )
    assert f".venv/bin/streamlit run app.py {' '.join(options)}" in (DOCS / "getting-started.md").read_text()


def test_the_help_lines_in_the_docs_name_every_command_of_the_cli():
    """A ``attention-viz --help`` line in the docs whose comment lists the commands lists all of them, in order."""
    import argparse

    from attention_viz.cli import build_parser

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    expected = ", ".join(commands.choices)
    found = [
        (page.name, line)
        for page in [README, *_docs_pages()]
        for line in page.read_text(encoding="utf-8").splitlines()
        if re.search(r"attention-viz --help\s+#", line)
    ]
    assert found
    for name, line in found:
        assert line.split("#", 1)[1].strip() == expected, (name, line)
