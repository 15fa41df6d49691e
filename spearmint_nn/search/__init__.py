"""The search engine: the ask/tell optimizer, the space, acquisition and its maximiser."""
