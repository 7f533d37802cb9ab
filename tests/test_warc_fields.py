"""The WARC field values are exactly what the standard library's calls give."""

import base64
import hashlib
import random
import uuid
from datetime import UTC, datetime

from lib.archive.warc_fields import record_id, sha1_label, warc_date


def test_dates_are_strftime_s_to_the_microsecond():
    rng = random.Random(7)
    moments = [0, 0.5, 1796146789.2001, 1796146789.9999995, 1796146789.0000005]
    moments += [rng.uniform(0, 4e9) for _ in range(20000)]
    for moment in moments:
        expected = datetime.fromtimestamp(moment, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert warc_date(moment) == expected, moment


def test_digest_labels_are_base32_of_the_sha1():
    rng = random.Random(8)
    for size in [0, 1, 20, 4500] + [rng.randrange(0, 300) for _ in range(5000)]:
        digest = hashlib.sha1(rng.randbytes(size))
        assert sha1_label(digest) == "sha1:" + base64.b32encode(digest.digest()).decode()


def test_record_ids_are_random_version_4_uuids():
    ids = {record_id() for _ in range(5000)}
    assert len(ids) == 5000
    for value in ids:
        assert value.startswith("<urn:uuid:") and value.endswith(">")
        parsed = uuid.UUID(value[len("<urn:uuid:") : -1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == value[len("<urn:uuid:") : -1]
