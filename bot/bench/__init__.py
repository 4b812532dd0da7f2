"""The harness room: the benchmarks behind ``glyphoxa bench`` and the doubles they drive.

What it holds:

- one module per ``glyphoxa bench`` target, each with ``async def run_bench(quick) ->
  list[BenchResult]`` (``tiers``, ``address``, ``llm``, ``tool_host``, ``speech``, ``receive``,
  ``memory``, ``e2e``, ``soak/``, ``tables/``), the labelled corpora they score
  (``tier_corpus``, ``address_corpus``) and :mod:`bot.bench.machine` (the machine and the
  reference figures every run prints);
- :mod:`bot.bench.doubles`: what stands in for what this machine cannot reach, speaking the
  real wire protocols: a local Discord, a DAVE voice loopback, instant LLM and speech servers.

Why it ships: ``glyphoxa bench`` is a user-facing command (a DM or an operator measures their
own machine with it), and its targets need these doubles: ``bench e2e`` measures the table's
floor against the instant LLM, ``bench soak`` plays a game night through the local Discord,
``bench tables`` runs the instant servers in a process of their own. The tests use the same
doubles. The product (``glyphoxa run``, the table runtime, ``npcs``, ``tools``, ``campaigns``)
never imports this package; ``tests/security/test_import_layers.py`` enforces that.
"""
