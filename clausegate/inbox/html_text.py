"""An HTML e-mail body as plain text, with the standard library's parser: text only, nothing fetched or run.

The result is what a reader of the message sees, as text to review:

* script, style, head and template contents are dropped (code and metadata, never shown);
* ``<noscript>`` text is read: a mail client runs no script, so it shows it;
* text a reader does not see is left out and returned apart (``HtmlText.hidden``), so the intake says so: an element
  with the ``hidden`` attribute or an inline style ``display:none``, ``visibility:hidden``/``collapse``,
  ``font-size:0`` or ``opacity:0``, or one a ``<style>`` rule with such a declaration selects by a simple selector
  (tag, class, id), with everything inside it; a hiding rule with another selector is not applied but returned
  (``HtmlText.unjudged_css``), so that is said too;
* ``<svg>`` and ``<math>`` text (drawings and formulas) is not read either and returned apart
  (``HtmlText.skipped``), so that is said too;
* block elements and ``<br>`` end a line; character references are decoded; runs of spaces collapse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

_DROPPED = frozenset({"script", "style", "head", "title", "template"})
_NOT_READ = frozenset({"svg", "math"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})
_BLOCKS = frozenset({"p", "div", "br", "li", "ul", "ol", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6",
                     "blockquote", "pre", "section", "article", "header", "footer", "hr", "dd", "dt", "noscript"})
_CLOSES_P = frozenset({"address", "article", "aside", "blockquote", "div", "dl", "fieldset", "footer", "form", "h1",
                       "h2", "h3", "h4", "h5", "h6", "header", "hr", "menu", "nav", "ol", "p", "pre", "section",
                       "table", "ul"})  # an open <p> ends where one of these starts (HTML's parsing rules)
_PHRASING = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "em", "font", "i", "kbd", "mark", "q", "s",
                       "samp", "small", "span", "strong", "sub", "sup", "u", "var"})
_HIDING_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|font-size\s*:\s*0*\.?0+(?:[a-z%]+)?"
    r"|opacity\s*:\s*0*\.?0+%?)\s*(?:!\s*important\s*)?(?:;|$)", re.I)
_CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE_SELECTOR = re.compile(r"(?P<tag>[a-z][a-z0-9]*|\*)?(?P<rest>(?:[.#][-\w]+)*)", re.I)


class _Stylesheet:
    """The ``<style>`` rules that hide: simple selectors (``tag``, ``.class``, ``#id``, ``p.note``, lists of them)
    are applied; a hiding rule with any other selector (descendants, attributes, pseudo-classes) is counted as
    not judged, so the intake can say so."""

    def __init__(self) -> None:
        self.hiding: list[tuple[str | None, frozenset[str], str | None]] = []  # (tag, classes, id)
        self.unjudged: list[str] = []

    def add(self, css: str) -> None:
        css = re.sub(r"/\*.*?\*/", " ", css, flags=re.S)
        for selectors, declarations in _CSS_RULE.findall(css):
            if not _HIDING_STYLE.search(declarations.strip()):
                continue
            for selector in (part.strip() for part in selectors.split(",")):
                simple = _SIMPLE_SELECTOR.fullmatch(selector)
                if not selector or simple is None or not (simple["tag"] or simple["rest"]):
                    self.unjudged.append(" ".join(selector.split())[:60])
                    continue
                rest = re.findall(r"[.#][-\w]+", simple["rest"])
                ids = [r[1:] for r in rest if r[0] == "#"]
                tag = simple["tag"].lower() if simple["tag"] and simple["tag"] != "*" else None
                self.hiding.append((tag, frozenset(r[1:] for r in rest if r[0] == "."), ids[0] if ids else None))

    def hides(self, tag: str, attrs: dict[str, str | None]) -> bool:
        classes = set((attrs.get("class") or "").split())
        return any((want is None or want == tag) and want_classes <= classes
                   and (want_id is None or want_id == attrs.get("id")) for want, want_classes, want_id in self.hiding)


@dataclass
class HtmlText:
    """The visible text, and what was not read: hidden text and drawings' text (each piece flattened)."""

    text: str
    hidden: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unjudged_css: list[str] = field(default_factory=list)  # selectors of hiding <style> rules that were not applied


def hides(attrs: list[tuple[str, str | None]]) -> bool:
    """Does an element with these attributes hide itself and its content from a reader?"""
    for name, value in attrs:
        if name == "hidden":
            return True
        if name == "style" and value and _HIDING_STYLE.search(value):
            return True
    return False


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden: list[list[str]] = []
        self.skipped: list[list[str]] = []
        self._open: list[tuple[str, list[str] | None]] = []  # open elements: (tag, where their text goes)
        self._drop: list[str] = []  # a sink for dropped text (script, style, ...)
        self.css = _Stylesheet()

    def _sink(self) -> list[str] | None:
        """Where text goes now: the piece of the outermost dropping, hiding or skipping element, else None."""
        return next((sink for _, sink in self._open if sink is not None), None)

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _VOID:
            self.handle_startendtag(tag, attrs)
            return
        self._implied_ends(tag)
        sink = None
        if self._sink() is None:  # a new dropped, hidden or skipped piece starts here
            if tag in _DROPPED:
                sink = self._drop
            elif hides(attrs) or self.css.hides(tag, dict(attrs)):
                sink = []
                self.hidden.append(sink)
            elif tag in _NOT_READ:
                sink = []
                self.skipped.append(sink)
        self._open.append((tag, sink))
        if self._sink() is None and (tag in _BLOCKS or tag in ("td", "th")):
            self.parts.append("\n" if tag in _BLOCKS else " ")

    def _implied_ends(self, tag: str) -> None:
        """Close what a browser closes before ``tag``: an open <p> (inside phrasing only), or the previous <li>."""
        ends = "p" if tag in _CLOSES_P else "li" if tag == "li" else None
        tags = [t for t, _ in self._open]
        if ends in tags:
            last = len(tags) - 1 - tags[::-1].index(ends)
            if all(t in _PHRASING for t in tags[last + 1:]):
                del self._open[last:]

    def handle_startendtag(self, tag: str, attrs) -> None:
        if tag in _BLOCKS and self._sink() is None:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if not any(t == tag for t, _ in self._open):
            return  # a stray end tag closes nothing
        while self._open:
            if self._open.pop()[0] == tag:
                break
        if tag in _BLOCKS and self._sink() is None:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._open and self._open[-1][0] == "style":
            self.css.add(data)
        sink = self._sink()
        (self.parts if sink is None else sink).append(data)
        self._drop.clear()


def _flat(pieces: list[list[str]]) -> list[str]:
    return [text for text in (" ".join(" ".join(piece).split()) for piece in pieces) if text]


def read_html(html: str) -> HtmlText:
    """The visible text of ``html`` (one line per block, spaces collapsed, at most one blank line in a row), and
    the hidden and skipped text (module docstring)."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = [re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip() for line in "".join(parser.parts).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return HtmlText(text, _flat(parser.hidden), _flat(parser.skipped), list(dict.fromkeys(parser.css.unjudged)))


def html_to_text(html: str) -> str:
    """The visible text of ``html`` only (:func:`read_html`)."""
    return read_html(html).text
