"""Catalog/deferred layer: meta-tools, the name directory, namespaces, toolkits, the frozen view."""
