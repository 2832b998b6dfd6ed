"""What a training job's log says while it runs: one line every `logging_steps` optimizer steps with the step
of the total, the time elapsed, the input tokens per second and the time left, then the Trainer's own figures
(loss, learning rate); an evaluation in one line; no progress bars (Hugging Face's printed dicts and its
"Writing model shards" bar at each save replaced).

    step 150/600 (25%), 1m 02s elapsed, 5,612 tokens/s, about 3m 06s left; loss 3.214, learning_rate 0.0004

Tokens are the batches' attention-mask sums, added on the device at each step and read only at a log line,
so counting adds no host synchronisation per step (`lem.core.training.trainer.make_trainer`)."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

# Imported inside functions: transformers (planning imports this package, with the training stages' settings,
# and needs no transformers)

log = logging.getLogger("lem.training")


def duration(seconds: float) -> str:
    """`seconds` as `1h 02m`, `3m 06s` or `42s`."""
    s = max(0, int(round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


def figures(logs: dict[str, Any]) -> str:
    """The Trainer's logged values, `name value` joined (floats to 4 significant digits)."""
    return ", ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in logs.items() if k != "total_flos"
    )


def progress_line(
    step: int, total: int, elapsed: float, tokens_per_s: float | None, left: float | None
) -> str:
    """`step 150/600 (25%), 1m 02s elapsed, 5,612 tokens/s, about 3m 06s left`."""
    share = f" ({step / total:.0%})" if total > 0 else ""
    parts = [f"step {step}/{total if total > 0 else '?'}{share}", f"{duration(elapsed)} elapsed"]
    if tokens_per_s is not None and math.isfinite(tokens_per_s):
        parts.append(f"{tokens_per_s:,.0f} tokens/s")
    if left is not None:
        parts.append(f"about {duration(left)} left")
    return ", ".join(parts)


def progress_callback(trainer: Any) -> Any:
    """A `TrainerCallback` writing the log lines of `trainer` (whose `tokens_seen` counts input tokens)."""
    from transformers import TrainerCallback

    class ProgressLog(TrainerCallback):
        def __init__(self) -> None:
            self.start = self.last = time.monotonic()
            self.first_step = self.last_step = 0
            self.last_tokens = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = self.last = time.monotonic()
            self.first_step = self.last_step = state.global_step  # a resumed run counts from its checkpoint
            self.last_tokens = tokens(trainer)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero:
                return
            logs = dict(logs or {})
            now, step, total = time.monotonic(), state.global_step, state.max_steps
            if any(k.startswith("eval_") for k in logs):
                log.info("evaluation at step %d/%d: %s", step, total, figures(logs))
                return
            if "train_runtime" in logs:
                log.info(
                    "trained to step %d/%d in %s: %s", step, total, duration(now - self.start), figures(logs)
                )
                return
            seen = tokens(trainer)
            window = now - self.last
            rate = (seen - self.last_tokens) * args.world_size / window if window > 0 and seen else None
            done = step - self.first_step
            left = (now - self.start) / done * (total - step) if done > 0 and total >= step else None
            line = progress_line(step, total, now - self.start, rate, left)
            if logs:
                line = f"{line}; {figures(logs)}"
            log.info("%s", line)
            self.last, self.last_step, self.last_tokens = now, step, seen

    return ProgressLog()


def tokens(trainer: Any) -> float:
    """The input tokens `trainer` has trained on in this process (read from the device now)."""
    seen = getattr(trainer, "tokens_seen", None)
    return 0.0 if seen is None else float(seen)


def quiet_progress_bars() -> None:
    """No Hugging Face progress bar (weights written at each save, loaded at the end): a job's log is lines."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
