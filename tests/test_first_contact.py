"""First contact: the README's first command installs the package, and its Python example works from
any folder and says where the figures are."""

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python_example() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## From Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_requirements_install_the_package_itself():
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "-e ." in lines and "-r requirements-pins.txt" in lines
    pins = (ROOT / "requirements-pins.txt").read_text()
    assert "torch==" in pins and "-e" not in pins  # pyproject reads the pins: no self-reference there
    assert 'file = ["requirements-pins.txt"]' in (ROOT / "pyproject.toml").read_text()


def test_readme_python_example_runs_from_another_folder_and_prints_where_the_figures_are(tmp_path, monkeypatch, capsys):
    """The example run as a script, in this process, from a folder outside the checkout (the package is
    imported already; what depends on the folder is where files are read and written)."""
    script = tmp_path / "example.py"
    script.write_text(_python_example())
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")
    stdout = capsys.readouterr().out
    assert "(6, 12, 16, 16)" in stdout
    written = [Path(line.split(" ", 1)[1]) for line in stdout.splitlines() if line.startswith("wrote ")]
    assert [p.name for p in written] == ["bert_layer3_head1.html", "article_minus_bert.html", "all_heads.html"]
    for path in written:
        assert path.parent == tmp_path / "attention-figures" and "Plotly.newPlot" in path.read_text()
    assert (tmp_path / "attention-figures" / "plotly.min.js").stat().st_size > 1_000_000  # viewable offline
