"""object_lock.py's pure rules, as RGW's rgw_object_lock.cc decodes and rgw_op.cc applies them: the
configuration document, dates as ceph::from_iso_8601 reads and to_iso_8601 writes them, which
retention may replace which, and the default retention of a new version."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.ceph.rgw import object_lock
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry, ObjectLock
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.users import User

Y2030 = datetime(2030, 1, 1, tzinfo=UTC).timestamp()


def conf(inner: str) -> bytes:
    return (f'<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{inner}'
            "</ObjectLockConfiguration>").encode()


def rule(inner: str) -> bytes:
    return conf(f"<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>{inner}"
                "</DefaultRetention></Rule>")


def code(body: bytes) -> str:
    with pytest.raises(S3Error) as e:
        object_lock.parse_config(body)
    return e.value.code


def test_configurations() -> None:
    assert object_lock.parse_config(conf("<ObjectLockEnabled>Enabled</ObjectLockEnabled>")) == ObjectLock()
    assert object_lock.parse_config(rule("<Mode>COMPLIANCE</Mode><Years>2</Years>")) == ObjectLock("COMPLIANCE", 0, 2)
    assert code(conf("<ObjectLockEnabled>Disabled</ObjectLockEnabled>")) == "MalformedXML"
    assert code(conf("")) == "MalformedXML"
    assert code(conf("<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule/>")) == "MalformedXML"
    assert code(rule("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>")) == "MalformedXML"
    assert code(rule("<Mode>Governance</Mode><Days>1</Days>")) == "MalformedXML"
    assert code(rule("<Mode>GOVERNANCE</Mode><Days>one</Days>")) == "MalformedXML"
    assert code(rule("<Mode>GOVERNANCE</Mode><Days>0</Days>")) == "InvalidRetentionPeriod"
    assert code(rule("<Mode>GOVERNANCE</Mode><Years>-1</Years>")) == "InvalidRetentionPeriod"
    lock = ObjectLock("GOVERNANCE", 3, 0)
    assert object_lock.parse_config(object_lock.config_xml(lock)) == lock
    assert object_lock.from_json(object_lock.to_json(lock)) == lock


def test_dates() -> None:
    assert object_lock.parse_date("2030-01-01T00:00:00Z") == Y2030
    assert object_lock.parse_date("2030-01-01T00:00:00.5Z") == Y2030 + 0.5
    assert object_lock.parse_date("2030-01-01T00:00:00.123456789Z") == Y2030 + 0.123456789
    for partial in ("2030", "2030-01", "2030-01-01", "2030-01-01T00Z", "2030-01-01T00:00Z", "2030-01-01 junk"):
        assert object_lock.parse_date(partial) == Y2030, partial
    for bad in ("2030-01-01T00:00:00", "2030-01-01T00:00:00+00:00", "1969-12-31", " 2030", "tomorrow", "",
                "2030-01-01T00:00:00.1234567890Z"):
        assert object_lock.parse_date(bad) is None, bad
    march2 = datetime(2030, 3, 2, tzinfo=UTC).timestamp()
    assert object_lock.parse_date("2030-02-30T00:00:00Z") == march2  # timegm rolls it over
    assert object_lock.parse_date("2029-13-01") == Y2030
    assert object_lock.format_date(Y2030 + 0.25) == "2030-01-01T00:00:00.250000000Z"


def entry(mode: str = "", until: float | None = None) -> ObjectEntry:
    return ObjectEntry("k", 1, "e", 0.0, "alice", [], {}, version_id="v", lock_mode=mode, lock_until=until)


@pytest.mark.parametrize(("old", "new", "bypass", "allowed"), [
    (("GOVERNANCE", Y2030), ("GOVERNANCE", Y2030 + 86400), False, True),  # extending
    (("GOVERNANCE", Y2030), ("GOVERNANCE", Y2030 - 86400), False, False),  # shortening
    (("GOVERNANCE", Y2030), ("GOVERNANCE", Y2030 - 86400), True, True),
    (("COMPLIANCE", Y2030), ("COMPLIANCE", Y2030 - 86400), True, False),
    (("GOVERNANCE", Y2030), ("COMPLIANCE", Y2030), False, False),
    (("GOVERNANCE", Y2030), ("COMPLIANCE", Y2030), True, True),
    (("COMPLIANCE", Y2030), ("GOVERNANCE", Y2030 + 86400), True, False),
    (("", None), ("GOVERNANCE", Y2030), False, True),  # none yet
])
def test_which_retention_may_replace_which(old: tuple[str, float | None], new: tuple[str, float], bypass: bool,
                                          allowed: bool) -> None:
    e = entry(*old)
    if allowed:
        object_lock.check_transition(e, *new, bypass)
        return
    with pytest.raises(S3Error) as err:
        object_lock.check_transition(e, *new, bypass)
    assert err.value.code == "AccessDenied"


def test_the_default_retention_of_a_new_version() -> None:
    b = Bucket("b", "", User("alice", "Alice", "AK", "SK"), 0.0, "m")
    assert object_lock.with_default(b, {}, 100.0) == {}  # no object lock
    b.object_lock = ObjectLock()
    assert object_lock.with_default(b, {"legal_hold": "ON"}, 100.0) == {"legal_hold": "ON"}  # no rule
    b.object_lock = ObjectLock("GOVERNANCE", 2, 0)
    assert object_lock.with_default(b, {}, 100.0) == {"lock_mode": "GOVERNANCE", "lock_until": 100.0 + 2 * 86400}
    b.object_lock = ObjectLock("COMPLIANCE", 0, 1)  # std::chrono::years: 365.2425 days
    assert object_lock.with_default(b, {}, 0.0)["lock_until"] == 31556952.0
    own = {"lock_mode": "GOVERNANCE", "lock_until": Y2030}
    assert object_lock.with_default(b, own, 0.0) == own  # the version's own retention wins
    assert object_lock.locked(b, entry("GOVERNANCE", Y2030), Y2030 - 1)
    assert not object_lock.locked(b, entry("GOVERNANCE", Y2030), Y2030)
