"""Reports: what a run measured, with the published number or the reason it is refused."""
