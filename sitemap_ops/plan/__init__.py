"""Plan step: stable URL -> shard assignment, limits, fingerprints, the manifest."""
