"""Session layer: `ContextChef` and the session state it coordinates."""
