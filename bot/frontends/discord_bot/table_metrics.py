"""Per-process table metrics: how many tables run here and how their claims went."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector

__all__ = ["TableMetrics"]


class TableMetrics:
    """What an operator watches per process: tables running here, and how claims went."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.running = Gauge(
            "glyphoxa_tables_running", "Tables running in this process.", registry=self.registry
        )
        self.claims = Counter(
            "glyphoxa_table_claims",
            "Table claims by outcome: started (a new table), resumed (after a restart or another "
            "process's death), elsewhere (another process runs it), lost (taken over after this "
            "process lost its database connection), resume_failed.",
            ["outcome"],
            registry=self.registry,
        )
        # process_cpu_seconds_total and process_resident_memory_bytes: divided by
        # glyphoxa_tables_running, what one table costs in production.
        ProcessCollector(registry=self.registry)
