# Rules of the twentyq task (placeholder until the task lands).
