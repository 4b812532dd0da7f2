"""The Pipecat peer of ``glyphoxa bench e2e --peer pipecat``: scripts run by the Pipecat
virtualenv's own python (``main.py``, which imports its siblings as top-level modules). Glyphoxa
never imports them; they import only Pipecat and its dependencies."""
