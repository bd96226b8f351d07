"""Gatehouse settings, read from the environment with safe local defaults.

Every variable is listed in `.env.example`. With nothing set, the app runs on SQLite in debug mode
with development-only secrets; production sets DEBUG=false and real secrets.
"""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .audit_stream_settings import AUDIT_STREAM_DAYS  # noqa: F401 - a setting, read from there
from .database_settings import database_settings
from .env import env_bool, env_int, env_list, env_secret
from .observability_settings import *  # noqa: F403 - LOGGING, METRICS_*, LOG_FORMAT

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_secret("SECRET_KEY", "dev-only-secret-key-not-for-production-0123456789", DEBUG)
# Keys are stored as HMAC-SHA256 under this secret, kept apart from SECRET_KEY so that rotating
# session signing never invalidates every API key, and a leak of one does not expose the other.
API_KEY_HASH_SECRET = env_secret("API_KEY_HASH_SECRET", "dev-only-api-key-hash-secret", DEBUG)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    # Ours, every one a folder of apps/ (docs/architecture.md says what each holds).
    *(
        f"apps.{name}"
        for name in """
        accounts workspaces api_keys key_pages products communities pages usage request_log
        portal audit audit_pages devices oauth invitations team api metering leaks key_expiry
        service_accounts idle_keys key_health mcp demo jobs webhooks audit_streams approvals quotas
        deliveries scim sso
        """.split()
    ),
    "django_tasks",
    "django_tasks_db",
    "config",  # the top-level assembly: its `openapi` command
]

MIDDLEWARE = [
    # First: /api/ and /mcp are answered there, without any of the browser middleware below.
    "apps.api.middleware.api_front_door",
    "apps.operations.middleware.dashboard_metrics",  # the rest: counted and timed
    "apps.common.middleware.suspicious_requests",  # a query of too many fields: 400
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "apps.accounts.middleware.session_lifetime",
    "allauth.account.middleware.AccountMiddleware",
    "apps.common.middleware.content_security_policy",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: its process_view runs the view, once more when the database dropped the connection.
    "apps.common.middleware.database_retry",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.workspaces.context_processors.navigation",
                "apps.common.devmail.development",
                "apps.accounts.adapter.verification_state",
            ],
            # |day, |moment and |ago in every template: one way to write a date.
            "builtins": ["apps.common.dates", "apps.common.text"],
        },
    },
]

DATABASES = {"default": database_settings(os.environ.get("DATABASE_URL", ""), BASE_DIR)}
# The key lookup is a prepared statement on PostgreSQL (planned once per connection): turn this
# off behind a transaction-pooling PgBouncer older than 1.21, which cannot keep them.
DATABASE_PREPARED_LOOKUP = env_bool("DATABASE_PREPARED_LOOKUP", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
CACHES = {
    "default": (
        {
            # Django's RedisCache, served from process memory while Redis cannot be reached.
            "BACKEND": "apps.common.cache.FailOpenRedisCache",
            "LOCATION": REDIS_URL,
            # A Redis that does not answer must not hold requests: fail fast, then fail open.
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

AUTH_USER_MODEL = "accounts.User"
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Signing in: accounts, throttles, second factors, sessions and single sign-on (config/sign_in.py).
from .sign_in import *  # noqa: E402, F403

LANGUAGE_CODE = "en-us"
# Gatehouse's own wording for allauth's pages (sentence case, "e-mail"): locale/en.
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# In development every e-mail is a file in var/mail/, listed with clickable links at /dev/mail/
# (DEBUG only); production sets EMAIL_BACKEND to SMTP (see .env.example).
_MAIL_BACKEND = "django.core.mail.backends." + ("filebased" if DEBUG else "console")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", _MAIL_BACKEND + ".EmailBackend")
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH", str(BASE_DIR / "var" / "mail"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Gatehouse <noreply@localhost>")

# The API: body size limit (bytes) and per-key rate limit (requests a minute, 0 turns it off).
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 65_536)
API_RATE_LIMIT_PER_MINUTE = env_int("API_RATE_LIMIT_PER_MINUTE", 1_000)
# Refused credentials (invalid, expired, revoked keys) per client address a minute; past it the
# address gets 429 for a while, whatever key it sends.
API_AUTH_FAILURES_PER_MINUTE = env_int("API_AUTH_FAILURES_PER_MINUTE", 100)
# Web origins besides this server's own whose pages may call /mcp (a browser sends Origin; the
# MCP transport specification says servers must refuse others). Comma-separated.
MCP_ALLOWED_ORIGINS = env_list("MCP_ALLOWED_ORIGINS", [])
# `gatehouse login` requests (POST /oauth/device/code) per client address a minute.
DEVICE_CODES_PER_MINUTE = env_int("DEVICE_CODES_PER_MINUTE", 10)
# OAuth for MCP clients (docs/product.md §6.1). The issuer is SITE_URL when it is set in the
# environment; otherwise, or when OAUTH_ISSUER is set empty (`dev.py run` does), the address
# each request came to, so localhost and 127.0.0.1 both work in development.
OAUTH_ISSUER = os.environ.get("OAUTH_ISSUER", os.environ.get("SITE_URL", "")).rstrip("/")
OAUTH_REGISTRATIONS_PER_MINUTE = env_int("OAUTH_REGISTRATIONS_PER_MINUTE", 10)
# Token requests (POST /oauth/token) per client address a minute.
OAUTH_TOKEN_REQUESTS_PER_MINUTE = env_int("OAUTH_TOKEN_REQUESTS_PER_MINUTE", 120)
OAUTH_DOCUMENT_FETCHES_PER_MINUTE = env_int("OAUTH_DOCUMENT_FETCHES_PER_MINUTE", 10)
# Client metadata documents are fetched from public addresses only, except in development.
OAUTH_DOCUMENT_ALLOW_PRIVATE = env_bool("OAUTH_DOCUMENT_ALLOW_PRIVATE", DEBUG)
OAUTH_DOCUMENT_CA_FILE = os.environ.get("OAUTH_DOCUMENT_CA_FILE", "")  # extra trust, if any
# A key's last use is written at most once in this many seconds, so the hot path stays read-only.
API_KEY_LAST_USED_INTERVAL_SECONDS = 60
# Requests leave their counts and stamps in memory; a thread writes them every this many seconds
# (apps/metering/buffer.py). 0 writes at the end of every request instead.
USAGE_FLUSH_SECONDS = env_int("USAGE_FLUSH_SECONDS", 5)
# How many days the request log keeps (whole days: a day's partition is dropped on PostgreSQL).
REQUEST_LOG_DAYS = env_int("REQUEST_LOG_DAYS", 30)
if not 1 <= REQUEST_LOG_DAYS <= 90:
    raise ImproperlyConfigured(f"REQUEST_LOG_DAYS must be from 1 to 90, not {REQUEST_LOG_DAYS}.")
# Background work (webhook and audit stream deliveries, e-mails, scheduled jobs) goes through
# Django's tasks interface; the database backend is the default (`manage.py worker`, any number).
TASKS = {
    "default": {
        "BACKEND": os.environ.get("TASKS_BACKEND", "django_tasks_db.DatabaseBackend"),
        "QUEUES": ["default"],
    }
}
# `migrate` queues the schedule's first tick (apps/jobs/schedule.py); the tests run jobs by hand.
JOBS_START_ON_MIGRATE = True
# How long one webhook attempt may take in all: connecting, sending, and the answer's first 2 KB.
WEBHOOK_TIMEOUT_SECONDS = 10
# Tasks that wait on the network (webhook deliveries) run side by side in each task worker: up
# to TASK_THREADS at once, TASK_THREADS_PER_KEY of them to one endpoint (1: one at a time).
TASK_THREADS = env_int("TASK_THREADS", 8)
TASK_THREADS_PER_KEY = env_int("TASK_THREADS_PER_KEY", 4)
for _name, _value in (
    ("TASK_THREADS", TASK_THREADS),
    ("TASK_THREADS_PER_KEY", TASK_THREADS_PER_KEY),
):
    if not 1 <= _value <= 64:
        raise ImproperlyConfigured(f"{_name} must be from 1 to 64, not {_value}.")
# Webhook deliveries may go to loopback and private addresses only in development (and tests).
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", DEBUG)
# Where `manage.py demo` (DEBUG only) keeps the demo key's secret between starts of dev.py run.
DEMO_KEY_FILE = os.environ.get("DEMO_KEY_FILE", str(BASE_DIR / "var" / "demo-key"))
# The dashboard's address as people reach it, for links in e-mails sent by jobs (no request).
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# GitHub secret scanning: its public keys, as JSON (the body of
# https://api.github.com/meta/public_keys/secret_scanning). Empty: every report is refused.
SECRET_SCANNING_PUBLIC_KEYS = os.environ.get("SECRET_SCANNING_PUBLIC_KEYS", "")
# Behind a trusted reverse proxy, the number of proxies whose X-Forwarded-For entries to trust.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # __Host- cookies: sent only over HTTPS, only to this host, never set by a subdomain.
    SESSION_COOKIE_NAME = "__Host-sessionid"
    CSRF_COOKIE_NAME = "__Host-csrftoken"
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
# Authlib refuses plain-http OAuth requests on its own; HTTPS is Django's to enforce (the
# redirect above), so without it (development, tests) Authlib follows the rest of the site.
if DEBUG or not globals().get("SECURE_SSL_REDIRECT", False):
    os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")
