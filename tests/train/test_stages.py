from __future__ import annotations

import sys
import time

import pytest
import torch

from nodedp.train import OptimConfig, train_model
from nodedp.train.stages import STRUCTURE, StageRecorder, stage


def test_stage_marks_nothing_without_a_recorder():
    with stage("training"):
        pass  # no recorder: no error, nothing kept


def test_segments_alternate_between_marked_stages_and_structure():
    with StageRecorder() as recorder:
        time.sleep(0.02)
        with stage("training"):
            time.sleep(0.03)
            with stage("evaluation"):  # nested: part of the outer stage
                pass
        with stage("evaluation"):
            pass
    names = [t.stage for t in recorder.timings]
    assert names == [STRUCTURE, "training", STRUCTURE, "evaluation", STRUCTURE]
    totals = recorder.totals()
    assert totals["training"].seconds >= 0.03 and totals[STRUCTURE].seconds >= 0.02
    assert totals[STRUCTURE].seconds == pytest.approx(sum(t.seconds for t in recorder.timings if t.stage == STRUCTURE))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-stage peaks need Linux's /proc/self/clear_refs")
def test_a_stage_that_allocates_shows_a_higher_peak_than_its_start_and_the_next_is_reset():
    with StageRecorder() as recorder, stage("training"):
        block = torch.ones(128 * 2**20 // 4)  # 128 MiB, touched
        del block
    training, after = recorder.timings[1], recorder.timings[2]
    assert training.stage == "training" and training.peak_mib - training.start_mib >= 120
    assert after.peak_mib < training.peak_mib - 100  # the structure segment after it starts from a fresh peak


def test_the_training_loop_is_recorded_as_training():
    model = torch.nn.Linear(3, 2)
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    with StageRecorder() as recorder:
        train_model(
            model,
            batch_fn=lambda idx: (x[idx], y[idx]),
            batches=[torch.arange(8)] * 3,
            optim=OptimConfig(optimizer="sgd", lr=0.1),
            privacy=None,
            generator=torch.Generator(),
            device="cpu",
        )
    assert "training" in recorder.totals()


def test_recorders_do_not_nest():
    with StageRecorder(), pytest.raises(RuntimeError, match="already recording"), StageRecorder():
        pass
