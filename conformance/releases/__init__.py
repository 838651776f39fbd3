"""vLLM's releases judged without installing vLLM.

Start at :mod:`.texts`: a release's ``outputs.py`` (and its producers, from the
producer texts) laid out as an importable ``vllm``; :mod:`.producers` finds vLLM's
own producers wherever ``vllm`` imports; :mod:`.wheels` takes the texts from a
release's published wheel; :mod:`.runs` judges a folder of releases, one run each.
"""
