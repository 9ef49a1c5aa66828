"""The chapters' exercises: the reader writes a small piece of the model, and a check compares it with the package.

Each ``grade_*`` function takes the reader's function (and, for decoding, a model), runs it on several shapes and
seeds against :mod:`transformer`, and raises ``AssertionError`` with what is wrong, naming the classic mistake when it
recognises one. :func:`exercise` is what a chapter's check cell calls: it runs a check on the reader's answer and says
"not done yet" for a starter that still raises ``NotImplementedError``, so a chapter runs from top to bottom as the
reader first sees it. A chapter imports its checks from here; each lives in the module of its topic, as the figures
of :mod:`transformer_book.viz` do:

- chapter 2, embeddings (:mod:`.embeddings`): :func:`grade_vocabulary_parameters`, :func:`grade_cosine_similarity`;
- chapter 3, positional encoding (:mod:`.positional`): :func:`grade_sinusoid_table`, :func:`grade_offset_matrix`;
- chapter 4, masks (:mod:`.masks`): :func:`grade_causal_mask`, :func:`grade_padding_mask`, :func:`grade_target_mask`;
- chapter 5, attention (:mod:`.attention`): :func:`grade_attention`, :func:`grade_multi_head_attention`;
- chapter 6, the model (:mod:`.model`): :func:`grade_parameter_count`, :func:`grade_encoder_layer`,
  :func:`grade_decoder_layer`;
- chapter 7, training (:mod:`.training`): :func:`grade_smoothed_targets`, :func:`grade_noam_lr`;
- chapter 8, decoding (:mod:`.decoding`): :func:`grade_next_token`, :func:`grade_greedy_decode`;
- chapter 9, dates (:mod:`.dates`): :func:`grade_ordinal_words`, :func:`grade_length_batches`;
- chapter 10, translation (:mod:`.translation`): :func:`grade_merge_step` (one step of byte-pair encoding),
  :func:`grade_clipped_precision` (BLEU's clipped n-gram counts, :func:`clipped_matches`);
- chapter 11, inside the model (:mod:`.inspect`): :func:`grade_previous_token_weight`, :func:`grade_silenced_head`;
- chapter 13, cost (:mod:`.cost`): :func:`grade_encoder_layer_flops`, :func:`grade_longest_length`;
- what they share (:mod:`.grading`): :func:`exercise`.
"""

from transformer_book.exercises.attention import grade_attention, grade_multi_head_attention
from transformer_book.exercises.cost import grade_encoder_layer_flops, grade_longest_length
from transformer_book.exercises.dates import grade_length_batches, grade_ordinal_words
from transformer_book.exercises.decoding import grade_greedy_decode, grade_next_token
from transformer_book.exercises.embeddings import grade_cosine_similarity, grade_vocabulary_parameters
from transformer_book.exercises.grading import exercise
from transformer_book.exercises.inspect import grade_previous_token_weight, grade_silenced_head
from transformer_book.exercises.masks import grade_causal_mask, grade_padding_mask, grade_target_mask
from transformer_book.exercises.model import grade_decoder_layer, grade_encoder_layer, grade_parameter_count
from transformer_book.exercises.positional import grade_offset_matrix, grade_sinusoid_table
from transformer_book.exercises.training import grade_noam_lr, grade_smoothed_targets
from transformer_book.exercises.translation import clipped_matches, grade_clipped_precision, grade_merge_step

__all__ = [
    "clipped_matches",
    "exercise",
    "grade_attention",
    "grade_causal_mask",
    "grade_clipped_precision",
    "grade_cosine_similarity",
    "grade_decoder_layer",
    "grade_encoder_layer",
    "grade_encoder_layer_flops",
    "grade_greedy_decode",
    "grade_length_batches",
    "grade_longest_length",
    "grade_merge_step",
    "grade_multi_head_attention",
    "grade_next_token",
    "grade_noam_lr",
    "grade_offset_matrix",
    "grade_ordinal_words",
    "grade_padding_mask",
    "grade_parameter_count",
    "grade_previous_token_weight",
    "grade_silenced_head",
    "grade_sinusoid_table",
    "grade_smoothed_targets",
    "grade_target_mask",
    "grade_vocabulary_parameters",
]
