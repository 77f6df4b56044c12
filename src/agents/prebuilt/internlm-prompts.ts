/**
 * The default instructions of the InternLM agents, in Chinese (Lagent's default) and English. They say
 * what Lagent's default prompts say; the call markers themselves (`<|action_start|><|plugin|>`, ...) are
 * InternLM's chat protocol and live in the parsers. Placeholders use Python `str.format` style: the
 * plugin prompt's `{prompt}` receives `getPluginPrompt(plugins)`, and literal braces are doubled.
 */

/** The language of a prebuilt agent's default prompts. */
export type PromptLanguage = 'zh' | 'en';

/** The default prompts of `AgentForInternLM` in one language. */
export interface InternLMPrompts {
  /** Shown first when tools are on: choose the right tool for the need. */
  readonly meta: string;
  /** The plugin instruction; `{prompt}` is the tools' JSON description. */
  readonly plugin: string;
  /** The code-interpreter instruction. */
  readonly interpreter: string;
}

/** Lagent's `AgentForInternLM` defaults, by language. */
export const INTERNLM_PROMPTS: Readonly<Record<PromptLanguage, InternLMPrompts>> = Object.freeze({
  zh: Object.freeze({
    meta: '工具和代码功能开启时，请根据需要挑选合适的工具来调用。',
    plugin:
      '可供调用的工具如下：\n{prompt}\n' +
      '如果已经掌握足够的信息，就直接给出答案，不要做多余的工具调用；只能使用上面列出的工具，切勿编造。',
    interpreter:
      '你可以在一个会保留状态的 Jupyter 笔记本环境里执行 Python 代码：把包含 Python 代码的消息发给 python，' +
      '代码就会在该环境中运行。它适合许多任务，例如数据分析与处理（数据整理、统计分析、绘图）、' +
      '较复杂的计算（数学、物理题）、编程示例（帮助理解编程概念和语言特性）、' +
      '文本处理与分析（文本解析、自然语言处理）、机器学习与数据科学（训练模型、可视化数据），' +
      '以及文件读写和数据导入（处理 CSV、JSON 等格式的文件）。',
  }),
  en: Object.freeze({
    meta: 'When tools and code execution are available, pick the right tool for the task and call it.',
    plugin:
      'These tools are available to you:\n{prompt}\n' +
      'Once you have enough information, answer directly and skip needless tool calls. ' +
      'Use only the tools listed above; never invent one.',
    interpreter:
      'You can run Python code in a stateful Jupyter notebook: send a message with Python code to python ' +
      'and it runs in that environment. It is useful for data analysis and processing (cleaning data, ' +
      'statistics, charts), hard calculations (maths and physics problems), programming examples (showing ' +
      'how a concept or language feature works), text processing and analysis (parsing, natural language ' +
      'processing), machine learning and data science (training models, visualising data), and working ' +
      'with files and importing data (CSV, JSON and similar formats).',
  }),
});

/** Lagent's `MathCoder` instruction (its interpreter parser's template), by language. */
export const MATH_CODER_PROMPTS: Readonly<Record<PromptLanguage, string>> = Object.freeze({
  en:
    'Solve math problems by combining step-by-step reasoning with Python code:\n' +
    '- work out what the question asks, then write Jupyter code that solves it;\n' +
    '- give the final result in LaTeX inside \\boxed{{}}, with no units.\n',
  zh:
    '请把逐步推理和 Python 代码结合起来解答数学题：\n' +
    '- 先分析题目，再编写 Jupyter 代码求解；\n' +
    '- 最终结果用 LaTeX 的 \\boxed{{}} 给出，不带单位。\n',
});
