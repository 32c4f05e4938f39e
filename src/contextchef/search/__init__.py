"""Search layer: the tool index (exact lookup, BM25, regex) and retrieval evaluation."""
