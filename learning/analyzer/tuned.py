"""MiniLM's top layers fine-tuned to the message type: the type model's second reader of a message.

The stacked type model (``model.StackedTypeModel``) reads *frozen* features: the sentence vector, an
early layer's mean, n-grams and cues. Fine-tuning lets the network itself learn what tells a standing
rule from a one-off request and a correction from an acknowledgement. Only the top ``TUNED_LAYERS``
transformer layers and a linear head over their mean-pooled output are fitted; the embeddings and the
layers below stay the embedder's own, shared and frozen. So the fit computes the frozen layers' token
states once and trains the top on them, and the fitted part (about 5 M numbers) is kept in the
analyzer's store like the other models.

Measured before this module was written (grouped 5-fold CV on the fitting side of the labelled file,
the analyzer's own split; argmax of each reader, no abstention): the stacked model alone macro-F1
0.881, the tuned top alone 0.848, their geometric mean 0.899; with abstention at equal mislearning
(stored items labelled correction, pain point or none, about 3 %) 0.842 -> 0.873. The two read
different things and make different mistakes, so ``Models.type_probabilities`` takes the normalised
geometric mean of both (no weight fitted on top: a weight would need the tuned reader's out-of-fold
probabilities, five more fits).

The fit is deterministic for a given machine and thread count (fixed seed, fixed batch order, float32,
one thread by default like the embedder). At run time the tuned layers run after the frozen ones in
the embedder's precision (bfloat16 autocast where the CPU has it). Where the embedder's own pass ran on
torch (the worker's batches), the tuned layers continue from its token states out of the frozen layers
(``LocalEmbedder.embed_with_states``): half a pass more per message; where it ran on ONNX Runtime, which
gives the layer's mean only (one text under bfloat16, every call in float32), the frozen layers run again.
It is asked only where the stacked model is unsure (``model.TUNED_BELOW``).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import numpy as np

from learning.analyzer.base import MESSAGE_TYPES as TYPES

TUNED_LAYERS = 3  # the top three of MiniLM's six; the frozen three are the analysis layer's (core.embeddings)
EPOCHS = 4
BATCH = 16
LEARNING_RATE = 5e-5  # the tuned layers
HEAD_LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.01
LABEL_SMOOTHING = 0.0
SEED = 0
PREDICT_BATCH = 64


def has_transformer(embedder: Any) -> bool:
    """Whether the embedder exposes the local sentence-transformers model (``core.embeddings.LocalEmbedder``,
    or an evaluation wrapper that passes it on); a remote embedding backend has none."""
    model = getattr(embedder, "model", None)
    try:
        return model is not None and hasattr(model[0], "auto_model")
    except (TypeError, IndexError, KeyError):
        return False


def _additive_mask(attention_mask: Any, dtype: Any) -> Any:
    """The (batch, 1, 1, tokens) mask a BERT layer adds to its attention scores: 0 for a token, the
    most negative number for padding."""
    import torch  # noqa: PLC0415  heavy: only with the local model

    mask = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


def _unhooked_copy(module: Any) -> Any:
    """A deep copy of a module without the hooks its model put on it: transformers installs output-capturing
    hooks (local functions, which cannot be pickled) on the layers once the whole model has run; the copies
    are called layer by layer and never need them."""
    copied = copy.deepcopy(module)
    for part in copied.modules():
        part._forward_hooks.clear()
        part._forward_pre_hooks.clear()
    return copied


class TunedTypeModel:
    """The top ``TUNED_LAYERS`` layers of the embedder's transformer and a linear head, fitted to the types."""

    def __init__(self, embedder: Any, texts: list[str], labels: list[str]) -> None:
        import torch  # noqa: PLC0415  heavy: only with the local model

        self.embedder = embedder
        bert = self._bert()
        self.top = torch.nn.ModuleList(_unhooked_copy(layer) for layer in bert.encoder.layer[-TUNED_LAYERS:])
        self.head = torch.nn.Linear(bert.config.hidden_size, len(TYPES))
        self._fit(texts, np.array([TYPES.index(label) for label in labels]))

    # -- the shared, frozen part --------------------------------------------------------------------
    def _bert(self) -> Any:
        return self.embedder.model[0].auto_model

    def _bottom(self, texts: list[str]) -> tuple[Any, Any]:
        """The frozen layers' token states and the attention mask of these texts (one padded batch)."""
        bert = self._bert()
        features = self.embedder.model.preprocess(texts)
        hidden = bert.embeddings(input_ids=features["input_ids"], token_type_ids=features.get("token_type_ids"))
        mask = features["attention_mask"]
        additive = _additive_mask(mask, hidden.dtype)
        for layer in bert.encoder.layer[: len(bert.encoder.layer) - TUNED_LAYERS]:
            hidden = self._layer(layer, hidden, additive)
        return hidden, mask

    def _frozen_states(self, texts: list[str]) -> list[Any]:
        """Each text's token states out of the frozen layers, unpadded (in batches of PREDICT_BATCH)."""
        states: list[Any] = []
        for start in range(0, len(texts), PREDICT_BATCH):
            hidden, mask = self._bottom(texts[start : start + PREDICT_BATCH])
            states.extend(h[: int(m.sum())].clone() for h, m in zip(hidden, mask, strict=True))
        return states

    @staticmethod
    def _layer(layer: Any, hidden: Any, additive: Any) -> Any:
        out = layer(hidden, attention_mask=additive)
        return out[0] if isinstance(out, tuple) else out

    def _top(self, hidden: Any, mask: Any) -> Any:
        """The head's logits over the tuned layers' mean-pooled token states."""
        additive = _additive_mask(mask, hidden.dtype)
        for layer in self.top:
            hidden = self._layer(layer, hidden, additive)
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return self.head(pooled.float())

    # -- fitting ------------------------------------------------------------------------------------
    def _fit(self, texts: list[str], y: np.ndarray) -> None:
        import torch  # noqa: PLC0415  heavy: only with the local model

        torch.manual_seed(SEED)
        self.head.reset_parameters()  # seeded: the same fit on the same machine
        # The frozen states of every text, once, unpadded (a training batch pads its own texts).
        with torch.inference_mode():
            states = self._frozen_states(texts)
        counts = np.bincount(y, minlength=len(TYPES))
        # Balanced classes, as the stacked model's; a type a fold lacks weighs nothing.
        weight = torch.tensor(
            np.where(counts > 0, len(y) / (len(TYPES) * np.maximum(counts, 1)), 0.0), dtype=torch.float32
        )
        optimiser = torch.optim.AdamW(
            [
                {"params": self.top.parameters(), "lr": LEARNING_RATE},
                {"params": self.head.parameters(), "lr": HEAD_LEARNING_RATE},
            ],
            weight_decay=WEIGHT_DECAY,
        )
        order_of = np.random.default_rng(SEED)
        targets = torch.tensor(y)
        self.top.train()
        for _ in range(EPOCHS):
            order = order_of.permutation(len(texts))
            for start in range(0, len(order), BATCH):
                batch = order[start : start + BATCH]
                hidden, mask = self._padded([states[i] for i in batch])
                loss = torch.nn.functional.cross_entropy(
                    self._top(hidden, mask), targets[batch], weight=weight, label_smoothing=LABEL_SMOOTHING
                )
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        self.top.eval()
        for parameter in [*self.top.parameters(), *self.head.parameters()]:
            parameter.requires_grad_(False)

    @staticmethod
    def _padded(states: list[Any]) -> tuple[Any, Any]:
        import torch  # noqa: PLC0415  heavy: only with the local model

        hidden = torch.nn.utils.rnn.pad_sequence(states, batch_first=True)
        mask = torch.zeros(hidden.shape[:2], dtype=torch.long)
        for i, state in enumerate(states):
            mask[i, : len(state)] = 1
        return hidden, mask

    # -- reading --------------------------------------------------------------------------------------
    def predict_proba(self, texts: list[str], states: list[Any] | None = None) -> np.ndarray:
        """Each text's probability of each type, in ``TYPES`` order. ``states``: the texts' token states out of the
        frozen layers where the embedder's own pass gave them (``LocalEmbedder.embed_with_states``; None for a text
        it did not): only the tuned layers then run (the frozen ones run here first for the others)."""
        if states is not None and len(states) != len(texts):
            raise ValueError("One token-state tensor per text.")
        import torch  # noqa: PLC0415  heavy: only with the local model

        if not texts:
            return np.zeros((0, len(TYPES)))
        autocast = (
            (lambda: torch.autocast("cpu", dtype=torch.bfloat16))
            if getattr(self.embedder, "precision", "float32") == "bfloat16"
            else contextlib.nullcontext
        )
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding
        probs = np.zeros((len(texts), len(TYPES)))
        with torch.inference_mode(), autocast():
            given = list(states) if states is not None else [None] * len(texts)
            missing = [i for i in order if given[i] is None]
            for i, state in zip(missing, self._frozen_states([texts[i] for i in missing]), strict=True):
                given[i] = state
            for start in range(0, len(order), PREDICT_BATCH):
                chunk = order[start : start + PREDICT_BATCH]
                logits = self._top(*self._padded([given[i] for i in chunk]))
                probs[chunk] = torch.softmax(logits.float(), dim=-1).numpy()
        return probs

    def attach(self, embedder: Any) -> None:
        """Read through this process's embedder (after loading from the store; it is not pickled)."""
        if not has_transformer(embedder):
            raise ValueError("The tuned type model reads the local transformer: give it the local embedder.")
        self.embedder = embedder

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "embedder": None}
