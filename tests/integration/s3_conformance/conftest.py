"""One deployed twin (`twin up mini --ceph` with two users) for every S3 conformance module: each
module uses buckets of its own, so they share the gateway and its OSD daemons instead of each
starting a twin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.client import BaseClient

from tests.integration.s3_conformance.s3_twin import S3Twin, deployed


@pytest.fixture(scope="package")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Twin]:
    with deployed(tmp_path_factory, "s3c") as t:
        yield t


@pytest.fixture(scope="package")
def s3(twin: S3Twin) -> BaseClient:
    return twin.client()
