"""Wire format responses: its renderer (IR -> payload) and parser (history -> IR)."""
