"""The models of ``glyphoxa.yaml`` (``config``, ``providers``, ``spend``), the loader that reads and
checks the file (``loader``) and the redaction that keeps its secrets out of logs and pages
(``redact``). The bottom room of ``bot``: every other room reads it, it reads none of them."""
