"""Stand-in for Python Lagent's HTTP serving (`lagent/distributed/http_serve/`), for lagent-ts's interop tests
and its HTTP benchmark.

Lagent cannot be installed here (no PyPI), so this script reproduces, on the Debian packages `python3-requests`,
`python3-fastapi` and `python3-uvicorn`, the two ends of Lagent's protocol:

* `client`: the logic of Lagent's `HTTPAgentClient` (`api_server.py`): `__call__(*message, session_id=0, **kwargs)`
  posts `{"message": [str or AgentMessage.model_dump()], "session_id", **kwargs}` to `/chat_completion` with
  `requests`, returns the JSON body as it is when the status is not 200, else `AgentMessage.model_validate(body)`;
  `state_dict(session_id)` gets `/memory/{session_id}`; `is_alive` gets `/health_check`.
* `serve`: the FastAPI app of Lagent's `AgentAPIServer` (`app.py`): `GET /health_check` answers
  `{"status": "success", "timestamp"}`; `POST /chat_completion` reads the JSON body, pops `message`, validates
  every non-string item as an `AgentMessage`, awaits `agent(*message, **body)` and returns the reply (any failure
  is a 500 `{"detail": "Internal Server Error"}`); `GET /memory/{session_id}` (an int) returns
  `agent.state_dict(session_id)`. The agent is a zero-latency mock with Lagent's `Agent` memory behaviour: the
  inputs and the reply are appended to the session's memory, and the state dict is `{"memory": [model_dump()]}`.

`AgentMessage` is Lagent's pydantic model (`lagent/schema.py`): content (any), sender ('user'), formatted,
extra_info, type, receiver (None), stream_state (0).

Usage:
  python3 lagent_http.py serve PORT          prints "ready PORT" once uvicorn listens
  python3 lagent_http.py client URL SCENARIO prints one JSON line with what Lagent's client returned
"""

import json
import sys
import time
from typing import Any, Dict, List, Optional

import pydantic
from pydantic import BaseModel

PYDANTIC_V2 = pydantic.VERSION.startswith('2')


class AgentMessage(BaseModel):
    content: Any
    sender: str = 'user'
    formatted: Optional[Any] = None
    extra_info: Optional[Any] = None
    type: Optional[str] = None
    receiver: Optional[str] = None
    stream_state: int = 0

    # Lagent runs on pydantic 2; Debian's may be 1: the two methods Lagent calls, on either.
    def model_dump(self) -> Dict[str, Any]:  # type: ignore[override]
        return super().model_dump() if PYDANTIC_V2 else self.dict()

    @classmethod
    def model_validate(cls, data: Any) -> 'AgentMessage':  # type: ignore[override]
        return super().model_validate(data) if PYDANTIC_V2 else cls.parse_obj(data)


# --- Lagent's HTTPAgentClient (requests) ---------------------------------------------------------------------


class HTTPAgentClient:

    def __init__(self, host='127.0.0.1', port=8090, timeout=None):
        self.host = host
        self.port = port
        self.timeout = timeout

    @property
    def is_alive(self):
        import requests
        try:
            resp = requests.get(f'http://{self.host}:{self.port}/health_check', timeout=self.timeout)
            return resp.status_code == 200
        except Exception:
            return False

    def __call__(self, *message, session_id: int = 0, **kwargs):
        import requests
        response = requests.post(
            f'http://{self.host}:{self.port}/chat_completion',
            json={
                'message': [m if isinstance(m, str) else m.model_dump() for m in message],
                'session_id': session_id,
                **kwargs,
            },
            headers={'Content-Type': 'application/json'},
            timeout=self.timeout)
        resp = response.json()
        if response.status_code != 200:
            return resp
        return AgentMessage.model_validate(resp)

    def state_dict(self, session_id: int = 0):
        import requests
        resp = requests.get(f'http://{self.host}:{self.port}/memory/{session_id}', timeout=self.timeout)
        return resp.json()


def run_client(url: str, scenario: str) -> Dict[str, Any]:
    from urllib.parse import urlparse
    parsed = urlparse(url)
    client = HTTPAgentClient(parsed.hostname, parsed.port, timeout=10)
    if scenario == 'basic':
        alive = client.is_alive
        first = client('hello', session_id=1)
        second = client(AgentMessage(sender='user', content='and again', extra_info={'k': 1}), session_id=1)
        third = client('other session', session_id=2, max_new_tokens=7)
        return {
            'alive': alive,
            'replies': [first.model_dump(), second.model_dump(), third.model_dump()],
            'types': [type(r).__name__ for r in (first, second, third)],
            'memory1': client.state_dict(1),
            'memory2': client.state_dict(2),
            'memory_unknown': client.state_dict(99),
        }
    if scenario == 'errors':
        failing = client('fail please', session_id=3)
        return {'failing': failing, 'memory3': client.state_dict(3)}
    raise SystemExit(f'unknown scenario {scenario}')


# --- Lagent's app.py (FastAPI) with a zero-latency mock agent --------------------------------------------------


class MockAgent:
    """Lagent's Agent call path with a mock model: memory per session, reply `echo: <last content>`."""

    def __init__(self, name: str = 'MockAgent'):
        self.name = name
        self.memory: Dict[int, List[AgentMessage]] = {}
        self.kwargs_seen: List[Dict[str, Any]] = []

    async def __call__(self, *message, session_id=0, **kwargs) -> AgentMessage:
        message = [AgentMessage(sender='user', content=m) if isinstance(m, str) else m.copy(deep=True)
                   for m in message]
        if message and message[-1].content == 'fail please':
            raise RuntimeError('the mock agent was told to fail')
        memory = self.memory.setdefault(session_id, [])
        memory.extend(message)
        self.kwargs_seen.append(kwargs)
        last = message[-1].content if message else ''
        reply = AgentMessage(sender=self.name, content=f'echo: {last}')
        memory.append(reply)
        return reply.copy(deep=True)

    def state_dict(self, session_id=0):
        return {'memory': [m.model_dump() for m in self.memory.get(session_id, [])]}


def build_app(agent: MockAgent):
    import logging

    from fastapi import FastAPI, HTTPException
    from fastapi.requests import Request

    app = FastAPI(docs_url='/')

    def heartbeat():
        return {'status': 'success', 'timestamp': time.time()}

    async def process_message(request: Request):
        try:
            body = await request.json()
            message = [m if isinstance(m, str) else AgentMessage.model_validate(m) for m in body.pop('message')]
            result = await agent(*message, **body)
            return result
        except Exception as e:
            logging.error(f'Error processing message: {str(e)}')
            raise HTTPException(status_code=500, detail='Internal Server Error')

    def get_memory(session_id: int = 0):
        try:
            return agent.state_dict(session_id)
        except KeyError:
            raise HTTPException(status_code=404, detail='Session ID not found')

    def kwargs_seen():
        return agent.kwargs_seen

    app.add_api_route('/health_check', heartbeat, methods=['GET'])
    app.add_api_route('/chat_completion', process_message, methods=['POST'])
    app.add_api_route('/memory/{session_id}', get_memory, methods=['GET'])
    # Not Lagent's: lets the test see which keyword arguments reached the agent.
    app.add_api_route('/test/kwargs', kwargs_seen, methods=['GET'])
    return app


def serve(port: int) -> None:
    import asyncio
    import logging

    import uvicorn

    logging.basicConfig(level=logging.CRITICAL)
    config = uvicorn.Config(build_app(MockAgent()), host='127.0.0.1', port=port, log_level='critical',
                            access_log=False)
    server = uvicorn.Server(config)

    async def main():
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        print(f'ready {port}', flush=True)
        await task

    asyncio.run(main())


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'serve':
        serve(int(sys.argv[2]))
    elif len(sys.argv) >= 4 and sys.argv[1] == 'client':
        print(json.dumps(run_client(sys.argv[2], sys.argv[3])), flush=True)
    else:
        raise SystemExit(__doc__)
