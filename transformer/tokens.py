"""The reserved token ids, shared by the model (masks, decoding) and every data set that feeds it.

``PAD_ID`` fills short sequences up to the batch's width, ``BOS_ID`` starts every decoder input, ``EOS_ID`` ends
every decoder output. A data set's own tokens take the ids from ``FIRST_SYMBOL`` on, so that a real token is never
mistaken for padding or for the start signal.
"""

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
FIRST_SYMBOL = 3
SPECIAL_TOKENS = {PAD_ID: "<pad>", BOS_ID: "<s>", EOS_ID: "</s>"}
