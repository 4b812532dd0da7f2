"""Rehearse a table without Discord: a scene script drives the real pipeline with synthesized
players and writes the NPCs' audio, a transcript and a latency report."""
