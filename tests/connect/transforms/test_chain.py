"""Predicates, TransformChain.from_config, transform_config_defs and the aliases."""

from __future__ import annotations

import pytest

from connect.api import ConfigError, Headers, Predicate, Transformation
from connect.plugins import PluginKind, Plugins
from connect.transforms import ALIASES, TransformChain, transform_config_defs
from connect.transforms.cast import CastValue
from connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches

from .conftest import configured

RESOLVE = Plugins().resolve


def chain(**props: str) -> TransformChain:
    return TransformChain.from_config({k.replace("__", "."): v for k, v in props.items()}, RESOLVE)


# ------------------------------------------------------------------ predicates


def test_topic_name_matches_whole_name(sink):
    p = TopicNameMatches()
    p.configure({"pattern": "orders-.*"})
    assert p.test(sink(topic="orders-eu"))
    assert not p.test(sink(topic="old-orders-eu"))
    with pytest.raises(ConfigError) as info:
        TopicNameMatches().configure({"pattern": "(["})
    assert info.value.name == "pattern"


def test_has_header_key(sink):
    p = HasHeaderKey()
    p.configure({"name": "trace"})
    assert p.test(sink(headers=Headers([("trace", None)])))
    assert not p.test(sink(headers=Headers([("other", 1)])))
    with pytest.raises(ConfigError):
        HasHeaderKey().configure({})


def test_record_is_tombstone(sink):
    p = RecordIsTombstone()
    p.configure({})
    assert p.test(sink(value=None)) and not p.test(sink(value=0))


# ------------------------------------------------------------------- aliases


@pytest.mark.parametrize(
    ("kind", "name", "cls_name"),
    [
        ("transform", "org.apache.kafka.connect.transforms.Cast$Value", "CastValue"),
        ("transform", "org.apache.kafka.connect.transforms.ReplaceField$Key", "ReplaceFieldKey"),
        ("transform", "org.apache.kafka.connect.transforms.RegexRouter", "RegexRouter"),
        ("transform", "org.apache.kafka.connect.transforms.ValueToKey", "ValueToKey"),
        ("transform", "Flatten$Value", "FlattenValue"),
        ("transform", "connect.transforms.cast.CastKey", "CastKey"),
        (
            "predicate",
            "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "TopicNameMatches",
        ),
        ("predicate", "RecordIsTombstone", "RecordIsTombstone"),
    ],
)
def test_resolve_by_kafka_and_short_names(kind, name, cls_name):
    assert RESOLVE(kind, name).__name__ == cls_name


def test_every_alias_resolves_to_its_kind():
    for name, path in ALIASES.items():
        kind = PluginKind.PREDICATE if ".predicates:" in path else PluginKind.TRANSFORM
        cls = RESOLVE(kind, name)
        assert issubclass(cls, Predicate if kind is PluginKind.PREDICATE else Transformation)
        cls().config()  # config() works before configure(), for validation
        # The class's own dotted path resolves too (how plugin listings name it).
        assert RESOLVE(kind, f"{cls.__module__}.{cls.__qualname__}") is cls


def test_nested_class_names():
    from connect.transforms.cast import Cast

    assert Cast.Value is CastValue  # type: ignore[attr-defined]


# --------------------------------------------------------------------- chain


def test_chain_runs_in_order(sink):
    c = chain(
        transforms="hoist, route",
        transforms__hoist__type="HoistField$Value",
        transforms__hoist__field="v",
        transforms__route__type="org.apache.kafka.connect.transforms.RegexRouter",
        transforms__route__regex="(.*)",
        transforms__route__replacement="$1-out",
    )
    out = c.apply(sink(topic="in", value=1))
    assert out.topic == "in-out" and out.value == {"v": 1}
    assert c.aliases == ("hoist", "route") and len(c) == 2


def test_predicate_and_negate(sink):
    props = {
        "transforms": "drop",
        "transforms.drop.type": "Filter",
        "transforms.drop.predicate": "isTest",
        "predicates": "isTest",
        "predicates.isTest.type": "TopicNameMatches",
        "predicates.isTest.pattern": "test-.*",
    }
    c = TransformChain.from_config(props, RESOLVE)
    assert c.apply(sink(topic="test-1")) is None
    kept = sink(topic="prod-1")
    assert c.apply(kept) is kept
    negated = TransformChain.from_config({**props, "transforms.drop.negate": "true"}, RESOLVE)
    assert negated.apply(sink(topic="test-1")).topic == "test-1"
    assert negated.apply(sink(topic="prod-1")) is None


def test_drop_ends_the_chain(sink):
    c = chain(
        transforms="tomb,insert",
        transforms__tomb__type="Filter",
        transforms__tomb__predicate="t",
        transforms__insert__type="InsertField$Value",
        transforms__insert__static__field="s",
        transforms__insert__static__value="x",
        predicates="t",
        predicates__t__type="RecordIsTombstone",
    )
    assert c.apply(sink(value=None)) is None
    assert c.apply(sink(value={})).value == {"s": "x"}


def test_empty_chain_passes_records(sink):
    record = sink(value=1)
    assert chain().apply(record) is record


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"transforms": "r"}, "transforms.r.type"),
        ({"transforms": "r", "transforms.r.type": "NoSuchTransform"}, "transforms.r.type"),
        (
            {"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "(x"},
            "transforms.r.regex",
        ),
        ({"transforms": "r", "transforms.r.type": "RegexRouter"}, "transforms.r.regex"),
        (
            {"transforms": "c", "transforms.c.type": "Cast$Value", "transforms.c.spec": "a:nope"},
            "transforms.c.spec",
        ),
        (
            {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "p"},
            "transforms.f.predicate",
        ),
        (
            {
                "transforms": "f",
                "transforms.f.type": "Filter",
                "transforms.f.predicate": "p",
                "transforms.f.negate": "maybe",
                "predicates": "p",
                "predicates.p.type": "RecordIsTombstone",
            },
            "transforms.f.negate",
        ),
        ({"predicates": "p"}, "predicates.p.type"),
        (
            {"predicates": "p", "predicates.p.type": "TopicNameMatches"},
            "predicates.p.pattern",
        ),
        ({"transforms": "a,a", "transforms.a.type": "Filter"}, "transforms"),
        (
            # A transform class where a predicate belongs.
            {"predicates": "p", "predicates.p.type": "Filter"},
            "predicates.p.type",
        ),
    ],
)
def test_config_errors_name_the_key(props, key):
    with pytest.raises(ConfigError) as info:
        TransformChain.from_config(props, RESOLVE)
    assert info.value.name == key, str(info.value)
    assert key in str(info.value)


def test_close_closes_everything(sink):
    closed: list[str] = []

    class Closing(Transformation):
        def configure(self, configs):
            pass

        def apply(self, record):
            return record

        def close(self):
            closed.append("t")

    class ClosingPredicate(Predicate):
        def configure(self, configs):
            pass

        def test(self, record):
            return True

        def close(self):
            closed.append("p")

    def resolver(kind, name, key="class"):
        if name == "closing":
            return Closing
        if name == "closing-p":
            return ClosingPredicate
        return RESOLVE(kind, name, key=key)

    c = TransformChain.from_config(
        {
            "transforms": "a,b",
            "transforms.a.type": "closing",
            "transforms.a.predicate": "p",
            "transforms.b.type": "closing",
            "predicates": "p",
            "predicates.p.type": "closing-p",
        },
        resolver,
    )
    c.close()
    assert sorted(closed) == ["p", "t", "t"]


# ------------------------------------------------------- config definitions


def test_transform_config_defs():
    props = {
        "transforms": "route,bad",
        "transforms.route.type": "RegexRouter",
        "transforms.bad.type": "Nope",
        "predicates": "p",
        "predicates.p.type": "HasHeaderKey",
    }
    defs = transform_config_defs(props, RESOLVE)
    names = set(defs.names())
    assert {
        "transforms.route.type",
        "transforms.route.predicate",
        "transforms.route.negate",
        "transforms.route.regex",
        "transforms.route.replacement",
        "transforms.bad.type",
        "predicates.p.type",
        "predicates.p.name",
    } <= names
    errors = {v.name: v.errors for v in defs.validate(props)}
    assert errors["transforms.bad.type"] and "Nope" in errors["transforms.bad.type"][0]
    assert errors["transforms.route.regex"]  # required, missing
    assert not errors["transforms.route.type"]
    assert errors["predicates.p.name"]


def test_transforms_used_alone_are_configurable():
    # The chain is not the only entry point: a transform configured directly checks too.
    with pytest.raises(ConfigError):
        configured(CastValue)
