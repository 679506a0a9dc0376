"""The example's one model: an order, written by a view and read by a task."""

from django.db import models


class Order(models.Model):
    email = models.CharField(max_length=200)
    total_cents = models.IntegerField()
    receipt_sent = models.BooleanField(default=False)


class Visit(models.Model):
    """One row per task run, in run order (the priority and drain tests read them)."""

    label = models.CharField(max_length=50)
