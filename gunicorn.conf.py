"""gunicorn reads this file from the working directory.

If the access log is turned on (--access-logfile), it logs the path without the query string
(%(U)s rather than the request line %(r)s): a key someone put in a URL must not land in a log.
"""

access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(f)s" "%(a)s"'

# The longest request line gunicorn allows (its default is 4094): a GET /api/v1/keys with every
# filter at its longest stays far below it, and a longer one is refused before Django.
limit_request_line = 8190
