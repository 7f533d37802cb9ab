"""The local multi-host test web used by the tests and by ``./submit.sh demo``."""
