"""One GRPOTrainer step on fix-median with the sealed environment, offline, on CPU. Run
in .venv-trl:

    python trl_grpo_step.py RESULTS_JSON DATASET_DIR OUTPUT_DIR

Everything but the policy's sampling is TRL's: the dataset rows (HarborSpec), the
environments' ``reset``, the tool-calling loop, the reward functions (``sealed_reward``
and the environment's ``get_reward``, which the trainer adds), the NaN handling,
advantages, loss and optimizer step. The model is a random one-layer Qwen3 with a
tokenizer built here (bytes and Qwen3's special tokens, with TRL's own Qwen3 chat
template so that TRL parses the tool calls), whose ``generate`` is scripted: the three
rollouts of the one prompt send the oracle, the plant, and the oracle again, and the
third's sandbox is removed from outside before the rewards are read.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

for name, value in {
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "HF_HUB_OFFLINE": "1",
    "WANDB_DISABLED": "true",
    "OMP_NUM_THREADS": "1",
}.items():
    os.environ.setdefault(name, value)

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.chat_template_utils import qwen3_chat_template  # noqa: E402
from trl.experimental.harbor import HarborSpec  # noqa: E402
from trl_scripted import ORACLE, PLANT, remove_sandbox  # noqa: E402

from cleanroom.integrations.trl_env import SealedHarborBashEnv, sealed_reward  # noqa: E402

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]
# What rollout i of the group sends first; the last one's sandbox is then removed.
FIRST_COMMANDS = [ORACLE, PLANT, ORACLE]
FAULTED = 2


def build_tokenizer() -> PreTrainedTokenizerFast:
    byte_vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=byte_vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    fast.chat_template = qwen3_chat_template  # TRL's own, so that it parses tool calls
    return fast


def tool_call(command: str) -> str:
    call = {"name": "bash", "arguments": {"command": command}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


class ScriptedQwen3(Qwen3ForCausalLM):
    """A random Qwen3 whose sampling is scripted: on the first turn rollout i calls
    ``bash`` with FIRST_COMMANDS[i]; after a tool response it ends its turn, and the
    sandbox of rollout FAULTED is removed from outside (the infrastructure failing)."""

    tokenizer: PreTrainedTokenizerFast
    trainer: GRPOTrainer | None = None
    removed: list[str] = []  # noqa: RUF012 - one run per process

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        replies = []
        for i, ids in enumerate(input_ids.tolist()):
            text = self.tokenizer.decode(ids, skip_special_tokens=False)
            replies.append("Done." if "<tool_response>" in text else tool_call(FIRST_COMMANDS[i]))
        if any(reply == "Done." for reply in replies) and not self.removed:
            assert self.trainer is not None
            self.removed.extend(remove_sandbox(self.trainer.environments[FAULTED]))
        rows = [
            [*self.tokenizer.encode(reply, add_special_tokens=False), self.tokenizer.eos_token_id]
            for reply in replies
        ]
        width = max(map(len, rows))
        padded = [row + [self.tokenizer.pad_token_id] * (width - len(row)) for row in rows]
        return torch.cat([input_ids, torch.tensor(padded, device=input_ids.device)], dim=1)


def nan_to_none(values: list[float]) -> list[float | None]:
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values]


def main(results_path: str, dataset: str, output_dir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokenizer = build_tokenizer()
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=32768,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = ScriptedQwen3(config)
    ScriptedQwen3.tokenizer = tokenizer
    spec = HarborSpec(dataset, agent=SealedHarborBashEnv)
    args = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_steps=1,
        per_device_train_batch_size=len(FIRST_COMMANDS),
        num_generations=len(FIRST_COMMANDS),
        max_completion_length=4096,
        max_tool_calling_iterations=2,
        logging_steps=1,
        save_strategy="no",
        learning_rate=1e-3,
        shuffle_dataset=False,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[sealed_reward],
        args=args,
        train_dataset=spec.train_dataset,
        processing_class=tokenizer,
        environment_factory=spec.environment_factory,
    )
    ScriptedQwen3.trainer = trainer
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    changed = any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    logs = trainer._logs
    results = {
        "tools": [tool.__name__ for tool in trainer.tools],
        "reward_columns": {k: nan_to_none(list(v)) for k, v in logs["rewards"].items()},
        "advantages": list(logs["advantages"]),
        "extra": {k: list(v) for k, v in logs["extra"].items()},
        "log_history": [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in entry.items()}
            for entry in trainer.state.log_history
        ],
        "removed": ScriptedQwen3.removed,
        "weights_changed": changed,
    }
    Path(results_path).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
