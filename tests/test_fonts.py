"""Fonts: the install commands bring the CJK and emoji fonts, and a Chinese label is drawn with real glyphs
(on a fresh Debian without ``fonts-noto-cjk`` every Chinese character was the same empty box)."""

import re
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import idle, settled

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("chromium", "nginx", "fonts-noto-cjk", "fonts-noto-color-emoji")


def _install_step(text: str) -> str:
    """The shell of an install command, from its check of what is there to the end of its apt-get group."""
    start = text.index("command -v chromium")
    end = text.index("; }", text.index("apt-get install", start)) + len("; }")
    return text[start:end]


@pytest.mark.parametrize("source", ["README.md", ".ci/run"])
@pytest.mark.parametrize(
    "missing", [None, "chromium", "nginx", "fonts-noto-cjk", "fonts-noto-color-emoji"], ids=lambda m: m or "none"
)
def test_the_install_command_adds_the_fonts_and_skips_apt_only_when_everything_is_there(tmp_path, source, missing):
    step = _install_step((ROOT / source).read_text())
    bin_dir, nginx = tmp_path / "bin", tmp_path / "nginx"
    bin_dir.mkdir()
    if missing != "chromium":
        (bin_dir / "chromium").write_text("#!/bin/sh\n")
        (bin_dir / "chromium").chmod(0o755)
    if missing != "nginx":
        nginx.write_text("#!/bin/sh\n")
        nginx.chmod(0o755)
    script = f"""
apt-get() {{ echo "apt-get $*" >> {tmp_path}/apt.log; }}
dpkg() {{ for p in "${{@:2}}"; do [ "$p" = "{missing}" ] && return 1; done; return 0; }}
{step.replace("/usr/sbin/nginx", str(nginx))}
"""
    subprocess.run(["/bin/bash", "-c", script], check=True, env={"PATH": str(bin_dir)})
    log = tmp_path / "apt.log"
    if missing is None:
        assert not log.exists(), log.read_text()  # everything there: no apt-get, no root needed
    else:
        installed = log.read_text().splitlines()[-1].split()
        assert installed[:2] == ["apt-get", "install"] and set(PACKAGES) <= set(installed), installed


CJK = re.compile("[\u4e00-\u9fff]")
_WIDTHS = r"""selector => {
    const el = [...document.querySelectorAll(selector)].find(e => /[\u4e00-\u9fff]/.test(e.textContent));
    if (!el) return null;
    const widthOf = text => {
        let probe;
        if (el instanceof SVGTextElement) {
            probe = el.cloneNode(false);
            el.parentNode.appendChild(probe);
        } else {
            probe = document.createElement('span');
            el.appendChild(probe);
        }
        probe.textContent = text;
        const width = probe.getComputedTextLength ? probe.getComputedTextLength() : probe.getBoundingClientRect().width;
        probe.remove();
        return width;
    };
    const chars = [...el.textContent].filter(c => /[\u4e00-\u9fff]/.test(c));
    return {text: el.textContent, tofu: widthOf('\u0378'), letter: widthOf('n'), widths: chars.map(widthOf)};
}"""


def test_a_chinese_label_is_drawn_with_real_glyphs_not_the_missing_glyph_box(server, chromium):
    """A character with no glyph in any font is drawn as the missing-glyph box, whose width is one for every
    such character (U+0378 is unassigned: always that box); a CJK glyph is a full em wide."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/?page=rollout&lang=zh&text={quote('注意力很有趣')}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
    idle(page)
    settled(page, ".js-plotly-plot")
    for selector in (".js-plotly-plot svg text", "[data-testid='stSidebar'] label p", "h1, h2, h3"):
        measured = page.evaluate(_WIDTHS, selector)
        assert measured is not None, f"no Chinese text in {selector}"
        assert measured["widths"], measured
        for width in measured["widths"]:  # each Chinese character: wider than a Latin letter, not the box
            assert abs(width - measured["tofu"]) > 1 and width > measured["letter"] * 1.2, (selector, measured)
    page.close()
