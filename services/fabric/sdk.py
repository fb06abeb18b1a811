"""A client of the twin's fabric manager (`clustertwin.v1.Fabric`), for scripts and the CLI.

    from emulator.client import Twin

    fabric = Twin.connect(run_dir).fabric()
    ports = fabric.call("ListPorts", computer_only=True).ports
    est = fabric.call("EstimateCollective", op="all_reduce", ranks=1024, bytes=1 << 30)

`call(method, **fields)` builds the request message of `method` from keyword fields and returns the
reply; a failure raises `TwinRpcError` with the gRPC status code and the manager's message. A List
RPC called without `page_token` returns every page in one reply (its lists joined); with one, that
page only. `events()` yields the FabricEvent messages of WatchEvents.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import BadInput, TwinRpcError

SERVICE = pb.DESCRIPTOR.services_by_name["Fabric"]


class FabricClient:
    def __init__(self, address: str, name: str = "fabric", timeout: float = 60.0) -> None:
        self.address, self.name, self.timeout = address, name, timeout
        self._channel = grpc.insecure_channel(address)
        self._stub = pb_grpc.FabricStub(self._channel)

    def call(self, method: str, **fields: Any) -> Any:
        try:
            rpc = SERVICE.methods_by_name[method]
        except KeyError:
            raise BadInput(f"the fabric manager has no method {method!r}") from None
        request = getattr(pb, rpc.input_type.name)(**fields)
        # a List RPC: every page, unless the caller names a page_token (even "": the first page alone)
        return paging.joined(lambda r: self._invoke(method, r), request, one_page="page_token" in fields)

    def _invoke(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise TwinRpcError(self.name, e.code(), e.details() or "") from None

    def events(self, since_seq: int = 0) -> Iterator[pb.FabricEvent]:
        try:
            for response in self._stub.WatchEvents(pb.FabricWatchEventsRequest(since_seq=since_seq)):
                yield response.event
        except grpc.RpcError as e:
            raise TwinRpcError(self.name, e.code(), e.details() or "") from None

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> FabricClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
