/**
 * Which model the examples talk to: a real OpenAI-compatible endpoint when OPENAI_API_KEY or
 * OPENAI_BASE_URL is set (model from OPENAI_MODEL, default gpt-4o-mini), else the scripted mock.
 */
import { type AsyncBaseLLM, AsyncGPTAPI, type BaseLLM, GPTAPI } from 'lagent-ts';
import { AsyncMockLLM, MockLLM, type MockResponses } from 'lagent-ts/testing';

/** True when the environment points at a real endpoint. */
export function usesRealModel(): boolean {
  return Boolean(process.env.OPENAI_API_KEY || process.env.OPENAI_BASE_URL);
}

function modelName(): string {
  return process.env.OPENAI_MODEL || 'gpt-4o-mini';
}

/** One line saying which model the example uses. */
export function describeModel(): string {
  if (!usesRealModel())
    return 'model: MockLLM (scripted replies; set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model)';
  const where = process.env.OPENAI_BASE_URL || 'https://api.openai.com/v1';
  return `model: GPTAPI ${modelName()} at ${where}`;
}

/** A sync model: `GPTAPI` against the configured endpoint, else a `MockLLM` playing `script`. */
export function pickLLM(script: MockResponses): BaseLLM {
  if (usesRealModel()) return new GPTAPI({ model: modelName() });
  return new MockLLM({ responses: script });
}

/** An async model: `AsyncGPTAPI` against the configured endpoint, else an `AsyncMockLLM` playing `script`. */
export function pickAsyncLLM(script: MockResponses): AsyncBaseLLM {
  if (usesRealModel()) return new AsyncGPTAPI({ model: modelName() });
  return new AsyncMockLLM({ responses: script });
}
