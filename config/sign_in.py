"""The settings of signing in, part of config.settings: accounts (django-allauth), throttles,
second factors, sessions and single sign-on."""

import os

from .env import env_bool, env_int

_DEBUG = env_bool("DEBUG", True)  # as config.settings reads it

AUTHENTICATION_BACKENDS = ["apps.accounts.backends.PeopleOnlyBackend"]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"

# Accounts (django-allauth): sign-in by e-mail, a verified address before any workspace,
# no answer that tells whether an address has an account, throttled sign-in, two factors.
ACCOUNT_ADAPTER = "apps.accounts.adapter.AccountAdapter"
ACCOUNT_FORMS = {
    "signup": "apps.workspaces.signup.SignUpForm",
    "login": "apps.accounts.forms.SignInForm",
    "request_login_code": "apps.accounts.forms.RequestSignInCodeForm",
}
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_SESSION_REMEMBER = True
# A code e-mailed to the address signs in too (a second factor still applies): the way in for a
# new browser while strangers' failed passwords hold the account ceiling (adapter.py).
ACCOUNT_LOGIN_BY_CODE_ENABLED = True
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_EMAIL_SUBJECT_PREFIX = "Gatehouse: "
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "http" if _DEBUG else "https"
# Failed sign-ins: 10 per client address a minute, 5 per account and address in 5 minutes (the
# address as config/settings.py's trusted-proxy setting reads it), and 30 an hour per account
# from anywhere, a ceiling that browsers which signed in to the account before are exempt from,
# so failing on purpose cannot lock the owner out (apps/accounts/adapter.py).
ACCOUNT_RATE_LIMITS = {
    "login_failed": os.environ.get("SIGN_IN_FAILURE_LIMITS", "10/m/ip,5/5m/key"),
    "login_failed_account": os.environ.get("SIGN_IN_ACCOUNT_FAILURE_LIMIT", "30/h/key"),
    # Its "key" is the account *and* address (apps/accounts/forms.py): none spends another's.
    "request_login_code": "20/m/ip,3/m/key",
}
# A sign-up answers no sooner than this, whether or not the address has an account already (it
# gets an e-mail instead): the timing does not tell which.
SIGN_UP_MIN_SECONDS = float(os.environ.get("SIGN_UP_MIN_SECONDS", "0.5"))
# Sudo mode: creating, rolling or widening a key, approving a CLI login and changing the team
# ask for a password or second factor within this many seconds.
ACCOUNT_REAUTHENTICATION_TIMEOUT = env_int("REAUTHENTICATION_TIMEOUT_SECONDS", 600)
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_PASSKEY_LOGIN_ENABLED = True
MFA_TOTP_ISSUER = "Gatehouse"
# Passkeys need a secure origin; plain http://127.0.0.1 is allowed only in development.
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = _DEBUG
# Sessions end after this long without a request, and this long after sign-in whatever happens.
SESSION_IDLE_TIMEOUT_SECONDS = env_int("SESSION_IDLE_TIMEOUT_SECONDS", 2 * 3600)
SESSION_ABSOLUTE_LIFETIME_SECONDS = env_int("SESSION_ABSOLUTE_LIFETIME_SECONDS", 7 * 86400)
# A workspace that requires single sign-on asks its provider again after this long (§16).
SSO_SESSION_HOURS = env_int("SSO_SESSION_HOURS", 24)
# Issuers over plain HTTP: only for a provider on this machine (development, the tests).
SSO_ALLOW_HTTP_ISSUER = env_bool("SSO_ALLOW_HTTP_ISSUER", _DEBUG)
SESSION_COOKIE_AGE = SESSION_ABSOLUTE_LIFETIME_SECONDS
