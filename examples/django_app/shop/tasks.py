"""The example's tasks: a job type is the task's import path (``shop.tasks.send_receipt``)."""

import asyncio
import time

from django.db import transaction

from pqueue.django import task
from shop.models import Order, Visit


class PaymentDeclined(Exception):
    """The error the failing task raises (its class path is in the result's errors)."""


@task(queue_name="emails")
def send_receipt(order_id: int) -> dict[str, object]:
    """Read the order the view wrote: it exists, since the job became visible at commit."""
    with transaction.atomic():
        order = Order.objects.select_for_update().get(id=order_id)
        order.receipt_sent = True
        order.save()
    return {"order": order.id, "email": order.email, "total_cents": order.total_cents}


@task(takes_context=True)
def add(context, a: int, b: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    return {"sum": a + b, "attempt": context.attempt, "id": context.task_result.id}


@task()
async def slow_double(x: int) -> int:
    await asyncio.sleep(0.01)
    return x * 2


@task(retries=1)
def charge(amount: int) -> None:
    raise PaymentDeclined(f"card declined for {amount}")


@task()
def visit(label: str, seconds: float = 0.0) -> str:
    time.sleep(seconds)
    Visit.objects.create(label=label)
    return label


@task(unique=60)
def once(key: str) -> str:
    return key


@task(timeout=0.2)
def stuck(seconds: float) -> None:
    time.sleep(seconds)
