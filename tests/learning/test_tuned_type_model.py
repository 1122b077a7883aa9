"""The type model's second reader: MiniLM's top layers fine-tuned to the message type
(learning.analyzer.tuned), read beside the stacked model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from learning.analyzer.model import TUNED_BELOW, TUNED_WEIGHT, TYPES, embed_turns, fit_models, has_context, load_rows
from learning.analyzer.tuned import TUNED_LAYERS, TunedTypeModel, _additive_mask, has_transformer


@pytest.fixture(scope="module")
def small_rows():
    """Every sixth labelled line: enough to fit in seconds, every type present."""
    rows = load_rows()[::6]
    assert {r["type"] for r in rows} == set(TYPES)
    return rows


@pytest.fixture(scope="module")
def tuned(embedder, small_rows):
    return TunedTypeModel(embedder, [r["text"] for r in small_rows], [r["type"] for r in small_rows])


def test_the_frozen_layers_and_the_copied_top_give_the_transformers_own_states(embedder):
    """Before any fitting, the shared bottom run layer by layer and copies of the top layers give what
    the whole transformer gives: the tuned reader starts from the embedder's own network."""
    import copy  # noqa: PLC0415

    import torch  # noqa: PLC0415

    model = TunedTypeModel.__new__(TunedTypeModel)
    model.embedder = embedder
    bert = model._bert()
    texts = ["Always answer in Spanish.", "No, the Tuesday one, not the Monday you put in the earlier draft."]
    with torch.inference_mode():
        hidden, mask = model._bottom(texts)
        for layer in copy.deepcopy(bert.encoder.layer[-TUNED_LAYERS:]):
            hidden = model._layer(layer, hidden, _additive_mask(mask, hidden.dtype))
        features = embedder.model.preprocess(texts)
        whole = bert(
            input_ids=features["input_ids"],
            attention_mask=features["attention_mask"],
            token_type_ids=features.get("token_type_ids"),
        ).last_hidden_state
    real = mask.unsqueeze(-1).bool()
    assert torch.allclose(hidden.masked_select(real), whole.masked_select(real), atol=1e-5)


def test_a_fit_is_deterministic_and_leaves_the_embedders_transformer_alone(embedder, small_rows, tuned):
    import torch  # noqa: PLC0415

    before = {name: value.clone() for name, value in embedder.model.state_dict().items()}
    again = TunedTypeModel(embedder, [r["text"] for r in small_rows], [r["type"] for r in small_rows])
    texts = ["From now on, reply in French.", "That's wrong, the invoice was for March."]
    assert np.array_equal(tuned.predict_proba(texts), again.predict_proba(texts))
    after = embedder.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_the_tuned_reader_learns_the_types_on_lines_it_was_not_fitted_on(embedder, small_rows, tuned):
    """Fitted on a sixth of the labelled lines, it reads the others better than chance by far
    (five types: chance is 0.2)."""
    fitted = {r["text"] for r in small_rows}
    others = [r for r in load_rows() if r["text"] not in fitted][::5]
    probs = tuned.predict_proba([r["text"] for r in others])
    assert probs.shape == (len(others), len(TYPES))
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    accuracy = np.mean([TYPES[int(np.argmax(p))] == r["type"] for p, r in zip(probs, others, strict=True)])
    assert accuracy > 0.5, accuracy


def test_the_tuned_reader_is_stored_without_the_transformer_and_attached_again(embedder, tuned):
    restored = pickle.loads(pickle.dumps(tuned))  # noqa: S301  our own bytes
    assert restored.embedder is None
    restored.attach(embedder)
    texts = ["Please keep answers short from now on."]
    assert np.array_equal(restored.predict_proba(texts), tuned.predict_proba(texts))
    with pytest.raises(ValueError, match="local transformer"):
        restored.attach(object())


def test_the_type_probabilities_are_a_weighted_geometric_mean_of_both_readers(analyzer):
    """The shipped models read both where the stacked model is unsure: its probabilities and the tuned layers',
    combined as a normalised geometric mean in which the tuned reader has TUNED_WEIGHT of the log; where the
    stacked model is at least TUNED_BELOW sure, and at weight 0, the stacked model alone."""
    from learning.analyzer.features import Turn  # noqa: PLC0415

    models = analyzer.models
    assert models.tuned is not None
    assert 0 < TUNED_WEIGHT < 1
    texts = [
        ("Replies in French for me please.", ""),
        ("No, the Tuesday one.", "I booked Monday."),
        ("the invoice thing again", ""),
        ("hmm, maybe shorter", "Here is the summary of the report in five paragraphs."),
        ("I prefer Celsius.", ""),
        ("Thanks!", ""),
    ]
    turns = [Turn(text, previous) for text, previous in texts]
    embedded = embed_turns(analyzer.embedder, turns)
    stacked = models.type_model.predict_proba(models.features(turns, embedded), has_context(turns))
    tuned = models.tuned.predict_proba([t.text for t in turns])[
        :, [TYPES.index(str(c)) for c in models.type_model.classes_]
    ]
    mixed = stacked ** (1 - TUNED_WEIGHT) * tuned**TUNED_WEIGHT
    mixed /= mixed.sum(axis=1, keepdims=True)
    unsure = stacked.max(axis=1) < TUNED_BELOW
    assert unsure.any()
    assert (~unsure).any()
    expected = np.where(unsure[:, None], mixed, stacked)
    assert np.allclose(models.type_probabilities(turns, embedded), expected, atol=1e-3)
    assert np.allclose(models.type_probabilities(turns, embedded, tuned_weight=0.0), stacked, atol=1e-5)


def test_a_rule_for_later_is_read_by_the_stacked_model_alone(analyzer):
    """The marker of a rule for later is a cue of the stacked model, which the tuned reader does not see."""
    from learning.analyzer.features import Turn  # noqa: PLC0415

    models = analyzer.models
    turns = [Turn("Could you answer in Spanish from now on?", "")]
    embedded = embed_turns(analyzer.embedder, turns)
    stacked = models.type_model.predict_proba(models.features(turns, embedded), has_context(turns))
    assert np.allclose(models.type_probabilities(turns, embedded), stacked, atol=1e-5)


def test_only_the_local_transformer_is_tuned(analyzer, small_rows):
    class SentenceOnly:
        dimensions = 384

        def embed(self, texts):
            return analyzer.embedder.embed(texts)

    assert has_transformer(analyzer.embedder)
    assert not has_transformer(SentenceOnly())
    assert fit_models(SentenceOnly(), small_rows, steering=analyzer.models.steering).tuned is None
    assert fit_models(analyzer.embedder, small_rows, steering=analyzer.models.steering, tuned=False).tuned is None


def test_the_tuned_layers_are_copied_without_the_models_hooks(embedder):
    """transformers puts output-capturing hooks (local functions, not picklable) on the layers once the whole
    model has run; the tuned copies leave them behind, so the fit can be stored whatever ran before it."""
    from learning.analyzer.tuned import _unhooked_copy  # noqa: PLC0415

    layer = embedder.model[0].auto_model.encoder.layer[-1]

    def hook(module, inputs, output):  # a local function, as transformers' own
        return None

    handle = layer.attention.register_forward_hook(hook)
    try:
        copied = _unhooked_copy(layer)
        assert not any(part._forward_hooks for part in copied.modules())
        pickle.dumps(copied)
    finally:
        handle.remove()


def test_the_tuned_layers_continue_from_the_embedders_own_pass(embedder, tuned):
    """Where the embedder's pass ran on torch it hands over the analysis layer's token states, and the tuned
    reader reads the same from them as when it runs the frozen layers itself (the worker's batches take
    this path: half a pass per message instead of a whole one)."""
    from learning.analyzer.model import embed_texts_with_layer, embed_texts_with_states  # noqa: PLC0415

    texts = [
        "Please keep answers short from now on.",
        "That's wrong, the invoice was for March.",
        "I'm allergic to penicillin.",
        "Write the toast for Sunday.",
    ]
    vectors, layers, states = embed_texts_with_states(embedder, texts)
    assert states is not None
    assert len(states) == len(texts)
    if all(s is None for s in states):  # every call on ONNX Runtime (a CPU without bfloat16): the layer's mean only
        assert embedder.onnx is not None
        pytest.skip("the embedder's passes ran on ONNX Runtime here")
    assert [len(s) for s in states] == [int(sum(m)) for m in embedder.model.preprocess(texts)["attention_mask"]]
    assert np.allclose(tuned.predict_proba(texts, states=states), tuned.predict_proba(texts), atol=1e-3)
    plain_vectors, plain_layers = embed_texts_with_layer(embedder, texts)
    assert np.array_equal(vectors, plain_vectors)
    assert np.array_equal(layers, plain_layers)
    with pytest.raises(ValueError, match="per text"):
        tuned.predict_proba(texts, states=states[:2])


def test_texts_the_embedder_gave_no_states_for_get_their_frozen_layers_run_beside_the_others(tuned):
    """Under bfloat16 a chunk of one text runs on ONNX Runtime, which gives no token states: the other texts'
    states are still used, and the tuned reader runs the frozen layers for the ones without."""
    import torch  # noqa: PLC0415

    texts = [
        "Please keep answers short from now on.",
        "That's wrong, the invoice was for March.",
        "I'm allergic to penicillin.",
        "Write the toast for Sunday.",
    ]
    with torch.inference_mode():
        states = tuned._frozen_states(texts)
    mixed = [states[0], None, states[2], None]
    assert np.allclose(tuned.predict_proba(texts, states=mixed), tuned.predict_proba(texts), atol=1e-3)
    assert np.allclose(tuned.predict_proba(texts, states=[None] * 4), tuned.predict_proba(texts), atol=1e-6)
