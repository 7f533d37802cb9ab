"""Fetching: a partition's fetch loop (fetcher), its HTTP client over libcurl, the
politeness scheduler and host state, robots.txt, address checks, in-round following."""
