"""The seven levels: direction x scope, newest first, stop at the first failing version."""

from __future__ import annotations

import pytest

from connect.registry.avro import LEVELS, check_level
from tests.connect.registry.avro._schemas import fld, rec, schema

# Confluent's AvroCompatibilityTest example: v2 adds f2 with a default, v3 makes it required.
V1 = schema(rec("R", fld("f1", "string")))
V2 = schema(rec("R", fld("f1", "string"), fld("f2", "string", "x")))
V3 = schema(rec("R", fld("f1", "string"), fld("f2", "string")))
V4 = schema(rec("R", fld("f1", "string"), fld("f2", "string"), fld("f3", "int", 0)))
UNRELATED = schema(rec("R", fld("f1", "int")))


@pytest.mark.parametrize(
    ("level", "history", "new", "ok"),
    [
        ("NONE", [V1], UNRELATED, True),
        ("BACKWARD", [V1, V2], V3, True),
        ("BACKWARD_TRANSITIVE", [V1, V2], V3, False),
        ("BACKWARD", [V1, V2, V3], V4, True),
        ("BACKWARD_TRANSITIVE", [V1, V2, V3], V4, False),
        ("BACKWARD_TRANSITIVE", [V2, V3], V4, True),
        ("BACKWARD", [V1], UNRELATED, False),
        ("FORWARD", [V3, V2], V1, True),
        ("FORWARD_TRANSITIVE", [V3, V2], V1, False),
        ("FORWARD", [V1], V2, True),
        ("FORWARD", [V2], V1, True),
        ("FORWARD", [V3], V1, False),
        ("FULL", [V1, V2], V3, True),
        ("FULL_TRANSITIVE", [V1, V2], V3, False),
        ("FULL", [V1], V2, True),
        ("FULL", [V2], V3, True),
        ("FULL", [V1], V3, False),
        ("FULL_TRANSITIVE", [V1, V2], V2, True),
        ("BACKWARD", [], UNRELATED, True),
        ("FULL_TRANSITIVE", [], UNRELATED, True),
        ("backward", [V1], UNRELATED, False),
    ],
)
def test_level_table(level: str, history: list, new: object, ok: bool) -> None:
    problems = check_level(level, new=new, existing=history)
    assert (problems == []) is ok, problems


def test_transitive_stops_at_the_newest_failing_version() -> None:
    problems = check_level("BACKWARD_TRANSITIVE", new=V4, existing=[V1, V2, V3],
                           versions=[1, 2, 3])
    assert problems[0].startswith("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'")
    assert "The field 'f2' at path '/fields/1' in the new schema" in problems[0]
    assert problems[-2:] == ["{oldSchemaVersion: 1}", f"{{oldSchema: '{V1.text}'}}"]


def test_latest_only_looks_at_the_last_version() -> None:
    assert check_level("BACKWARD", new=V3, existing=[V1, V2]) == []
    assert check_level("BACKWARD", new=V3, existing=[V2, V1]) != []


def test_forward_names_old_as_reader() -> None:
    problems = check_level("FORWARD", new=V1, existing=[V3])
    assert "The field 'f2' at path '/fields/1' in the old schema has no default value and " \
           "is missing in the new schema" in problems[0]
    assert problems[-1] == f"{{oldSchema: '{V3.text}'}}"


def test_full_reports_both_directions_old_reader_first() -> None:
    problems = check_level("FULL", new=UNRELATED, existing=[V1], versions=[7])
    assert "in the old schema does not match with the new schema" in problems[0]
    assert "in the new schema does not match with the old schema" in problems[1]
    assert problems[2:] == ["{oldSchemaVersion: 7}", f"{{oldSchema: '{V1.text}'}}"]


def test_full_one_way_failure_is_enough() -> None:
    assert check_level("FULL", new=V3, existing=[V1]) != []  # V3 cannot read V1
    assert check_level("FULL", new=V1, existing=[V3]) != []  # V3 cannot read V1's data


def test_every_level_is_in_the_table() -> None:
    assert set(LEVELS) == {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                           "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}


@pytest.mark.parametrize("level", ["SIDEWAYS", "", "FULL-TRANSITIVE"])
def test_unknown_level(level: str) -> None:
    with pytest.raises(ValueError, match="unknown compatibility level"):
        check_level(level, new=V1, existing=[V1])


def test_versions_must_match_history() -> None:
    with pytest.raises(ValueError, match="version numbers"):
        check_level("BACKWARD", new=V1, existing=[V1, V2], versions=[1])
