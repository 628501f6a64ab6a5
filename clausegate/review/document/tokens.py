"""A fast content-stream tokenizer for the hidden-text check (:mod:`clausegate.review.document.hidden`).

``operations(data)`` returns the same ``[(operands, operator), ...]`` list that pypdf's
``ContentStream.operations`` builds for a well-formed content stream (numbers as floats, names as
``str`` starting with ``/``, strings as ``bytes`` (pypdf reads a content stream's strings as byte
strings), arrays as lists, dictionaries as dicts), with one regular expression instead of pypdf's byte-by-byte reader:
about ten times faster, which is what lets the worker check every page for hidden text and still
read ~150+ pages a second.  It returns ``None`` for anything it does not handle exactly like pypdf
(inline images, nested parentheses, malformed tokens, unbalanced strings or arrays, duplicate dictionary
keys, "1 0 R", names pypdf decodes its own way, a vertical tab outside strings, pypdf's token, element,
length and nesting limits): the caller then parses the stream with pypdf, so pypdf's safety limits and
quirks still apply there.  ``tests/unit/test_pdf_tokens.py`` holds it to pypdf's output.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TOKENS = 2_000_000  # pypdf's stream_parsing_work_maximum_count: beyond it, pypdf raises LimitReachedError
MAX_ELEMENTS = 100_000  # pypdf's array_maximum_element_count and dictionary_maximum_element_count
MAX_DEPTH = 100  # nested arrays/dictionaries: pypdf reads them recursively (RecursionError when very deep)
# pypdf reads a name, an operator or a number in 16-byte chunks and raises beyond 4096, 128 or 64 bytes: longer
# tokens than these (with a chunk to spare) are left to pypdf.
MAX_NAME, MAX_OPERATOR, MAX_NUMBER = 4000, 100, 40

_WS = rb"\x00\t\n\x0c\r "
# A name or operator runs to Python's \s (with \x0b, not \x00: pypdf's NameObject.delimiter_pattern) or a delimiter;
# \x0b then stops the tokenizer (pypdf skips it inside arrays only).
_REGULAR = rb"[^\t\n\x0b\x0c\r ()<>\[\]{}/%]"
# One match per token, its leading whitespace included; the group that matched says what it is.
_TOKEN = re.compile(
    rb"[" + _WS + rb"]*(?:"
    rb"(%[^\r\n]*)"  # 1 comment
    rb"|([+\-.0-9]+)(?![^" + _WS + rb"()<>\[\]{}/%])"  # 2 number
    rb"|(/" + _REGULAR + rb"*)"  # 3 name
    rb"|([A-Za-z'\"]" + _REGULAR + rb"*)"  # 4 operator (or true/false/null)
    rb"|\(([^()\\]*(?:\\.[^()\\]*)*)\)"  # 5 literal string without nested parentheses
    rb"|<([0-9A-Fa-f" + _WS + rb"]*)>"  # 6 hex string
    rb"|(<<|\[)"  # 7 open
    rb"|(>>|\])"  # 8 close
    rb"|([^" + _WS + rb"]))",  # 9 anything else: pypdf's business
    re.S,
)
_COMMENT, _NUMBER, _NAME, _OPERATOR, _LITERAL, _HEX, _OPEN, _CLOSE = range(1, 9)
_HEX_SPACE = re.compile(rb"[" + _WS + rb"]")
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|([\r\n][\r\n]?)|(.))", re.S)  # pypdf drops any two EOL bytes
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}
_ESCAPES.update({c: c for c in (b"(", b")", b"/", b"\\", b" ", b"%", b"<", b">", b"[", b"]", b"#", b"_", b"&", b"$")})
_KEYWORDS = {b"true": True, b"false": False, b"null": None}
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
# pypdf reads "<int> <int> R" as an indirect reference, which a content stream cannot have (it raises).
_REFERENCE = re.compile(rb"[0-9][\x00\t\n\x0b\x0c\r ]+[0-9]+[\x00\t\n\x0b\x0c\r ]+R(?![A-Za-z])")
_STREAM_KEYWORD = re.compile(rb"[\x00\t\n\x0c\r ]*stream")  # after ">>": pypdf reads a stream object


class _Unsupported(Exception):
    """Something this tokenizer does not reproduce exactly: let pypdf parse the stream."""


def operations(data: bytes) -> list[tuple[list[Any], bytes]] | None:
    """pypdf's ``ContentStream.operations`` for ``data`` (the stream's decoded bytes), or None (use pypdf)."""
    if _REFERENCE.search(data):
        return None
    try:
        return _parse(data)
    except (_Unsupported, ValueError, UnicodeDecodeError):
        return None


def _unescape(match: re.Match) -> bytes:
    octal, eol, char = match.groups()
    if octal is not None:
        value = int(octal, 8)
        if value > 255:  # pypdf keeps the backslash and reads the digits again
            raise _Unsupported("octal escape over 255")
        return bytes((value,))
    if eol is not None:
        return b""
    return _ESCAPES.get(char, b"\\" + char)


def _hex(token: bytes) -> bytes:
    digits = _HEX_SPACE.sub(b"", token)
    if len(digits) % 2:
        digits += b"0"
    return bytes.fromhex(digits.decode("ascii"))


def _name(token: bytes) -> str:
    if b"#" in token:
        escapes = _NAME_ESCAPE.findall(token)
        if len(escapes) != token.count(b"#"):  # pypdf's int(..., 16) also reads "#f", "#+1", "#-0": its business
            raise _Unsupported("a '#' in a name without two hex digits")
        token = _NAME_ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), token)
    return token.decode("utf-8")


def _parse(data: bytes) -> list[tuple[list[Any], bytes]]:
    ops: list[tuple[list[Any], bytes]] = []
    operands: list[Any] = []
    stack: list[tuple[list[Any], bool]] = []  # open arrays/dicts: (items, is_dict)
    target = operands
    budget = MAX_TOKENS
    for m in _TOKEN.finditer(data):
        kind = m.lastindex
        if kind == _COMMENT:
            continue
        budget -= 1
        if budget < 0:
            raise _Unsupported("token budget")
        if kind == _NUMBER:
            token = m.group(kind)
            if len(token) > MAX_NUMBER:
                raise _Unsupported("long number")
            target.append(float(token))
        elif kind == _OPERATOR:
            token = m.group(kind)
            if len(token) > MAX_OPERATOR:
                raise _Unsupported("long operator")
            if stack:
                if token not in _KEYWORDS:
                    raise _Unsupported("operator inside an array or dictionary")
                target.append(_KEYWORDS[token])
            elif token == b"BI":
                raise _Unsupported("inline image")
            else:
                ops.append((operands, token))
                operands = target = []
        elif kind == _NAME:
            token = m.group(kind)
            if len(token) > MAX_NAME:
                raise _Unsupported("long name")
            target.append(_name(token))
        elif kind == _LITERAL:
            raw = m.group(kind)
            target.append(_ESCAPE.sub(_unescape, raw) if b"\\" in raw else raw)
        elif kind == _HEX:
            target.append(_hex(m.group(kind)))
        elif kind == _OPEN:
            if len(stack) >= MAX_DEPTH:
                raise _Unsupported("deeply nested")
            stack.append((target, m.group(kind) == b"<<"))
            target = []
        elif kind == _CLOSE:
            is_close_dict = m.group(kind) == b">>"
            if not stack or stack[-1][1] != is_close_dict:
                raise _Unsupported("unbalanced array or dictionary")
            items = target
            target, is_dict = stack.pop()
            if len(items) > (2 * MAX_ELEMENTS if is_dict else MAX_ELEMENTS):
                raise _Unsupported("too many elements")
            if is_dict:
                keys = items[::2]
                if len(items) % 2 or not all(isinstance(k, str) for k in keys) or len(set(keys)) < len(keys):
                    raise _Unsupported("malformed dictionary")  # pypdf keeps the first of duplicate keys
                if _STREAM_KEYWORD.match(data, m.end()):
                    raise _Unsupported("a dictionary followed by 'stream'")
                target.append(dict(zip(keys, items[1::2], strict=True)))
            else:
                target.append(items)
        elif kind is not None:  # nested parentheses in a string, a stray delimiter, ...
            raise _Unsupported("a token pypdf reads differently")
    if stack:
        raise _Unsupported("unterminated array or dictionary")
    return ops
