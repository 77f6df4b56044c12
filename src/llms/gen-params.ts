import { ConfigurationError } from '../schema/errors';
import type { ReasoningOptions } from '../schema/reasoning';
import type { GenParams, ResolvedGenParams } from './types';

/** Lagent's defaults. */
export const DEFAULT_GEN_PARAMS: Readonly<ResolvedGenParams> = Object.freeze({
  maxNewTokens: 512,
  temperature: 0.8,
  topP: 0.8,
  topK: 40,
  repetitionPenalty: 1,
  stopWords: Object.freeze([]) as unknown as string[],
});

const NUMERIC_KEYS = ['maxNewTokens', 'temperature', 'topP', 'topK', 'repetitionPenalty'] as const;

function toStopWords(value: string[] | string | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((word) => typeof word !== 'string')) {
    throw new ConfigurationError({ message: 'stopWords must be a string or an array of strings' });
  }
  return list.filter((word) => word.length > 0);
}

/** Defaults merged with `params`; a fresh object with its own `stopWords` array. */
export function normalizeGenParams(params: GenParams = {}): ResolvedGenParams {
  const resolved: ResolvedGenParams = { ...DEFAULT_GEN_PARAMS, stopWords: [] };
  for (const key of NUMERIC_KEYS) {
    const value = params[key];
    if (value !== undefined) {
      if (typeof value !== 'number' || Number.isNaN(value)) {
        throw new ConfigurationError({ message: `${key} must be a number, got ${String(value)}` });
      }
      resolved[key] = value;
    }
  }
  resolved.stopWords = toStopWords(params.stopWords);
  if (params.reasoning !== undefined) resolved.reasoning = checkReasoning(params.reasoning);
  return resolved;
}

const EFFORTS = new Set(['low', 'medium', 'high']);

/** Checks a `reasoning` parameter: `{ effort?: 'low' | 'medium' | 'high', budgetTokens?: number >= 1024 }`. */
function checkReasoning(value: ReasoningOptions): ReasoningOptions {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigurationError({
      message: `reasoning must be an object { effort?, budgetTokens? }, got ${String(value)}`,
    });
  }
  if (value.effort !== undefined && !EFFORTS.has(value.effort)) {
    throw new ConfigurationError({
      message: `reasoning.effort must be 'low', 'medium' or 'high', got ${String(value.effort)}`,
    });
  }
  const budget = value.budgetTokens;
  if (budget !== undefined && !(Number.isInteger(budget) && budget >= 1024)) {
    throw new ConfigurationError({
      message: `reasoning.budgetTokens must be an integer of at least 1024 (Anthropic's minimum), got ${String(budget)}`,
    });
  }
  return value;
}

/**
 * `base` with the per-call overrides in `params` applied. Returns `base` itself when nothing is
 * overridden (no allocation on the common path) and never mutates `base`.
 */
export function mergeGenParams(base: ResolvedGenParams, params: GenParams | undefined): ResolvedGenParams {
  if (params === undefined) return base;
  let merged: ResolvedGenParams | undefined;
  for (const key of NUMERIC_KEYS) {
    const value = params[key];
    if (value !== undefined && value !== base[key]) {
      merged ??= { ...base };
      merged[key] = value;
    }
  }
  if (params.stopWords !== undefined) {
    merged ??= { ...base };
    merged.stopWords = toStopWords(params.stopWords);
  }
  const reasoning = params.reasoning;
  if (reasoning !== undefined && reasoning !== base.reasoning) {
    merged ??= { ...base };
    merged.reasoning = checkReasoning(reasoning);
  }
  return merged ?? base;
}
