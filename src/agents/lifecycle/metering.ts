import type { Meter } from '../../core/budget';
import { costOf, modelPrice } from '../../llms/prices';
import { countTokens, type TokenCountInput } from '../../llms/token-count';
import type { TokenUsage } from '../../llms/usage';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { isThenable } from '../../utils/is';

/*
 * A model request of a built-in forward inside a budgeted call: refused before it is made when it would pass
 * a limit (one more request; its prompt's tokens or cost), and counted after. The tokens are what the model
 * client reports for the request (`onUsage`: the API clients and model wrappers call it), else the client's
 * `countTokens` of the prompt and of the answer. With a token limit, the request's completion is capped at
 * what is left (`maxNewTokens`).
 */

/** What metering needs of a model client. */
interface MeteredModel {
  readonly model?: unknown;
  countTokens?(input: TokenCountInput): number;
}

/** The request's params with the meter's `onUsage` (and a cap on the completion under a token limit). */
export interface MeteredCall {
  params: Record<string, unknown>;
  /** Counts the answer (a value, or a promise of one); returns what it was given. */
  end(answer: unknown): unknown;
}

/** Begins a metered model request of `llm` with `prompt`: refuses it, or returns its params and its end. */
export function beginModelCall(
  meter: Meter,
  owner: string,
  llm: unknown,
  prompt: ChatMessage[],
  params: object,
): MeteredCall {
  const model = llm as MeteredModel;
  const name = typeof model.model === 'string' ? model.model : undefined;
  const price = modelPrice(name);
  const tokenLimit = meter.isLimited('tokens');
  const priced = meter.isLimited('usd');
  if (priced && price === undefined) {
    throw new ConfigurationError({
      message: `${owner}: a usd budget needs the model's price, and ${name === undefined ? 'the model has no name' : `${JSON.stringify(name)} has none`}: set it with setModelPrice(name, { input, output }) (US dollars per million tokens)`,
    });
  }
  const promptTokens = tokenLimit || priced ? count(model, prompt) : undefined;
  meter.beginModel(
    tokenLimit ? promptTokens : undefined,
    priced && promptTokens !== undefined ? costOf(price!, promptTokens, 0) : undefined,
  );
  let reported: TokenUsage | undefined;
  const call = Object.assign({}, params) as Record<string, unknown>;
  call.onUsage = (usage: TokenUsage) => {
    reported = usage;
  };
  if (tokenLimit) {
    const left = (meter.remaining().tokens ?? Number.POSITIVE_INFINITY) - (promptTokens ?? 0);
    const cap = Math.max(1, Math.floor(left));
    const current = call.maxNewTokens as number | undefined;
    if (current === undefined || cap < current) call.maxNewTokens = cap;
  }
  const finish = (answer: unknown) => {
    let usage = reported;
    if (usage === undefined) {
      const inTokens = promptTokens ?? count(model, prompt);
      const outTokens = count(model, answerText(answer));
      usage = { promptTokens: inTokens, completionTokens: outTokens, totalTokens: inTokens + outTokens };
    }
    const usd = price === undefined ? undefined : costOf(price, usage.promptTokens, usage.completionTokens);
    meter.endModel(usage.promptTokens, usage.completionTokens, usd, name ?? 'unnamed model');
    if (usage.cachedPromptTokens || usage.cacheWriteTokens || usage.reasoningTokens) meter.addDetails(usage);
    return answer;
  };
  return {
    params: call,
    end: (answer) => (isThenable(answer) ? answer.then(finish) : finish(answer)),
  };
}

/** What a model answered, as text to count: its content and its tool calls. */
export function answerText(answer: unknown): string {
  if (typeof answer === 'string') return answer;
  const reply = answer as { content?: unknown; toolCalls?: ToolCall[] } | null | undefined;
  let text = typeof reply?.content === 'string' ? reply.content : '';
  if (reply?.toolCalls !== undefined && reply.toolCalls.length > 0) text += JSON.stringify(reply.toolCalls);
  return text;
}

function count(model: MeteredModel, input: TokenCountInput): number {
  if (typeof model.countTokens === 'function') {
    try {
      return model.countTokens(input);
    } catch {
      // a model whose counting fails is estimated like one without it
    }
  }
  return countTokens(input, { model: undefined });
}
