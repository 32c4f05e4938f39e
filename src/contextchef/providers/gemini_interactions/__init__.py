"""Gemini Interactions API (``client.interactions.create``): renderer, parser, reader."""
