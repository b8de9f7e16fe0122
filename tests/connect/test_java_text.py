"""`java_string` against Java itself: the same values printed by a real JDK and by us.

Kafka's FileStreamSinkTask writes `println(record.value())` (Apache Kafka,
connect/file/src/main/java/org/apache/kafka/connect/file/FileStreamSinkTask.java), so
the text of a value is the JDK's `String.valueOf` of the Java object Connect holds:
`Double.toString`, `Float.toString`, `BigDecimal.toString`, `java.util.Date.toString`,
`HashMap.toString` (JsonConverter builds every map as a HashMap:
connect/json/src/main/java/org/apache/kafka/connect/json/JsonConverter.java) and
`ArrayList.toString`. Those are JDK code, so the JDK is the oracle: a small Java
program prints random values of each kind and the test compares every line. JDK 19 or
later (Kafka 4's images run 21; 17's Double.toString was not yet the shortest form,
e.g. `9.999999999999999E22` for 1e23).

`Struct.toString` is Kafka's own code (connect/api/src/main/java/org/apache/kafka/
connect/data/Struct.java): `Struct{`, only the fields that hold a value, `name=value`
joined by a bare `,`, `}`; those expectations are written out below.
"""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import os
import random
import re
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect.api import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Schema,
    Struct,
    Timestamp,
    java_string,
)
from connect.api import Decimal as DecimalType

PROBE = r"""
import java.math.BigDecimal;
import java.math.BigInteger;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class Probe {
    static String key(String hexUnits) {
        StringBuilder sb = new StringBuilder();
        if (!hexUnits.equals("-")) {
            for (String u : hexUnits.split(",")) sb.append((char) Integer.parseInt(u, 16));
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.split(" ");
            Object v;
            switch (p[0]) {
                case "D": v = Double.longBitsToDouble(Long.parseUnsignedLong(p[1], 16)); break;
                case "F": v = Float.intBitsToFloat(Integer.parseUnsignedInt(p[1], 16)); break;
                case "B": v = new BigDecimal(new BigInteger(p[1]), Integer.parseInt(p[2])); break;
                case "T": v = new Date(Long.parseLong(p[1])); break;
                case "S": {
                    Map<Object, Object> m = new HashMap<>();
                    for (int i = 1; i < p.length; i++) m.put(key(p[i]), (long) (i - 1));
                    v = m;
                    break;
                }
                case "L": case "I": {
                    Map<Object, Object> m = new HashMap<>();
                    for (int i = 1; i < p.length; i++) {
                        Object k = p[0].equals("L")
                            ? (Object) Long.parseLong(p[i]) : (Object) Integer.parseInt(p[i]);
                        m.put(k, (long) (i - 1));
                    }
                    v = m;
                    break;
                }
                case "A": {
                    List<Object> l = new ArrayList<>();
                    for (int i = 1; i < p.length; i++) {
                        l.add(p[i].equals("null") ? null : (Object) Long.parseLong(p[i]));
                    }
                    v = l;
                    break;
                }
                default: throw new IllegalArgumentException(line);
            }
            out.append(String.valueOf(v)).append('\n');
        }
        System.out.print(out);
    }
}
"""


def _java() -> str:
    """A `java` of JDK 19 or later (JAVA_HOME, the system's JDKs, PATH)."""
    candidates = [os.path.join(os.environ.get("JAVA_HOME", "/nonexistent"), "bin", "java")]
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    candidates.append("java")
    for java in candidates:
        try:
            out = subprocess.run(
                [java, "-version"], capture_output=True, text=True, timeout=60
            ).stderr
        except OSError:
            continue
        found = re.search(r'version "(\d+)', out)
        if found and int(found.group(1)) >= 19:
            return java
    raise AssertionError("these tests need a JDK 19 or later (set JAVA_HOME)")


@pytest.fixture(scope="module")
def java_probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The JDK's `java` and a directory holding Probe compiled by its `javac`. Why
    compiled once: `java Probe.java` compiles the source in the JVM on every run
    (about 1.2 s of CPU each, fifteen runs in this module); a compiled class starts
    in about 0.1 s."""
    java = _java()
    directory = tmp_path_factory.mktemp("probe")
    source = directory / "Probe.java"
    source.write_text(PROBE)
    javac = Path(java).with_name("javac")
    assert javac.exists(), f"{java} has no javac beside it: these tests need a JDK"
    done = subprocess.run(
        [str(javac), "-d", str(directory), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    yield java, directory


def _ask_java(java_probe: tuple[str, Path], lines: list[str], tz: str = "UTC") -> list[str]:
    java, classes = java_probe
    done = subprocess.run(
        [java, "-Xshare:auto", "-cp", str(classes), "Probe"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TZ": tz},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


def _units(key: str) -> str:
    units = struct.unpack(
        f"<{len(key.encode('utf-16-le', 'surrogatepass')) // 2}H",
        key.encode("utf-16-le", "surrogatepass"),
    )
    return ",".join(f"{u:x}" for u in units) or "-"


def _doubles(rng: random.Random) -> list[float]:
    values = [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(400)]
    values += [round(rng.uniform(-1e8, 1e8), rng.randrange(0, 9)) for _ in range(300)]
    values += [10.0**e for e in range(-323, 309, 7)] + [5e-324, 1e23, 2e22, 1e-3, 1e7, 9999999.999]
    values += [0.1 + 0.2, -0.0, 0.0, float("inf"), float("-inf"), float("nan"), 1.0, 100.0]
    return values


@pytest.mark.integration
def test_doubles_and_floats_print_as_java_prints_them(java_probe) -> None:
    rng = random.Random(7)
    doubles = _doubles(rng)
    floats = [struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0] for _ in range(400)]
    floats += [0.1, 0.3, 1.4e-45, 3.4028234663852886e38, 1e10, 16777216.0, 1e-5, 3.3e38]
    floats += [round(rng.uniform(-1e4, 1e4), rng.randrange(0, 6)) for _ in range(200)]
    lines = [f"D {struct.unpack('<Q', struct.pack('<d', d))[0]:x}" for d in doubles]
    lines += [f"F {struct.unpack('<I', struct.pack('<f', f))[0]:x}" for f in floats]
    java = _ask_java(java_probe, lines)
    ours = [java_string(d) for d in doubles] + [java_string(f, FLOAT32_SCHEMA) for f in floats]
    mismatches = [(line, j, o) for line, j, o in zip(lines, java, ours, strict=True) if j != o]
    assert mismatches == []
    assert java_string(1e10) == "1.0E10" and java_string(1.0) == "1.0"


@pytest.mark.integration
def test_big_decimals_print_as_java_prints_them(java_probe) -> None:
    rng = random.Random(11)
    cases = [
        (rng.randrange(-(10**40), 10**40) // 10 ** rng.randrange(0, 40), rng.randrange(-12, 30))
        for _ in range(400)
    ]
    cases += [(0, 2), (0, -3), (1, -3), (1, 6), (1, 7), (-150, 2), (12345, 0)]
    java = _ask_java(java_probe, [f"B {u} {s}" for u, s in cases])
    ours = [java_string(decimal.Decimal(u).scaleb(-s, decimal.Context(prec=100))) for u, s in cases]
    assert [(c, j) for c, j, o in zip(cases, java, ours, strict=True) if j != o] == []
    assert java_string(decimal.Decimal("-0.00")) == "0.00"  # BigDecimal has no negative zero


@pytest.mark.integration
@pytest.mark.parametrize("tz", ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata"])
def test_dates_print_as_java_util_date_in_the_local_zone(java_probe, local_zone, tz: str) -> None:
    """Connect's Date, Time and Timestamp values are java.util.Date: `Date.toString` in
    the JVM's default zone. In UTC over the whole range Python can hold (the Julian
    calendar before 1582-10-15, as java.util.Date); in other zones from 1970 on (Java
    has no local mean time before a zone's first rule: it says EST in 1582)."""
    rng = random.Random(tz)
    low = -62_135_596_800_000 if tz == "UTC" else 0
    moments = [
        rng.randrange(low, 253_402_300_799_999 if tz == "UTC" else 2**31 * 1000) for _ in range(300)
    ]
    moments += [0, 999, 1_700_000_000_123]
    if tz == "UTC":  # the ends of the Gregorian cutover, and of the epoch
        moments += [-1, -12_219_292_800_000, -12_219_292_800_001]
    local_zone(tz)
    # The other logical types are Dates too: a day at midnight UTC, a time on 1970-01-01.
    days = [rng.randrange(0, 20_000) for _ in range(50)]
    asked = [f"T {m}" for m in moments] + [f"T {d * 86_400_000}" for d in days]
    answers = _ask_java(java_probe, [*asked, f"T {(13 * 60 + 45) * 60_000}"], tz)  # one JVM
    java, java_days, [java_time] = (
        answers[: len(moments)],
        answers[len(moments) : len(asked)],
        answers[len(asked) :],
    )
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    ours = [java_string(epoch + dt.timedelta(milliseconds=m), Timestamp.schema()) for m in moments]
    assert [(m, j, o) for m, j, o in zip(moments, java, ours, strict=True) if j != o] == []
    ours_days = [
        java_string(dt.date(1970, 1, 1) + dt.timedelta(days=d), Date.schema()) for d in days
    ]
    assert java_days == ours_days
    assert java_string(dt.time(13, 45)) == java_time


def _colliding(n: int) -> list[str]:
    """n distinct strings with one String.hashCode ("Aa" and "BB" hash alike)."""
    return ["".join("Aa" if (i >> b) & 1 else "BB" for b in range(4)) for i in range(n)]


@pytest.mark.integration
def test_maps_iterate_in_java_hashmap_order(java_probe) -> None:
    rng = random.Random(3)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-é€😀"
    string_maps = [
        list(
            dict.fromkeys(
                "".join(rng.choices(alphabet, k=rng.randrange(0, 12)))
                for _ in range(rng.randrange(0, 80))
            )
        )
        for _ in range(150)
    ]
    # One bucket filling up: the 9th and 10th colliding keys grow the table (below 64
    # buckets Java grows instead of making the bucket a tree).
    string_maps += [_colliding(n) for n in range(2, 11)]
    # "a" and "Q" share a bucket of 16 and change order in 64.
    string_maps += [[*_colliding(n), "a", "Q"] for n in (8, 9, 10)]
    string_maps += [_colliding(10) + [f"k{i}" for i in range(30)], ["some_key"]]
    long_maps = [
        [rng.randrange(-(2**63), 2**63) for _ in range(rng.randrange(0, 40))] for _ in range(50)
    ]
    int_maps = [
        [rng.randrange(-(2**31), 2**31) for _ in range(rng.randrange(0, 40))] for _ in range(50)
    ]
    lists = [
        [rng.choice([None, rng.randrange(-1000, 1000)]) for _ in range(rng.randrange(0, 9))]
        for _ in range(20)
    ]
    lines = ["S " + " ".join(_units(k) for k in keys) if keys else "S" for keys in string_maps]
    lines += ["L " + " ".join(map(str, keys)) if keys else "L" for keys in long_maps]
    lines += ["I " + " ".join(map(str, keys)) if keys else "I" for keys in int_maps]
    lines += [
        "A " + " ".join("null" if v is None else str(v) for v in xs) if xs else "A" for xs in lists
    ]
    java = _ask_java(java_probe, [line.rstrip() for line in lines])
    int_map = Schema.map(INT32_SCHEMA, INT64_SCHEMA)
    ours = [java_string({k: i for i, k in enumerate(keys)}) for keys in string_maps]
    ours += [java_string({k: i for i, k in enumerate(keys)}) for keys in long_maps]
    ours += [java_string({k: i for i, k in enumerate(keys)}, int_map) for keys in int_maps]
    ours += [java_string(xs) for xs in lists]
    assert [(n, j, o) for n, (j, o) in enumerate(zip(java, ours, strict=True)) if j != o] == []
    assert java_string({"some_key": 0}) == "{some_key=0}"


def test_structs_print_as_kafkas_struct_tostring(local_zone) -> None:
    """Struct.java toString: set fields only, `,` without a space, nested values by
    their own toString (a map as HashMap prints it, a list as ArrayList)."""
    inner = Schema.struct([("x", INT32_SCHEMA), ("tag", OPTIONAL_STRING_SCHEMA)], name="inner")
    outer = Schema.struct(
        [
            ("id", INT64_SCHEMA),
            ("name", STRING_SCHEMA),
            ("note", OPTIONAL_STRING_SCHEMA),
            ("ok", BOOLEAN_SCHEMA),
            ("ratio", FLOAT32_SCHEMA),
            ("price", DecimalType.schema(2)),
            ("day", Date.schema()),
            ("inner", inner),
            ("tags", Schema.array(STRING_SCHEMA)),
            ("attrs", Schema.map(STRING_SCHEMA, INT32_SCHEMA)),
        ]
    )
    local_zone("UTC")
    value = Struct(
        outer,
        {
            "id": 7,
            "name": "café",
            "ok": True,
            "ratio": 0.1,
            "price": decimal.Decimal("12.50"),
            "day": dt.date(2026, 11, 26),
            "inner": Struct(inner, {"x": 3}),
            "tags": ["a", "b"],
            "attrs": {"b": 2, "a": 1},
        },
    )
    assert java_string(value) == (
        "Struct{id=7,name=café,ok=true,ratio=0.1,price=12.50,"
        "day=Thu Nov 26 00:00:00 UTC 2026,inner=Struct{x=3},tags=[a, b],attrs={a=1, b=2}}"
    )
    assert java_string(Struct(inner)) == "Struct{}"
    assert java_string(None) == "null"
    assert java_string(b"\x00\xff") == "AP8="  # Java: [B@<identity hash>; ours: base64
