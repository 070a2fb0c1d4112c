# Rules of the protoqa task (placeholder until the task lands).
