"""Tools layer: `Tool` values, the `Registry`, JSON-Schema helpers, catalogs, wire names.

Knows nothing of providers or sessions. Public names are re-exported by `contextchef`.
"""
