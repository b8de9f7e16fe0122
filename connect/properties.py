"""Java `.properties` text, read by the rules of `java.util.Properties.load(Reader)`.

Why a parser of our own and not configparser: Kafka reads every worker file, and
connector files that are not JSON, with `Utils.loadProps` → `Properties.load`, and
users' files lean on its rules (a `\\` at a line's end, `key value` with a space, `!`
comments, `\\uXXXX`). Another reading of the same file would run another config.

The rules, as the Javadoc of `Properties.load(Reader)` states them, numbered as the
table-driven test (tests/connect/test_properties.py) cites them:
1. The text is split into natural lines at `\\n`, `\\r` or `\\r\\n` (or its end).
2. A natural line holding only whitespace (space, `\\t`, `\\f`) is blank and ignored.
3. A natural line whose first non-whitespace character is `#` or `!` is a comment and
   ignored; a comment never continues onto the next line, whatever it ends with.
4. A natural line that ends with an odd number of contiguous backslashes continues on
   the next one: that last backslash, the line terminator and the whitespace at the
   start of the next natural line are dropped. A continuation line is never a comment
   (a `#` there is data); an empty continuation line ends the logical line, and so
   does the end of the text (the dangling backslash is dropped).
5. The leading whitespace of a logical line is dropped. Its key runs up to the first
   unescaped `=`, `:` or whitespace; whitespace after the key is skipped, then one `=`
   or `:` if there is one, then more whitespace; the rest of the line is the value,
   which may be empty (a line that is only a key gives the key an empty value).
6. In keys and values a backslash escapes the next character: `\\t`, `\\n`, `\\r`, `\\f`
   are tab, newline, return and form feed; `\\uXXXX` is the UTF-16 code unit XXXX (a
   surrogate pair of two escapes is one character); any other escaped character
   stands for itself (`\\=`, `\\:`, `\\ `, `\\#`, `\\\\`), the backslash dropped. A
   malformed `\\uXXXX` is an error (Java throws IllegalArgumentException).
7. A key given twice keeps its last value.

Bytes: `Properties.load(InputStream)`, which Kafka uses, reads ISO-8859-1 (non-Latin-1
characters arrive as `\\uXXXX`). Files written by today's editors are UTF-8, which Java
would turn into mojibake silently: `decode` takes the bytes as UTF-8 when they decode
as UTF-8 (a leading byte-order mark dropped), else as ISO-8859-1, which always
decodes. Pure ASCII, nearly every published file, reads the same both ways.
"""

from __future__ import annotations

__all__ = ["PropertiesError", "decode", "parse"]

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """Text that `Properties.load` refuses too (a malformed `\\uXXXX`); `line` is the
    1-based natural line the logical line starts on."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


def decode(data: bytes) -> str:
    """The text of a properties file's bytes: UTF-8 if they are UTF-8, else
    ISO-8859-1 as Java reads them (see the module docstring)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def parse(text: str) -> dict[str, str]:
    """The key → value map `Properties.load` reads from `text` (rules 1-7 above), in
    the order keys first appear."""
    out: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split(line)
        out[_unescape(key, number)] = _unescape(value, number)  # Rule 7: the last wins
    return out


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(number of the first natural line, logical line) for every line that holds a
    key (rules 1-4)."""
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # Rule 1
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(natural):
        start = i
        line = natural[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":  # Rules 2 and 3
            continue
        parts = []
        while _continues(line):  # Rule 4
            parts.append(line[:-1])
            if i == len(natural):
                line = ""
                break
            line = natural[i].lstrip(_WHITESPACE)
            i += 1
        parts.append(line)
        out.append((start + 1, "".join(parts)))
    return out


def _continues(line: str) -> bool:
    """Whether `line` ends with an odd number of backslashes (rule 4)."""
    count = len(line) - len(line.rstrip("\\"))
    return count % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """(escaped key, escaped value) of a logical line (rule 5)."""
    end = len(line)
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "=:" or char in _WHITESPACE:
            end = index
            break
    key, rest = line[:end], line[end:]
    rest = rest.lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _unescape(text: str, number: int) -> str:
    """`text` with its backslash escapes replaced (rule 6)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        if i == len(text):  # a lone backslash at the very end: nothing to escape
            break
        char = text[i]
        i += 1
        if char == "u":
            digits = text[i : i + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(number, f"malformed \\uxxxx escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    # Why through UTF-16: \uD83D\uDE00 are two code units of one character, as in Java.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
