"""The caches beside the crawldb that a round reads and writes: robots.txt answers and
the hosts' pauses they give, soft-404 probe answers, and each host's last request
across rounds."""
