"""What the Spark jobs share: command line, session, frames, Delta access, the data
directory's layout and lock, metrics, progress, and the task-side writers."""
