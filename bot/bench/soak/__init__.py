"""``glyphoxa bench soak``: a whole game night through the local Discord, its script, its
clock and its report (:mod:`bot.bench.soak.run` holds ``run_bench``)."""
