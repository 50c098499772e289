"""Addresses and links of an inventory (pure): which interface of a host sits on a link or in a
subnet, and which interfaces a run samples. Scenarios and the runner share these lookups.
"""
from __future__ import annotations

import ipaddress
from typing import Iterable

from controller.errors import ScenarioError
from controller.inventory import Interface, Inventory


def iface_on(inv: Inventory, host: str, link: str, what: str) -> Interface:
    for i in inv.hosts[host].interfaces:
        if i.link == link and i.ip:
            return i
    raise ScenarioError(f"{what}: host {host} has no addressed interface on link {link}")


def interfaces_in_subnet(inv: Inventory, host: str, subnet_of: Interface) -> list[Interface]:
    """The interfaces of `host` in the same IPv4 subnet as `subnet_of` (a path across bridges
    keeps one subnet end to end: the client's side and the server's side of it)."""
    assert subnet_of.address is not None
    net = ipaddress.ip_interface(subnet_of.address).network
    return [i for i in inv.hosts[host].interfaces if i.address and ipaddress.ip_interface(i.address).network == net]


def peer_in_subnet(inv: Inventory, host: str, subnet_of: Interface, what: str) -> Interface:
    """The (first) interface of `host` in the subnet of `subnet_of`; a ScenarioError if none."""
    found = interfaces_in_subnet(inv, host, subnet_of)
    if not found:
        assert subnet_of.address is not None
        raise ScenarioError(f"{what}: host {host} has no address in "
                            f"{ipaddress.ip_interface(subnet_of.address).network} (the subnet of {subnet_of.name})")
    return found[0]


def sample_ifaces_for(inv: Inventory, hosts: Iterable[str], links: Iterable[str]) -> dict[str, list[str]]:
    """Each host's interfaces on the given links, and both ports of each link's bridge."""
    links = list(links)
    out: dict[str, list[str]] = {}
    for h in sorted(set(hosts)):
        ifs = [i.name for i in inv.hosts[h].interfaces if i.link in links]
        if ifs:
            out[h] = ifs
    for l in links:
        link = inv.links[l]
        ports = out.setdefault(link.bridge, [])
        ports += [p for p in (link.a_port, link.b_port) if p not in ports]
    return out
