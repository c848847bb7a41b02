"""Publish and retire steps: index files, robots.txt, manifest, the publish lease, retirement."""
