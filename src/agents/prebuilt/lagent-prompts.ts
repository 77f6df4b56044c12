/**
 * Python Lagent's default prompt texts, character for character (Lagent 0.5), for `compat: 'lagent'` and for
 * anyone who builds their own formats from them. InternLM models were tuned on these texts. Placeholders are in
 * Python `str.format` style, literal braces doubled.
 */

/**
 * Lagent's `META_CN` (`lagent/agents/stream.py`): the first system message of `AgentForInternLM`'s default
 * output format, before the tool instructions.
 */
export const LAGENT_META_CN = '当开启工具以及代码时，根据需求选择合适的工具进行调用';

/**
 * Lagent's `PLUGIN_CN`: the plugin instruction of `AgentForInternLM`; `{prompt}` receives
 * `getPluginPrompt(plugins)` (the tools' descriptions as 4-space-indented JSON).
 */
export const LAGENT_PLUGIN_CN =
  '你可以使用如下工具：\n{prompt}\n如果你已经获得足够信息，请直接给出答案. 避免不必要的工具调用! 同时注意你可以使用的工具，不要随意捏造！';

/** Lagent's `INTERPRETER_CN`: the code-interpreter instruction of `AgentForInternLM`. */
export const LAGENT_INTERPRETER_CN =
  '你现在已经能够在一个有状态的 Jupyter 笔记本环境中运行 Python 代码。当你向 python 发送含有 Python 代码的消息时，它将在该环境中执行。这个工具适用于多种场景，如数据分析或处理（包括数据操作、统计分析、图表绘制），复杂的计算问题（解决数学和物理难题），编程示例（理解编程概念或特性），文本处理和分析（比如文本解析和自然语言处理），机器学习和数据科学（用于展示模型训练和数据可视化），以及文件操作和数据导入（处理CSV、JSON等格式的文件）。';

/**
 * Lagent's MathCoder instruction (the default `output_format` template of `MathCoder`), in `str.format`
 * style: the model reads `\boxed{}`.
 */
export const LAGENT_MATH_CODER_TEMPLATE =
  "Integrate step-by-step reasoning and Python code to solve math problems using the following guidelines:\n- Analyze the question and write jupyter code to solve the problem;\n- Present the final result in LaTeX using a '\\boxed{{}}' without any units. \n";

/**
 * Lagent's ReAct system prompt (`select_action_template` in `lagent/agents/react.py`): `{action_info}` receives
 * the tools' descriptions as `json.dumps` writes them (non-ASCII escaped), `{output_format}` the output format's
 * instruction.
 */
export const LAGENT_REACT_TEMPLATE =
  '你是一个可以调用外部工具的助手，可以使用的工具包括：\n{action_info}\n{output_format}\n开始!';

/**
 * Lagent's ReAct output-format instruction (`output_format_template`): `{function_format}` and
 * `{finish_format}` receive {@link LAGENT_REACT_FUNCTION_FORMAT} and {@link LAGENT_REACT_FINISH_FORMAT}.
 */
export const LAGENT_REACT_OUTPUT_FORMAT =
  '如果使用工具请遵循以下格式回复：\n{function_format}\n\n如果你已经知道了答案，或者你不需要工具，请遵循以下格式回复\n{finish_format}';

/**
 * The tool-call format of Lagent's ReAct as its `JSONParser` renders it (the `ActionFormat` model of
 * `react.py`'s example, with Python type names: `str`, `dict[]`).
 */
export const LAGENT_REACT_FUNCTION_FORMAT =
  '{\n    // 描述当前所处的状态和已知信息。这有助于明确目前所掌握的信息和接下来的搜索方向。\n    "thought_process": "str",  // required\n    // 当前步骤需要执行的操作，包括函数名称和参数。\n    "action": {\n        // 调用的函数名称\n        "name": "str",  // required\n        // 调用函数的参数\n        "parameters": "dict[]",  // required\n    }\n}';

/** The answer format of Lagent's ReAct as its `JSONParser` renders it (`FinishFormat`). */
export const LAGENT_REACT_FINISH_FORMAT =
  '{\n    // 描述当前所处的状态和已知信息。这有助于明确目前所掌握的信息和接下来的搜索方向。\n    "thought_process": "str",  // required\n    // 总结当前的搜索结果，回答问题。\n    "conclusion": "str",  // required\n}';
