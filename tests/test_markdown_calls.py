"""Every Streamlit call that renders Markdown gets text that is safe to render: a constant, ``t(...)`` (which
escapes its fields), ``literal(...)``, a function declared to return ``Markdown``, or such values combined.

Read from the source (the AST of ``app.py`` and ``attention_viz/ui``), so an f-string, a variable or a
concatenation that puts outside text into a header, a message, a label or a help text fails here before
anyone sees a link or a formula made of it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "app.py", *sorted((ROOT / "attention_viz" / "ui").rglob("*.py"))]

# Calls whose first argument (or ``body``) is Markdown.
BODY = {"markdown", "caption", "header", "subheader", "title", "warning", "error", "info", "success", "toast"}
BODY |= {"write", "exception", "spinner"}
# Widgets and containers whose label (first argument or ``label``) is Markdown; ``help`` is everywhere.
LABELLED = {"button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider"}
LABELLED |= {"text_input", "text_area", "number_input", "file_uploader", "download_button", "link_button"}
LABELLED |= {"page_link", "pills", "segmented_control", "expander", "popover", "metric", "color_picker"}
LABELLED |= {"date_input", "time_input", "form_submit_button", "status", "feedback"}
MARKDOWN_OPTIONS = {"radio", "pills", "segmented_control"}  # their options are Markdown too
NOT_STREAMLIT = {"log", "_log", "logger", "logging", "parser", "warnings"}
SAFE_CALLS = {"t", "literal", "Markdown"}
SAFE_ANNOTATIONS = {"Markdown", "int", "float", "bool"}
NUMBER_FORMATS = set("bcdeEfFgGnoxX%")
# Markdown(...) of something that is not a constant trusts it: only where the text is the project's own.
TRUSTED = {
    "attention_viz/ui/text/safe_text.py",
    "attention_viz/ui/text/i18n.py",
    "attention_viz/ui/shared/presets_ui.py",
}


def _safe_annotation(annotation: ast.AST | None) -> bool:
    """A parameter declared as one of :data:`SAFE_ANNOTATIONS`, or as one of them ``| None``."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        return any(_safe_annotation(side) for side in sides) and all(
            _safe_annotation(side) or (isinstance(side, ast.Constant) and side.value is None) for side in sides
        )
    return isinstance(annotation, ast.Name) and annotation.id in SAFE_ANNOTATIONS


def _markdown_functions(trees: dict[str, ast.Module]) -> set[str]:
    """Functions declared to return ``Markdown`` (or ``Markdown | None``)."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.returns is not None:
                returned = {n.id for n in ast.walk(node.returns) if isinstance(n, ast.Name)}
                if "Markdown" in returned and returned <= {"Markdown", "None"}:
                    names.add(node.name)
    return names


class Checker:
    """Finds Markdown-rendering calls given something that may hold outside text."""

    def __init__(self, tree: ast.Module, safe_calls: set[str]) -> None:
        self.tree, self.safe_calls = tree, safe_calls
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def _scope(self, node: ast.AST) -> ast.AST:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                return node
        return self.tree

    def _own_nodes(self, scope: ast.AST):
        """The nodes of ``scope`` outside its nested functions."""
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                stack.extend(ast.iter_child_nodes(node))

    def _name_safe(self, name: str, at: ast.AST, seen: frozenset[str]) -> bool:
        if name in seen:
            return True  # `x += ...`: the other assignments decide
        scope = self._scope(at)
        while True:
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                arguments = scope.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg]
                for arg in filter(None, every):
                    if arg.arg == name:
                        return _safe_annotation(arg.annotation)
            values, found = [], False
            for node in self._own_nodes(scope):
                if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)):
                    continue
                found = True
                parent = self.parents[node]
                targets = parent.targets if isinstance(parent, ast.Assign) else [getattr(parent, "target", None)]
                assigned = isinstance(parent, ast.Assign | ast.AnnAssign) and node in targets
                if assigned or (isinstance(parent, ast.AugAssign) and isinstance(parent.op, ast.Add)):
                    values.append(parent.value)
                elif (looped := self._looped_over(node)) is not None:
                    values += looped
                else:
                    return False  # unpacked, looped over something unknown, bound by `with` or `:=`: unknown
            if found:
                return all(self.safe(value, seen | {name}) for value in values)
            if scope is self.tree:
                return False  # imported or built in: unknown
            scope = self._scope(scope)

    def _looped_over(self, name: ast.Name) -> list[ast.AST] | None:
        """What ``for name in ...`` binds ``name`` to: the elements of a literal, else the iterable itself (its
        elements are as safe as it is); for ``for a, name in ((..., ...), ...)`` the literal's column; else ``None``."""
        target, position = name, None
        if isinstance(self.parents[name], ast.Tuple):
            target = self.parents[name]
            position = target.elts.index(name)
        loop = self.parents.get(target)
        if not (isinstance(loop, ast.For) and loop.target is target):
            return None
        literal = isinstance(loop.iter, ast.Tuple | ast.List)
        if position is None:
            return list(loop.iter.elts) if literal else [loop.iter]
        if not literal:
            return None
        rows = loop.iter.elts
        if not all(isinstance(row, ast.Tuple) and len(row.elts) == len(target.elts) for row in rows):
            return None
        return [row.elts[position] for row in rows]

    def safe(self, node: ast.AST | None, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``node`` evaluates to text that is safe to render as Markdown."""
        if node is None or isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.JoinedStr):
            return all(
                isinstance(part, ast.Constant)
                or self.safe(part.value, seen)
                or (part.format_spec is not None and ast.unparse(part.format_spec)[-2:-1] in NUMBER_FORMATS)
                for part in node.values
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.safe(node.left, seen) and self.safe(node.right, seen)
        if isinstance(node, ast.IfExp):
            return self.safe(node.body, seen) and self.safe(node.orelse, seen)
        if isinstance(node, ast.BoolOp):
            return all(self.safe(value, seen) for value in node.values)
        if isinstance(node, ast.Name):
            return self._name_safe(node.id, node, seen)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "join":  # only Markdown(...).join escapes
                return isinstance(func.value, ast.Call) and getattr(func.value.func, "id", None) == "Markdown"
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            return name in self.safe_calls
        if isinstance(node, ast.List | ast.Tuple):
            return all(self.safe(item, seen) for item in node.elts)
        return False

    def _format_func_safe(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Lambda):
            return self.safe(node.body)
        if isinstance(node, ast.Call):
            return self.safe(node)
        if isinstance(node, ast.Attribute) and node.attr in {"get", "__getitem__"}:
            table = node.value
            if isinstance(table, ast.Name):
                return table.id.isupper()  # a module constant of the project's own words
            if isinstance(table, ast.DictComp):
                return self.safe(table.value)
            if isinstance(table, ast.Dict):
                return all(self.safe(value) for value in table.values)
        return False

    def problems(self) -> list[tuple[int, str]]:
        found = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            node = self._through_control(node)
            funcs = [node.func.body, node.func.orelse] if isinstance(node.func, ast.IfExp) else [node.func]
            for func in funcs:
                if not isinstance(func, ast.Attribute) or getattr(func.value, "id", None) in NOT_STREAMLIT:
                    continue
                found += [(node.lineno, f"{func.attr}: {ast.unparse(arg)}") for arg in self._texts(func.attr, node)]
        return found

    @staticmethod
    def _through_control(call: ast.Call) -> ast.Call:
        """``state.control(st.radio, label, key, options, labels=...)`` read as the widget call it makes:
        ``st.radio(label, options, format_func=...)``."""
        name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
        if name != "control" or not call.args or not isinstance(call.args[0], ast.Attribute):
            return call
        args = call.args[1:2] + call.args[3:4]
        keywords = [ast.keyword("format_func" if k.arg == "labels" else k.arg, k.value) for k in call.keywords]
        return ast.copy_location(ast.Call(func=call.args[0], args=args, keywords=keywords), call)

    def _texts(self, method: str, call: ast.Call) -> list[ast.AST]:
        """The arguments of ``call`` that Streamlit renders as Markdown and that may not be safe."""
        keywords = {k.arg: k.value for k in call.keywords}
        texts = [keywords.get("help"), keywords.get("text") if method == "progress" else None]
        if method in BODY:
            texts += [call.args[0] if call.args else keywords.get("body", keywords.get("text"))]
        if method in LABELLED:
            texts += [call.args[0] if call.args else keywords.get("label")]
        if method == "metric":
            texts += [*call.args[1:3], keywords.get("value"), keywords.get("delta")]
        unsafe = [text for text in texts if not self.safe(text)]
        if method in MARKDOWN_OPTIONS:
            if "format_func" in keywords:
                if not self._format_func_safe(keywords["format_func"]):
                    unsafe.append(keywords["format_func"])
            elif len(call.args) > 1 and not self.safe(call.args[1]):
                unsafe.append(call.args[1])
        return unsafe


def _trees() -> dict[str, ast.Module]:
    return {str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8")) for path in SOURCES}


def test_every_markdown_call_gets_safe_text():
    trees = _trees()
    safe_calls = SAFE_CALLS | _markdown_functions(trees)
    problems = [
        f"{path}:{line}: {what}" for path, tree in trees.items() for line, what in Checker(tree, safe_calls).problems()
    ]
    assert not problems, "outside text may reach Markdown; pass it through literal() or t():\n" + "\n".join(problems)


def test_markdown_is_trusted_only_where_the_text_is_the_projects():
    trusting = set()
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            called = isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Markdown"
            if called and not all(isinstance(arg, ast.Constant) for arg in node.args):
                trusting.add(path)
    assert trusting <= TRUSTED, trusting - TRUSTED


def _problems(source: str) -> list[str]:
    tree = ast.parse(textwrap.dedent(source))
    return [what for _, what in Checker(tree, SAFE_CALLS | _markdown_functions({"x": tree})).problems()]


@pytest.mark.parametrize(
    "source",
    [
        "st.warning(f'could not read {name}')",
        "st.header(t('x') + text)",
        "def f(label: str):\n    st.slider(label, 0, 3)",
        "message = ', '.join(names)\nst.info(message)",
        "for name in names:\n    st.caption(name)",
        "st.text_input(t('x'), help=detail)",
        "st.radio(t('x'), options, format_func=lambda o: labels[o])",
        "st.metric(t('x'), token)",
        "(st.success if ok else st.error)(text)",
        "col.markdown(f'**{n}.** {text}')",
        "st.caption(t('x').format(name))",
        "state.control(st.radio, t('x'), 'key', options, labels=lambda o: labels[o])",
        "state.control(col.pills, label, 'key', options)",
        "for label, value in ((t('a'), token),):\n    st.metric(label, value)",
        "def f(*parts: str):\n    for part in parts:\n        st.markdown(part)",
    ],
)
def test_the_checker_finds_unsafe_calls(source):
    assert _problems(source)


@pytest.mark.parametrize(
    "source",
    [
        "st.warning(t('links.opened_invalid', names=Markdown(', ').join(names)))",
        "def f(label: Markdown, n: int):\n    st.slider(label, 0, n)\n    st.markdown(f'**{n}.** ' + label)",
        "intro = t('a')\nintro += ' ' + t('b')\nslot.markdown(intro)",
        "def m() -> Markdown | None:\n    return None\nmessage = m()\nst.warning(message)",
        "st.metric(t('x'), f'{value:.3f}')",
        "st.caption(literal(name) + ' ' + (t('a') if pooled else ''))",
        "log.error('failed: %s', detail)",
        "st.radio(t('x'), options, format_func=LANGUAGES.get)",
        "state.control(st.radio, t('x'), 'key', options, labels=lambda o: t(f'x.{o}'), help=t('h'))",
        "for label, value in ((t('a'), f'{x:.3f}'), (t('b'), t('c', v=1))):\n    st.metric(label, value)",
        "def f(*parts: Markdown):\n    for part in parts:\n        st.markdown(part)",
    ],
)
def test_the_checker_accepts_safe_calls(source):
    assert not _problems(source)
