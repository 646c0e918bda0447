"""Properties of both servers under generated input: no 5xx, and a JSON error body on every 4xx. Schemathesis
generates requests from each server's own OpenAPI schema (valid and invalid ones, a small fixed budget per
operation); hypothesis generates WebSocket frames (hostile text, JSON of any shape) for ``serve-env``."""

from __future__ import annotations

import json

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from steer_envs.retrieval.base import Hit
from steer_envs.retrieval.server import ServerConfig, start_server
from tests.hostile import hostile_text

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("openenv")
ws_client = pytest.importorskip("websockets.sync.client")

from schemathesis.generation.modes import GenerationMode  # noqa: E402

from steer_envs.integrations.openenv import EnvServer, EnvServerConfig  # noqa: E402

EXAMPLES = 15  # per operation and mode: a fixed, small budget (2 busy cores)
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


class OneHitRetriever:
    name = "one-hit"

    def batch_search(self, queries, k):
        return [[Hit(id="0", title="Title", text="text", score=1.0)] * k for _ in queries]


@pytest.fixture(scope="module")
def retriever_url():
    srv, thread = start_server(OneHitRetriever(), None, ServerConfig(port=0))
    yield srv.url
    srv.shutdown()
    srv.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def env_url():
    srv = EnvServer(
        EnvServerConfig("steer_envs/GuidedSearch-v0", {"action_mode": "text"}, port=0, max_sessions=4)
    ).start()
    yield srv.url
    srv.shutdown()
    srv.server_close()


def _assert_well_answered(response) -> None:
    assert response.status_code < 500, (response.request.method, response.request.url, response.text[:300])
    if response.status_code >= 400:
        assert isinstance(response.json(), dict), response.text[:300]


def _fuzz_schema(url: str, skip: frozenset[str] = frozenset()) -> int:
    schema = schemathesis.openapi.from_dict(requests.get(url + "/openapi.json", timeout=30).json())
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in skip:
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @FUZZ
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case):
                _assert_well_answered(case.call(base_url=url, timeout=60))

            try:
                check()
            except Unsatisfiable:  # nothing invalid to send (an operation without parameters or body)
                assert mode is GenerationMode.NEGATIVE
        operations += 1
    return operations


def test_the_retrieval_server_never_answers_5xx(retriever_url):
    assert _fuzz_schema(retriever_url) >= 3


def test_the_env_server_never_answers_5xx(env_url):
    # the session routes need a live session id (a made-up one is a 404, fuzzed here too)
    assert _fuzz_schema(env_url) >= 8


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=12,
)
messages = st.one_of(
    hostile_text,
    json_values.map(json.dumps),
    st.fixed_dictionaries({"type": st.sampled_from(["reset", "step", "state", "nope"]), "data": json_values}).map(
        json.dumps
    ),
    st.fixed_dictionaries({"type": st.just("step"), "data": st.fixed_dictionaries({"action": json_values})}).map(
        lambda m: json.dumps(m, ensure_ascii=False) if "\ud800" not in str(m) else json.dumps(m)
    ),
    st.binary(max_size=64),
)


def test_websocket_frames_get_an_answer_and_the_session_stays_usable(env_url):
    with ws_client.connect(env_url.replace("http://", "ws://") + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"

        @settings(
            max_examples=40, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
        )
        @given(frame=messages)
        def check(frame):
            if isinstance(frame, str) and '"type": "reset"' in frame:
                return  # a reset with random options may pick any task: valid, but slow on 2 cores
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=60))
            assert isinstance(reply, dict) and reply.get("type") in {"observation", "state", "error"}, reply
            if reply["type"] == "error":
                assert isinstance(reply["data"].get("message"), str) and reply["data"]["message"]

        check()
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"


def _json_error_body(response) -> None:
    if 400 <= response.status_code < 500:
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("detail"), str) and body["detail"], response.text[:300]


@pytest.mark.slow
def test_env_sessions_chained_statefully(env_url):
    """Schemathesis' stateful run over the session routes, chained by the schema's OpenAPI links (POST /sessions ->
    reset / step / state / DELETE of that session id): no 5xx, a JSON ``detail`` on every 4xx, every answer as its
    schema says, and a deleted session never answers 2xx again."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        response_schema_conformance,
        use_after_free,
    )

    raw = requests.get(env_url + "/openapi.json", timeout=30).json()
    links = raw["paths"]["/sessions"]["post"]["responses"]["201"]["links"]
    assert set(links) == {"reset_session", "step_session", "session_state", "delete_session"}
    schema = schemathesis.openapi.from_dict(raw).include(path_regex="^/sessions")
    calls: list[tuple[str, int]] = []

    class Sessions(schema.as_state_machine()):
        def setup(self):
            self.created: list[str] = []
            self.deleted: set[str] = set()

        def call(self, case, **kwargs):
            return case.call(base_url=env_url, timeout=60, **kwargs)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            calls.append((case.operation.label, response.status_code))
            _json_error_body(response)
            session_id = (case.path_parameters or {}).get("session_id")
            if session_id in self.deleted:  # 404, or 413/422 for a body refused before the session is looked up
                assert response.status_code in (404, 413, 422), (case.operation.label, response.text[:200])
            if (
                case.operation.method.upper() == "POST"
                and case.operation.path == "/sessions"
                and response.status_code == 201
            ):
                self.created.append(response.json()["session_id"])
            if case.operation.method.upper() == "DELETE" and response.status_code == 204:
                self.deleted.add(session_id)
            case.validate_response(
                response,
                checks=[not_a_server_error, response_schema_conformance, use_after_free],
                transport_kwargs=kwargs or None,
                recorder=getattr(self, "recorder", None),
            )

        def teardown(self):
            for session_id in set(self.created) - self.deleted:
                requests.delete(f"{env_url}/sessions/{session_id}", timeout=30)

    Sessions.run(
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=6,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
    )
    chained = {label for label, status in calls if status < 400 and "{session_id}" in label}
    assert {"POST /sessions/{session_id}/reset", "DELETE /sessions/{session_id}"} <= chained, sorted(set(calls))
