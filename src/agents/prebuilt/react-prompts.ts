import type { PromptLanguage } from './internlm-prompts';

/** The default texts of `ReAct` in one language. */
export interface ReActPrompts {
  /** The system instruction; `{action_info}` gets the tools' descriptions, `{output_format}` the reply formats. */
  readonly template: string;
  /** The reply-format instruction; `{function_format}` and `{finish_format}` get the two JSON formats. */
  readonly outputFormat: string;
  /** What each field of the two formats means. */
  readonly fields: Readonly<{
    thoughtProcess: string;
    action: string;
    name: string;
    parameters: string;
    conclusion: string;
  }>;
}

/**
 * The default prompts of `ReAct`, by language: they say what Lagent's ReAct prompts say (Chinese is
 * Lagent's language for them), in this library's words.
 */
export const REACT_PROMPTS: Readonly<Record<PromptLanguage, ReActPrompts>> = Object.freeze({
  zh: Object.freeze({
    template: '你是一个能够调用外部工具的助手，可用的工具如下：\n{action_info}\n{output_format}\n现在开始！',
    outputFormat:
      '需要调用工具时，请按以下格式回复：\n{function_format}\n\n' +
      '如果已经知道答案，或者不需要工具，请按以下格式回复：\n{finish_format}',
    fields: Object.freeze({
      thoughtProcess: '说明当前的进展和已掌握的信息，以便确定下一步该做什么。',
      action: '本步骤要执行的操作：要调用的函数及其参数。',
      name: '要调用的函数名',
      parameters: '传给该函数的参数',
      conclusion: '根据已获得的结果，给出问题的最终答案。',
    }),
  }),
  en: Object.freeze({
    template:
      'You are an assistant that can use external tools. These tools are available:\n{action_info}\n{output_format}\nBegin!',
    outputFormat:
      'To use a tool, reply in this format:\n{function_format}\n\n' +
      'If you already know the answer, or need no tool, reply in this format:\n{finish_format}',
    fields: Object.freeze({
      thoughtProcess: 'Where things stand and what is known so far, to decide what to do next.',
      action: 'The operation of this step: which function to call, with which arguments.',
      name: 'The name of the function to call',
      parameters: 'The arguments of the call',
      conclusion: 'The final answer to the question, drawn from the results gathered so far.',
    }),
  }),
});
