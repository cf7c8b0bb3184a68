"""A run across the nodes of a Ray cluster: a desktop pool per node, one run record."""
