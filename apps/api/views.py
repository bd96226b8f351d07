from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from .errors import api_error


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return api_error("not-found", f"There is no API endpoint at {request.path}.")
