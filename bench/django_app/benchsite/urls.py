"""One view: enqueue the no-op task inside the request's transaction."""

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from benchsite.tasks import noop


@csrf_exempt
def enqueue(request: HttpRequest) -> HttpResponse:
    noop.enqueue(int(request.GET.get("n", "0")))
    return HttpResponse(status=201)


urlpatterns = [path("enqueue", enqueue)]
