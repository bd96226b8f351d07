"""The API's error responses: `{"error": <reason>, "message": <one sentence>}`."""

import re

from django.http import JsonResponse

STATUS_BY_REASON = {
    "missing-key": 401,
    "invalid-key": 401,
    "expired-key": 401,
    "revoked-key": 401,
    "pending-key": 401,
    "denied-key": 401,
    "suspended-key": 401,
    "insufficient-scope": 403,
    "insufficient-role": 403,
    "https-required": 403,
    "ip-not-allowed": 403,
    "invalid-signature": 403,
    "origin-not-allowed": 403,
    "invalid-input": 400,
    "payload-too-large": 413,
    "uri-too-long": 414,  # answered by gunicorn itself (gunicorn.conf.py)
    "headers-too-large": 431,  # likewise
    "bad-request": 400,  # likewise: not HTTP gunicorn can read
    "forbidden-request": 403,  # likewise: a proxy line or TLS it refuses
    "expectation-failed": 417,  # likewise: an Expect header other than 100-continue
    "not-implemented": 501,  # likewise: a transfer coding it does not know
    "unsupported-media-type": 415,
    "not-found": 404,
    "conflict": 409,
    "method-not-allowed": 405,
    "rate-limited": 429,
    "quota-exceeded": 429,
    "unavailable": 503,
    "internal-error": 500,
}

DEFAULT_MESSAGES = {
    "missing-key": "Send an API key in the Authorization header: Authorization: Bearer <key>.",
    "invalid-key": "The API key is not valid.",
    "expired-key": "The API key has expired.",
    "revoked-key": "The API key has been revoked.",
    "pending-key": "The API key waits for a workspace owner's approval; it works once approved.",
    "denied-key": "A workspace owner denied this API key; it will never work.",
    "suspended-key": "The key's holder is suspended by the workspace's identity provider; the "
    "key is kept and works again if they are restored.",
    "insufficient-scope": "This key does not hold the scope this operation needs.",
    "insufficient-role": "The key's holder does not have the role this operation needs.",
    "https-required": "This API answers over HTTPS only. The key sent with this request crossed "
    "the network unencrypted: treat it as exposed, roll or revoke it, and call the https:// "
    "address.",
    "ip-not-allowed": "This key does not accept requests from this network.",
    "invalid-signature": "The report's signature could not be verified.",
    "origin-not-allowed": "Requests from this web page's origin are not allowed here.",
    "invalid-input": "The request is not valid.",
    "payload-too-large": "The request body is too large.",
    "uri-too-long": "The address is too long: keep it under 8,000 characters.",
    "headers-too-large": "The request's headers are too large.",
    "bad-request": "The request is not valid HTTP.",
    "forbidden-request": "This server does not take requests sent this way.",
    "expectation-failed": "The only Expect this server meets is 100-continue.",
    "not-implemented": "The request uses a transfer coding this server does not implement.",
    "unsupported-media-type": "Send the request body as JSON with Content-Type: application/json.",
    "not-found": "Nothing was found at this address.",
    "conflict": "The object is not in a state this operation applies to.",
    "method-not-allowed": "This method is not allowed here.",
    "rate-limited": "Too many requests with this key; slow down.",
    "quota-exceeded": "This key's quota for its period is spent; it refills at the next period.",
    "unavailable": "The database is briefly out of reach and nothing was changed: try again in "
    "a few seconds (Retry-After).",
    "internal-error": "Something went wrong on our side; the request was not completed.",
}


def challenge_text(text: str) -> str:
    """Text a challenge's quoted parameter may hold (RFC 6750 §3: printable ASCII without
    quotes or backslashes)."""
    return re.sub(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]", "", text.replace("’", "'"))


def api_error(reason: str, message: str | None = None, **headers: str) -> JsonResponse:
    """The JSON error response for `reason`, with the status of the error table.

    401 responses always carry a WWW-Authenticate challenge (RFC 6750): with
    error="invalid_token" and the message as error_description when a key was presented (a
    client that shows only the challenge still tells its user what is wrong with the key),
    bare when none was.
    """
    message = message or DEFAULT_MESSAGES[reason]
    response = JsonResponse({"error": reason, "message": message}, status=STATUS_BY_REASON[reason])
    if reason == "missing-key":
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    elif response.status_code == 401:
        response["WWW-Authenticate"] = (
            f'Bearer realm="api", error="invalid_token", '
            f'error_description="{challenge_text(message)}"'
        )
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


class ApiFailure(Exception):
    """A request the API refuses: the error table's `reason`, one sentence, extra headers.

    Raised below the doors; the HTTP door turns it into a JSON response, the MCP door into a
    tool error or an HTTP answer.
    """

    def __init__(self, reason: str, message: str | None = None, **headers: str) -> None:
        self.reason = reason
        self.message = message or DEFAULT_MESSAGES[reason]
        self.headers = headers
        super().__init__(self.message)

    def response(self) -> JsonResponse:
        return api_error(self.reason, self.message, **self.headers)


def insufficient_scope(
    needed: list[str] | tuple[str, ...], message: str | None = None
) -> ApiFailure:
    """The 403 for a key without any of `needed`, with the RFC 6750 challenge naming them."""
    scope = " ".join(sorted(needed))
    if message:
        pass
    elif len(needed) == 1:
        message = f"This operation needs the {scope} scope, which this key does not hold."
    else:
        message = (
            f"This operation needs one of these scopes, which this key does not hold: {scope}."
        )
    return ApiFailure(
        "insufficient-scope",
        message,
        WWW_Authenticate=f'Bearer realm="api", error="insufficient_scope", scope="{scope}"',
    )
