"""Stand-in for Python Lagent's state-dict load / continue / save path, for lagent-ts's interop test.

Lagent cannot be installed in CI (no PyPI), so this script re-implements, with the standard library only,
the parts of Lagent (InternLM/lagent, `lagent/schema.py`, `lagent/memory/base_memory.py`,
`lagent/agents/agent.py`, `lagent/agents/aggregator/tool_aggregator.py`,
`lagent/prompts/parsers/tool_parser.py`) that a saved state dict goes through:

* `Agent.load_state_dict`: every key of the agent tree must be present (else `KeyError`), extra keys are
  ignored, and every saved message becomes an `AgentMessage(**message)`. That pydantic model has the fields
  content (required), sender (str, default 'user'), formatted, extra_info, type and receiver (str or None),
  and stream_state (a ModelStatusCode / AgentStatusCode value); unknown keys (`extraInfo`, `streamState`)
  are silently dropped.
* `InternLMToolAggregator.aggregate` with a `MixedToolParser`: the agent's own turns are rebuilt from
  `formatted['status']`, `formatted['tool_type']`, `formatted['thought']` and `formatted['action']`; other
  senders become environment turns named after the last tool type.
* continuing: a model reply parsed by the `MixedToolParser` and a tool result as an `ActionReturn` are added.
* `Agent.state_dict`: `AgentMessage.model_dump()`, an `ActionReturn` dumped as the dict of its eight fields.

Protocol: one JSON request on stdin, one JSON answer on stdout. A Python exception (as Lagent would raise)
exits with status 1 and `{"error": type, "message": str}` on stdout.

Request: {"state": {...}, "tree": {"memory": {"name": "Agent", "tool_agent": true, "system": "..."}, ...},
          "parsers": [{"tool_type", "begin", "end", "json": bool}], "environment": {"role", "begin", "end"},
          "turns": [{"key": "memory", "sender": ..., "text": ...} | {"key", "sender", "action_return": {...}}]}
Answer:  {"loaded": {key: [message as loaded]}, "prompts": {key: [...]}, "action_returns": [...],
          "state": {...}, "prompts_after": {key: [...]}}
"""

import dataclasses
import json
import sys
from enum import IntEnum
from typing import Any, Dict, List, Optional


class ModelStatusCode(IntEnum):
    END = 0
    STREAM_ING = 1
    SERVER_ERR = -1
    SESSION_CLOSED = -2
    SESSION_OUT_OF_LIMIT = -3
    SESSION_INVALID_ARG = -4
    SESSION_READY = 2


class AgentStatusCode(IntEnum):
    END = 0
    STREAM_ING = 1
    SERVER_ERR = -1
    SESSION_CLOSED = -2
    SESSION_OUT_OF_LIMIT = -3
    SESSION_INVALID_ARG = -4
    SESSION_READY = 2
    PLUGIN_START = 3
    PLUGIN_END = 4
    PLUGIN_RETURN = 5
    CODING = 6
    CODE_END = 7
    CODE_RETURN = 8


class ActionStatusCode(IntEnum):
    ING = 1
    SUCCESS = 0
    HTTP_ERROR = -1000
    ARGS_ERROR = -1001
    API_ERROR = -1002


class ActionValidCode(IntEnum):
    FINISH = 1
    OPEN = 0
    CLOSED = -1
    INVALID = -2
    ABSENT = -3


class ToolStatusCode(IntEnum):
    NO_TOOL = 0
    VALID_TOOL = 1
    PARSING_ERROR = -1


@dataclasses.dataclass
class ActionReturn:
    """Lagent's tool result: a dataclass with exactly these eight fields, in this order."""

    args: Optional[dict] = None
    url: Optional[str] = None
    type: Optional[str] = None
    result: Optional[List[dict]] = None
    errmsg: Optional[str] = None
    state: int = ActionStatusCode.SUCCESS
    thought: Optional[str] = None
    valid: Optional[int] = ActionValidCode.OPEN

    def format_result(self) -> str:
        items = []
        for item in self.result or []:
            items.append(item['content'] if item['type'] == 'text' else '[%s](%s)' % (item['type'], item['content']))
        return '\n'.join(items)


class ValidationError(ValueError):
    pass


_MISSING = object()


class AgentMessage:
    """The fields and lax-mode checks of Lagent's pydantic `AgentMessage`; unknown keyword arguments are ignored."""

    def __init__(self, content: Any = _MISSING, sender: Any = 'user', formatted: Any = None, extra_info: Any = None,
                 type: Any = None, receiver: Any = None, stream_state: Any = AgentStatusCode.END, **ignored: Any):
        if content is _MISSING:
            raise ValidationError('content: Field required')
        if not isinstance(sender, str):
            raise ValidationError('sender: Input should be a valid string')
        for field, value in (('type', type), ('receiver', receiver)):
            if value is not None and not isinstance(value, str):
                raise ValidationError('%s: Input should be a valid string' % field)
        self.content = content
        self.sender = sender
        self.formatted = formatted
        self.extra_info = extra_info
        self.type = type
        self.receiver = receiver
        self.stream_state = _status(stream_state)

    def model_dump(self) -> Dict[str, Any]:
        return {
            'content': _dump(self.content),
            'sender': self.sender,
            'formatted': _dump(self.formatted),
            'extra_info': _dump(self.extra_info),
            'type': self.type,
            'receiver': self.receiver,
            'stream_state': int(self.stream_state),
        }


def _status(value: Any) -> IntEnum:
    # Union[ModelStatusCode, AgentStatusCode]: an int (not a bool) that is a member of either enum.
    if isinstance(value, int) and not isinstance(value, bool):
        for enum in (ModelStatusCode, AgentStatusCode):
            try:
                return enum(value)
            except ValueError:
                pass
    raise ValidationError('stream_state: Input should be a ModelStatusCode or AgentStatusCode value, got %r' % (value,))


def _dump(value: Any) -> Any:
    # pydantic's serialisation of an `Any` field: dataclasses as dicts of their fields, enums as their values.
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _dump(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, IntEnum):
        return int(value)
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(item) for item in value]
    return value


class ToolParser:
    def __init__(self, tool_type: str, begin: str, end: str, validate=None):
        self.tool_type = tool_type
        self.begin = begin
        self.end = end
        self.validate = validate

    def format_instruction(self) -> str:
        return ''

    def parse_response(self, text: str) -> dict:
        if self.begin not in text:
            return dict(tool_type=None, thought=text, action=None, status=ToolStatusCode.NO_TOOL)
        parts = text.split(self.begin)
        thought, action = parts[0], parts[1].split(self.end)[0]
        status = ToolStatusCode.VALID_TOOL
        if self.validate:
            try:
                action = self.validate(action)
            except Exception:
                status = ToolStatusCode.PARSING_ERROR
        return dict(tool_type=self.tool_type, thought=thought, action=action, status=status)

    def format_response(self, parsed: dict) -> str:
        if parsed['action'] is None:
            return parsed['thought']
        assert parsed['tool_type'] == self.tool_type
        action = parsed['action']
        text = json.dumps(action, ensure_ascii=False) if isinstance(action, dict) else str(action)
        return parsed['thought'] + self.begin + text + self.end


def _plugin_call(text: str) -> Any:
    text = text.strip()
    if not (text.startswith('{') and text.endswith('}')):
        raise ValueError('not a JSON object')
    return json.loads(text)


class MixedToolParser:
    def __init__(self, parsers: List[ToolParser]):
        self.tool_type = None
        self.parsers = {parser.tool_type: parser for parser in parsers}

    def format_instruction(self) -> List[dict]:
        return []  # the test's parsers have empty templates

    def parse_response(self, text: str) -> dict:
        parsed = dict(tool_type=None, thought=text, action=None, status=ToolStatusCode.NO_TOOL)
        for name, parser in self.parsers.items():
            parsed = parser.parse_response(text)
            if parsed['tool_type'] == name:
                break
        return parsed

    def format_response(self, parsed: dict) -> str:
        if parsed['action'] is None:
            return parsed['thought']
        assert parsed['tool_type'] in self.parsers
        return self.parsers[parsed['tool_type']].format_response(parsed)


def tool_aggregate(memory: List[AgentMessage], name: str, parser: MixedToolParser, system: Optional[str],
                   environment: dict) -> List[dict]:
    """InternLMToolAggregator.aggregate (no few-shot dialogs)."""
    out: List[dict] = []
    if system:
        out.append(dict(role='system', content=system))
    out.extend(parser.format_instruction())
    tool_type = None
    for message in memory:
        if message.sender == name:
            if isinstance(message.formatted, dict):
                parsed = message.formatted
                if parsed['status'] == ToolStatusCode.PARSING_ERROR:
                    continue
                out.append(dict(role='assistant', content=parser.format_response(parsed)))
                tool_type = parsed['tool_type']
            else:
                out.append(dict(role='assistant', content=str(message.content)))
        elif message.sender == 'user':
            out.append(dict(role='user', content=message.content))
        else:
            turn = dict(role=environment['role'],
                        content=environment['begin'] + str(message.content) + environment['end'])
            if tool_type:
                turn['name'] = tool_type
            out.append(turn)
    return out


def default_aggregate(memory: List[AgentMessage], name: str, system: Optional[str]) -> List[dict]:
    """DefaultAggregator.aggregate."""
    out: List[dict] = [dict(role='system', content=system)] if system else []
    for message in memory:
        if message.sender == name:
            out.append(dict(role='assistant', content=str(message.content)))
        elif out and out[-1]['role'] == 'user':
            out[-1]['content'] += message.content
        else:
            out.append(dict(role='user', content=message.content))
    return out


def load_state_dict(tree: Dict[str, dict], state: Dict[str, Any]) -> Dict[str, List[AgentMessage]]:
    missing = set(tree) - set(state)
    if missing:
        raise KeyError('Missing keys: %s' % missing)
    return {key: [AgentMessage(**message) for message in (state[key] or [])] for key in tree}


def main() -> None:
    request = json.load(sys.stdin)
    tree = request['tree']
    environment = request['environment']
    parser = MixedToolParser([
        ToolParser(spec['tool_type'], spec['begin'], spec['end'], _plugin_call if spec.get('json') else None)
        for spec in request['parsers']
    ])

    def prompts(memories):
        result = {}
        for key, agent in tree.items():
            if agent.get('tool_agent'):
                result[key] = tool_aggregate(memories[key], agent['name'], parser, agent.get('system'), environment)
            else:
                result[key] = default_aggregate(memories[key], agent['name'], agent.get('system'))
        return result

    memories = load_state_dict(tree, request['state'])
    answer: Dict[str, Any] = {
        'loaded': {key: [message.model_dump() for message in messages] for key, messages in memories.items()},
        'prompts': prompts(memories),
        # Every dict content with ActionReturn's field names must build Lagent's dataclass.
        'action_returns': [],
    }
    field_names = {field.name for field in dataclasses.fields(ActionReturn)}
    for messages in memories.values():
        for message in messages:
            if isinstance(message.content, dict) and set(message.content) & field_names == set(message.content):
                action_return = ActionReturn(**message.content)
                answer['action_returns'].append({
                    'state': ActionStatusCode(action_return.state).name,
                    'valid': ActionValidCode(action_return.valid).name if action_return.valid is not None else None,
                    'text': action_return.format_result(),
                    'errmsg': action_return.errmsg,
                })

    for turn in request.get('turns', []):
        key = turn['key']
        if 'action_return' in turn:
            message = AgentMessage(sender=turn['sender'], content=ActionReturn(**turn['action_return']))
        elif turn['sender'] == tree[key]['name'] and tree[key].get('tool_agent'):
            message = AgentMessage(sender=turn['sender'], content=turn['text'],
                                   formatted=parser.parse_response(turn['text']))
        else:
            message = AgentMessage(sender=turn['sender'], content=turn['text'])
        memories[key].append(message)

    answer['state'] = {key: [message.model_dump() for message in messages] for key, messages in memories.items()}
    answer['prompts_after'] = prompts(memories)
    json.dump(answer, sys.stdout, ensure_ascii=False, default=int)


if __name__ == '__main__':
    try:
        main()
    except Exception as error:  # reported to the test, as Lagent would raise it
        json.dump({'error': type(error).__name__, 'message': str(error)}, sys.stdout)
        sys.exit(1)
