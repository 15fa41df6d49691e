"""Reading what the report commands write: a PNG's size, an HTML page's tags and text."""
from __future__ import annotations

import struct
from html.parser import HTMLParser


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails unless data is a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


class Page(HTMLParser):
    """Tags, attributes and text of a page, with a check that every element is closed."""

    VOID = {"meta", "img", "br", "hr", "input", "link"}

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.open: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str) -> list[dict]:
        return [attrs for t, attrs in self.tags if t == tag]
