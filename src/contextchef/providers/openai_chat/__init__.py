"""Wire format openai_chat: its renderer (IR -> payload) and parser (history -> IR)."""
