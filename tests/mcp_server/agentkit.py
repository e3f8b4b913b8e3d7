"""An agent's two moves through a real MCP client, for the full-stack tool tests: call a tool
(its reply checked against the tool's output schema here, as the SDK's client does too) and
call a mutating tool and follow its operation with wait_operation to its end."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client


class Agent:
    def __init__(self, client: Client, tools: dict[str, Any]) -> None:
        self.client = client
        self.tools = tools

    @classmethod
    async def of(cls, client: Client) -> Agent:
        return cls(client, {t.name: t for t in (await client.list_tools()).tools})

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(name, args)
        assert not result.is_error, (name, result.content[0].text)
        schema = self.tools[name].output_schema
        if schema:
            errors = list(Draft202012Validator(schema).iter_errors(result.structured_content))
            assert not errors, (name, [e.message for e in errors])
        return result.structured_content

    async def done(self, name: str, args: dict[str, Any]) -> None:
        reply = await self.call(name, args)
        assert reply["status_tool"] == "wait_operation"
        while True:
            waited = await self.call("wait_operation", {**reply["status_args"],
                                                        "timeout_seconds": 20})
            if waited["terminal"]:
                assert waited["status"] == "succeeded", waited
                return
