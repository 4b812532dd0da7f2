"""Campaign folders as the NPC layer reads them: a campaign's NPCs together with its content.

What it holds: :mod:`~npcs.campaign.loader` (``load_campaign``, ``scan_campaign``: one pass
over ``campaign.yaml``, ``npcs/``, ``entities.yaml``, ``tables/`` and ``ambience/``, every
problem with its file and line), :mod:`~npcs.campaign.model` (the ``Campaign`` record),
:mod:`~npcs.campaign.checks` (cross-file checks: duplicate names, voices, tool names) and
:mod:`~npcs.campaign.watch` (hot reload of NPC files).

Why here and not in ``campaigns``: a campaign is loaded as NPCs (``npcs.schema``) plus content,
and ``campaigns`` is the layer below ``npcs``. The content models that need no NPC
(``CampaignMeta``, ``EntitiesFile``, ``RandomTable``) and the YAML machinery already live in
``campaigns``; this room only joins them with the NPCs.
"""

from __future__ import annotations

from npcs.campaign.loader import load_campaign, scan_campaign
from npcs.campaign.model import AUDIO_SUFFIXES, YAML_SUFFIXES, Campaign, CampaignScan, npc_files
from npcs.campaign.watch import CampaignWatcher, NpcChange

__all__ = [
    "AUDIO_SUFFIXES",
    "YAML_SUFFIXES",
    "Campaign",
    "CampaignScan",
    "CampaignWatcher",
    "NpcChange",
    "load_campaign",
    "npc_files",
    "scan_campaign",
]
