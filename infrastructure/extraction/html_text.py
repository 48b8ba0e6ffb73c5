"""The text a reader sees on an HTML page, laid out as paragraphs and lines for the chunker.

Script, style, template, SVG and hidden elements are dropped: their words are no part of what the
page says. Block elements (paragraphs, headings, lists, tables) become paragraphs separated by a
blank line, line-level ones (list items, table rows, divisions, `<br>`) lines, table cells are
separated by " | ", and runs of white space collapse as a browser collapses them (not in `<pre>`).
The tree is walked with an explicit stack: a hostile page nested a million deep costs no recursion.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

_DROPPED = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "head")
_PARAGRAPHS = frozenset({
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol", "dl", "section",
    "article", "header", "footer", "nav", "aside", "main", "figure", "form", "fieldset", "address", "hr",
    "details", "summary", "caption", "hgroup",
})  # fmt: skip
_LINES = frozenset({"div", "li", "tr", "dt", "dd", "br", "figcaption", "legend", "option", "label"})
_CELLS = frozenset({"td", "th"})
# The separators owed before the next text, weakest first; a stronger one replaces a weaker one.
_NONE, _SPACE, _CELL, _LINE, _PARAGRAPH = range(5)
_SEPARATORS = ("", " ", " | ", "\n", "\n\n")
_WHITESPACE = re.compile(r"[ \t\n\r\f]+")


def html_text(html: str) -> tuple[str, str | None]:
    """The text of the page `html` and its <title> (None when it has none or it is blank)."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _WHITESPACE.sub(" ", title_node.text()).strip() if title_node is not None else ""
    tree.strip_tags(list(_DROPPED))
    root = tree.body or tree.root
    return (_Layout().walk(root) if root is not None else ""), (title or None)


class _Layout:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.owed = _NONE
        self.pre = 0

    def walk(self, root: LexborNode) -> str:
        stack: list[tuple[LexborNode, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            tag = node.tag
            if leaving:
                self._close(tag)
            elif node.is_text_node:
                self._text(node.text_content or "")
            elif node.is_element_node and "hidden" not in node.attributes and tag not in _DROPPED:
                self._open(tag)
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(list(node.iter(include_text=True))))
        return "".join(self.parts)

    def _open(self, tag: str | None) -> None:
        if tag in _PARAGRAPHS:
            self._owe(_PARAGRAPH)
        elif tag in _LINES:
            self._owe(_LINE)
        if tag == "pre":
            self.pre += 1

    def _close(self, tag: str | None) -> None:
        if tag in _PARAGRAPHS:
            self._owe(_PARAGRAPH)
        elif tag in _LINES:
            self._owe(_LINE)
        elif tag in _CELLS:
            self._owe(_CELL)
        if tag == "pre":
            self.pre -= 1

    def _owe(self, separator: int) -> None:
        self.owed = max(self.owed, separator)

    def _text(self, text: str) -> None:
        if not self.pre:
            text = _WHITESPACE.sub(" ", text)
            if text.startswith(" "):
                self._owe(_SPACE)
            trailing = text.endswith(" ")
            text = text.strip(" ")
        else:
            trailing = False
        if not text:
            return
        if self.parts:
            self.parts.append(_SEPARATORS[self.owed])
        self.parts.append(text)
        self.owed = _SPACE if trailing else _NONE
