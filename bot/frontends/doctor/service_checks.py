"""Doctor checks of the configuration and the services a table needs: config and campaign
valid, the LLM answering a chat and a tool call, memory opening, migrating and taking a write,
the built-in tools and every configured MCP server listing tools, and the Discord token's form."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from bot.frontends.doctor.runner import Check, DoctorContext, Problem, Skip, config_label

__all__ = [
    "check_campaign",
    "check_config",
    "check_discord_api",
    "check_discord_token",
    "check_llm",
    "check_memory",
    "check_tools",
    "mcp_checks",
]

_SETUP = "glyphoxa discord setup"

_ROLL = {
    "type": "function",
    "function": {
        "name": "roll",
        "description": "Roll dice written like 1d20+2.",
        "parameters": {"type": "object", "properties": {"dice": {"type": "string"}},
                       "required": ["dice"]},
    },
}  # fmt: skip


async def check_config(context: DoctorContext) -> str:
    from bot.settings.loader import check_config as load

    loaded = load(context.config_path)
    if loaded.issues:
        context.config_ok = False
        first = str(loaded.issues[0])
        more = f" (and {len(loaded.issues) - 1} more)" if len(loaded.issues) > 1 else ""
        raise Problem(f"{first}{more}", "fix the file; glyphoxa check lists every problem")
    if loaded.value is not None:
        context.config = loaded.value
    if context.campaign_dir:
        context.config.campaign.path = context.campaign_dir
    exists = loaded.document is not None
    return f"{loaded.path if exists else config_label(None)} is valid"


async def check_campaign(context: DoctorContext) -> str:
    from bot.frontends.checking import run_check

    report = await asyncio.to_thread(
        run_check, context.campaign_dir, config_path=context.config_path
    )
    context.campaign = report.campaign
    problems = [i for i in report.issues if not str(i).startswith(str(report.config_path))]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise Problem(f"{problems[0]}{more}", "fix the file; glyphoxa check lists every problem")
    campaign = report.campaign
    if campaign is None:
        raise Problem("no campaign loaded", "check campaign.path")
    context.warnings.extend(str(warning) for warning in report.warnings)
    count = len(report.warnings)
    warned = f"; {count} warning{'s' if count != 1 else ''} (on stderr)" if count else ""
    npcs = ", ".join(sorted(campaign.npcs))
    return f"{campaign.name}: {len(campaign.npcs)} NPCs ({npcs}){warned}"


async def check_llm(context: DoctorContext) -> str:
    """The configured LLM answers a chat and a forced tool call (the bundled server is probed
    in a child process first, so a build this CPU cannot run is named, not suffered)."""
    from bot.table.assembly.providers import local_llm_server
    from campaigns.basics import GlyphoxaError
    from campaigns.providers.openai_client import openai_client
    from npcs.engines.chat_wire import create_chat

    llm = context.config.providers.llm
    async with contextlib.AsyncExitStack() as stack:
        if llm.name == "local" and llm.base_url is None:
            server = local_llm_server(llm)
            from npcs.inference.probe import probe_llama_cpp
            from npcs.inference.server import find_smollm2_gguf, llama_cpp_available

            if not llama_cpp_available():
                raise Problem("llama-cpp-python is not installed", "run ./scripts/setup")
            try:
                model_path = server.model_path or find_smollm2_gguf()
            except GlyphoxaError as error:
                raise Problem(str(error), "run ./scripts/setup") from None
            if not model_path.is_file():
                raise Problem(f"LLM model file not found: {model_path}",
                              "fix providers.llm.options.model_path") from None  # fmt: skip
            probe = await asyncio.to_thread(probe_llama_cpp, model_path)
            if not probe.ok:
                raise Problem(probe.line.removesuffix(f": {probe.fix}"), probe.fix)
            await stack.enter_async_context(server)
            base_url: str | None = server.base_url
            model, key = server.model_id or "local", None
            where = f"bundled llama.cpp ({model_path.name})"
        else:
            base_url = llm.base_url
            model, key = llm.model or "gpt-4o-mini", llm.api_key
            where = f"{llm.name} at {base_url or 'api.openai.com'} ({model})"
        client = openai_client(key, base_url, timeout_s=30.0, max_retries=0)
        stack.push_async_callback(client.close)
        messages = [{"role": "user", "content": "Greet the traveller in five words."}]
        try:
            chat = await create_chat(client, model=model, messages=messages, max_tokens=16)
            call = await create_chat(
                client, model=model, max_tokens=48, tools=[_ROLL],
                messages=[{"role": "user", "content": "Roll 1d20 for me."}],
                tool_choice={"type": "function", "function": {"name": "roll"}},
            )  # fmt: skip
        except GlyphoxaError as error:
            message, _, fix = str(error).rpartition(": ")
            raise Problem(message or str(error), fix or "run glyphoxa doctor -v") from None
    if not chat.choices:
        raise Problem(f"{where} returned no answer to a chat", "check providers.llm.model")
    calls = (call.choices[0].message.tool_calls or []) if call.choices else []
    if not calls or calls[0].function.name != "roll":
        raise Problem(f"{where} answered a forced tool call without calling the tool",
                      "use a model with tool calling")  # fmt: skip
    try:
        json.loads(calls[0].function.arguments or "{}")
    except json.JSONDecodeError:
        raise Problem(f"{where} wrote tool arguments that are not JSON",
                      "use a model with tool calling") from None  # fmt: skip
    return f"{where}: answered a chat and called a tool"


async def check_memory(context: DoctorContext) -> str:
    from bot.table.assembly.memory import open_memory

    try:
        store = await open_memory(context.config, summarize=False)
    except Exception as error:
        raise Problem(f"campaign memory did not open: {error}",
                      "check memory.url and that the database server runs") from None  # fmt: skip
    try:
        await store.check_writable()
    except Exception as error:
        raise Problem(f"campaign memory refuses writes: {error}",
                      "check the database file's permissions and free disk") from None  # fmt: skip
    finally:
        await store.close()
    return f"{store.dialect}: opened, schema current, a write was accepted (and rolled back)"


async def check_tools(context: DoctorContext) -> str:
    """The built-in tool servers the campaign's NPCs use start and list their tools."""
    from bot.table.assembly.table import builtin_servers_for
    from campaigns.memory import MemoryStore
    from tools.builtin import build_tool_context, create_builtin_servers
    from tools.host import ToolHost

    if context.campaign is None:
        raise Skip("no campaign loaded")
    names = builtin_servers_for(context.campaign.npcs.values(), context.config)
    memory = await MemoryStore.open("sqlite+aiosqlite://")  # a scratch store, not the campaign's
    try:
        tool_context = build_tool_context(
            context.config.tools, campaign_dir=Path(context.campaign.path), memory=memory
        )
        host = ToolHost(builtins=create_builtin_servers(tool_context, names), autosave_s=0)
        async with host:
            failed = {n: s["last_error"] for n, s in host.server_states().items()
                      if s["state"] != "up"}  # fmt: skip
            count = len(host.list_tools())
    finally:
        await memory.close()
    if failed:
        name, error = next(iter(failed.items()))
        raise Problem(f"built-in tool server {name} did not start: {error}", "see the message")
    return f"{count} tools from {', '.join(names) or 'no built-in servers'}"


def mcp_checks(context: DoctorContext) -> list[Check]:
    """One check per enabled MCP server of the configuration."""
    servers = [s for s in context.config.mcp.servers if s.enabled]
    return [
        Check(f"mcp:{server.name}", _mcp_check(server), timeout_s=server.connect_timeout_s + 15)
        for server in servers
    ]


def _mcp_check(server: Any):  # type: ignore[no-untyped-def]
    async def check(context: DoctorContext) -> str:
        from tools.config import McpConfig
        from tools.host import ToolHost

        async with ToolHost(McpConfig(servers=[server]), autosave_s=0) as host:
            state = host.server_states()[server.name]
            tools = [t for t in host.list_tools() if t.server == server.name]
        if state["state"] != "up":
            raise Problem(f"MCP server {server.name} ({server.transport}) is {state['state']}: "
                          f"{state['last_error']}", _mcp_fix(server))  # fmt: skip
        return f"{server.transport}: connected, {len(tools)} tools"

    return check


def _mcp_fix(server: Any) -> str:
    if server.transport == "stdio":
        return "check mcp.servers[].command runs on its own"
    return "check mcp.servers[].url, the server, and its auth"


async def check_discord_token(context: DoctorContext) -> str:
    """Set and shaped like a bot token, with the same words as ``glyphoxa discord setup``
    (offline: ``--online`` adds a check that asks Discord)."""
    from bot.frontends.discord_setup.guide import guild_summary, token_summary
    from bot.frontends.discord_setup.token import TokenProblem, read_bot_token

    try:
        token = read_bot_token(context.config)
    except TokenProblem as problem:
        if problem.missing and not context.discord:
            raise Skip(
                "not set; only glyphoxa run needs it (glyphoxa doctor --discord checks it)"
            ) from None
        fix = problem.fix if _SETUP in problem.fix else f"{problem.fix}; {_SETUP} shows every step"
        raise Problem(str(problem), fix) from None
    asked = "asked below" if context.online else "not asked: add --online"
    guilds = guild_summary(context.config.discord.guild_ids)
    return f"{token_summary(token)}; {guilds} (Discord {asked})"


async def check_discord_api(context: DoctorContext) -> str:
    """Discord accepts the token; the application, servers and transcript channel are ready."""
    from bot.frontends.discord_setup.online import OnlineProblem, ask_discord
    from bot.frontends.discord_setup.token import TokenProblem, read_bot_token

    try:
        token = read_bot_token(context.config)
    except TokenProblem:
        raise Skip("no well-formed token to ask Discord with (see discord-token)") from None
    settings = context.config.discord
    try:
        return await ask_discord(token, settings.guild_ids, settings.transcript_channel_id)
    except OnlineProblem as problem:
        raise Problem(str(problem), problem.fix) from None
