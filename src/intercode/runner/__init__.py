"""Running episodes: one episode to a record, many in parallel, logs and summaries."""
