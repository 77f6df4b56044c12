/**
 * Context windows over a long history: `TokenWindowAggregator` over a session of about 1,000,000 tokens
 * (gpt-4o's o200k_base encoding, through `gpt-tokenizer`) made of user turns, tool calls with their results
 * and replies, windowed to 128,000 tokens (4,000 reserved). Each timed aggregation follows a new turn (a
 * user message and a reply, counted on arrival), as in a live session; the first, cold aggregation counts
 * the whole window.
 */

import { PerformanceObserver } from 'node:perf_hooks';
import { z } from 'zod';
import { ActionExecutor } from '../src/actions/action-executor';
import { tool } from '../src/actions/tool';
import { DefaultAggregator } from '../src/agents/aggregator/default-aggregator';
import { TokenWindowAggregator } from '../src/agents/aggregator/token-window-aggregator';
import { Memory } from '../src/memory/memory';
import { AgentMessage } from '../src/schema/agent-message';
import { MockLLM } from '../src/testing/mock-llm';
import type { Suite } from './report';

const SYSTEM = 'You are a research assistant. Use the tools when they help, and cite what they return.';
const WORDS = [
  'alpha',
  'context',
  'window',
  'token',
  'session',
  'result',
  'search',
  'latency',
  'agent',
  'memory',
];

function sentence(seed: number, words: number): string {
  let text = '';
  for (let i = 0; i < words; i++) text += `${WORDS[(seed * 7 + i * 3) % WORDS.length]} `;
  return text;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

export const run: Suite = async (report) => {
  const llm = new MockLLM({ responses: [], model: 'gpt-4o', record: false });
  const search = tool({
    name: 'search',
    description: 'Searches the web',
    parameters: z.object({ query: z.string() }),
    run: ({ query }) => `Results for ${query}: ${sentence(query.length, 60)}`,
  });
  const executor = new ActionExecutor({ actions: [search] });
  const memory = new Memory();
  // One round: a question, a tool call, its result, a reply (about 300 tokens).
  const round = (i: number) => {
    memory.add(new AgentMessage({ sender: 'user', content: `Question ${i}: ${sentence(i, 40)}` }));
    const calls = [{ id: `call_${i}`, name: 'search', arguments: { query: `query ${i} ${sentence(i, 6)}` } }];
    const callMessage = new AgentMessage({ sender: 'Agent', content: '', formatted: { toolCalls: calls } });
    memory.add(callMessage);
    memory.add(executor.call(callMessage));
    memory.add(new AgentMessage({ sender: 'Agent', content: `Answer ${i}: ${sentence(i + 1, 80)}` }));
  };
  let rounds = 0;
  let total = 0;
  // Grow to about 1,000,000 tokens, measuring as it goes (count a 100-round sample, extrapolate, then check).
  while (total < 1_000_000) {
    const before = memory.length;
    for (let i = 0; i < 100; i++) round(rounds++);
    const added = new Memory();
    added.add(memory.getMemory().slice(before));
    total += llm.countTokens(new DefaultAggregator().aggregate(added, 'Agent'));
  }
  const aggregator = new TokenWindowAggregator({ maxTokens: 128_000, reserve: 4_000, llm });
  let started = performance.now();
  let prompt = aggregator.aggregate(memory, 'Agent', undefined, SYSTEM);
  const coldMs = performance.now() - started;
  const times: number[] = [];
  // Garbage collections during the timed aggregations, to tell their pauses from the aggregator's own time.
  const pauses: { start: number; end: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      pauses.push({ start: entry.startTime, end: entry.startTime + entry.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const spans: { start: number; end: number }[] = [];
  for (let i = 0; i < 300; i++) {
    memory.add(new AgentMessage({ sender: 'user', content: `Follow-up ${i}: ${sentence(i, 30)}` }));
    memory.add(new AgentMessage({ sender: 'Agent', content: `Reply ${i}: ${sentence(i, 50)}` }));
    started = performance.now();
    prompt = aggregator.aggregate(memory, 'Agent', undefined, SYSTEM);
    const ended = performance.now();
    times.push(ended - started);
    spans.push({ start: started, end: ended });
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
  observer.disconnect();
  // Each aggregation's time less the collector's pauses inside it.
  const ownTimes = spans.map(({ start, end }) => {
    let paused = 0;
    for (const pause of pauses)
      paused += Math.max(0, Math.min(end, pause.end) - Math.max(start, pause.start));
    return end - start - paused;
  });
  const windowTokens = llm.countTokens(prompt);
  started = performance.now();
  new DefaultAggregator().aggregate(memory, 'Agent', undefined, SYSTEM);
  const fullMs = performance.now() - started;
  const note = `${memory.length.toLocaleString('en')} messages, ~${Math.round(total / 1000).toLocaleString('en')}k tokens; window ${windowTokens.toLocaleString('en')} tokens, ${prompt.length} messages`;
  report({
    name: 'TokenWindowAggregator, 1M-token history, per aggregation after a new turn (median)',
    value: percentile(times, 0.5),
    unit: 'ms',
    target: 1,
    note,
  });
  report({
    name: 'TokenWindowAggregator, same, p99',
    value: percentile(times, 0.99),
    unit: 'ms',
    note: `without garbage-collection pauses ${percentile(ownTimes, 0.99).toFixed(3)} ms; on a busy machine the rest is mostly the scheduler`,
  });
  report({ name: 'TokenWindowAggregator, first aggregation (counts the window)', value: coldMs, unit: 'ms' });
  report({ name: 'DefaultAggregator over the whole history, for comparison', value: fullMs, unit: 'ms' });
};
