"""Chat templates for instruct executors: the prompt is the user message, the transcript the assistant's unfinished
message, as in Search-R1's inference; base models keep the raw text.

The tiny random model has no chat template, so a copy of it gets a Qwen2.5-style ChatML template (the executor of
the steering paper is Qwen2.5-7B-Instruct). The rendered prompts are compared with the tokenizer's own
``apply_chat_template`` output; a recording wrapper around the real backend shows what the model was given.
"""

import json
import shutil
import urllib.error
import urllib.request

import pytest

from steer_envs.data import load_tasks
from steer_envs.errors import SteerEnvsError
from steer_envs.executors.base import ExecutorContext, Intervention
from steer_envs.executors.chat import TemplateFormat, chat_messages, resolve_chat_format
from steer_envs.executors.llm_search import PACKAGED_DEFAULTS, LLMSearchSettings
from steer_envs.executors.registry import make_executor
from steer_envs.llm.base import GenerationConfig
from steer_envs.llm.openai_client import chat_request_fields
from tests.llm.support import ScriptedBackend
from tests.servers.openai_server import OpenAICompatibleServer

#: Qwen2.5-Instruct's template without the tool branches: a default system message, ChatML turns
QWEN_CHATML = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message.role == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
END_OF_TURN = "<|im_end|>"
SEARCH = "<think> I should look this up. </think>\n<search> capital of france </search> never seen"
ANSWER = "<think> The results say Paris. </think>\n<answer> Paris </answer>"


@pytest.fixture(scope="module")
def chat_model_dir(tiny_model_dir, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """A copy of the tiny model whose tokenizer carries a ChatML chat template (an 'instruct' tiny model)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tiny_chat") / "model"
    shutil.copytree(tiny_model_dir, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    tokenizer.chat_template = QWEN_CHATML
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def chat_tokenizer(chat_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(chat_model_dir, local_files_only=True)


@pytest.fixture(scope="module")
def chat_backend(chat_model_dir):
    from steer_envs.llm.hf import HFBackend

    return HFBackend(chat_model_dir)


@pytest.fixture()
def task(mini_data_dir):
    return next(t for t in load_tasks(["nq"], split="train", data_dir=mini_data_dir) if t.id == "nq/mini2")


class Recording:
    """A real backend whose ``generate`` prompts are recorded: exactly the text the model was given."""

    def __init__(self, inner):
        self.inner = inner
        self.prompts: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, prompts, config):
        self.prompts.extend(prompts)
        return self.inner.generate(prompts, config)


class ScriptedChat(ScriptedBackend):
    """Scripted replies (exact protocol cases a random model never writes on demand) behind a real tokenizer
    with a chat template; the real-model tests below run beside it."""

    def __init__(self, replies, tokenizer):
        super().__init__(replies)
        self.tokenizer = tokenizer


def template_continuation(tokenizer, prompt, transcript):
    """The template's own output for the conversation so far, the assistant's message left open."""
    if not transcript:
        return tokenizer.apply_chat_template(chat_messages(prompt, ""), tokenize=False, add_generation_prompt=True)
    return tokenizer.apply_chat_template(chat_messages(prompt, transcript), tokenize=False, continue_final_message=True)


def context(data_dir, **extra):
    return ExecutorContext(data_dir=str(data_dir), max_turns=4, extra=extra)


# -- (a) the rendered prompt is the template's output ---------------------------------------------------------
def test_first_turn_on_a_real_model_reads_the_templates_generation_prompt(
    mini_data_dir, task, chat_backend, chat_tokenizer
):
    backend = Recording(chat_backend)
    ex = make_executor("hf:chat?max_new_tokens=4&temperature=0", context(mini_data_dir, backend=backend))
    assert ex.settings.chat_template == "auto" and ex.chat_format.name == "chat-template"
    ex.reset(task, seed=0)
    expected = chat_tokenizer.apply_chat_template(
        [{"role": "user", "content": ex.prompt}], tokenize=False, add_generation_prompt=True
    )
    assert ex.context == expected
    assert expected.endswith(f"Question: {task.question}\n{END_OF_TURN}\n<|im_start|>assistant\n")
    ex.step()
    assert backend.prompts == [expected]  # what the model was given, not only what the executor shows


def test_chat_mode_reproduces_search_r1s_recorded_instruct_prompts(shared_data_dir, chat_tokenizer):
    """Search-R1's instruct checkpoint was run with Qwen2.5's chat template: its 125 recorded prompts are exactly
    what the executor's chat mode renders from the search-r1 template, byte for byte."""
    from steer_envs.data import load_rollouts
    from steer_envs.executors.prompts import get_prompt_template

    fmt = resolve_chat_format("auto", ScriptedChat(["x"], chat_tokenizer))
    rows = list(load_rollouts("search_r1_instruct", data_dir=shared_data_dir))
    assert len(rows) == 125 and isinstance(fmt, TemplateFormat)
    for row in rows:
        prompt = get_prompt_template("search-r1").render(row.question)
        assert fmt.context(prompt, "") == row.prompt
        assert fmt.context(prompt, row.response) == row.prompt + row.response  # the search, one open turn


def test_after_a_search_information_and_an_intervention_the_prompt_is_the_templates_output(
    mini_data_dir, task, chat_tokenizer
):
    backend = ScriptedChat([SEARCH, ANSWER, ANSWER], chat_tokenizer)
    ex = make_executor("hf:scripted", context(mini_data_dir, backend=backend))
    ex.reset(task, seed=1)
    first = ex.step()
    assert first.kind == "search" and "<information>" in first.observation
    ex.intervene(Intervention("note", "Check the second entity."))
    before_second = ex.transcript
    ex.step()
    assert ex.done and ex.answer == "Paris"
    ex.intervene(Intervention("reject", "Wrong city."))
    before_third = ex.transcript
    ex.step()
    assert backend.calls == [
        template_continuation(chat_tokenizer, ex.prompt, t) for t in ("", before_second, before_third)
    ]
    assert "<guidance> Check the second entity. </guidance>" in backend.calls[1]
    assert "Your answer was rejected. Wrong city." in backend.calls[2]


# -- (b) the transcript continues inside the open assistant turn --------------------------------------------
def test_chat_continuation_keeps_the_transcript_in_the_assistant_turn(mini_data_dir, task, chat_backend):
    backend = Recording(chat_backend)
    ex = make_executor(
        "hf:chat?max_new_tokens=6&temperature=0&template=asearcher", context(mini_data_dir, backend=backend)
    )
    ex.reset(task, seed=0)
    opening = ex.context
    transcripts = []
    while not ex.done:
        transcripts.append(ex.transcript)
        ex.step()
        if len(transcripts) == 1:  # a note before the second turn (a rejection, had it answered): it stays in the
            ex.intervene(Intervention("reject" if ex.done else "note", "Search for the second entity."))  # turn too
    assert len(backend.prompts) == len(transcripts) >= 2
    for sent, transcript in zip(backend.prompts, transcripts):
        assert sent == opening + transcript  # the transcript verbatim, right after the assistant header
        assert sent.count(END_OF_TURN) == 2  # system and user turns closed; the assistant's never
        assert not sent.endswith(END_OF_TURN + "\n")
    assert "Search for the second entity." in backend.prompts[1]
    # the old api=chat way (prompt + transcript as one user message) would have closed the turn and opened a new one
    wrong = chat_backend.render_chat([{"role": "user", "content": ex.prompt + transcripts[1]}])
    assert wrong != backend.prompts[1] and wrong.endswith("<|im_start|>assistant\n")


def test_forks_share_the_chat_format_and_render_their_own_transcript(mini_data_dir, task, chat_tokenizer):
    ex = make_executor("hf:scripted", context(mini_data_dir, backend=ScriptedChat([SEARCH, ANSWER], chat_tokenizer)))
    ex.reset(task, seed=2)
    ex.step()
    fork = ex.fork()
    fork.intervene(Intervention("note", "only in the fork"))
    assert fork.chat_format is ex.chat_format
    assert fork.context.endswith("only in the fork </guidance>\n") and "only in the fork" not in ex.context


# -- (c) base models keep completions mode -------------------------------------------------------------------
def test_base_models_keep_the_raw_text(mini_data_dir, task, tiny_backend, chat_backend):  # noqa: F811
    backend = Recording(tiny_backend)
    assert not getattr(backend.tokenizer, "chat_template", None)
    ex = make_executor("hf:base?max_new_tokens=4&temperature=0", context(mini_data_dir, backend=backend))
    assert ex.chat_format.name == "completions"
    ex.reset(task, seed=0)
    ex.step()
    ex.step()
    assert backend.prompts[0] == ex.prompt and backend.prompts[0].startswith("Answer the given question.")
    assert backend.prompts[1] == ex.prompt + ex.history[0].segment + ex.history[0].observation
    # an instruct model with chat_template=off reads the raw text too
    off = make_executor("hf:chat?chat_template=off", context(mini_data_dir, backend=chat_backend))
    off.reset(task)
    assert off.chat_format.name == "completions" and off.context == off.prompt
    # the packaged Gemma is a base model: completions mode whatever its tokenizer carries
    assert PACKAGED_DEFAULTS["gemma-3-270m"]["chat_template"] == "off"


def test_chat_template_setting_errors_say_what_to_do(mini_data_dir, tiny_model_dir):  # noqa: F811
    from steer_envs.llm.hf import HFBackend

    with pytest.raises(SteerEnvsError, match="auto, on, off"):
        LLMSearchSettings(chat_template="maybe")
    assert LLMSearchSettings(chat_template=True).chat_template == "on"  # ?chat_template=true
    with pytest.raises(SteerEnvsError, match="no chat template.*tokenizer=<folder>"):
        resolve_chat_format("on", HFBackend(tiny_model_dir))
    with pytest.raises(SteerEnvsError, match="has no chat template"):
        resolve_chat_format("on", ScriptedBackend(["x"]), tokenizer=str(tiny_model_dir))
    with pytest.raises(SteerEnvsError, match="no such folder"):
        resolve_chat_format("on", ScriptedBackend(["x"]), tokenizer=str(tiny_model_dir / "missing"))


def test_a_template_that_writes_bos_is_sent_with_one_bos(chat_model_dir, tmp_path):
    """Llama-3-style templates start with the BOS token that the tokenizer also adds on encoding."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(chat_model_dir, local_files_only=True)
    bos = tok.bos_token
    tok._tokenizer.post_processor = TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.bos_token_id)])
    tok.chat_template = "{{- bos_token }}" + QWEN_CHATML
    fmt = TemplateFormat(tok, "test")
    assert tok("a").input_ids[0] == tok.bos_token_id  # this tokenizer adds a BOS itself
    rendered = fmt.context("Question: q\n", "<think> a </think>")
    assert rendered == template_continuation(tok, "Question: q\n", "<think> a </think>") and rendered.startswith(bos)
    ids = tok(fmt.model_input("Question: q\n", "<think> a </think>")).input_ids
    assert ids[0] == tok.bos_token_id and ids[1] != tok.bos_token_id
    # a tokenizer that adds none keeps the template's BOS
    plain = AutoTokenizer.from_pretrained(chat_model_dir, local_files_only=True)
    plain.chat_template = tok.chat_template
    assert TemplateFormat(plain, "test").model_input("q", "") == TemplateFormat(plain, "test").context("q", "")


# -- (d) openai: the chat API with the partial assistant message, or a locally rendered completion -----------
def test_openai_chat_path_sends_the_partial_assistant_message(mini_data_dir, task, chat_backend, chat_tokenizer):
    backend = Recording(chat_backend)
    with OpenAICompatibleServer(backend, model_name="tiny-chat") as server:
        ex = make_executor(f"{server.spec}?chat_template=on&max_new_tokens=6&temperature=0", context(mini_data_dir))
        assert ex.chat_format.name == "server-chat"
        ex.reset(task, seed=0)
        ex.step()
        ex.intervene(Intervention("reject" if ex.done else "note", "Check the second entity."))
        transcript = ex.transcript
        ex.step()
        assert server.requests_served == 2
    # the server rendered the conversation with the partial assistant message continued, exactly as the
    # template's continue_final_message does: the model read the transcript inside its own open turn
    assert backend.prompts == [template_continuation(chat_tokenizer, ex.prompt, t) for t in ("", transcript)]
    assert backend.prompts[1].endswith("<|im_start|>assistant\n" + transcript)
    assert chat_request_fields(chat_messages(ex.prompt, transcript)) == {
        "messages": [{"role": "user", "content": ex.prompt}, {"role": "assistant", "content": transcript}],
        "continue_final_message": True,
        "add_generation_prompt": False,
    }
    assert chat_request_fields(ex.prompt) == {"messages": [{"role": "user", "content": ex.prompt}]}


def test_openai_with_a_local_tokenizer_sends_the_rendered_template_as_a_completion(
    mini_data_dir, task, chat_backend, chat_model_dir, chat_tokenizer
):
    backend = Recording(chat_backend)
    with OpenAICompatibleServer(backend, model_name="tiny-chat") as server:
        ex = make_executor(
            f"{server.spec}?tokenizer={chat_model_dir}&max_new_tokens=4&temperature=0", context(mini_data_dir)
        )
        assert ex.chat_format.name == "chat-template"  # auto: the given tokenizer has a template
        ex.reset(task, seed=0)
        ex.step()
        # a chat-only server (api=chat) gets the conversation, never a template wrapped in a second one
        chat_only = make_executor(f"{server.spec}?api=chat&tokenizer={chat_model_dir}", context(mini_data_dir))
        assert chat_only.chat_format.name == "server-chat"
    assert backend.prompts == [template_continuation(chat_tokenizer, ex.prompt, "")]


def test_the_loopback_server_checks_continue_final_message_like_vllm(chat_backend):
    with OpenAICompatibleServer(chat_backend, model_name="tiny-chat") as server:

        def post(body):
            request = urllib.request.Request(
                f"{server.base_url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        user_only = [{"role": "user", "content": "q"}]
        status, reply = post({"messages": user_only, "continue_final_message": True, "max_tokens": 2})
        assert status == 400 and "must be the assistant's" in reply["error"]["message"]
        both = user_only + [{"role": "assistant", "content": "<think>"}]
        status, reply = post({"messages": both, "continue_final_message": True, "add_generation_prompt": True})
        assert status == 400 and "at most one" in reply["error"]["message"]
        status, reply = post(
            {
                "messages": both,
                "continue_final_message": True,
                "add_generation_prompt": False,
                "max_tokens": 2,
                "temperature": 0,
            }
        )
        assert status == 200 and isinstance(reply["choices"][0]["message"]["content"], str)
        # generate_chat of the client: one reply per conversation, continued or not
        from steer_envs.llm.openai_client import OpenAIBackend

        client = OpenAIBackend("tiny-chat", server.base_url)
        gens = client.generate_chat([user_only, both], GenerationConfig(max_new_tokens=2))
        client.close()
    assert len(gens) == 2 and all(g.tokens >= 1 for g in gens)
