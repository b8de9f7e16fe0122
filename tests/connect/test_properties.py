"""connect.properties reads `.properties` text by `java.util.Properties.load`'s rules.

Each case cites the rule of the Javadoc of `Properties.load(Reader)` it exercises, as
the module docstring numbers them; the same table is then read by the JVM's own
`Properties.load` and must give the same maps (and refuse the same texts), so the
table cannot encode a misreading of the Javadoc.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from connect.properties import PropertiesError, decode, parse

# (rule, text, the map Properties.load reads)
CASES: list[tuple[str, str, dict[str, str]]] = [
    ("1: \\n ends a natural line", "a=1\nb=2", {"a": "1", "b": "2"}),
    ("1: \\r\\n ends a natural line", "a=1\r\nb=2\r\n", {"a": "1", "b": "2"}),
    ("1: \\r alone ends a natural line", "a=1\rb=2", {"a": "1", "b": "2"}),
    ("2: whitespace-only lines are blank", "\n   \n\t\f\na=1\n\n", {"a": "1"}),
    ("3: # and ! comments", "# one\n! two\n   # indented\na=1", {"a": "1"}),
    ("3: a comment never continues", "# ends with \\\na=1", {"a": "1"}),
    ("3: # after a key is data", "a=1 # not a comment", {"a": "1 # not a comment"}),
    ("4: odd backslashes continue", "a=one \\\n    two", {"a": "one two"}),
    ("4: three backslashes continue", "a=x\\\\\\\n  y", {"a": "x\\y"}),
    ("4: even backslashes do not", "a=x\\\\\nb=y", {"a": "x\\", "b": "y"}),
    ("4: a continuation line is never a comment", "a=x\\\n  #y", {"a": "x#y"}),
    ("4: an empty continuation line ends it", "a=x\\\n\nb=y", {"a": "x", "b": "y"}),
    ("4: a backslash at the end of the text", "a=x\\", {"a": "x"}),
    ("4: a key continues too", "ke\\\n  y=v", {"key": "v"}),
    ("4: \\r\\n after the backslash", "a=x\\\r\n  y\r\nb=2", {"a": "xy", "b": "2"}),
    ("5: = separates", "a=b", {"a": "b"}),
    ("5: : separates", "a:b", {"a": "b"}),
    ("5: whitespace separates", "a b", {"a": "b"}),
    ("5: tab separates", "a\t\tb", {"a": "b"}),
    ("5: whitespace around =", "a  =  b", {"a": "b"}),
    ("5: whitespace around :", "a : b", {"a": "b"}),
    ("5: one separator only", "a = = b", {"a": "= b"}),
    ("5: whitespace then a second separator", "a b=c", {"a": "b=c"}),
    ("5: the value keeps later separators", "u=jdbc:x://h:1/d?a=b", {"u": "jdbc:x://h:1/d?a=b"}),
    ("5: leading whitespace of a line", "   a=b", {"a": "b"}),
    ("5: trailing whitespace is kept", "a=b  ", {"a": "b  "}),
    ("5: a key alone has an empty value", "a\nb=", {"a": "", "b": ""}),
    ("5: key and separator only", "a :  ", {"a": ""}),
    ("6: escaped =, : and space in a key", "a\\=b\\:c\\ d=e", {"a=b:c d": "e"}),
    ("6: escaped # starts a key", "\\#k=v", {"#k": "v"}),
    ("6: \\t \\n \\r \\f", "a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
    ("6: \\uXXXX", "a=\\u0041\\u00e9\\u00E9", {"a": "Aéé"}),
    ("6: a surrogate pair of escapes", "a=\\uD83D\\uDE00", {"a": "\U0001f600"}),
    ("6: other escapes stand for themselves", "a=\\q\\\"\\'", {"a": "q\"'"}),
    ("6: an escaped backslash", "path=C:\\\\dir", {"path": "C:\\dir"}),
    ("6: an unescaped backslash is dropped", "path=C:\\dir", {"path": "C:dir"}),
    ("6: non-ASCII text as it is", "größe=über", {"größe": "über"}),
    ("7: the last value wins", "a=1\nb=2\na=3", {"a": "3", "b": "2"}),
]

MALFORMED = [
    ("6: a \\u with a non-hex digit", "a=\\u00g1", 1),
    ("6: a \\u cut short at the end", "ok=1\n\na=\\u12", 3),
]


@pytest.mark.parametrize(("rule", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_rule_of_properties_load(rule: str, text: str, expected: dict[str, str]) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("rule", "text", "line"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_a_malformed_unicode_escape_is_refused_naming_its_line(
    rule: str, text: str, line: int
) -> None:
    with pytest.raises(PropertiesError) as caught:
        parse(text)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"line {line}: malformed \\uxxxx escape")


def test_bytes_are_utf8_when_they_decode_else_iso_8859_1() -> None:
    assert parse(decode("a=é".encode())) == {"a": "é"}
    assert parse(decode("a=é".encode("iso-8859-1"))) == {"a": "é"}  # Kafka's reading
    assert parse(decode(b"\xef\xbb\xbfa=1")) == {"a": "1"}  # a byte-order mark is no key


_JAVA = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class LoadProperties {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        for (String name : args) {
            Properties props = new Properties();
            try (Reader r = Files.newBufferedReader(Paths.get(name), StandardCharsets.UTF_8)) {
                props.load(r);
                out.append("{");
                for (String key : props.stringPropertyNames()) {
                    out.append(q(key)).append(":").append(q(props.getProperty(key))).append(",");
                }
                out.append("\\"\\":null}\\n");
            } catch (IllegalArgumentException e) {
                out.append("null\\n");
            }
        }
        System.out.print(out);
    }

    static String q(String s) {
        StringBuilder b = new StringBuilder("\\"");
        for (char c : s.toCharArray()) b.append(String.format("\\\\u%04x", (int) c));
        return b.append("\\"").toString();
    }
}
"""


def test_the_jvm_reads_the_table_the_same(tmp_path: Path) -> None:
    """Every case above, and the malformed ones, through the JVM's Properties.load."""
    java = shutil.which("java")
    assert java, "a JVM is part of this project's test environment (DESIGN.md)"
    source = tmp_path / "LoadProperties.java"
    source.write_text(_JAVA)
    texts = [text for _, text, _ in CASES] + [text for _, text, _ in MALFORMED]
    files = []
    for n, text in enumerate(texts):
        path = tmp_path / f"case{n}.properties"
        path.write_bytes(text.encode())
        files.append(str(path))
    done = subprocess.run(
        [java, str(source), *files], capture_output=True, text=True, timeout=120, check=True
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(texts)
    for (rule, text, expected), answer in zip(CASES, answers, strict=False):
        answer.pop("")
        assert answer == expected, rule
        assert parse(text) == answer, rule
    for (rule, _, _), answer in zip(MALFORMED, answers[len(CASES) :], strict=True):
        assert answer is None, rule
