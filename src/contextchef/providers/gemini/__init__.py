"""Wire format gemini: its renderer (IR -> payload) and parser (history -> IR)."""
