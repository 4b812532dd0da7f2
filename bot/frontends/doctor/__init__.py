"""``glyphoxa doctor``: every part the configured table needs, each checked by running it.

One line per check with its time and, for a failure, its fix; exit code 0 only when every
check passed. See :func:`diagnose`.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.frontends.doctor.runner import Check, DoctorContext, Outcome, run_checks
from bot.frontends.doctor.scaling_checks import check_tables
from bot.frontends.doctor.service_checks import (
    check_campaign,
    check_config,
    check_discord_api,
    check_discord_token,
    check_llm,
    check_memory,
    check_tools,
    mcp_checks,
)
from bot.frontends.doctor.speech_checks import (
    check_espeak,
    check_opus,
    check_stt,
    check_vad,
    check_voices,
)
from bot.frontends.doctor.turn_check import check_turn

__all__ = ["CHECK_NAMES", "diagnose"]

#: In order: later checks use what earlier ones found (config, campaign, synthesized audio).
_CHECKS = (
    Check("config", check_config),
    Check("campaign", check_campaign),
    Check("opus", check_opus),
    Check("espeak", check_espeak),
    Check("voices", check_voices),
    Check("vad", check_vad),
    Check("stt", check_stt),
    Check("turn", check_turn),
    Check("llm", check_llm, timeout_s=150.0),
    Check("memory", check_memory),
    Check("tables", check_tables),
    Check("tools", check_tools),
    Check("discord-token", check_discord_token),
)
_ONLINE = Check("discord-api", check_discord_api, timeout_s=30.0)
CHECK_NAMES = (*(check.name for check in _CHECKS), "mcp", _ONLINE.name)


async def diagnose(
    config_path: str | None,
    *,
    only: set[str] | None = None,
    discord: bool = False,
    online: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
    campaign: str | None = None,
) -> list[Outcome]:
    """Run the checks (``only``: those names, plus the config and campaign they build on).

    ``discord``: the bot is about to run, so a missing token fails. ``online`` (implies
    ``discord``): also ask Discord's API (the ``discord-api`` check, after the token's).
    ``campaign``: this folder instead of the config's ``campaign.path``.
    """
    context = DoctorContext(
        config_path, discord=discord or online, online=online, campaign_dir=campaign
    )
    wanted = None if only is None else only | {"config", "campaign"}
    if wanted is not None and wanted & {"vad", "stt", "turn"}:
        wanted.add("voices")  # they listen to the voices' audio
    checks = [c for c in _CHECKS if wanted is None or c.name in wanted]
    outcomes = await run_checks(checks[:2], context, on_outcome)
    if wanted is None or "mcp" in wanted:
        checks += mcp_checks(context)
    if online and (wanted is None or _ONLINE.name in wanted):
        checks.append(_ONLINE)
    return outcomes + await run_checks(checks[2:], context, on_outcome)
