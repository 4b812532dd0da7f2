"""A tiny real peer for the bench's tests: a process speaking the line protocol
(bot/bench/line_protocol.py) with the standard library only, as a peer in its own virtualenv
would. It reads each line's WAV, answers after a set voice-to-voice time and reports when it
received the line and a hash of the audio it read.

Options: ``--answer-ms 600,900`` (voice-to-voice per measured line, in turn; the warm-up gets
the first), ``--tool NAME`` (on the first measured line, ask the bench to run this tool with
``--tool-args`` JSON and speak its result), ``--exit-at N`` (exit with code 3 when line N
comes, after saying why on stderr), ``--fail-loading`` (exit before ``ready``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import wave


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answer-ms", default="500")
    parser.add_argument("--tool", default=None)
    parser.add_argument("--tool-args", default="{}")
    parser.add_argument("--exit-at", type=int, default=None)
    parser.add_argument("--fail-loading", action="store_true")
    args = parser.parse_args()
    if args.fail_loading:
        print("tiny peer: RuntimeError: no model here", file=sys.stderr, flush=True)
        return 1
    answers = [float(ms) for ms in args.answer_ms.split(",")]
    send({"type": "ready", "tiny": True})
    for raw in sys.stdin:
        message = json.loads(raw)
        if message["type"] == "quit":
            break
        if message["type"] != "line":
            continue
        received = time.monotonic()
        index = int(message["index"])
        if args.exit_at is not None and index == args.exit_at:
            print(f"tiny peer: told to stop at line {index}", file=sys.stderr, flush=True)
            return 3
        with wave.open(message["wav"], "rb") as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
            pcm = wav.readframes(wav.getnframes())
        reply = "Aye."
        if args.tool and not message.get("warm_up"):
            send(
                {
                    "type": "tool_call",
                    "id": f"call-{index}",
                    "name": args.tool,
                    "arguments": json.loads(args.tool_args),
                }
            )
            result = json.loads(sys.stdin.readline())
            assert result["type"] == "tool_result" and result["id"] == f"call-{index}", result
            reply = result["content"]
        v2v = answers[max(0, index - 1) % len(answers)]
        time.sleep(v2v / 1000)
        send(
            {
                "type": "timing",
                "index": index,
                "voice_to_voice_ms": v2v,
                "stages_ms": {"turn_end": v2v / 4, "first_audio": v2v},
                "heard": message["text"],
                "reply": reply,
                "error": None,
                "extra": {
                    "received_at": received,
                    "audio_sha256": hashlib.sha256(pcm).hexdigest()[:16],
                },
            }
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
