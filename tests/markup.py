"""Outside text that Markdown, Streamlit or a browser would read as something else, and a CommonMark view of
what a Markdown source shows (markdown-it-py, the CommonMark reference rules Streamlit's parser follows)."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from markdown_it import MarkdownIt

# Each entry is one kind: a link, an image the browser would fetch, emphasis, a heading, LaTeX, raw HTML,
# backslashes, backticks, Streamlit's shortcodes and directives, right-to-left text, autolinks, blocks.
MARKUP = (
    "[Session expired: log in again](https://example.invalid/login)",
    "![x](http://127.0.0.1:9/p.png)",
    "**IMPORTANT** __also__ *em* _em_ ~~gone~~",
    "# Heading",
    "Title\n===",
    r"$\huge{BIG}$ and $$x^2$$",
    '<b>bold</b> <img src="http://127.0.0.1:9/q.png"> <a href="https://example.invalid">x</a>',
    "a \\ b \\* c \\",
    "`code` ``two`` ```",
    "😀 :smile: :material/home: :red[red] :streamlit: :blue-background[x]",
    "שלום עולם مرحبا بالعالم",
    "www.example.invalid https://example.invalid/x a@example.invalid",
    "1. one",
    "- item",
    "> quote",
    "    indented",
    "-> <- -- >=",
    "&amp; &lt;b&gt; &#42;",
    "[ref]\n\n[ref]: https://example.invalid/ref",
)
MARKED_TAGS = {"a", "img", "strong", "em", "del", "s", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li"}
MARKED_TAGS |= {"blockquote", "pre", "hr", "table", "b", "i"}


def one_line(text: str) -> str:
    """What a literal shows for ``text``: line breaks become spaces."""
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


@dataclass(frozen=True)
class Shown:
    """What a Markdown source shows: its text, the HTML tags made, and the text outside code spans."""

    text: str
    tags: frozenset[str]
    outside_code: str


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text, self.outside, self.tags, self.depth = [], [], set(), 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.depth += tag == "code"

    def handle_endtag(self, tag):
        self.depth -= tag == "code"

    def handle_data(self, data):
        self.text.append(data)
        if not self.depth:
            self.outside.append(data)


def shown(source: str) -> Shown:
    """Render ``source`` as CommonMark and read back what it shows (a paragraph's text has no trailing newline)."""
    reader = _Reader()
    reader.feed(MarkdownIt("commonmark").render(source))
    return Shown("".join(reader.text).strip("\n"), frozenset(reader.tags), "".join(reader.outside))
