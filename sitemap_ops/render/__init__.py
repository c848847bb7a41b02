"""Render step: shard files (XML urlset or text), gzipped, from the staged snapshot and the plan."""
