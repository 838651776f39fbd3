"""Two layouts of the logprobs of rows of several tokens that neither vLLM runner uses.

``READS_RIGHT``: after each request's rows one row that is nobody's, the cu counting it;
vLLM's consumer (``slice_request(i, len(sampled_token_ids[i]))``) reads every request's
own rows, so it conforms.  ``READS_WRONG``: the first runner's layout, but request 2's
cu entry one row late, so request 2 reads rows that are not its own.
"""

from itertools import pairwise

import numpy as np

from conformance import Backend, constructed_like_vllm
from reference.revisions import reference_module

REVISION = "0.16.0"
module = reference_module(REVISION)


def _with_a_spare_row_per_request(lists):
    cu = lists.cu_num_generated_tokens
    ids, values, ranks, new_cu = [], [], [], [0]
    for start, end in pairwise(cu):
        ids += [*lists.logprob_token_ids[start:end], np.full_like(lists.logprob_token_ids[0], 7)]
        values += [*lists.logprobs[start:end], np.full_like(lists.logprobs[0], -9.0)]
        ranks += [*lists.sampled_token_ranks[start:end], 99]
        new_cu.append(new_cu[-1] + end - start + 1)
    return lists._replace(
        logprob_token_ids=np.stack(ids),
        logprobs=np.stack(values),
        sampled_token_ranks=np.asarray(ranks),
        cu_num_generated_tokens=new_cu,
    )


def _request_two_one_row_late(lists):
    cu = list(lists.cu_num_generated_tokens)
    cu[2] += 1
    return lists._replace(cu_num_generated_tokens=cu)


def _relaid(change):
    class Relaid(module.RunnerAsyncModelRunnerOutput):
        def get_output(self):
            output = super().get_output()
            lists = output.logprobs
            if lists is not None and lists.cu_num_generated_tokens is not None:
                output.logprobs = change(lists)
            return output

    return Relaid


def _backend(name, change):
    return Backend(
        name=name,
        module=module,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        spec_revision=REVISION,
        make_async_output=constructed_like_vllm(_relaid(change)),
    )


READS_RIGHT = _backend("logprobs-spare-rows", _with_a_spare_row_per_request)
READS_WRONG = _backend("logprobs-request-two-late", _request_two_one_row_late)
