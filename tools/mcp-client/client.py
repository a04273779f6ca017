# A real MCP client for tests/it/mcp.rs: the official Python SDK's ClientSession over its stdio
# transport (`mcp`, pinned in requirements.txt). It starts the server command, lists the tools,
# makes each call of CALLS.json (`[{"name": ..., "arguments": {...}}, ...]`) in order and prints
# one JSON transcript on stdout, the same shape as client.mjs prints:
# {server, tools, calls: [{name, result} | {name, error: {code, message}}]}. The test asserts on
# the transcript; this script decides nothing.
#
# usage: python client.py CALLS.json COMMAND [ARG...]
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main(calls_file, command, args):
    with open(calls_file, encoding="utf-8") as f:
        calls = json.load(f)
    # The whole environment (the SDK passes a safe subset by default): the test's XDG_STATE_HOME.
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = dump(await session.initialize())
            out = {
                "server": init.get("serverInfo"),
                "tools": dump(await session.list_tools())["tools"],
                "calls": [],
            }
            for c in calls:
                try:
                    result = await session.call_tool(c["name"], c.get("arguments"))
                    out["calls"].append({"name": c["name"], "result": dump(result)})
                except Exception as e:  # a protocol error: recorded, the test decides
                    code = getattr(getattr(e, "error", None), "code", None)
                    out["calls"].append(
                        {"name": c["name"], "error": {"code": code, "message": str(e)}}
                    )
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write("usage: python client.py CALLS.json COMMAND [ARG...]\n")
        sys.exit(2)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
