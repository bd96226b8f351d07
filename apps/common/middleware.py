"""Headers every dashboard page carries."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

# Only the app's own scripts and styles: no inline script or style, no eval, nothing from
# elsewhere. `data:` images are the QR codes of the authenticator set-up.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def policy_with_form_action(target: str) -> str:
    """The policy for a page whose form may end in a redirect to `target` (a source expression
    such as `https://app.example.com`): browsers check form-action on redirects too."""
    return CONTENT_SECURITY_POLICY.replace("form-action 'self'", f"form-action 'self' {target}")


def content_security_policy(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return middleware
