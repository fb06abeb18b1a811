"""One error type for the fabric (a DaemonError), with its gRPC and HTTP statuses mapped in one place
(emulator/errors.py)."""

from __future__ import annotations

import grpc

from emulator.errors import DaemonError
from services.fabric.errors import FabricError, FabricInvalid, FabricNotFound
from services.fabric.sharp import SharpError
from services.fabric.subnet import SubnetError


def test_each_error_carries_its_code_and_both_statuses() -> None:
    cases = [(FabricNotFound("x"), grpc.StatusCode.NOT_FOUND, 404, "x"),
             (FabricInvalid("no route from LID 1 to 2", "FAILED_PRECONDITION"), grpc.StatusCode.FAILED_PRECONDITION,
              400, "no route from LID 1 to 2"),
             (FabricInvalid("no route wanted"), grpc.StatusCode.INVALID_ARGUMENT, 400, "no route wanted"),
             (SharpError("no resources: ...", "RESOURCE_EXHAUSTED"), grpc.StatusCode.RESOURCE_EXHAUSTED, 429,
              "SHARP: no resources: ..."),
             (SharpError("no resources in the name"), grpc.StatusCode.INVALID_ARGUMENT, 400,
              "SHARP: no resources in the name"),
             (SubnetError("OpenSM is not running"), grpc.StatusCode.UNAVAILABLE, 503,
              "subnet manager: OpenSM is not running")]
    for err, status, http, detail in cases:
        assert isinstance(err, FabricError) and isinstance(err, DaemonError)
        assert (err.grpc_status, err.http_status, err.detail) == (status, http, detail), err
        assert str(err) == err.message   # quoted inside other messages as it was raised
