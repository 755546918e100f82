"""The batch's one usage limit on a Ray cluster: a small actor holds the unix time every
worker waits until, and each worker reaches it through :class:`RayGate` (a
:class:`~loom_cli.batch.gate.UsageGate`). The local pool keeps the same number in shared
memory; across machines an actor is the one place every worker can read it.
"""

from __future__ import annotations

from typing import TypeVar, cast

import ray
from ray.actor import ActorHandle, ActorProxy

_Actor = TypeVar("_Actor")


class GateHolder:
    """The Ray actor (on the driver's node, no CPU asked): the time the workers wait until."""

    def __init__(self) -> None:
        self._until = 0.0

    @ray.method
    def hold_until(self, until: float) -> None:
        self._until = max(self._until, until)

    @ray.method
    def held_until(self) -> float:
        return self._until


RemoteGateHolder = ray.remote(num_cpus=0, max_restarts=0)(GateHolder)


class RayGate:
    """A worker's side of the gate: each question is a call to the holder (about a
    millisecond on a cluster's network, once before each model request). Picklable: it
    carries only the actor's handle."""

    def __init__(self, holder: ActorProxy[GateHolder]) -> None:
        self._holder = holder

    @classmethod
    def start(cls) -> RayGate:
        """A new holder on the cluster this driver is connected to."""
        return cls(RemoteGateHolder.remote())

    def hold_until(self, until: float) -> None:
        ray.get(self._holder.hold_until.remote(until))

    def held_until(self) -> float:
        return ray.get(self._holder.held_until.remote())

    def close(self) -> None:
        kill(self._holder)


def kill(actor: ActorProxy[_Actor]) -> None:
    """End an actor of the batch (its running call, if any, fails on the driver's side)."""
    # A handle at run time (ActorProxy is how Ray types them; through Ray Client, its own
    # handle class, which ray.kill takes too).
    ray.kill(cast(ActorHandle[_Actor], actor), no_restart=True)
