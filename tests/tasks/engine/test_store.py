"""The operation store's reads against a real Redis."""

from __future__ import annotations

import time

import pytest

from tasks.engine.kinds import OperationKind, Step
from tasks.engine.model import new_operation
from tasks.engine.store import OperationStore


def _noop(ctx):
    return None


CREATE = OperationKind(name="thing.create", steps=(Step("one", "One", _noop),),
                       resource_url=lambda p: None)
DELETE = OperationKind(name="thing.delete", steps=(Step("one", "One", _noop),),
                       resource_url=lambda p: None)


@pytest.fixture
def store(redis_db):
    return OperationStore(redis_db)


def _record(store: OperationStore, kind: OperationKind, target: str,
            status: str = "succeeded") -> dict:
    """An operation on `target`, finished (lock released) unless `status` says otherwise;
    a millisecond after the one before, so ids sort by creation."""
    time.sleep(0.002)
    op, _ = store.create(new_operation(kind, target, {}, "tester", None), None)

    def finish(stored: dict) -> None:
        stored["status"] = status

    return store.update(op["id"], finish) if status != "queued" else op


def test_newest_by_child_answers_the_newest_operation_of_each_child(store):
    _record(store, CREATE, "cluster/c/storage/a", "failed")
    newest_a = _record(store, DELETE, "cluster/c/storage/a")
    _record(store, CREATE, "cluster/c/storage")  # the parent itself is no child
    only_b = _record(store, CREATE, "cluster/c/storage/b", "queued")
    _record(store, CREATE, "cluster/c/storagex/z")  # a sibling path sharing its spelling
    _record(store, CREATE, "cluster/d/storage/a")  # another cluster's
    found = store.newest_by_child("cluster/c/storage")
    assert {name: op["id"] for name, op in found.items()} == {
        "a": newest_a["id"], "b": only_b["id"]}


def test_newest_by_child_keeps_only_the_kinds_asked(store):
    create_a = _record(store, CREATE, "cluster/c/model/a")
    _record(store, DELETE, "cluster/c/model/a")
    _record(store, DELETE, "cluster/c/model/b")
    found = store.newest_by_child("cluster/c/model", kinds={CREATE.name})
    assert {name: op["id"] for name, op in found.items()} == {"a": create_a["id"]}


def test_newest_by_child_unfinished_answers_only_the_running_ones(store):
    running_a = _record(store, CREATE, "cluster/c/group/a", "queued")
    _record(store, CREATE, "cluster/c/group/b")  # finished: not listed
    found = store.newest_by_child("cluster/c/group", unfinished=True)
    assert {name: op["id"] for name, op in found.items()} == {"a": running_a["id"]}
    # a child's deeper target counts for the child
    deep = _record(store, CREATE, "cluster/c/group/b/nodes", "queued")
    found = store.newest_by_child("cluster/c/group/", unfinished=True,
                                  kinds={CREATE.name})
    assert {name: op["id"] for name, op in found.items()} == {
        "a": running_a["id"], "b": deep["id"]}
