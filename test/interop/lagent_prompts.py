"""Lagent's default prompts, and the system prompts Lagent's own code builds from them, for lagent-ts's test.

Reads Python Lagent's source (a checkout, or a bare git repository read with `git show HEAD:<path>`) and
runs the parts of it that build prompts, without installing Lagent or its dependencies:

* the constants are read with `ast` (`META_CN`, `PLUGIN_CN`, `INTERPRETER_CN` in `lagent/agents/stream.py`;
  MathCoder's default `output_format` template; `select_action_template` and `output_format_template` in
  `lagent/agents/react.py`);
* `StrParser`, `ToolParser`, `PluginParser`, `InterpreterParser`, `MixedToolParser` (`lagent/prompts/parsers`),
  `get_plugin_prompt` (`stream.py`), `ActionExecutor.description` (`lagent/actions/action_executor.py`) and
  `PromptTemplate` (`lagent/prompts/prompt_template.py`) are executed from the source, their `lagent.*`
  imports replaced by the classes executed here;
* with pydantic installed, `JSONParser` (`lagent/prompts/parsers/json_parser.py`) and the ReAct formats of
  `react.py`'s `__main__` block (`ActionFormat`, `FinishFormat`) too, and ReAct's system prompt is built with
  the very `template.format(...)` expression of `ReAct.__init__`.

Tools are given as data: each {"name", "is_toolkit", "description"} (lagent-ts's Lagent-style description).

Protocol: one JSON request on stdin {"source": path, "plugins": [tool], "actions": [tool]}; one JSON answer
on stdout {"constants": {...}, "internlm": [system messages], "math_coder": [system messages],
"react": str or null, "react_formats": {...} or null, "missing": why something was not built or null}.
"""

import ast
import json
import os
import subprocess
import sys
import types
from copy import deepcopy
from typing import Dict, List


def read_source(root, path):
    candidate = os.path.join(root, path)
    if os.path.isfile(candidate):
        with open(candidate, encoding='utf-8') as f:
            return f.read()
    return subprocess.run(
        ['git', f'--git-dir={root}', 'show', f'HEAD:{path}'], check=True, capture_output=True, text=True
    ).stdout


def without_lagent_imports(tree):
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and (node.module or '').startswith('lagent'))
        and not (isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'")
    ]
    return tree


def run_module(source, namespace):
    tree = without_lagent_imports(ast.parse(source))
    exec(compile(tree, '<lagent>', 'exec'), namespace)
    return namespace


def constant(tree, name):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def class_def(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise KeyError(name)


def method(cls, name):
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise KeyError(f'{cls.name}.{name}')


def default_of(function, arg_name):
    args = function.args.args
    defaults = function.args.defaults
    offset = len(args) - len(defaults)
    for i, arg in enumerate(args):
        if arg.arg == arg_name and i >= offset:
            return defaults[i - offset]
    raise KeyError(arg_name)


def keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    raise KeyError(name)


def function_from(tree_node, namespace):
    module = ast.Module(body=[tree_node], type_ignores=[])
    exec(compile(module, '<lagent>', 'exec'), namespace)
    return namespace[tree_node.name]


def create_object(obj):
    """Lagent's `create_object` for what reaches it here: objects are returned as they are."""
    if isinstance(obj, dict):
        obj = dict(obj)
        return obj.pop('type')(**obj)
    return obj


class Tool:
    def __init__(self, data):
        self.name = data['name']
        self.is_toolkit = data['is_toolkit']
        self.description = data['description']


def main():
    request = json.load(sys.stdin)
    root = request['source']
    stream = ast.parse(read_source(root, 'lagent/agents/stream.py'))
    react = ast.parse(read_source(root, 'lagent/agents/react.py'))
    math_init = method(class_def(stream, 'MathCoder'), '__init__')
    constants = {
        'META_CN': constant(stream, 'META_CN'),
        'PLUGIN_CN': constant(stream, 'PLUGIN_CN'),
        'INTERPRETER_CN': constant(stream, 'INTERPRETER_CN'),
        'MATH_CODER': ast.literal_eval(keyword(default_of(math_init, 'output_format'), 'template')),
        'REACT_TEMPLATE': constant(react, 'select_action_template'),
        'REACT_OUTPUT_FORMAT': constant(react, 'output_format_template'),
    }

    parsers = run_module(read_source(root, 'lagent/prompts/parsers/str_parser.py'), {})
    parsers.update(create_object=create_object, load_class_from_string=None)
    run_module(read_source(root, 'lagent/prompts/parsers/tool_parser.py'), parsers)
    get_plugin_prompt = function_from(
        next(n for n in stream.body if isinstance(n, ast.FunctionDef) and n.name == 'get_plugin_prompt'),
        {'create_object': create_object, 'deepcopy': deepcopy, 'json': json},
    )
    plugins = [Tool(t) for t in request['plugins']]
    internlm = parsers['MixedToolParser'](
        template=constants['META_CN'],
        parsers=[
            parsers['PluginParser'](template=constants['PLUGIN_CN'], prompt=get_plugin_prompt(plugins)),
            parsers['InterpreterParser'](template=constants['INTERPRETER_CN']),
        ],
    ).format_instruction()
    math_parser = parsers['InterpreterParser'](template=constants['MATH_CODER'])
    # InternLMToolAggregator: a string instruction becomes one system message named by the parser's tool type.
    math_coder = [dict(role='system', content=math_parser.format_instruction(), name=math_parser.tool_type)]

    answer = {'constants': constants, 'internlm': internlm, 'math_coder': math_coder}
    answer.update(react=None, react_formats=None, missing=None)
    try:
        import pydantic  # noqa: F401
    except ImportError:
        answer['missing'] = 'pydantic is not installed, so Lagent\'s JSONParser cannot run'
        json.dump(answer, sys.stdout)
        return
    if 'jinja2' not in sys.modules:
        try:
            import jinja2  # noqa: F401
        except ImportError:
            sys.modules['jinja2'] = types.ModuleType('jinja2')  # only PromptTemplate's jinja format uses it
    json_ns = dict(parsers)
    run_module(read_source(root, 'lagent/prompts/parsers/json_parser.py'), json_ns)
    template_ns = run_module(read_source(root, 'lagent/prompts/prompt_template.py'), {})
    main_block = next(
        n for n in react.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"
    )
    models_ns = {}
    exec('from typing import Dict\nfrom pydantic import BaseModel, Field', models_ns)
    for node in main_block.body:
        if isinstance(node, ast.ClassDef):
            function_from(node, models_ns)
    output_format = json_ns['JSONParser'](
        constants['REACT_OUTPUT_FORMAT'],
        function_format=models_ns['ActionFormat'],
        finish_format=models_ns['FinishFormat'],
    )
    executor = types.SimpleNamespace(actions={t['name']: Tool(t) for t in request['actions']})
    executor.description = types.MethodType(
        function_from(
            method(class_def(ast.parse(read_source(root, 'lagent/actions/action_executor.py')), 'ActionExecutor'),
                   'description'),
            {'List': List, 'Dict': Dict},
        ),
        executor,
    )
    # The very expression ReAct.__init__ builds the select agent's template with.
    agent_call = next(
        n for n in ast.walk(method(class_def(react, 'ReAct'), '__init__'))
        if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == 'Agent'
    )
    expression = ast.unparse(keyword(agent_call, 'template'))
    answer['react'] = eval(  # noqa: S307 - Lagent's own expression, read from its source
        expression,
        {
            'template': template_ns['PromptTemplate'](constants['REACT_TEMPLATE']),
            'json': json,
            'self': types.SimpleNamespace(actions=executor),
            'output_format': output_format,
        },
    )
    answer['react_formats'] = {
        'function_format': output_format.format_to_string(models_ns['ActionFormat']),
        'finish_format': output_format.format_to_string(models_ns['FinishFormat']),
    }
    json.dump(answer, sys.stdout)


if __name__ == '__main__':
    main()
