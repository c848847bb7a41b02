"""IndexNow's queue rule by rule, on small tables and folders in milliseconds: what the next submission sends and in
which order, and which builds' change sets are queued. Whole builds against a real endpoint:
tests/changes/test_indexnow.py."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa

from sitemap_ops.constants import LIVE_MANIFEST_NAME
from sitemap_ops.duck import connect, read_sql, set_variables
from sitemap_ops.manifest import Manifest
from sitemap_ops.notify.notify import QueueState, _unqueued_change_sets
from sitemap_ops.storage import Storage


def _queue(old: list[str] | None, sent: int, changes: list[str] | None) -> list[str]:
    """The queue notify writes from an old queue (None: none) of which `sent` were sent, and the new change sets'
    URLs in their order (None: no change set)."""
    con = connect(threads=1)
    try:
        if old is None:
            con.execute(read_sql("notify_no_queue"))
        else:
            con.register("old_rows", pa.table({"loc": old, "file_row_number": list(range(len(old)))}))
            con.execute("CREATE TEMP VIEW queue_old AS SELECT * FROM old_rows")
        if changes is None:
            con.execute(read_sql("notify_no_changes"))
        else:
            con.register("new_rows", pa.table({"loc": pa.array(changes, pa.string())}))
            con.execute("CREATE TEMP VIEW changes_new AS SELECT * FROM new_rows")
        set_variables(con, {"queue_sent": sent})
        return [loc for (loc,) in con.execute(read_sql("notify_queue")).fetchall()]
    finally:
        con.close()


def test_what_was_not_sent_goes_first_in_its_order_then_the_changes() -> None:
    assert _queue(["a", "b", "c", "d"], 2, ["f", "e"]) == ["c", "d", "f", "e"]


def test_each_url_is_queued_once_at_its_first_place() -> None:
    # (c waits in the old queue and changed again; e changed twice: one request each)
    assert _queue(["a", "b", "c"], 1, ["e", "c", "f", "e"]) == ["b", "c", "e", "f"]


def test_a_queue_sent_in_full_leaves_only_the_new_changes() -> None:
    assert _queue(["a", "b"], 2, ["b", "c"]) == ["b", "c"]


def test_no_queue_and_no_change_set_is_an_empty_queue() -> None:
    assert _queue(None, 0, None) == []
    assert _queue(None, 0, ["x"]) == ["x"]
    assert _queue(["a"], 0, None) == ["a"]


def _manifest(build_id: str, since: str | None) -> Manifest:
    return Manifest(
        build_id, "2026-11-27T00:00:00+00:00", "https://www.example.com/", "https://www.example.com/", "xml", True,
        ["sitemap.xml"], [], "", changes={"added": 1}, changes_since=since,
    )  # fmt: skip


def _chain(root: Storage, *builds: tuple[str, str | None]) -> None:
    """Builds in order, each (id, the build before it): each one's work folder holds the manifest that was live
    when it planned (the one before it), as plan leaves it."""
    for (before, before_since), (build_id, _) in itertools.pairwise(builds):
        root.child(build_id).write_bytes(LIVE_MANIFEST_NAME, _manifest(before, before_since).to_json())


def test_the_change_sets_since_the_last_queued_build_are_found_along_the_chain(tmp_path: Path) -> None:
    root = Storage.open(str(tmp_path))
    _chain(root, ("b1", None), ("b2", "b1"), ("b3", "b2"), ("b4", "b3"))
    notes: list[str] = []
    found = _unqueued_change_sets(root, _manifest("b4", "b3"), QueueState(through="b2"), notes)
    assert [m.build_id for m in found] == ["b4", "b3"] and notes == []


def test_a_queue_that_never_ran_queues_only_the_live_build(tmp_path: Path) -> None:
    root = Storage.open(str(tmp_path))
    _chain(root, ("b1", None), ("b2", "b1"))
    assert [m.build_id for m in _unqueued_change_sets(root, _manifest("b2", "b1"), QueueState(), [])] == ["b2"]


def test_a_pruned_work_folder_ends_the_chain_with_a_note(tmp_path: Path) -> None:
    root = Storage.open(str(tmp_path))
    _chain(root, ("b3", "b2"), ("b4", "b3"))  # b3's own folder, with b2's manifest, was pruned
    notes: list[str] = []
    found = _unqueued_change_sets(root, _manifest("b4", "b3"), QueueState(through="b1"), notes)
    assert [m.build_id for m in found] == ["b4", "b3"]
    assert notes and "before build b3 are gone" in notes[0]
