"""Every token id with a fixed meaning, in one place, shared by the model (masks, decoding) and the data sets.

The model reserves three: ``PAD_ID`` fills short sequences up to the batch's width, ``BOS_ID`` starts every decoder
input, ``EOS_ID`` ends every decoder output. (``TransformerConfig.pad_id`` names another padding id for data of one's
own; every data set of this package pads with ``PAD_ID``.) The ids from ``FIRST_SYMBOL`` on are a vocabulary's own,
and its vocabulary alone says what each means: the synthetic tasks' symbols are the ids ``FIRST_SYMBOL ..
vocab_size - 1`` (id 3 is the symbol 3), and the vocabularies of text put ``<unk>`` first (``UNK_ID``), for a token
they do not hold. A model learns one vocabulary and nothing outside the vocabularies of text reads ``UNK_ID``, so the
two meanings of id 3 never meet (``tests/train/test_tasks.py``).
"""

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
FIRST_SYMBOL = 3
SPECIAL_TOKENS = {PAD_ID: "<pad>", BOS_ID: "<s>", EOS_ID: "</s>"}
UNK_ID = FIRST_SYMBOL  # the vocabularies of text: the id of a token they do not hold (transformer.train.tokenizer)
UNK = "<unk>"
