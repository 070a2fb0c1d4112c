# Rules of the contamination task (placeholder until the task lands).
