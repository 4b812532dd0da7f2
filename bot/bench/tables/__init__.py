"""``glyphoxa bench tables``: many tables on one process, each a simulated voice channel over
the real receive path, against model servers in a process of their own
(:mod:`bot.bench.tables.run` holds ``run_bench``)."""
