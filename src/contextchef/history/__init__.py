"""History layer: the message IR, the normalizer, compaction, clearing and offload."""
