"""The seven spec names exist, but two are not classes (a number and a function)."""

from broken_backends._reference import *  # noqa: F403

LogprobsLists = 42


def SamplerOutput(*args, **kwargs):
    raise TypeError("not a class")
