"""What an NPC's LLM sees: persona, rules, knowledge, guarded secrets, the shared scene and facts.

Every NPC at the table hears the same scene transcript, so Greymantle knows what Bartok just
said. The prompt is kept compact because the local model has a 2048-token context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from npcs.schema import CascadeSettings, NpcDefinition

__all__ = [
    "CONTINUE_INSTRUCTION",
    "MAX_SCENE_CHARS",
    "SceneLine",
    "SceneWindow",
    "build_messages",
    "build_system_prompt",
    "direction_note",
    "mood_note",
    "nothing_recalled_note",
    "prompt_wording",
    "reaction_instruction",
    "recall_note",
    "render_scene",
    "roll_failed_note",
    "roll_note",
]

#: What a model continuing words already spoken (the sentence cascade's opener) is told.
CONTINUE_INSTRUCTION = (
    "Continue speaking right after your last words above, as the same reply. "
    "Do not repeat what you already said."
)

#: Most recent scene lines included in a prompt; older ones are campaign memory's job.
MAX_SCENE_LINES = 12
MAX_SCENE_CHARS = 1500


#: The scene window starts only at lines whose ``seq`` is a multiple of this, so it stays put
#: while lines are added and the prompt keeps its prefix (KV reuse) for several turns.
SCENE_WINDOW_STEP = 4


@dataclass(frozen=True, slots=True)
class SceneLine:
    """One thing said at the table: by a player (``npc`` None) or by an NPC.

    ``seq`` numbers the lines of a session (the table session sets it); 0 everywhere means
    unnumbered, and the window then simply slides.
    """

    speaker: str
    text: str
    npc: str | None = None
    at: float = 0.0
    seq: int = 0


class SceneWindow:
    """Where a table's prompts begin their scene transcript: put until the scene outgrows it.

    ``render_scene`` alone keeps the last ``max_chars``; once the scene is that long, every turn
    (a player's line and an NPC's, often 300+ characters together) moved the window's start,
    the prompt lost its cached prefix from there, and the bundled server evaluated ~330 tokens
    again: 0.5-0.9 s of its one thread, logged on every FAST bench turn after the sixth. This
    window stays at one line while lines are added; when the lines from it outgrow
    ``max_chars`` or ``max_lines``, or an NPC's answer leaves no room for the player's next
    line, it moves far, to keep at most a third of each, so the next few turns only add to the
    prompt. Moving with the answer lets the reply's prefill prepare the new window while the
    NPC speaks; moving with the player's line left it to the turn itself (logged: 868 ms to
    the first token). Lines are identified by ``seq``; unnumbered ones (all 0) leave
    ``render_scene``'s own limits in charge.
    """

    def __init__(self, max_chars: int = MAX_SCENE_CHARS, max_lines: int = MAX_SCENE_LINES):
        self.max_chars = max_chars
        self.max_lines = max_lines
        self.start = 0
        """``seq`` of the first line shown."""

    def shown(self, scene: Sequence[SceneLine]) -> list[SceneLine]:
        """The lines of ``scene`` the window shows (where it would start after them)."""
        start = self._start_after(scene)
        return [line for line in scene if line.seq >= start]

    def advance(self, scene: Sequence[SceneLine]) -> None:
        """Move the window for the table's scene, now that a line was added."""
        self.start = self._start_after(scene)

    def _start_after(self, scene: Sequence[SceneLine]) -> int:
        lines = [line for line in scene if line.seq >= self.start]
        answered = bool(lines) and lines[-1].npc is not None  # a player's line comes next
        room, slot = (_NEXT_LINE_CHARS, 1) if answered else (0, 0)
        if _chars(lines) + room <= self.max_chars and len(lines) + slot <= self.max_lines:
            return self.start
        kept = 1  # at least the last line
        while (
            kept < len(lines)
            and kept + 1 <= self.max_lines // _KEEP
            and _chars(lines[-kept - 1 :]) <= self.max_chars // _KEEP
        ):
            kept += 1
        return lines[-kept].seq


_KEEP = 3
"""A moved window keeps at most a third of its limits: room for three to five more turns."""
_NEXT_LINE_CHARS = 200
"""Room the window keeps for a player's next line (most are under 100 characters)."""


def _chars(lines: Sequence[SceneLine]) -> int:
    """An upper bound of the lines' length as ``render_scene`` writes them."""
    return sum(len(line.text.strip()) + len(line.npc or line.speaker) + 16 for line in lines)


def render_scene(
    scene: Sequence[SceneLine], npc_name: str, *, max_chars: int = MAX_SCENE_CHARS
) -> str:
    """The last lines of the scene, oldest first, the NPC's own lines marked "(you)".

    At most ``MAX_SCENE_LINES`` lines and ``max_chars`` characters (at least the last line);
    when older lines must go, the first line shown is the oldest of those whose ``seq`` is a
    multiple of ``SCENE_WINDOW_STEP``, so the window moves in steps rather than with every new
    line. A scene that fits is shown whole (the lines a ``SceneWindow`` chose).
    """
    lines: list[tuple[int, str]] = []
    total = 0
    for line in reversed(scene[-MAX_SCENE_LINES:]):
        who = f"{line.npc} (you)" if line.npc == npc_name else (line.npc or line.speaker)
        # 'Arin said: "..."' rather than a script's 'Arin: ...': small models continue a script
        # with the next speaker's line far more often than reported speech
        rendered = f'{who} said: "{line.text.strip()}"'
        total += len(rendered)
        if total > max_chars and lines:
            break
        lines.append((line.seq, rendered))
    lines.reverse()
    if len(lines) == len(scene):
        return "\n".join(text for _, text in lines)  # all of it fits (a SceneWindow's lines)
    start = next((i for i, (seq, _) in enumerate(lines) if seq % SCENE_WINDOW_STEP == 0), 0)
    return "\n".join(text for _, text in lines[start:])


def build_system_prompt(
    npc: NpcDefinition,
    *,
    scene: Sequence[SceneLine] = (),
    entity_snapshot: str | None = None,
    has_tools: bool = False,
) -> str:
    """The system prompt for one turn of ``npc``."""
    parts = [
        f"You are {npc.name}, a character in a tabletop role-playing game, speaking out loud to "
        "the players at the table. Stay in character. Answer in one to three short spoken "
        "sentences without lists, markdown or stage directions.",
        f"Who you are: {npc.personality.strip()}",
    ]
    if npc.aliases:
        parts.append(f"People also call you: {', '.join(npc.aliases)}.")
    if npc.behavior_rules:
        parts.append("Rules you follow:\n" + "\n".join(f"- {r}" for r in npc.behavior_rules))
    if npc.example_lines:
        parts.append(
            "How you talk (lines you might say):\n"
            + "\n".join(f"- {line}" for line in npc.example_lines)
        )
    if npc.knowledge_scope:
        parts.append(
            "You know about: "
            + "; ".join(npc.knowledge_scope)
            + ". Outside that, say you do not know rather than invent facts."
        )
    if npc.secret_knowledge:
        parts.append(
            "Secrets you keep (never reveal or hint at them unless your rules above allow it; "
            "deflect in character if asked):\n" + "\n".join(f"- {s}" for s in npc.secret_knowledge)
        )
    if has_tools:
        parts.append(
            "You may use your tools to look things up or roll dice; speak the result in character."
        )
    if entity_snapshot:
        parts.append(f"Facts from the campaign notes:\n{entity_snapshot.strip()}")
    transcript = render_scene(scene, npc.name)
    if transcript:
        parts.append(f"What was just said at the table (oldest first):\n{transcript}")
    return "\n\n".join(parts)


def direction_note(direction: str) -> str:
    """How the DM's private direction reads in a turn's prompt (``TurnRequest.direction``)."""
    return (
        "A private direction from the game master for this answer (follow it in character; "
        f"never mention or quote it): {direction.strip()}"
    )


def build_messages(
    npc: NpcDefinition,
    speaker: str,
    text: str,
    *,
    scene: Sequence[SceneLine] = (),
    entity_snapshot: str | None = None,
    has_tools: bool = False,
    scene_chars: int = MAX_SCENE_CHARS,
    direction: str | None = None,
    reacting_to: str | None = None,
    notes: str = "",
) -> list[dict[str, Any]]:
    """Chat Completions messages for one turn: the stable system prompt, then one user message
    with what changes every turn (the scene, campaign facts, the player's words; at most
    ``scene_chars`` of scene, at least its last line).

    The system prompt depends only on the NPC (and whether it has tools), so a server that
    keeps the KV cache of a prompt prefix (llama.cpp; OpenAI's prompt caching) evaluates the
    persona, rules and tool descriptions once per NPC instead of on every turn: the bundled
    server renders the tool descriptions at the end of the system message.

    ``reacting_to``: the turn is a reaction to what that NPC just said (``text``, which named
    this NPC), not an answer to ``speaker``. ``notes``: what the table did before the model
    speaks (a roll, what the NPC recalls; ``npcs.engines.table_actions``).
    """
    if scene and scene[-1].npc is None and scene[-1].text.strip() == text.strip():
        scene = scene[:-1]  # the current line may already be in the transcript
    system = build_system_prompt(npc, has_tools=has_tools)
    parts: list[str] = []
    # Scene first, facts after it: the facts follow the player's words, the scene grows line by
    # line, so this order keeps the longest prefix shared with the previous turn (KV reuse).
    transcript = render_scene(scene, npc.name, max_chars=scene_chars)
    if transcript:
        parts.append(f"What was just said at the table (oldest first):\n{transcript}")
    if entity_snapshot and entity_snapshot.strip():
        parts.append(f"Facts from the campaign notes:\n{entity_snapshot.strip()}")
    if notes.strip():
        parts.append(notes.strip())
    if direction and direction.strip():
        parts.append(direction_note(direction))
    # The instruction before the player's words, not after: then the prompt prefilled on a
    # partial is this one cut where the words go on, and the turn evaluates only the new words
    # and the template's tail. Small models need the instruction: without it they answer as
    # another speaker far more often, and it works best here, before the words.
    parts.append(_instruction(npc.name, speaker, text, reacting_to))
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def reaction_instruction(npc_name: str, reacting_to: str, text: str) -> str:
    """What an NPC named in another NPC's answer is asked: one short reaction to it."""
    return (
        f"{reacting_to} just said this at the table, naming you. React as {npc_name} in one "
        f"short spoken sentence: {text.strip()}"
    ).rstrip()


def _instruction(npc_name: str, speaker: str, text: str, reacting_to: str | None) -> str:
    if reacting_to:
        return reaction_instruction(npc_name, reacting_to, text)
    return f"Answer as {npc_name}. {speaker} says to you: {text.strip()}".rstrip()


def mood_note(mood: str) -> str:
    """What an NPC is told of the mood the DM set for it (``bot.table.session.seats``)."""
    return f"Your mood right now: {mood}; let it color what you say."


def recall_note(facts: Sequence[str]) -> str:
    """What an NPC is told it recalls: the campaign memory the table searched before it spoke
    (``npcs.engines.table_actions``)."""
    return "What you recall about this (say it in your own words):\n" + "\n".join(
        f"- {fact}" for fact in facts
    )


def nothing_recalled_note() -> str:
    """What an NPC is told when the table's search of memory found nothing."""
    return "You searched your memory and found nothing about this; say so in character."


def roll_note(expression: str, purpose: str, speaker: str, total: int, *, said: bool = True) -> str:
    """What an NPC is told of the roll the table made for a player: it opened with the total
    (``said``), or must say it (a speech-to-speech model speaks every word itself)."""
    what = f"{expression} for {purpose}" if purpose else expression
    if not said:
        return (
            f"You just rolled {what} for {speaker}: the result is {total}. Say the number in "
            "one short line in character; do not roll again."
        )
    return (
        f"You just rolled {what} for {speaker} and said the result, {total}. Add one short line "
        "in character about it; do not roll again and do not name another number."
    )


def roll_failed_note(expression: str, speaker: str, why: str) -> str:
    """What an NPC is told when the roll the table tried for a player did not happen (the DM
    refused it, or the dice failed): it must not invent a number."""
    return (
        f"{speaker} asked you to roll {expression}, but the roll did not happen ({why}). Say so "
        "in one short line in character; do not name a number."
    )


_MARK = "qqmark"


def prompt_wording() -> tuple[str, ...]:
    """Every text Glyphoxa itself writes into a prompt, with the DM's text, the scene and the
    player's words left out: a spoken line repeating a run of it is the prompt leaking into
    speech (``npcs.clean_speech``)."""
    npc = NpcDefinition(
        name=_MARK,
        aliases=[_MARK],
        personality=_MARK,
        knowledge_scope=[_MARK],
        secret_knowledge=[_MARK],
        behavior_rules=[_MARK],
        example_lines=[_MARK],
    )
    texts = [build_system_prompt(npc, has_tools=True)]
    messages = build_messages(
        npc, _MARK, _MARK, entity_snapshot=_MARK, direction=_MARK, notes=_MARK, has_tools=True
    )
    texts += [str(message["content"]) for message in messages]
    texts += [
        reaction_instruction(_MARK, _MARK, _MARK),
        recall_note([_MARK]),
        mood_note(_MARK),
        nothing_recalled_note(),
        roll_note(_MARK, _MARK, _MARK, 0),
        roll_note(_MARK, _MARK, _MARK, 0, said=False),
        roll_failed_note(_MARK, _MARK, _MARK),
        CONTINUE_INSTRUCTION,
        CascadeSettings().opener_instruction,
    ]
    return tuple(text.replace(_MARK, "\n") for text in texts)
