"""``glyphoxa bench ... --peer NAME``: an unknown peer is refused with the known ones, and
``--peer`` without the e2e target is refused with the command that works; neither runs any
benchmark first."""

from __future__ import annotations

import pytest

from bot.bench.peer import PEERS
from bot.cli import main


def test_an_unknown_peer_is_refused_with_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "e2e", "--peer", "livekit"]) == 2
    out, err = capsys.readouterr()
    assert err == "error: --peer 'livekit' is not a known peer; known peers: pipecat\n"
    assert out == ""  # refused before the machine line and any measurement
    assert sorted(PEERS) == ["pipecat"]


@pytest.mark.parametrize("targets", [["tiers"], []])
def test_peer_needs_the_e2e_target(capsys: pytest.CaptureFixture[str], targets: list[str]) -> None:
    assert main(["bench", *targets, "--peer", "pipecat"]) == 2
    out, err = capsys.readouterr()
    assert err == (
        "error: --peer compares the e2e bench; name it: glyphoxa bench e2e --peer pipecat\n"
    )
    assert out == ""


def test_the_help_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "--peer NAME" in capsys.readouterr().out
