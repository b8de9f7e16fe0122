"""Can a reader schema read data written with a writer schema? Avro Java's answer.

Confluent decides compatibility with Avro Java's ``SchemaCompatibility`` (1.11.4), not with
the specification's resolution rules nor with fastavro's reader, and they differ (reference
§12.3): any reader-union branch may match (not only the first), logical types are ignored,
names match on the *unqualified* name or a reader alias. So this is a port of the
algorithm, written from its description:

1. Same type: primitives match; arrays and maps recurse on items/values; fixed needs a
   matching name and equal size; an enum a matching name and every writer symbol in the
   reader unless the reader has a default symbol; a record a matching name and, for every
   **reader** field, a writer field found by name or by one of the reader field's aliases
   (recurse on the types), else a default; writer-only fields are skipped. Two unions: every
   writer branch must be readable by the reader union.
2. Different types, writer union: every branch must be readable by the reader.
3. Different types, reader union: some branch must read the writer.
4. Promotions: int -> long/float/double, long -> float/double, float -> double,
   string <-> bytes. Anything else is a type mismatch.

Pairs are memoised on node identity; a pair met again while still being checked counts as
compatible, which is how recursive schemas terminate. Problems are collected, not
short-circuited. A reader field whose name and aliases match two writer fields makes Java
throw; Confluent reports that as the only problem, and so do we.

Locations are JSON pointers into the reader schema as Java builds them (``/fields/1/type``,
``/items``, union branch index). We follow Avro 1.12 in putting the writer-union branch index
into the location; 1.11.4 restarts the pointer at the branch (a reporting bug, same verdict).
"""

from __future__ import annotations

from dataclasses import dataclass

from connect.registry.avro.model import Array, Enum, Field, Fixed, Map, Named, Node, Record, Union
from connect.registry.avro.schema import AvroSchema

_PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}

NAME_MISMATCH = "NAME_MISMATCH"
FIXED_SIZE_MISMATCH = "FIXED_SIZE_MISMATCH"
MISSING_ENUM_SYMBOLS = "MISSING_ENUM_SYMBOLS"
READER_FIELD_MISSING_DEFAULT_VALUE = "READER_FIELD_MISSING_DEFAULT_VALUE"
TYPE_MISMATCH = "TYPE_MISMATCH"
MISSING_UNION_BRANCH = "MISSING_UNION_BRANCH"
AMBIGUOUS_FIELD_ALIAS = "AMBIGUOUS_FIELD_ALIAS"


@dataclass(frozen=True)
class Incompatibility:
    """One reason the reader cannot read the writer's data.

    ``type`` is Avro Java's ``SchemaIncompatibilityType`` name (plus AMBIGUOUS_FIELD_ALIAS
    for the case where Java throws), ``location`` a JSON pointer into the reader schema,
    ``message`` Java's ``getMessage()`` text (Confluent's ``additionalInfo``), ``description``
    a sentence for people.
    """

    type: str
    location: str
    message: str
    description: str

    def __str__(self) -> str:
        return f"{self.location}: {self.description}"

    def confluent(self, *, reader_role: str, writer_role: str) -> str:
        """The entry Confluent's verbose compatibility answer carries for this problem, with
        the roles named as there ("new"/"old")."""
        if self.type == AMBIGUOUS_FIELD_ALIAS:
            return f"Unexpected exception during compatibility check: {self.message}"
        loc = self.location
        descriptions = {
            FIXED_SIZE_MISMATCH: f"The size of FIXED type field at path '{loc}' in the "
                                 f"{reader_role} schema does not match with the {writer_role} "
                                 "schema",
            TYPE_MISMATCH: f"The type (path '{loc}') of a field in the {reader_role} schema "
                           f"does not match with the {writer_role} schema",
            NAME_MISMATCH: f"The name of the schema has changed (path '{loc}')",
            MISSING_ENUM_SYMBOLS: f"The {reader_role} schema is missing enum symbols "
                                  f"'{self.message}' at path '{loc}' in the {writer_role} "
                                  "schema",
            MISSING_UNION_BRANCH: f"The {reader_role} schema is missing a type inside a union "
                                  f"field at path '{loc}' in the {writer_role} schema",
            READER_FIELD_MISSING_DEFAULT_VALUE: f"The field '{self.message}' at path '{loc}' "
                                                f"in the {reader_role} schema has no default "
                                                f"value and is missing in the {writer_role} "
                                                "schema",
        }
        return (f"{{errorType:'{self.type}', description:'{descriptions[self.type]}', "
                f"additionalInfo:'{self.message}'}}")


def find_incompatibilities(*, reader: AvroSchema, writer: AvroSchema) -> list[Incompatibility]:
    """Every reason ``reader`` cannot read data written with ``writer``, in Java's order
    (repeats from memoised pairs removed); empty means compatible."""
    try:
        found = _Checker().check(reader.root, writer.root, [""])
    except _AmbiguousAlias as exc:
        return [exc.incompatibility]
    return list(dict.fromkeys(found))


def check_compatibility(*, reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """Can ``reader`` read data written with ``writer``? Reasons with their locations, e.g.
    ``/fields/2/type: reader type: INT not compatible with writer type: STRING``; an empty
    list means compatible."""
    return [str(i) for i in find_incompatibilities(reader=reader, writer=writer)]


class _AmbiguousAlias(Exception):
    def __init__(self, incompatibility: Incompatibility) -> None:
        self.incompatibility = incompatibility


_IN_PROGRESS: list[Incompatibility] = []


def _pointer(location: list[str]) -> str:
    """Java's ``Incompatibility.getLocation``: the root token dropped, ``~`` and ``/``
    escaped."""
    return "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in location[1:])


class _Checker:
    def __init__(self) -> None:
        self._memo: dict[tuple[int, int], list[Incompatibility]] = {}
        self._keep: list[Node] = []  # keeps memoised nodes alive so their ids stay unique

    def check(self, reader: Node, writer: Node, location: list[str]) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        found = self._memo.get(key)
        if found is not None:
            return [] if found is _IN_PROGRESS else found
        self._memo[key] = _IN_PROGRESS
        self._keep += (reader, writer)
        found = self._calculate(reader, writer, location)
        self._memo[key] = found
        return found

    def _at(self, token: str, reader: Node, writer: Node, location: list[str]
            ) -> list[Incompatibility]:
        location.append(token)
        try:
            return self.check(reader, writer, location)
        finally:
            location.pop()

    def _calculate(self, reader: Node, writer: Node, location: list[str]
                   ) -> list[Incompatibility]:
        if reader.type == writer.type:
            if isinstance(reader, Array) and isinstance(writer, Array):
                return self._at("items", reader.items, writer.items, location)
            if isinstance(reader, Map) and isinstance(writer, Map):
                return self._at("values", reader.values, writer.values, location)
            if isinstance(reader, Fixed) and isinstance(writer, Fixed):
                return self._names(reader, writer, location) + _fixed_size(reader, writer,
                                                                           location)
            if isinstance(reader, Enum) and isinstance(writer, Enum):
                return self._names(reader, writer, location) + _enum_symbols(reader, writer,
                                                                             location)
            if isinstance(reader, Record) and isinstance(writer, Record):
                return self._names(reader, writer, location) + self._fields(reader, writer,
                                                                            location)
            if isinstance(reader, Union) and isinstance(writer, Union):
                found: list[Incompatibility] = []
                for i, branch in enumerate(writer.branches):
                    location.append(str(i))
                    if self.check(reader, branch, [""]):
                        found.append(_incompatible(
                            MISSING_UNION_BRANCH, location,
                            f"reader union lacking writer type: {branch.java_type}",
                            f"reader union lacking writer type: {branch.java_type}"))
                    location.pop()
                return found
            return []  # the same primitive type
        if isinstance(writer, Union):
            found = []
            for i, branch in enumerate(writer.branches):
                found += self._at(str(i), reader, branch, location)
            return found
        if isinstance(reader, Union):
            for branch in reader.branches:
                if not self.check(branch, writer, [""]):
                    return []
            message = f"reader union lacking writer type: {writer.java_type}"
            return [_incompatible(MISSING_UNION_BRANCH, location, message, message)]
        if writer.type in _PROMOTIONS.get(reader.type, ()):
            return []
        message = (f"reader type: {reader.java_type} not compatible with writer type: "
                   f"{writer.java_type}")
        return [_incompatible(TYPE_MISMATCH, location, message, message)]

    def _names(self, reader: Named, writer: Named, location: list[str]
               ) -> list[Incompatibility]:
        """Rule N: equal unqualified names, or a reader alias equal to the writer's full
        name. Writer aliases are never consulted."""
        if reader.name == writer.name or writer.full_name in reader.alias_full_names:
            return []
        return [_incompatible(
            NAME_MISMATCH, [*location, "name"], f"expected: {writer.full_name}",
            f"reader {reader.type} {reader.full_name} does not match writer "
            f"{writer.type} {writer.full_name} by name or reader alias")]

    def _fields(self, reader: Record, writer: Record, location: list[str]
                ) -> list[Incompatibility]:
        found: list[Incompatibility] = []
        location.append("fields")
        for reader_field in reader.fields or ():
            location.append(str(reader_field.pos))
            writer_field = _writer_field(writer, reader_field, location)
            if writer_field is not None:
                found += self._at("type", reader_field.schema, writer_field.schema, location)
            elif not reader_field.has_default:
                enum_type = reader_field.schema
                if isinstance(enum_type, Enum) and enum_type.default is not None:
                    # Java checks such a field against the writer record itself: a mismatch.
                    found += self._at("type", enum_type, writer, location)
                else:
                    found.append(_incompatible(
                        READER_FIELD_MISSING_DEFAULT_VALUE, location, reader_field.name,
                        f"reader field '{reader_field.name}' has no default value and is "
                        "missing in the writer"))
            location.pop()
        location.pop()
        return found


def _writer_field(writer: Record, reader_field: Field, location: list[str]) -> Field | None:
    matches = [f for f in (writer.field_named(n) for n in [reader_field.name,
                                                           *reader_field.aliases])
               if f is not None]
    if len(matches) > 1:
        names = ", ".join(f.name for f in matches)
        message = (f"Reader record field {reader_field.name} matches multiple fields in "
                   f"writer record schema {writer.full_name}: {names}")
        raise _AmbiguousAlias(_incompatible(
            AMBIGUOUS_FIELD_ALIAS, location, message,
            f"reader field '{reader_field.name}' matches several writer fields ({names}) "
            "by name and aliases"))
    return matches[0] if matches else None


def _fixed_size(reader: Fixed, writer: Fixed, location: list[str]) -> list[Incompatibility]:
    if reader.size == writer.size:
        return []
    message = f"expected: {writer.size}, found: {reader.size}"
    return [_incompatible(FIXED_SIZE_MISMATCH, [*location, "size"], message,
                          f"fixed size mismatch: {message}")]


def _enum_symbols(reader: Enum, writer: Enum, location: list[str]) -> list[Incompatibility]:
    missing = sorted(set(writer.symbols) - set(reader.symbols))
    if not missing or (reader.default is not None and reader.default in reader.symbols):
        return []
    message = "[" + ", ".join(missing) + "]"
    return [_incompatible(MISSING_ENUM_SYMBOLS, [*location, "symbols"], message,
                          f"reader enum lacks writer symbols {message} and has no default "
                          "symbol")]


def _incompatible(kind: str, location: list[str], message: str, description: str
                  ) -> Incompatibility:
    return Incompatibility(kind, _pointer(location), message, description)
