"""Who may act as the Dungeon Master: the rule, its description and its refusal, in words.

The configured DM role (``discord.dm_role``, a role name or id) always counts; the server owner
and members with Manage Server count too unless ``discord.dm_admins`` is false, so the person
who set the server up is never locked out of their own table. Slash commands, autocomplete and
DM voice commands all ask :meth:`DmRule.allows`; ``glyphoxa discord setup`` prints
:meth:`DmRule.describe` and a refused player reads :meth:`DmRule.refusal`, which names the role
and the key that sets it. Nothing here imports discord: the adapters are in
``bot.frontends.discord_bot.permissions``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings.config import DiscordConfig

__all__ = ["DmRule"]

_ROLE_KEY = "discord.dm_role in glyphoxa.yaml"


@dataclass(frozen=True, slots=True)
class DmRule:
    role: str | None
    """The DM role's name (any case) or id; None or blank: no role."""
    admins: bool = True
    """The server owner and members with Manage Server count as DM too."""

    @classmethod
    def from_config(cls, settings: DiscordConfig) -> DmRule:
        role = (settings.dm_role or "").strip() or None
        return cls(role, settings.dm_admins)

    def allows(self, *, roles: Iterable[tuple[int, str]], owner: bool, manage_guild: bool) -> bool:
        """Whether a member with ``roles`` (id, name) may act as the DM.

        Args:
            roles: the member's roles.
            owner: the member owns the server.
            manage_guild: the member has Manage Server (Administrator includes it).
        """
        if self.admins and (owner or manage_guild):
            return True
        if self.role is None:
            return False
        wanted = self.role.lower()
        return any(name.lower() == wanted or str(role_id) == wanted for role_id, name in roles)

    def describe(self) -> str:
        """Who counts as DM, with the keys that say so (for setup and the docs)."""
        admins = "the server owner and members with Manage Server"
        if self.role and self.admins:
            return (
                f'members with the role "{self.role}" (discord.dm_role), and {admins} '
                "(discord.dm_admins: true)"
            )
        if self.role:
            return (
                f'only members with the role "{self.role}" (discord.dm_role; discord.dm_admins '
                "is false, so Manage Server does not count)"
            )
        if self.admins:
            return f"{admins} (discord.dm_admins: true; no discord.dm_role is set)"
        return "nobody (discord.dm_role is empty and discord.dm_admins is false)"

    def refusal(self, role_label: str | None = None) -> str:
        """The polite, private answer to someone who is not the DM.

        Args:
            role_label: how to name the role (its name when ``role`` is an id); default
                ``role`` as configured.
        """
        lead = "Sorry, only the Dungeon Master can do that: you need"
        label = role_label or self.role
        if self.role and self.admins:
            return f'{lead} the role "{label}" (set by {_ROLE_KEY}) or Manage Server.'
        if self.role:
            return (
                f'{lead} the role "{label}" (set by {_ROLE_KEY}; discord.dm_admins is false, '
                "so Manage Server does not count)."
            )
        if self.admins:
            return f"{lead} Manage Server (or a DM role, set by {_ROLE_KEY})."
        return (
            "Sorry, nobody may steer this table: set discord.dm_role or discord.dm_admins in "
            "glyphoxa.yaml."
        )
