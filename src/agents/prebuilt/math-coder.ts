import type { ActionBase, BaseAction } from '../../actions/base-action';
import type { AsyncHook, Hook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import { InterpreterParser } from '../../prompts/parsers/interpreter-parser';
import { ConfigurationError } from '../../schema/errors';
import { type CompatMode, checkCompat } from './compat';
import { AgentForInternLM, type AgentForInternLMOptions, AsyncAgentForInternLM } from './internlm-agent';
import { MATH_CODER_PROMPTS, type PromptLanguage } from './internlm-prompts';
import { LAGENT_MATH_CODER_TEMPLATE } from './lagent-prompts';

/** Options of {@link MathCoder}: those of `AgentForInternLM` without plugins, with an interpreter. */
export type MathCoderOptions<L, A extends ActionBase, H extends Hook> = Omit<
  AgentForInternLMOptions<L, A, H>,
  'plugins' | 'interpreter' | 'language' | 'compat' | 'maxTurn'
> & {
  /** The code interpreter (any action with a `command` argument; code goes there). */
  interpreter: A | readonly A[];
  /** The language of the default instruction. @default 'en' (Lagent's) */
  language?: PromptLanguage | undefined;
  /**
   * `'lagent'`: the default instruction is Python Lagent's own MathCoder text, character for character
   * (`LAGENT_MATH_CODER_TEMPLATE`; English only).
   */
  compat?: CompatMode | undefined;
  /** The most model turns per call. @default 6 */
  maxTurn?: number | undefined;
};

/**
 * MathCoder's output format: InternLM's interpreter calls, with Lagent's instruction to reason step by step,
 * run code, and box the final result.
 */
export function mathCoderOutputFormat(
  language: PromptLanguage = 'en',
  compat?: CompatMode | undefined,
): InterpreterParser {
  const lagent = checkCompat('mathCoderOutputFormat', compat, language, 'en');
  return new InterpreterParser({
    template: lagent ? LAGENT_MATH_CODER_TEMPLATE : MATH_CODER_PROMPTS[language],
  });
}

function withMathDefaults<L, A extends ActionBase, H extends Hook>(
  options: MathCoderOptions<L, A, H>,
): AgentForInternLMOptions<L, A, H> {
  const { language, compat, ...rest } = options;
  checkCompat('MathCoder', compat, language, 'en');
  const interpreter = (options as { interpreter?: unknown } | undefined)?.interpreter;
  if (
    interpreter === undefined ||
    interpreter === null ||
    (Array.isArray(interpreter) && interpreter.length === 0)
  ) {
    // Lagent defaults to IPythonInteractive; here the interpreters are in lagent-ts/tools (they need Node's
    // processes), which the root entry, also meant for Bun, Deno and Workers, never loads.
    throw new ConfigurationError({
      message:
        "MathCoder needs an interpreter: pass interpreter: new IPythonInteractive({ timeout: 20_000, compat: 'lagent' }) from lagent-ts/tools (Lagent's default), or any action with a command argument",
    });
  }
  return {
    ...rest,
    maxTurn: options.maxTurn ?? 6,
    outputFormat: options.outputFormat ?? mathCoderOutputFormat(language ?? 'en', compat),
  };
}

/**
 * Lagent's MathCoder: {@link AgentForInternLM} with only the code interpreter, told to solve math problems
 * with step-by-step reasoning and code and to give the result as `\boxed{...}`; up to 6 turns.
 *
 * @example
 * const coder = new MathCoder({ llm, interpreter: new IPythonInteractive() });
 * coder.call('What is the sum of the first 100 primes?').content; // '... \\boxed{24133}'
 */
export class MathCoder extends AgentForInternLM {
  constructor(options: MathCoderOptions<BaseLLM, BaseAction, SyncHook>) {
    super(withMathDefaults(options));
  }
}

/** {@link MathCoder} on an async model and interpreter; calls take a `signal`. */
export class AsyncMathCoder extends AsyncAgentForInternLM {
  constructor(options: MathCoderOptions<AsyncBaseLLM, ActionBase, AsyncHook>) {
    super(withMathDefaults(options));
  }
}
