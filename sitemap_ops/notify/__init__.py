"""Notify step: tell search engines what a published build changed (IndexNow)."""
