# Rules of the qads task (placeholder until the task lands).
