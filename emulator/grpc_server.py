"""What every twin gRPC server has: health checking, reflection, and a clean stop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import _async as health_async
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

Registration = tuple[Callable[[Any, grpc.aio.Server], None], Any, str]  # (add_fn, servicer, full service name)


class ServerBindError(RuntimeError):
    pass


async def start_server(address: str, services: Sequence[Registration],
                       options: Sequence[tuple[str, Any]] = (), *, serving: bool = True,
                       ) -> tuple[grpc.aio.Server, Any]:
    """Start a grpc.aio server on `address` with `services`, health (all SERVING; NOT_SERVING with
    `serving=False`, for a daemon that is not ready yet) and reflection; `options`: extra channel
    arguments (e.g. a larger grpc.max_receive_message_length)."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0), *options])
    health = health_async.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = [health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME]
    for add, servicer, name in services:
        add(servicer, server)
        names.append(name)
    reflection.enable_server_reflection(names, server)
    try:
        server.add_insecure_port(address)
    except RuntimeError as e:
        raise ServerBindError(f"cannot listen on {address}: {e}") from None
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    await health.set("", status)   # before start: no caller sees a status the daemon did not choose
    for _, _, name in services:
        await health.set(name, status)
    await server.start()
    return server, health
