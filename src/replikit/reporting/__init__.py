"""Reporting: the report (HTML and Markdown), figure helpers and colours (`plotting`), the
provenance of every result (`provenance`: commit, code hash, staleness), and the scale ladder's
figure, table and report section (`ladder_summary`), and the documents' generated blocks (`docs`:
README.md and docs/*.md from the snapshots in docs/published/).

May import: every room below it: `core`, `data`, `models`, `methods`, `scoring`."""
