import type { SessionId } from '../schema/session';
import { emptyUsage, type TokenUsage } from './usage';

/** What a model that counts tokens offers (`MeteredLLM` and the model wrappers). */
export interface UsageReporting {
  getUsage(sessionId?: SessionId): TokenUsage;
  getTotalUsage(): TokenUsage;
  getLastUsage(): TokenUsage | undefined;
  resetUsage(sessionId?: SessionId): void;
}

/** The model's usage methods, when it has them. */
export function usageOf(llm: unknown): UsageReporting | undefined {
  const candidate = llm as Partial<UsageReporting> | null | undefined;
  return typeof candidate?.getUsage === 'function' &&
    typeof candidate.getTotalUsage === 'function' &&
    typeof candidate.resetUsage === 'function'
    ? (candidate as UsageReporting)
    : undefined;
}

/** The sum of the usages `read` gives for each model that counts tokens. */
export function sumUsage(
  models: readonly unknown[],
  read: (usage: UsageReporting) => TokenUsage,
): TokenUsage {
  const sum = emptyUsage();
  for (const model of models) {
    const usage = usageOf(model);
    if (usage === undefined) continue;
    const part = read(usage);
    sum.promptTokens += part.promptTokens;
    sum.completionTokens += part.completionTokens;
    sum.totalTokens += part.totalTokens;
  }
  return sum;
}

/** Usage added between two readings of a session's sum; undefined when nothing was counted. */
export function usageDelta(
  before: TokenUsage | undefined,
  after: TokenUsage | undefined,
): TokenUsage | undefined {
  if (before === undefined || after === undefined) return undefined;
  const delta = {
    promptTokens: after.promptTokens - before.promptTokens,
    completionTokens: after.completionTokens - before.completionTokens,
    totalTokens: after.totalTokens - before.totalTokens,
  };
  return delta.totalTokens === 0 && delta.promptTokens === 0 && delta.completionTokens === 0
    ? undefined
    : delta;
}

/** A model's `model` name, when it has one. */
export function modelName(llm: unknown): string | undefined {
  const model = (llm as { model?: unknown } | null | undefined)?.model;
  return typeof model === 'string' && model !== '' ? model : undefined;
}
