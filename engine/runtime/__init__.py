"""The runtime every job shares: the command line and exit codes, the Spark session
and its jars, the data directory's layout and lock, progress lines, and the writes left
to run behind the next stage."""
