"""``infx review``: a deterministic review gate for a catalog change. It reads both sides from git
objects, renders both sides' launches, and runs the stages below it (matrix, engines, preflight,
changelog) as rules; nothing below imports it."""
