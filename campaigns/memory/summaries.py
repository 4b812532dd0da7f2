"""Session summaries: through an OpenAI-compatible chat endpoint, or extractively without one.

The extractive fallback is deterministic (same transcript, same summary) so a session always gets
a summary, even offline or when the LLM fails.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from campaigns.memory.usage_records import UsageReport

__all__ = ["ExtractiveSummarizer", "LlmSummarizer", "Summarizer", "TranscriptLine"]

log = logging.getLogger(__name__)

#: ``(speaker, text)`` in the order spoken.
TranscriptLine = tuple[str, str]

_PROMPT = (
    "You keep the chronicle of a tabletop role-playing campaign. Summarise this session's "
    "transcript in at most 6 short sentences for the players' recap next time: who they met, "
    "what they learned, decisions, open threads. Plain prose, no preamble."
)
_WORD = re.compile(r"[^\W_]+")
_COMMON = frozenset(
    """the a an and or but to of in on at for with is are was were be been it its this that
    i you he she we they me my your our their what who how why where when do does did not no
    yes so just have has had will would can could there here then than as by from about""".split()
)


@runtime_checkable
class Summarizer(Protocol):
    source: str
    """Stored beside the summary: ``llm`` or ``extractive``."""

    async def summarize(self, lines: Sequence[TranscriptLine]) -> str: ...


class ExtractiveSummarizer:
    """Picks the most informative lines (by frequency of content words), kept in spoken order."""

    source = "extractive"

    def __init__(self, max_lines: int = 5) -> None:
        self.max_lines = max_lines

    async def summarize(self, lines: Sequence[TranscriptLine]) -> str:
        return self.summarize_sync(lines)

    def summarize_sync(self, lines: Sequence[TranscriptLine]) -> str:
        if not lines:
            return "Nothing was said in this session."
        words = [
            [w for w in _WORD.findall(text.lower()) if w not in _COMMON and len(w) > 2]
            for _, text in lines
        ]
        frequency = Counter(w for line in words for w in set(line))
        scored = []
        for index, line_words in enumerate(words):
            if not line_words:
                continue
            score = sum(frequency[w] for w in set(line_words)) / (len(set(line_words)) ** 0.5)
            scored.append((score, -index, index))
        best = sorted(index for _, _, index in sorted(scored, reverse=True)[: self.max_lines])
        speakers = list(dict.fromkeys(speaker for speaker, _ in lines))
        shown = ", ".join(speakers[:8]) + (" and others" if len(speakers) > 8 else "")
        body = " ".join(f"{lines[i][0]}: {lines[i][1].strip()}" for i in best)
        return f"{len(lines)} lines spoken by {shown}. Key moments: {body}"


class LlmSummarizer:
    """Summary by a chat model; ``client`` is an ``AsyncOpenAI`` pointed at any compatible API."""

    source = "llm"

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        max_transcript_chars: int = 12_000,
        max_tokens: int = 300,
        owns_client: bool = False,
    ) -> None:
        self._client = client
        self._owns_client = owns_client
        self.model = model
        self.max_transcript_chars = max_transcript_chars
        self.max_tokens = max_tokens
        self.on_usage: UsageReport | None = None
        """Told each summary's tokens (the table's spend meter)."""

    def __repr__(self) -> str:
        return f"LlmSummarizer(model={self.model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()

    async def summarize(self, lines: Sequence[TranscriptLine]) -> str:
        transcript = "\n".join(f"{speaker}: {text}" for speaker, text in lines)
        if len(transcript) > self.max_transcript_chars:
            # The end of a session carries the open threads; keep it.
            transcript = "...\n" + transcript[-self.max_transcript_chars :]
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": _PROMPT},
                {"role": "user", "content": transcript or "(silence)"},
            ],
            max_tokens=self.max_tokens,
            temperature=0.2,
        )
        content = (response.choices[0].message.content or "").strip()
        if self.on_usage is not None:
            reported = response.usage
            if reported is not None:
                self.on_usage(reported.prompt_tokens, reported.completion_tokens, False)
            else:  # a server that reports no usage: about four characters a token
                self.on_usage((len(_PROMPT) + len(transcript)) // 4, len(content) // 4, True)
        if not content:
            raise ValueError("the LLM returned an empty summary")
        return content
