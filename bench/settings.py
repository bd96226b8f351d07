"""Settings for the benchmark only: production-like, plus an unauthenticated twin of the
workspace endpoint that exists nowhere else."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
