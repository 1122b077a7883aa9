"""Project intelligence's own exceptions."""


class JobRetry(Exception):
    """A compiler job's transient failure: the job is queued again (up to the attempt limit)."""
