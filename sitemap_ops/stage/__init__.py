"""Stage step: inventory sources, URL normalization, rejects, dedupe, the staged snapshot."""
