"""The mapping protocol and point reads and writes."""

from __future__ import annotations

import array

import pytest

import varve


def test_set_get_contains_delete(db: varve.Db) -> None:
    db[b"apple"] = b"red"
    db.put(b"banana", b"yellow")
    db.put(b"cherry", b"dark red", sync=True)
    assert db[b"apple"] == b"red"
    assert db.get(b"banana") == b"yellow"
    assert db.get(b"cherry") == b"dark red"
    assert b"apple" in db
    assert b"durian" not in db
    assert db.get(b"durian") is None
    assert db.get(b"durian", b"default") == b"default"
    assert db.get(b"durian", default=42) == 42

    del db[b"apple"]
    assert b"apple" not in db
    db.delete(b"banana")
    db.delete(b"banana", sync=True)  # deleting twice is fine
    assert db.get(b"banana") is None
    del db[b"never-there"]  # a blind delete, no KeyError


def test_missing_key_raises_key_error(db: varve.Db) -> None:
    with pytest.raises(KeyError) as info:
        db[b"nope"]
    assert info.value.args == (b"nope",)


def test_overwrite_and_types(db: varve.Db) -> None:
    db[b"k"] = b"1"
    db[b"k"] = b"2"
    value = db[b"k"]
    assert value == b"2"
    assert type(value) is bytes


def test_bytes_like_arguments(db: varve.Db) -> None:
    db[bytearray(b"ba")] = bytearray(b"bytearray")
    db[memoryview(b"mv")] = memoryview(b"memoryview")
    db.put(array.array("B", b"arr"), array.array("B", b"array"))
    assert db[b"ba"] == b"bytearray"
    assert db[memoryview(b"mv")] == b"memoryview"
    assert db[bytearray(b"arr")] == b"array"
    assert bytearray(b"ba") in db
    # A slice of a larger buffer: only the slice's bytes.
    buf = memoryview(b"xxkeyxx")[2:5]
    db[buf] = b"sliced"
    assert db[b"key"] == b"sliced"


def test_str_and_other_types_are_refused(db: varve.Db) -> None:
    with pytest.raises(TypeError, match="encode"):
        db["text"] = b"v"
    with pytest.raises(TypeError):
        db[b"k"] = "text"
    with pytest.raises(TypeError):
        db.get(12)
    with pytest.raises(TypeError):
        db.put(b"k", None)


def test_empty_value_and_binary_keys(db: varve.Db) -> None:
    db[b"empty"] = b""
    assert db[b"empty"] == b""
    assert b"empty" in db
    key = bytes(range(256))
    db[key] = key[::-1]
    assert db[key] == key[::-1]
    db[b"\x00"] = b"zero"
    assert db[b"\x00"] == b"zero"


@pytest.mark.parametrize("min_blob_size", [None, 64])
def test_large_values_inline_and_in_blob_files(db_path, min_blob_size) -> None:
    big = bytes(range(256)) * 400  # 100 KiB
    with varve.Db(db_path, min_blob_size=min_blob_size) as db:
        db[b"big"] = big
        db[b"small"] = b"s"
        assert db[b"big"] == big
        db.flush()
        assert db[b"big"] == big
        assert list(db.values()) == [big, b"s"]
    with varve.Db(db_path, min_blob_size=min_blob_size) as db:
        assert db[b"big"] == big


def test_iter_and_membership_are_mapping_like(db: varve.Db) -> None:
    for k in (b"b", b"a", b"c"):
        db[k] = k.upper()
    assert list(db) == [b"a", b"b", b"c"]
    assert dict(db.items()) == {b"a": b"A", b"b": b"B", b"c": b"C"}
    assert sorted(db.keys()) == list(db.keys())
