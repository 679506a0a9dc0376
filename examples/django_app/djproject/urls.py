"""The example's URLs: place an order (commits, enqueues a receipt), or fail placing one."""

from django.urls import path
from shop import views

urlpatterns = [
    path("orders", views.place_order),
    path("orders/broken", views.place_order_then_fail),
]
