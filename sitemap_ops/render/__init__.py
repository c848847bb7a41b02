"""Render step: shard files (XML urlset or text), gzipped, from the planned snapshot."""
