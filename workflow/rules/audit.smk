# Rules of the audit task (placeholder until the task lands).
