"""What the bot tells its operator: Prometheus metrics (``metrics``) and logging set up from the
config, secrets redacted (``logging_setup``)."""
