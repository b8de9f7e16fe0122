"""Every endpoint and error code of the REST API, over real HTTP on a real FileLog."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from tests.connect.registry.conftest import Live, record_schema

V1 = record_schema("User", "id")
V2 = record_schema("User", "id", ("name", "string", ""))  # adds a field with a default
V3 = record_schema("User", "id", "age")  # adds a field without a default


def register(client: httpx.Client, subject: str, schema: str, **params: str) -> httpx.Response:
    return client.post(f"/subjects/{subject}/versions", json={"schema": schema}, params=params)


def error(response: httpx.Response, status: int, code: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error_code"] == code, body
    return body["message"]


# -- register, ids and versions ----------------------------------------------------------


def test_register_returns_id_and_version_and_same_schema_shares_the_id(client):
    first = register(client, "a-value", V1)
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/vnd.schemaregistry.v1+json"
    assert first.json() == {"id": 1, "version": 1}
    assert register(client, "b-value", V1).json() == {"id": 1, "version": 1}
    assert register(client, "a-value", V1).json() == {"id": 1, "version": 1}  # no new version
    assert register(client, "a-value", V2).json() == {"id": 2, "version": 2}
    # whitespace and key order do not make another schema
    spaced = json.dumps(json.loads(V1), indent=4)
    assert register(client, "c-value", spaced).json()["id"] == 1


@pytest.mark.parametrize(
    "content_type",
    [
        "application/vnd.schemaregistry.v1+json",
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    ],
)
def test_confluent_content_types_are_accepted(client, content_type):
    body = json.dumps({"schema": V1}).encode()
    r = client.post("/subjects/s/versions", content=body, headers={"Content-Type": content_type})
    assert r.status_code == 200, r.text


def test_get_versions_and_version_objects(client):
    register(client, "s", V1)
    register(client, "s", V2)
    assert client.get("/subjects").json() == ["s"]
    assert client.get("/subjects/s/versions").json() == [1, 2]
    v1 = client.get("/subjects/s/versions/1").json()
    assert v1 == {
        "subject": "s",
        "version": 1,
        "id": 1,
        "schemaType": "AVRO",
        "schema": v1["schema"],
    }
    assert json.loads(v1["schema"]) == json.loads(V1)
    for latest in ("latest", "LATEST", "-1"):
        assert client.get(f"/subjects/s/versions/{latest}").json()["version"] == 2
    raw = client.get("/subjects/s/versions/2/schema")
    assert raw.status_code == 200 and json.loads(raw.text) == json.loads(V2)


def test_subject_prefix_and_paging(client):
    for s in ("orders-value", "orders-key", "users-value"):
        register(client, s, V1)
    assert client.get("/subjects", params={"subjectPrefix": "orders"}).json() == [
        "orders-key",
        "orders-value",
    ]
    assert client.get("/subjects", params={"subject": "users"}).json() == ["users-value"]
    assert client.get("/subjects", params={"offset": 1, "limit": 1}).json() == ["orders-value"]


def test_schemas_by_id(client):
    register(client, "a", V1)
    register(client, "b", V1)
    register(client, "b", V2)
    got = client.get("/schemas/ids/1").json()
    assert got["schemaType"] == "AVRO" and json.loads(got["schema"]) == json.loads(V1)
    with_subject = client.get("/schemas/ids/1", params={"subject": "b"}).json()
    assert with_subject["subject"] == "b" and with_subject["version"] == 1
    # a subject that does not hold the id never turns a hit into a miss
    assert client.get("/schemas/ids/1", params={"subject": "zzz-value"}).status_code == 200
    assert json.loads(client.get("/schemas/ids/2/schema").text) == json.loads(V2)
    assert client.get("/schemas/ids/1/subjects").json() == ["a", "b"]
    assert client.get("/schemas/ids/1/versions").json() == [
        {"subject": "a", "version": 1},
        {"subject": "b", "version": 1},
    ]
    assert client.get("/schemas/types").json() == ["AVRO"]
    everything = client.get("/schemas").json()
    assert [(s["subject"], s["version"]) for s in everything] == [("a", 1), ("b", 1), ("b", 2)]
    latest = client.get("/schemas", params={"latestOnly": "true"}).json()
    assert [(s["subject"], s["version"]) for s in latest] == [("a", 1), ("b", 2)]
    error(client.get("/schemas/ids/99"), 404, 40403)
    error(client.get("/schemas/ids/99/schema"), 404, 40403)
    error(client.get("/schemas/ids/99/subjects"), 404, 40403)
    error(client.get("/schemas/ids/99/versions"), 404, 40403)
    error(client.get("/schemas/ids/abc"), 404, 40403)


def test_lookup(client):
    register(client, "s", V1)
    register(client, "s", V2)
    found = client.post("/subjects/s", json={"schema": V1})
    assert found.status_code == 200
    assert found.json()["id"] == 1 and found.json()["version"] == 1
    error(client.post("/subjects/s", json={"schema": V3}), 404, 40403)
    error(client.post("/subjects/nope", json={"schema": V1}), 404, 40401)
    error(client.post("/subjects/s", json={"schema": "{not json"}), 422, 42201)
    # a soft-deleted version is found only with deleted=true
    client.delete("/subjects/s/versions/1")
    error(client.post("/subjects/s", json={"schema": V1}), 404, 40403)
    assert client.post("/subjects/s?deleted=True", json={"schema": V1}).json()["version"] == 1


def test_normalize_maps_layout_variants_to_one_schema(client):
    a = json.dumps({"type": "record", "name": "N", "namespace": "x", "fields": []})
    b = json.dumps({"namespace": "x", "name": "N", "type": "record", "fields": []})
    assert register(client, "s", a, normalize="true").json()["id"] == 1
    assert register(client, "s", b, normalize="TRUE").json() == {"id": 1, "version": 1}
    assert client.post("/subjects/s?normalize=true", json={"schema": b}).json()["id"] == 1


# -- errors ------------------------------------------------------------------------------


def test_invalid_schemas_are_42201(client):
    error(register(client, "s", "{bad json"), 422, 42201)
    error(register(client, "s", '{"type": "nope"}'), 422, 42201)
    bad_default = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "f", "type": "int", "default": "x"}],
    }
    error(register(client, "s", json.dumps(bad_default)), 422, 42201)
    error(client.post("/subjects/s/versions", json={}), 422, 42201)
    error(client.post("/subjects/s/versions", json={"schema": 5}), 422, 42201)


@pytest.mark.parametrize("schema_type", ["JSON", "PROTOBUF"])
def test_other_schema_types_are_refused_as_unsupported(client, schema_type):
    r = client.post("/subjects/s/versions", json={"schema": "{}", "schemaType": schema_type})
    assert "not supported" in error(r, 422, 42201)


def test_malformed_bodies_are_400_never_5xx(client):
    for body in (b"{bad", b"", b"[1, 2]", b"\xff\xfe"):
        r = client.post("/subjects/s/versions", content=body)
        error(r, 400, 400)
    error(client.put("/config", content=b"nope"), 400, 400)
    error(client.post("/compatibility/subjects/s/versions/latest", content=b"{"), 400, 400)


def test_unknown_routes_and_methods(client):
    error(client.get("/nope"), 404, 404)
    error(client.put("/subjects"), 405, 405)


@pytest.mark.parametrize("version", ["0", "-2", "abc", "2147483648", "1.5"])
def test_invalid_version_is_42202(client, version):
    register(client, "s", V1)
    error(client.get(f"/subjects/s/versions/{version}"), 422, 42202)
    error(client.delete(f"/subjects/s/versions/{version}"), 422, 42202)
    error(
        client.post(f"/compatibility/subjects/s/versions/{version}", json={"schema": V1}),
        422,
        42202,
    )


def test_missing_subject_and_version(client):
    error(client.get("/subjects/nope/versions"), 404, 40401)
    error(client.get("/subjects/nope/versions/1"), 404, 40401)
    register(client, "s", V1)
    error(client.get("/subjects/s/versions/7"), 404, 40402)
    error(client.delete("/subjects/nope"), 404, 40401)
    error(client.delete("/subjects/s/versions/7"), 404, 40402)


def test_incompatible_is_409_with_reasons(client):
    register(client, "s", V1)
    r = register(client, "s", V3)
    message = error(r, 409, 409)
    assert "incompatible" in message and "age" in message
    assert client.get("/subjects/s/versions").json() == [1]  # nothing was written


def test_subject_with_a_slash_and_control_characters(client):
    assert register(client, "a%2Fb", V1).status_code == 200
    assert client.get("/subjects").json() == ["a/b"]
    assert client.get("/subjects/a%2Fb/versions").json() == [1]
    error(register(client, "a%01b", V1), 422, 42208)


# -- soft and hard deletes --------------------------------------------------------------


def test_soft_delete_keeps_ids_readable_and_versions_counting(client):
    register(client, "s", V1)
    register(client, "s", V2)
    assert client.delete("/subjects/s/versions/2").json() == 2
    assert client.get("/subjects/s/versions").json() == [1]
    assert client.get("/subjects/s/versions", params={"deleted": "true"}).json() == [1, 2]
    assert client.get("/subjects/s/versions", params={"deletedOnly": "true"}).json() == [2]
    error(client.get("/subjects/s/versions/2"), 404, 40402)
    soft = client.get("/subjects/s/versions/2", params={"deleted": "true"}).json()
    assert soft["deleted"] is True
    assert client.get("/schemas/ids/2").status_code == 200  # still readable
    assert client.get("/schemas/ids/2/versions").json() == []
    assert client.get("/schemas/ids/2/versions?deleted=true").json() == [
        {"subject": "s", "version": 2}
    ]
    error(client.delete("/subjects/s/versions/2"), 404, 40406)  # soft-deleted already
    # the next version continues after the soft-deleted one
    assert register(client, "s", V3, force="true").json() == {"id": 3, "version": 3}


def test_delete_latest_resolves_the_number(client):
    register(client, "s", V1)
    register(client, "s", V2)
    assert client.delete("/subjects/s/versions/latest").json() == 2
    assert client.get("/subjects/s/versions/latest").json()["version"] == 1


def test_hard_delete_needs_a_soft_delete_first(client):
    register(client, "s", V1)
    register(client, "s", V2)
    error(client.delete("/subjects/s/versions/1?permanent=true"), 404, 40407)
    error(client.delete("/subjects/s?permanent=true"), 404, 40405)
    assert client.delete("/subjects/s").json() == [1, 2]
    error(client.delete("/subjects/s"), 404, 40404)
    assert client.get("/subjects").json() == []
    assert client.get("/subjects", params={"deleted": "true"}).json() == ["s"]
    assert client.get("/subjects", params={"deletedOnly": "true"}).json() == ["s"]
    assert client.get("/schemas/ids/1").status_code == 200
    assert client.delete("/subjects/s", params={"permanent": "TRUE"}).json() == [1, 2]
    error(client.get("/schemas/ids/1"), 404, 40403)
    error(client.get("/subjects/s/versions?deleted=true"), 404, 40401)
    error(client.delete("/subjects/s?permanent=true"), 404, 40401)


def test_hard_deleted_version_number_comes_back_but_the_id_does_not(client):
    register(client, "s", V1)
    register(client, "s", V2)
    client.delete("/subjects/s/versions/2")
    assert client.delete("/subjects/s/versions/2?permanent=true").json() == 2
    error(client.delete("/subjects/s/versions/2?permanent=true"), 404, 40402)
    error(client.get("/schemas/ids/2"), 404, 40403)
    again = register(client, "s", V2).json()
    assert again == {"id": 3, "version": 2}  # the number is reused, the id never


def test_id_stays_readable_while_another_subject_holds_it(client):
    register(client, "a", V1)
    register(client, "b", V1)
    client.delete("/subjects/a")
    client.delete("/subjects/a?permanent=true")
    assert client.get("/schemas/ids/1").status_code == 200
    assert client.get("/schemas/ids/1/subjects").json() == ["b"]


def test_re_registering_a_soft_deleted_schema_reuses_its_id(client):
    register(client, "s", V1)
    register(client, "s", V2)
    client.delete("/subjects/s")
    assert register(client, "s", V1).json() == {"id": 1, "version": 3}
    assert register(client, "s", V2).json() == {"id": 2, "version": 4}
    # the superseded soft-deleted versions are gone, as in Confluent
    assert client.get("/subjects/s/versions?deleted=true").json() == [3, 4]


# -- compatibility ------------------------------------------------------------------------


def test_compatibility_endpoints(client):
    register(client, "s", V1)
    r = client.post("/compatibility/subjects/s/versions/latest", json={"schema": V2})
    assert r.json() == {"is_compatible": True}
    r = client.post("/compatibility/subjects/s/versions/1?verbose=true", json={"schema": V3})
    body = r.json()
    assert body["is_compatible"] is False and body["messages"]
    r = client.post("/compatibility/subjects/s/versions", json={"schema": V3})
    assert r.json() == {"is_compatible": False}
    # nothing is written by a check
    assert client.get("/subjects/s/versions").json() == [1]
    # a subject without versions: compatible; a missing numbered version: 40402
    r = client.post("/compatibility/subjects/new/versions/latest", json={"schema": V3})
    assert r.json() == {"is_compatible": True}
    r = client.post("/compatibility/subjects/new/versions", json={"schema": V3})
    assert r.json() == {"is_compatible": True}
    error(client.post("/compatibility/subjects/new/versions/3", json={"schema": V1}), 404, 40402)
    # an invalid schema: 42201, or with verbose 200 and the reason
    error(client.post("/compatibility/subjects/s/versions", json={"schema": "{x"}), 422, 42201)
    r = client.post("/compatibility/subjects/s/versions?verbose=true", json={"schema": "{x"})
    assert r.status_code == 200 and r.json()["is_compatible"] is False
    assert r.json()["messages"]


def test_transitive_levels_look_at_every_live_version(client):
    register(client, "s", V1)
    register(client, "s", V2)
    client.put("/config/s", json={"compatibility": "NONE"})
    assert register(client, "s", V3).json()["version"] == 3
    client.put("/config/s", json={"compatibility": "backward_transitive"})
    v4 = record_schema("User", "id", "age", ("x", "int", 0))
    r = client.post("/compatibility/subjects/s/versions?verbose=true", json={"schema": v4})
    assert r.json()["is_compatible"] is False  # it cannot read V1's data (no "age")
    client.put("/config/s", json={"compatibility": "BACKWARD"})
    r = client.post("/compatibility/subjects/s/versions", json={"schema": v4})
    assert r.json() == {"is_compatible": True}


def test_checks_ignore_soft_deleted_versions(client):
    register(client, "s", V1)
    client.put("/config/s", json={"compatibility": "NONE"})
    register(client, "s", record_schema("User", "other"))
    client.put("/config/s", json={"compatibility": "BACKWARD"})
    check = record_schema("User", "id", ("z", "int", 0))
    r = client.post("/compatibility/subjects/s/versions", json={"schema": check})
    assert r.json() == {"is_compatible": False}  # cannot read v2's data: no "id"
    client.delete("/subjects/s/versions/2")
    r = client.post("/compatibility/subjects/s/versions", json={"schema": check})
    assert r.json() == {"is_compatible": True}  # v1 is the latest live version now
    assert register(client, "s", check).json() == {"id": 3, "version": 3}


# -- config and mode ----------------------------------------------------------------------


def test_config_global_and_subject(client):
    assert client.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    error(client.get("/config/s"), 404, 40408)
    assert client.get("/config/s?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
    assert client.put("/config", json={"compatibility": "full"}).json() == {"compatibility": "FULL"}
    assert client.get("/config").json() == {"compatibilityLevel": "FULL"}
    assert client.put("/config/s", json={"compatibility": "NONE"}).json() == {
        "compatibility": "NONE"
    }
    assert client.get("/config/s").json() == {"compatibilityLevel": "NONE"}
    assert client.delete("/config/s").json() == {"compatibilityLevel": "NONE"}
    error(client.delete("/config/s"), 404, 40401)
    assert client.delete("/config").json() == {"compatibilityLevel": "FULL"}
    assert client.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    error(client.put("/config", json={"compatibility": "SIDEWAYS"}), 422, 42203)
    error(client.put("/config/s", json={}), 422, 42203)


def test_config_normalize_applies_to_registration(client):
    a = json.dumps({"type": "record", "name": "N", "namespace": "x", "fields": []})
    b = json.dumps({"namespace": "x", "name": "N", "type": "record", "fields": []})
    client.put("/config/s", json={"compatibility": "BACKWARD", "normalize": True})
    assert client.get("/config/s").json() == {"compatibilityLevel": "BACKWARD", "normalize": True}
    assert register(client, "s", a).json() == {"id": 1, "version": 1}
    assert register(client, "s", b).json() == {"id": 1, "version": 1}


def test_mode(client):
    assert client.get("/mode").json() == {"mode": "READWRITE"}
    error(client.get("/mode/s"), 404, 40409)
    assert client.get("/mode/s?defaultToGlobal=true").json() == {"mode": "READWRITE"}
    error(client.put("/mode", json={"mode": "SIDEWAYS"}), 422, 42204)
    assert client.put("/mode/s", json={"mode": "readonly"}).json() == {"mode": "READONLY"}
    assert client.get("/mode/s").json() == {"mode": "READONLY"}
    error(register(client, "s", V1), 422, 42205)
    assert register(client, "t", V1).status_code == 200  # only s is read-only
    assert client.delete("/mode/s").json() == {"mode": "READONLY"}
    error(client.delete("/mode/s"), 404, 40401)
    assert register(client, "s", V1).status_code == 200


def test_readonly_refuses_every_write_but_the_mode_change(client):
    register(client, "s", V1)
    client.put("/mode", json={"mode": "READONLY"})
    error(register(client, "s", V2), 422, 42205)
    error(client.delete("/subjects/s"), 422, 42205)
    error(client.delete("/subjects/s/versions/1"), 422, 42205)
    error(client.put("/config", json={"compatibility": "NONE"}), 422, 42205)
    # re-registering what is there is a lookup, and reads work
    assert register(client, "s", V1).json() == {"id": 1, "version": 1}
    assert client.get("/subjects/s/versions/1").status_code == 200
    assert client.put("/mode", json={"mode": "READWRITE"}).json() == {"mode": "READWRITE"}
    assert register(client, "s", V2).status_code == 200


def test_import_mode_registers_with_given_ids(client):
    register(client, "existing", V1)
    error(client.put("/mode", json={"mode": "IMPORT"}), 422, 42205)  # live subjects
    assert client.put("/mode/imp", json={"mode": "IMPORT"}).json() == {"mode": "IMPORT"}
    r = client.post("/subjects/imp/versions", json={"schema": V3, "id": 100, "version": 7})
    assert r.json() == {"id": 100, "version": 7}
    assert client.get("/schemas/ids/100").status_code == 200
    # no compatibility check in IMPORT
    r = client.post("/subjects/imp/versions", json={"schema": V1, "id": 1, "version": 8})
    assert r.json() == {"id": 1, "version": 8}
    # without an id: 42205; an id naming another schema: 42205; the same schema under
    # another id: 42207
    error(client.post("/subjects/imp/versions", json={"schema": V2}), 422, 42205)
    error(client.post("/subjects/imp/versions", json={"schema": V2, "id": 100}), 422, 42205)
    client.put("/mode/imp2", json={"mode": "IMPORT"})
    error(client.post("/subjects/imp2/versions", json={"schema": V3, "id": 55}), 422, 42207)
    # the same schema again in its subject is the fast path: its stored id
    assert client.post("/subjects/imp/versions", json={"schema": V3, "id": 55}).json() == {
        "id": 100,
        "version": 7,
    }
    # outside IMPORT an id is refused
    error(client.post("/subjects/other/versions", json={"schema": V2, "id": 9}), 422, 42205)
    # new registrations elsewhere continue after the highest id
    client.delete("/mode/imp")
    assert register(client, "later", V2).json()["id"] == 101
    assert client.put("/mode?force=true", json={"mode": "IMPORT"}).json() == {"mode": "IMPORT"}


# -- references ---------------------------------------------------------------------------

ADDRESS = json.dumps(
    {
        "type": "record",
        "name": "Address",
        "namespace": "acme",
        "fields": [{"name": "city", "type": "string"}],
    }
)
PERSON = json.dumps(
    {
        "type": "record",
        "name": "Person",
        "namespace": "acme",
        "fields": [{"name": "home", "type": "acme.Address"}],
    }
)


def test_references(client):
    assert register(client, "address", ADDRESS).json() == {"id": 1, "version": 1}
    body = {
        "schema": PERSON,
        "references": [{"name": "acme.Address", "subject": "address", "version": 1}],
    }
    assert client.post("/subjects/person/versions", json=body).json() == {"id": 2, "version": 1}
    got = client.get("/subjects/person/versions/1").json()
    assert got["references"] == body["references"]
    assert client.get("/schemas/ids/2").json()["references"] == body["references"]
    assert client.post("/subjects/person", json=body).json()["id"] == 2
    assert client.get("/subjects/address/versions/1/referencedby").json() == [2]
    # without the reference the type is unknown; a dangling reference is invalid
    error(client.post("/subjects/p2/versions", json={"schema": PERSON}), 422, 42201)
    dangling = {**body, "references": [{"name": "acme.Address", "subject": "nope", "version": 1}]}
    error(client.post("/subjects/p2/versions", json=dangling), 422, 42201)
    # "latest" (-1) is pinned to the version it names now
    latest = {**body, "references": [{"name": "acme.Address", "subject": "address", "version": -1}]}
    assert client.post("/subjects/p3/versions", json=latest).json()["id"] == 2
    # a referenced version cannot be deleted, softly or for good
    error(client.delete("/subjects/address/versions/1"), 422, 42206)
    error(client.delete("/subjects/address"), 422, 42206)
    client.delete("/subjects/person")
    client.delete("/subjects/p3")
    assert client.get("/subjects/address/versions/1/referencedby").json() == []
    assert client.get("/subjects/address/versions/1/referencedby?deleted=true").json() == [2]
    assert client.delete("/subjects/address").json() == [1]
    # soft-deleted referrers still block a hard delete
    error(client.delete("/subjects/address?permanent=true"), 422, 42206)
    client.delete("/subjects/person?permanent=true")
    client.delete("/subjects/p3?permanent=true")
    assert client.delete("/subjects/address?permanent=true").json() == [1]


# -- the rest of the surface ---------------------------------------------------------------


def test_misc_endpoints(client):
    assert client.get("/").json() == {}
    assert client.get("/contexts").json() == ["."]
    r = client.get(
        "/associations/resources/-/orders",
        params={"resourceType": "topic", "associationType": "value"},
    )
    assert r.status_code == 200 and r.json() == []
    assert client.get("/v1/metadata/version").json()["version"]
    assert "scope" in client.get("/v1/metadata/id").json()


def test_boolean_flags_are_case_insensitive(client):
    register(client, "s", V1)
    client.delete("/subjects/s")
    for value in ("true", "True", "TRUE"):
        assert client.get("/subjects", params={"deleted": value}).json() == ["s"]
    for value in ("false", "False", "yes", "1"):
        assert client.get("/subjects", params={"deleted": value}).json() == []


def test_basic_auth(make_live: Callable[..., Live], tmp_path):
    from connect.rest.auth import BasicAuth

    users = tmp_path / "users"
    users.write_text("alice: secret\n")
    live = make_live(auth=BasicAuth.from_file(users))
    r = live.client.get("/subjects")
    assert r.status_code == 401 and r.json()["error_code"] == 401
    assert "WWW-Authenticate" in r.headers
    assert live.client.get("/subjects", auth=("alice", "secret")).json() == []
    assert live.client.get("/subjects", auth=("alice", "wrong")).status_code == 401
