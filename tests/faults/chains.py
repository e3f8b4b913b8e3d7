"""The campaign's chains: every operation kind of tasks/kinds.py in at least one, each chain
leaving the world as it found it so that its rounds are alike."""

from __future__ import annotations

from tests.faults.campaign import Act, Chain, Request

NETWORK = Chain(
    "network",
    acts=(
        Act("network.create", lambda n: Request("POST", "/api/v1/networks",
                                                {"name": n["network"]})),
        Act("network.delete", lambda n: Request("DELETE", f"/api/v1/networks/{n['network']}")),
    ),
    names=lambda token: {"network": f"fn-{token}"},
)
