# Rules of the winowhat task (placeholder until the task lands).
