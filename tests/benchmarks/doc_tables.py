"""The benchmarks' tables in docs/benchmarks.md: each between two HTML comment markers,
replaced whole when its benchmark runs again (history is left to git)."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "benchmarks.md"


def replace_block(key: str, block: str) -> None:
    """Put ``block`` (which starts with ``<!-- KEY -->`` and ends with ``<!-- /KEY -->``)
    in place of the doc's block of that key, or at the doc's end when it has none."""
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    begin, end = f"<!-- {key} -->", f"<!-- /{key} -->"
    if begin in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)
