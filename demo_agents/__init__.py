"""Scripted demo agents for the quick start: every sample blueprint's backend, no LLM, no network.

``answers`` decides what an agent says (pure), ``wire`` writes it as AG-UI events or OpenAI
chunks, ``server`` serves both on loopback, ``control`` starts and stops it in the background
(``scripts/demo-agents``).
"""
