"""RGW's group removal (services/ceph/rgw/group_call.py): requests that free objects while a batch is
being removed leave together in the next batch, and each gets back only its own objects not removed."""

from __future__ import annotations

import threading

from services.ceph.rgw.group_call import GroupRemover, Obj


def test_requests_arriving_during_a_batch_leave_in_the_next_one() -> None:
    batches: list[list[Obj]] = []
    first_in, release = threading.Event(), threading.Event()

    def remove_many(objs: list[Obj]) -> list[Obj]:
        batches.append(objs)
        if len(batches) == 1:
            first_in.set()
            release.wait(10)
        return [o for o in objs if o[1].startswith("stuck")]   # say these PGs are not active

    g = GroupRemover(remove_many)
    left: dict[str, list[Obj]] = {}
    first = threading.Thread(target=lambda: left.update(a=g.remove([("p", "a1")])))
    first.start()
    assert first_in.wait(10)
    others = [threading.Thread(target=lambda n=n: left.update({n: g.remove([("p", f"{n}1"), ("p", f"stuck-{n}")])}))
              for n in ("b", "c", "d")]
    for t in others:
        t.start()
    while sum(len(mine) for _, mine in g._group._queue) < 6:   # all three queued behind the first batch
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert batches[0] == [("p", "a1")]
    assert len(batches) == 2 and sorted(batches[1]) == sorted(
        [("p", f"{n}1") for n in "bcd"] + [("p", f"stuck-{n}") for n in "bcd"])
    assert left == {"a": [], "b": [("p", "stuck-b")], "c": [("p", "stuck-c")], "d": [("p", "stuck-d")]}


def test_each_request_gets_its_own_results_and_a_failed_call_fails_its_batch() -> None:
    from services.ceph.rgw.group_call import GroupCall

    def call_many(items: list[int]) -> list[int]:
        if -1 in items:
            raise ValueError("refused")
        return [x * 10 for x in items]

    g: GroupCall[int, int] = GroupCall(call_many)
    assert g.call([1, 2]) == [10, 20]
    try:
        g.call([3, -1])
    except ValueError as e:
        assert str(e) == "refused"
    else:
        raise AssertionError("the batch's failure was not raised")
    assert g.call([4]) == [40]   # a failed batch leaves the group usable
