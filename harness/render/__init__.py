"""The views: renderers only read a run (its transcript and what it said about itself)."""
