"""Exposure layer: which tools are resident, deferred or hidden (policy, patterns, modes)."""
