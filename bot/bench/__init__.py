"""Benchmark harness shared by ``glyphoxa bench``: what machine a run is on, and its reference
figures. The product never imports this package."""
