"""The masked-LM loss on the labelled positions only (`lem.core.training`): the encoder's hidden states of the
positions with a label are gathered before the LM head, so the head runs on ~15 % of the positions;
float32 cross-entropy, the full head's mean over labelled positions. `gathered_positions_loss` is the same
loss in fixed shapes (the static step: `lem.masking.collate.static_batch`)."""

from __future__ import annotations

import logging
import types

# Imported inside functions: torch and transformers (planning imports this package, with the training stages'
# settings, and needs neither)

log = logging.getLogger("lem.core.training")


def labelled_positions_loss(head, hidden, labels, num_items=None):
    """Masked-LM loss with `head` applied to the rows of `hidden` whose label is not -100 only.

    `hidden`: (batch, length, hidden) encoder states; the loss is the float32 cross-entropy summed over the
    labelled positions divided by `num_items` (the labelled positions of the whole batch, accumulated and
    across processes, as the Trainer counts them) or by their number here: the mean over labelled
    positions, the value of the full head's loss. Returns a MaskedLMOutput whose logits are the labelled
    positions' only."""
    import torch.nn.functional as F
    from transformers.modeling_outputs import MaskedLMOutput

    selected = labels != -100
    logits = head(hidden[selected])
    loss = F.cross_entropy(logits.float(), labels[selected], reduction="sum")
    return MaskedLMOutput(loss=_per_item(loss, num_items, labels), logits=logits)


def _per_item(loss, num_items, labels):
    """`loss` (a sum over labelled positions) divided by `num_items`, else by the labelled positions of
    `labels`; at least 1 either way."""
    import torch

    denominator = num_items if num_items is not None else (labels != -100).sum()
    if torch.is_tensor(denominator):
        denominator = denominator.to(loss.device)
    return loss / (denominator.clamp(min=1) if torch.is_tensor(denominator) else max(denominator, 1))


def _labelled_positions_forward(self, input_ids=None, attention_mask=None, labels=None, num_items_in_batch=None,
                                **kwargs):  # fmt: skip
    """The forward of a masked LM with `labelled_positions_loss` when labels are given (its own otherwise)."""
    if labels is None:
        return type(self).forward(self, input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    kwargs.pop("return_dict", None)
    encoder = getattr(self, self.base_model_prefix)
    hidden = encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs)[0]
    return labelled_positions_loss(self.lm_head, hidden, labels, num_items_in_batch)


def gathered_positions_loss(head, hidden, positions, labels, num_items=None):
    """`labelled_positions_loss` in fixed shapes: `positions` (batch x K) are the columns of each row's
    labelled positions (`lem.masking.collate.static_batch`), `labels` (batch x K) their labels, -100 in the
    unused slots. The head runs on the batch x K gathered states; the cross-entropy ignores the unused slots,
    so the loss (the sum over labelled positions / `num_items`, else their number) and its gradient are
    `labelled_positions_loss`'s, with no data-dependent shape (no host synchronisation, one CUDA graph)."""
    import torch.nn.functional as F
    from transformers.modeling_outputs import MaskedLMOutput

    picked = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
    logits = head(picked)
    loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
    return MaskedLMOutput(loss=_per_item(loss, num_items, labels), logits=logits)


def _gathered_positions_forward(self, input_ids=None, attention_mask=None, labels=None, masked_positions=None,
                                num_items_in_batch=None, **kwargs):  # fmt: skip
    """The forward of a masked LM on static batches: the padding mask handed to the encoder in its 4-D form
    (batch x 1 x 1 x length, True = attend), which transformers passes through as it is (no check of the
    mask's values on the host), then `gathered_positions_loss`. Without labels: the model's own forward."""
    if labels is None or masked_positions is None:
        return type(self).forward(self, input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    kwargs.pop("return_dict", None)
    encoder = getattr(self, self.base_model_prefix)
    mask = attention_mask[:, None, None, :].bool() if attention_mask is not None else None
    hidden = encoder(input_ids=input_ids, attention_mask=mask, **kwargs)[0]
    return gathered_positions_loss(self.lm_head, hidden, masked_positions, labels, num_items_in_batch)


def supports_labelled_positions(model) -> bool:
    """Whether `model` is a masked LM of the encoder + `lm_head` kind (XLM-R, RoBERTa, ...)."""
    return hasattr(model, "lm_head") and hasattr(model, getattr(model, "base_model_prefix", "") or "_none_")


def use_labelled_positions_loss(model, static: bool = False) -> bool:
    """Give `model` (this object only) the forward of `labelled_positions_loss` (`static`: of
    `gathered_positions_loss`, for batches of `lem.masking.collate.static_batch`); False, and a warning, for a
    model of another kind (it keeps its full-head loss). The model's class, weights and files are unchanged;
    `restore_forward` undoes it. A forward through DDP / torch.compile wrappers reaches it as usual."""
    if not supports_labelled_positions(model):
        log.warning(
            "%s has no encoder + lm_head: the masked-LM loss is computed over every position",
            type(model).__name__,
        )
        return False
    forward = _gathered_positions_forward if static else _labelled_positions_forward
    model.forward = types.MethodType(forward, model)
    return True


def restore_forward(model) -> None:
    model.__dict__.pop("forward", None)
