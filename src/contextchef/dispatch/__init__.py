"""Dispatch layer: the one gate every tool call passes, hooks and handler execution."""
