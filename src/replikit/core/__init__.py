"""The core every job needs: configuration (schema, defaults, checks), the device and its
threads, seeding, file writes that never leave a partial result, the job wrapper, progress, the run
store, and the plain training loop.

May import: nothing else of replikit (the bottom room)."""
