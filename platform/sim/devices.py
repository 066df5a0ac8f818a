"""Devices in the simulator: D devices per site, each with its own link to its site and
its own compute speed, running the device app's ClientApp in this process.

Two ways to arrange the same devices, played round by round in virtual time:
- `atoll`: each region's devices talk to their own site (a DeviceSite over an in-process
  Grid); the sites sync through a geo policy after every device round, messages carried
  and counted as on the WAN links of the topology;
- `central-flower`: every device talks to one Flower server (Flower's own FedAvg) in the
  first region; devices elsewhere reach it across the WAN.

Time: a device's round is its download, its training (the compute measured here, scaled
by its profile) and its upload; a round lasts as long as its slowest device. Devices of a
region share their region's WAN link to a central server. WAN bytes are the bytes of
the model arrays (central) and of the encoded geo messages (atoll) that cross regions.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message
from flwr.clientapp import ClientApp
from flwr.serverapp.strategy import FedAvg

from atoll.platform.devices.local_grid import Exchange, LocalGrid, UserConfig
from atoll.platform.devices.records import to_record
from atoll.platform.devices.rounds import DeviceRounds, RoundOptions
from atoll.platform.devices.site import Arrays, DeviceSite
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.geo.codec import decode, encode
from atoll.platform.geo.messages import BROADCAST
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.policy import GeoPolicy
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.net.topology import LinkShape, Topology


@dataclass(frozen=True)
class DeviceProfile:
    """A device's link to its site (both ways) and how much slower it computes than here."""

    latency_s: float
    bandwidth_bps: float
    compute_scale: float = 1.0

    @property
    def link(self) -> LinkShape:
        return LinkShape(self.latency_s, self.bandwidth_bps)


PROFILES = {
    # a phone on a mobile network: ~40 ms one way, 20 Mbit/s, 4x slower than a server core
    "mobile": DeviceProfile(0.04, 20e6, 4.0),
    # a PC on the site's LAN: hospital or office
    "lan": DeviceProfile(0.0005, 1e9, 1.0),
}


def payload_bytes(message: Message) -> int:
    """Bytes of the model arrays a message carries (what dominates a device's traffic)."""
    records = message.content.array_records.values()
    return sum(len(array.data) for record in records for array in record.values())


@dataclass
class RoundClock:
    """Collects a round's exchanges; turns them into a round's virtual duration."""

    profile: DeviceProfile
    wan: dict[int, LinkShape] = field(default_factory=dict)  # node -> WAN hop to the server
    shared: dict[int, int] = field(default_factory=dict)  # node -> devices sharing that hop
    exchanges: list[Exchange] = field(default_factory=list)

    def record(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)

    def close(self) -> tuple[float, int]:
        """This round's virtual seconds and WAN bytes; starts the next round."""
        longest, wan_bytes = 0.0, 0
        for e in self.exchanges:
            down, up = payload_bytes(e.sent), payload_bytes(e.reply)
            t = self.profile.link.transfer_s(down) + self.profile.link.transfer_s(up)
            t += e.compute_s * self.profile.compute_scale
            hop = self.wan.get(e.node_id)
            if hop is not None:
                share = self.shared.get(e.node_id, 1)  # devices of a region share its link
                t += hop.transfer_s(down * share) + hop.transfer_s(up * share)
                wan_bytes += down + up
            longest = max(longest, t)
        self.exchanges = []
        return longest, wan_bytes


@dataclass(frozen=True)
class DevicePoint:
    """Where a run stands after a round."""

    round: int
    time_s: float
    wan_bytes: int
    accuracy: float  # on the evaluation set, of the (mean of the sites') model


@dataclass(frozen=True)
class DeviceWorld:
    """Regions (sites of a topology), their devices, and the app they run."""

    topology: Topology
    devices_per_site: int
    app: ClientApp
    run_config: UserConfig
    profile: DeviceProfile
    initial: Arrays
    evaluate: Callable[[Arrays], float]  # accuracy of a model on a held-out set

    @property
    def total(self) -> int:
        return len(self.topology.sites) * self.devices_per_site

    def node_configs(self, site: int) -> dict[int, UserConfig]:
        first = site * self.devices_per_site
        return {
            1 + first + d: {"partition-id": first + d, "num-partitions": self.total}
            for d in range(self.devices_per_site)
        }


def warm_up(world: DeviceWorld) -> None:
    """One untimed device round: the app reads its data files once per process and
    PyTorch's first steps are slow; otherwise the first round timed would pay for both."""
    grid = LocalGrid(world.app, world.node_configs(0), world.run_config)
    DeviceRounds(grid, RoundOptions(poll_s=0.001)).train(0, world.initial, {})


def run_central(world: DeviceWorld, rounds: int, on_point: Callable[[DevicePoint], None]) -> None:
    """Flower's own FedAvg, one server in the first region, every device across the WAN."""
    server = world.topology.sites[0]
    clock = RoundClock(world.profile)
    nodes: dict[int, UserConfig] = {}
    for s, region in enumerate(world.topology.sites):
        configs = world.node_configs(s)
        nodes.update(configs)
        if region != server:
            for node in configs:
                clock.wan[node] = world.topology.link(region, server)
                clock.shared[node] = world.devices_per_site
    grid = LocalGrid(world.app, nodes, world.run_config, on_exchange=clock.record)
    state = {"time": 0.0, "bytes": 0}

    def after_round(server_round: int, arrays: ArrayRecord) -> None:
        if server_round == 0:
            return
        seconds, wan = clock.close()
        state["time"] += seconds
        state["bytes"] += wan
        model = {k: v.numpy() for k, v in arrays.items()}
        accuracy = world.evaluate(model)
        on_point(DevicePoint(server_round, state["time"], int(state["bytes"]), accuracy))

    FedAvg(fraction_evaluate=0.0, min_train_nodes=1, min_available_nodes=1).start(
        grid=grid,
        initial_arrays=to_record(world.initial),
        num_rounds=rounds,
        train_config=ConfigRecord({}),
        evaluate_fn=after_round,
    )


class _Sites:
    """The regions' device sites, their geo policies, and the WAN between them."""

    def __init__(self, world: DeviceWorld, geo: GeoSpec) -> None:
        self.world = world
        names = world.topology.sites
        self.clocks = [RoundClock(world.profile) for _ in names]
        self.sites: list[DeviceSite] = []
        self.policies: list[GeoPolicy] = []
        for s in range(len(names)):
            spec = DeviceSiteSpec(model="-", poll_s=1e-3, evaluate=False, out_dir=Path())
            grid = LocalGrid(
                world.app,
                world.node_configs(s),
                world.run_config,
                on_exchange=self.clocks[s].record,
            )
            site = DeviceSite(spec, grid, world.initial, lambda e: None, sleep=lambda _: None)
            self.sites.append(site)
            self.policies.append(build_policy(geo, s, len(names), site.params))
        self.wan_bytes = 0
        self.links: dict[str, int] = {}

    def round(self, server_round: int, now: float) -> float:
        """Every site's device round, then the geo exchange; the round's virtual seconds."""
        names = self.world.topology.sites
        device_s, outbound = 0.0, []
        for s, site in enumerate(self.sites):
            before = site.params.clone()
            outcome = site.rounds.train(server_round, site.arrays, {})
            if outcome.arrays is not None:
                change = site.layout.flatten(outcome.arrays) - before
                step = change * self.policies[s].update_scale
                site.params += step
                outbound += [(s, o) for o in self.policies[s].after_clock(step, now)]
            seconds, _ = self.clocks[s].close()
            device_s = max(device_s, seconds)
        wan_s = 0.0
        while outbound:  # deliver everything (answers included) before the next round
            s, out = outbound.pop(0)
            payload = encode(out.message)
            targets = self.policies[s].mirrors if out.to == BROADCAST else [out.to]
            for t in targets:
                link = f"{names[s]}->{names[t]}"
                self.links[link] = self.links.get(link, 0) + len(payload)
                self.wan_bytes += len(payload)
                link_s = self.world.topology.link(names[s], names[t]).transfer_s(len(payload))
                wan_s = max(wan_s, link_s)
                outbound += [(t, o) for o in self.policies[t].receive(decode(payload), now)]
        return device_s + wan_s

    def model(self) -> Arrays:
        mean = torch.stack([s.params for s in self.sites]).mean(0)
        return self.sites[0].layout.unflatten(mean)


def run_atoll(
    world: DeviceWorld, geo: GeoSpec, rounds: int, on_point: Callable[[DevicePoint], None]
) -> dict[str, int]:
    """Each region's devices train with their own site; sites sync by `geo`. WAN bytes per link."""
    sites = _Sites(world, geo)
    now = 0.0
    for r in range(1, rounds + 1):
        now += sites.round(r, now)
        on_point(DevicePoint(r, now, sites.wan_bytes, world.evaluate(sites.model())))
    return sites.links
