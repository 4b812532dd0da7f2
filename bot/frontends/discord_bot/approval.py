"""DM approval over Discord: a private message with Approve / Deny buttons per tool call.

The tool host's ``ApprovalGate`` asks an ``Approver`` and bounds the wait; this one sends the
Dungeon Master who started the session a direct message naming the NPC, the tool and its
arguments, and returns when the DM presses a button. Only that DM's press counts. When the wait
ends without an answer (timeout, or the turn was cut off), the message is edited to say so and
its buttons are removed, so a late press cannot approve a call that no longer waits.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import discord

from tools.host.approval import ApprovalDecision, ApprovalRequest

__all__ = ["ApprovalView", "DiscordApprover", "describe_request"]

log = logging.getLogger(__name__)

#: Characters of the arguments shown (a Discord message holds 2000).
_MAX_ARGUMENTS = 1200


def describe_request(request: ApprovalRequest) -> str:
    """The DM's view of a call: who wants what, with which arguments, for how long."""
    arguments = json.dumps(dict(request.arguments), ensure_ascii=False, indent=2, default=str)
    if len(arguments) > _MAX_ARGUMENTS:
        arguments = arguments[:_MAX_ARGUMENTS] + "\n... (cut)"
    arguments = arguments.replace("```", "'''")  # keep the code block closed
    return (
        f"**{request.npc}** wants to use the tool `{request.tool}` (server `{request.server}`).\n"
        f"```json\n{arguments}\n```\n"
        f"Approve or deny within {request.timeout_s:g} s; no answer counts as a denial."
    )


class ApprovalView(discord.ui.View):
    """Two buttons; the first press by the DM decides, anyone else is told it is not theirs."""

    def __init__(self, dm_id: int, timeout_s: float) -> None:
        super().__init__(timeout=timeout_s + 5.0)  # the gate times out first
        self._dm_id = dm_id
        self.decided: asyncio.Future[tuple[bool, str]] = asyncio.get_running_loop().create_future()

    @discord.ui.button(label="Approve", style=discord.ButtonStyle.success)
    async def approve(
        self, interaction: discord.Interaction, button: discord.ui.Button[Any]
    ) -> None:
        await self._decide(interaction, True)

    @discord.ui.button(label="Deny", style=discord.ButtonStyle.danger)
    async def deny(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._decide(interaction, False)

    async def _decide(self, interaction: discord.Interaction, approved: bool) -> None:
        if interaction.user.id != self._dm_id:
            await interaction.response.send_message(
                "Only the DM who runs this session can decide.", ephemeral=True
            )
            return
        if self.decided.done():
            await interaction.response.send_message("Already decided.", ephemeral=True)
            return
        name = interaction.user.display_name
        self.decided.set_result((approved, name))
        self.stop()
        content = interaction.message.content if interaction.message is not None else ""
        verdict = "Approved" if approved else "Denied"
        await interaction.response.edit_message(
            content=f"{content}\n**{verdict}** by {name}.", view=None
        )


class DiscordApprover:
    """``Approver`` that asks ``dm`` (the user who ran ``/session start``) in a direct message."""

    def __init__(
        self,
        dm: discord.User | discord.Member,
        *,
        on_sent: Callable[[ApprovalRequest, discord.Message], None] | None = None,
    ) -> None:
        """``on_sent`` sees each question once Discord accepted it (its buttons are live)."""
        self._dm = dm
        self._on_sent = on_sent
        self._edits: set[asyncio.Task[Any]] = set()
        self._elsewhere: dict[int, ApprovalDecision] = {}

    def settled(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        """The DM answered somewhere else (the console) first: the message says so."""
        self._elsewhere[id(request)] = decision

    def __repr__(self) -> str:
        return f"DiscordApprover(dm={self._dm.id})"

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        view = ApprovalView(self._dm.id, request.timeout_s)
        message = await self._dm.send(describe_request(request), view=view)
        if self._on_sent is not None:
            self._on_sent(request, message)
        try:
            approved, by = await view.decided
        except asyncio.CancelledError:  # the gate's timeout, the turn was cut off, or the
            view.stop()  # DM answered in the console first
            elsewhere = self._elsewhere.pop(id(request), None)
            if elsewhere is not None:
                verdict = "Approved" if elsewhere.approved else "Denied"
                by = f" by {elsewhere.by}" if elsewhere.by else ""
                self._close(message, f"**{verdict}**{by} in the console.")
            else:
                self._close(message, "**No answer in time**: the call was not run.")
            raise
        return ApprovalDecision("approved" if approved else "denied", by=by)

    def _close(self, message: discord.Message, note: str) -> None:
        """Edit the unanswered message in the background (this task is being cancelled)."""

        async def edit() -> None:
            try:
                await message.edit(content=f"{message.content}\n{note}", view=None)
            except discord.HTTPException as error:
                log.warning("could not update the approval message: %s", error)

        task = asyncio.get_running_loop().create_task(edit(), name="approval-message-edit")
        self._edits.add(task)
        task.add_done_callback(self._edits.discard)

    async def aclose(self) -> None:
        """Wait for pending message edits (session stop)."""
        await asyncio.gather(*self._edits, return_exceptions=True)
