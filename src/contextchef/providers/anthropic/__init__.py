"""Wire format anthropic: its renderer (IR -> payload) and parser (history -> IR)."""
