"""Views that write a row and enqueue a task in the same request (ATOMIC_REQUESTS)."""

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from shop.models import Order
from shop.tasks import send_receipt


@csrf_exempt
def place_order(request: HttpRequest) -> HttpResponse:
    body = json.loads(request.body)
    order = Order.objects.create(email=body["email"], total_cents=body["total_cents"])
    result = send_receipt.enqueue(order.id)  # joins this transaction on Postgres, else on_commit
    return JsonResponse({"order": order.id, "task": result.id}, status=201)


@csrf_exempt
def place_order_then_fail(request: HttpRequest) -> HttpResponse:
    """Writes and enqueues, then fails: the transaction rolls back, and with it the task."""
    order = Order.objects.create(email="nobody@example.com", total_cents=1)
    send_receipt.enqueue(order.id)
    raise RuntimeError("payment provider down")
