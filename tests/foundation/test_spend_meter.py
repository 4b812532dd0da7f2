"""The spend meter's arithmetic and its limits, from usage records alone: each limit acts
once, a local model is free and named by its file, and the DM's summary reads plainly."""

from __future__ import annotations

import pytest

from bot.settings.providers import LlmProvider
from bot.settings.spend import PricingConfig, SpendConfig, TokenPrice
from bot.table.assembly.spend import runs_here
from bot.table.session.spend import SpendMeter, cost_lines
from campaigns.providers.usage import Usage


def test_limits_act_once_and_a_local_model_is_free() -> None:
    told: list[str] = []
    switched: list[str] = []
    pricing = PricingConfig(llm={"gpt-4o-mini": TokenPrice(input_per_million=1.0,
                                                           output_per_million=3.0)})  # fmt: skip
    limits = SpendConfig(soft=1.0, hard=2.0, on_hard="fast")
    meter = SpendMeter(pricing, limits, on_soft=told.append, on_hard=switched.append)
    cloud, local = meter.sink(free=False), meter.sink(free=True)
    gguf = "/home/dm/.cache/models/SmolLM2-135M-Instruct.Q8_0.gguf"
    for _ in range(5):  # 0.75 dollars each, a DM's price over the default
        cloud.record(Usage("llm", "gpt-4o-mini", "Bartok", input_tokens=600_000,
                           output_tokens=50_000))  # fmt: skip
        local.record(Usage("llm", gguf, "Vessa", input_tokens=900_000, output_tokens=9_000))
    assert meter.total_usd == pytest.approx(3.75)
    assert len(told) == 1
    assert told[0].startswith("this session has spent $1.50, past its $1.00 soft limit")
    assert switched == ["this session has spent $2.25, its hard limit is $2.00"]
    summary = meter.summary()
    assert summary["npcs"] == {"Bartok": pytest.approx(3.75), "Vessa": 0.0}
    lines = cost_lines(summary)
    assert lines[0] == "Cost so far: $3.7500 (soft limit $1.00, hard limit $2.00 (reached))"
    assert "- LLM SmolLM2-135M-Instruct.Q8_0.gguf: $0.0000 (5 calls; 4,500,000 tokens in, " \
        "45,000 out)" in lines  # fmt: skip


def test_a_night_without_calls() -> None:
    meter = SpendMeter(PricingConfig(), SpendConfig())
    assert cost_lines(meter.summary()) == ["Cost so far: $0.0000", "No provider calls yet."]


def test_a_remote_model_without_a_price_is_told_once_and_counted() -> None:
    told: list[str] = []
    meter = SpendMeter(PricingConfig(), SpendConfig(), on_unpriced=told.append)
    remote = meter.sink(free=False)
    for _ in range(3):
        remote.record(Usage("llm", "my-finetune", "Bartok", input_tokens=900, output_tokens=40))
    assert told == [
        "no price for the LLM model 'my-finetune': its use is counted but costs nothing in "
        "/session cost; set pricing.llm.my-finetune in glyphoxa.yaml"
    ]
    (row,) = meter.rows.values()
    assert row.calls == 3 and row.input_tokens == 2700 and row.cost_usd == 0.0


@pytest.mark.parametrize(
    ("name", "base_url", "here"),
    [
        ("local", None, True),
        ("openai", "http://localhost:11434/v1", True),
        ("openai", "http://127.0.0.1:8080/v1", True),
        ("openai", "http://[::1]:8000/v1", True),
        ("openai", None, False),  # OpenAI itself
        ("openai", "https://api.groq.com/openai/v1", False),
        ("openai", "http://192.168.1.20:8000/v1", False),  # another machine: priced or told
    ],
)
def test_which_servers_run_here(name: str, base_url: str | None, here: bool) -> None:
    provider = LlmProvider(name=name, base_url=base_url, model="m")
    assert runs_here(provider) is here
