"""ingest: outside material into memories (UMP, Markdown dailies, conversations, corpora)."""
