from django.http import HttpResponse
from django.urls import path


def _placeholder(request):
    return HttpResponse("fsched")


urlpatterns = [path("", _placeholder, name="home")]
