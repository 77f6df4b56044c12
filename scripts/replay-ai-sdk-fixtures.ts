/**
 * Replays providers' recorded answers through lagent-ts's model clients: the fixtures the AI SDK repository
 * (vercel/ai) keeps under `packages/<provider>/src/**\/__fixtures__/` — real responses and streams of OpenAI chat
 * completions and the Responses API, Anthropic's Messages API, DeepSeek, Groq and xAI. Each fixture is served
 * as recorded by the fake servers (`body` / raw `events`), read by the client that speaks its API
 * (`AsyncGPTAPI`, `AsyncOpenAIResponsesAPI`, `AsyncClaudeAPI`), and what the client returns is compared with what
 * the fixture says: the text, the reasoning (and, streamed, the reasoning deltas one for one), the provider's
 * opaque reasoning parts, the tool calls, the token usage, or the error.
 *
 * Nothing of the repository is copied: the fixtures are read from a local clone or bare snapshot when the
 * script runs.
 *
 *   npx tsx scripts/replay-ai-sdk-fixtures.ts [path to vercel/ai (a git directory)] [--verbose]
 *
 * The default path is /work/.mirror/vercel+ai/repo. Exits 1 when a fixture did not replay as recorded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { AsyncClaudeAPI } from '../src/llms/async-claude-api';
import { AsyncGPTAPI } from '../src/llms/async-gpt-api';
import { AsyncOpenAIResponsesAPI } from '../src/llms/async-openai-responses-api';
import type { MeteredLLM } from '../src/llms/metered-llm';
import type { ModelReply, StreamChunk } from '../src/llms/types';
import { startFakeAnthropic } from '../src/testing/fake-anthropic';
import { startFakeOpenAI } from '../src/testing/fake-openai';

const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const repo = args.find((arg) => !arg.startsWith('--')) ?? '/work/.mirror/vercel+ai/repo';
if (!existsSync(repo)) {
  console.log(`no vercel/ai repository at ${repo}: nothing to replay`);
  process.exit(0);
}

const git = (...command: string[]) =>
  execFileSync('git', ['-C', repo, ...command], { maxBuffer: 256 << 20 }).toString('utf8');
const read = (path: string) => git('show', `HEAD:${path}`);

const FOLDERS =
  /^packages\/(openai\/src\/(chat|responses)|anthropic\/src|deepseek\/src\/chat|groq\/src|xai\/src(\/responses)?|openai-compatible\/src\/chat)\/__fixtures__\/[^/]+\.(json|chunks\.txt)$/;
const files = git('ls-tree', '-r', '--name-only', 'HEAD')
  .split('\n')
  .filter((path) => FOLDERS.test(path));

type Kind = 'chat' | 'responses' | 'anthropic';

/** What a fixture says the client must return. */
interface Expected {
  text: string;
  reasoning: string | undefined;
  /** Streams: the reasoning each event adds, in order (the client's `reasoningDelta`s). */
  reasoningDeltas?: string[];
  /** Opaque parts: their types, in order. */
  parts: string[];
  toolCalls: { id: string; name: string; arguments: unknown }[];
  usage: { promptTokens: number; completionTokens: number } | undefined;
  /** The error's message, when the fixture is a failure. */
  error?: string | undefined;
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function kindOf(json: any): Kind | undefined {
  if (json?.object === 'chat.completion' || json?.object === 'chat.completion.chunk') return 'chat';
  if (json?.object === 'response' || (typeof json?.type === 'string' && json.type.startsWith('response.')))
    return 'responses';
  if (json?.type === 'message' || json?.type === 'message_start') return 'anthropic';
  if (Array.isArray(json?.choices)) return 'chat';
  return undefined;
}

// ---- what each fixture says -------------------------------------------------------------------------------------

function expectChat(json: any): Expected {
  const message = json.choices?.[0]?.message ?? {};
  const reasoning = message.reasoning_content ?? message.reasoning;
  return {
    text: typeof message.content === 'string' ? message.content : '',
    reasoning: typeof reasoning === 'string' && reasoning !== '' ? reasoning : undefined,
    parts: [],
    toolCalls: (message.tool_calls ?? [])
      .filter((call: any) => call.type === undefined || call.type === 'function')
      .map((call: any) => ({
        id: call.id,
        name: call.function.name,
        arguments: parseArguments(call.function.arguments),
      })),
    usage: json.usage
      ? { promptTokens: json.usage.prompt_tokens ?? 0, completionTokens: json.usage.completion_tokens ?? 0 }
      : undefined,
  };
}

function expectChatStream(events: any[]): Expected {
  let text = '';
  const deltas: string[] = [];
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let usage: Expected['usage'];
  for (const event of events) {
    if (event.usage)
      usage = {
        promptTokens: event.usage.prompt_tokens ?? 0,
        completionTokens: event.usage.completion_tokens ?? 0,
      };
    const delta = event.choices?.[0]?.delta;
    if (!delta) continue;
    const thought = delta.reasoning_content ?? delta.reasoning;
    if (typeof thought === 'string' && thought !== '') deltas.push(thought);
    if (typeof delta.content === 'string') text += delta.content;
    for (const [position, call] of (delta.tool_calls ?? []).entries()) {
      const index = call.index ?? position;
      const entry = calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (call.id) entry.id = call.id;
      if (call.function?.name && call.function.name !== entry.name) entry.name += call.function.name;
      if (call.function?.arguments) entry.arguments += call.function.arguments;
      calls.set(index, entry);
    }
  }
  return {
    text,
    reasoning: deltas.length > 0 ? deltas.join('') : undefined,
    reasoningDeltas: deltas,
    parts: [],
    toolCalls: [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ id: call.id, name: call.name, arguments: parseArguments(call.arguments) })),
    usage,
  };
}

function anthropicUsage(usage: any): Expected['usage'] {
  if (!usage) return undefined;
  const input =
    (usage.input_tokens ?? 0) +
    (usage.cache_creation_input_tokens ?? 0) +
    (usage.cache_read_input_tokens ?? 0);
  return { promptTokens: input, completionTokens: usage.output_tokens ?? 0 };
}

function expectAnthropic(json: any): Expected {
  const blocks: any[] = json.content ?? [];
  const thoughts = blocks
    .filter((block) => block.type === 'thinking' && block.thinking)
    .map((block) => block.thinking);
  return {
    text: blocks
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join(''),
    reasoning: thoughts.length > 0 ? thoughts.join('\n\n') : undefined,
    parts: blocks
      .filter((block) => block.type === 'thinking' || block.type === 'redacted_thinking')
      .map((block) => `anthropic.${block.type}`),
    toolCalls: blocks
      .filter((block) => block.type === 'tool_use')
      .map((block) => ({ id: block.id, name: block.name, arguments: block.input ?? {} })),
    usage: anthropicUsage(json.usage),
  };
}

function expectAnthropicStream(events: any[]): Expected {
  let text = '';
  let reasoning = '';
  const deltas: string[] = [];
  const parts: string[] = [];
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let usage: Record<string, unknown> = {};
  const thinking = new Set<number>();
  for (const event of events) {
    let added = '';
    if (event.type === 'message_start') usage = { ...usage, ...defined(event.message?.usage) };
    if (event.type === 'message_delta') usage = { ...usage, ...defined(event.usage) };
    if (event.type === 'content_block_start') {
      const block = event.content_block;
      if (block.type === 'thinking') {
        if (reasoning !== '') added += '\n\n';
        added += block.thinking ?? '';
        thinking.add(event.index);
      } else if (block.type === 'redacted_thinking') parts.push('anthropic.redacted_thinking');
      else if (block.type === 'text') text += block.text ?? '';
      else if (block.type === 'tool_use') {
        const input = block.input && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
        calls.set(event.index, { id: block.id, name: block.name, arguments: input });
      }
    }
    if (event.type === 'content_block_delta') {
      const delta = event.delta;
      if (delta.type === 'text_delta') text += delta.text;
      if (delta.type === 'thinking_delta') added += delta.thinking;
      if (delta.type === 'input_json_delta') {
        const call = calls.get(event.index);
        if (call) call.arguments += delta.partial_json;
      }
    }
    if (event.type === 'content_block_stop' && thinking.delete(event.index)) parts.push('anthropic.thinking');
    reasoning += added;
    if (added !== '') deltas.push(added);
  }
  return {
    text,
    reasoning: reasoning === '' ? undefined : reasoning,
    reasoningDeltas: deltas,
    parts,
    toolCalls: [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ id: call.id, name: call.name, arguments: parseArguments(call.arguments) })),
    usage: anthropicUsage(usage),
  };
}

function defined(value: any): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value ?? {}))
    if (item !== null && item !== undefined) result[key] = item;
  return result;
}

function expectResponse(json: any): Expected {
  if (json.error && !json.output) return { ...empty(), error: json.error.message };
  const output: any[] = json.output ?? [];
  const summaries = output
    .filter((item) => item.type === 'reasoning')
    .flatMap((item) => (item.summary ?? []).map((part: any) => part.text));
  return {
    text: output
      .filter((item) => item.type === 'message')
      .flatMap((item) => item.content ?? [])
      .filter((part: any) => part.type === 'output_text')
      .map((part: any) => part.text)
      .join(''),
    reasoning: summaries.length > 0 ? summaries.join('\n\n') : undefined,
    parts: output.filter((item) => item.type === 'reasoning').map(() => 'openai.reasoning'),
    toolCalls: output
      .filter((item) => item.type === 'function_call')
      .map((item) => ({ id: item.call_id, name: item.name, arguments: parseArguments(item.arguments) })),
    usage: json.usage
      ? { promptTokens: json.usage.input_tokens ?? 0, completionTokens: json.usage.output_tokens ?? 0 }
      : undefined,
    error: json.status === 'failed' ? (json.error?.message ?? 'failed') : undefined,
  };
}

function expectResponseStream(events: any[]): Expected {
  let text = '';
  const deltas: string[] = [];
  let summaries = 0;
  const parts: string[] = [];
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let usage: Expected['usage'];
  let error: string | undefined;
  for (const event of events) {
    switch (event.type) {
      case 'response.output_text.delta':
        text += event.delta;
        break;
      case 'response.reasoning_summary_part.added':
        if (summaries++ > 0) deltas.push('\n\n');
        break;
      case 'response.reasoning_summary_text.delta':
        if (event.delta !== '') deltas.push(event.delta);
        break;
      case 'response.output_item.added':
        if (event.item?.type === 'function_call') {
          calls.set(event.output_index, {
            id: event.item.call_id,
            name: event.item.name,
            arguments: event.item.arguments ?? '',
          });
        }
        break;
      case 'response.function_call_arguments.delta': {
        const call = calls.get(event.output_index);
        if (call) call.arguments += event.delta;
        break;
      }
      case 'response.output_item.done':
        if (event.item?.type === 'reasoning') parts.push('openai.reasoning');
        break;
      case 'response.completed':
      case 'response.incomplete':
        if (event.response?.usage) {
          usage = {
            promptTokens: event.response.usage.input_tokens ?? 0,
            completionTokens: event.response.usage.output_tokens ?? 0,
          };
        }
        break;
      case 'response.failed':
        error ??= event.response?.error?.message ?? 'failed';
        break;
      case 'error':
        error ??= event.message ?? event.error?.message ?? 'error';
        break;
    }
  }
  return {
    text,
    reasoning: deltas.length > 0 ? deltas.join('') : undefined,
    reasoningDeltas: deltas,
    parts,
    toolCalls: [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ id: call.id, name: call.name, arguments: parseArguments(call.arguments) })),
    usage,
    error,
  };
}

function empty(): Expected {
  return { text: '', reasoning: undefined, parts: [], toolCalls: [], usage: undefined };
}

// ---- what the client returns ------------------------------------------------------------------------------------

interface Got {
  text: string;
  reasoning: string | undefined;
  reasoningDeltas?: string[];
  parts: string[];
  toolCalls: { id: string; name: string; arguments: unknown }[];
  usage: { promptTokens: number; completionTokens: number } | undefined;
  error?: string | undefined;
}

function fromReply(reply: ModelReply, usage: Got['usage']): Got {
  return {
    text: reply.content,
    reasoning: reply.reasoning,
    parts: (reply.reasoningParts ?? []).map((part) => part.type),
    toolCalls: reply.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })),
    usage,
  };
}

function fromChunks(chunks: StreamChunk[], usage: Got['usage']): Got {
  const end = chunks.at(-1);
  return {
    text: end?.content ?? '',
    reasoning: end?.reasoning,
    reasoningDeltas: chunks.flatMap((chunk) => (chunk.reasoningDelta ? [chunk.reasoningDelta] : [])),
    parts: (end?.reasoningParts ?? []).map((part) => part.type),
    toolCalls: (end?.toolCalls ?? []).map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.arguments,
    })),
    usage,
  };
}

function usageOf(llm: MeteredLLM): Got['usage'] {
  const usage = llm.getLastUsage();
  return usage ? { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens } : undefined;
}

function differences(expected: Expected, got: Got): string[] {
  const problems: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if (expected.error !== undefined || got.error !== undefined) {
    if (expected.error === undefined) problems.push(`unexpected error: ${got.error}`);
    else if (got.error === undefined) problems.push(`expected an error (${expected.error})`);
    else if (!got.error.includes(expected.error.slice(0, 40)))
      problems.push(`error ${got.error} is not ${expected.error}`);
    return problems;
  }
  if (got.text !== expected.text)
    problems.push(
      `text ${JSON.stringify(got.text.slice(0, 60))} is not ${JSON.stringify(expected.text.slice(0, 60))}`,
    );
  if (got.reasoning !== expected.reasoning) problems.push('reasoning differs');
  if (expected.reasoningDeltas !== undefined && !same(got.reasoningDeltas, expected.reasoningDeltas)) {
    problems.push(
      `reasoning deltas differ (${got.reasoningDeltas?.length} vs ${expected.reasoningDeltas.length})`,
    );
  }
  if (!same(got.parts, expected.parts))
    problems.push(
      `reasoning parts ${same(got.parts, [])} ${JSON.stringify(got.parts)} vs ${JSON.stringify(expected.parts)}`,
    );
  if (!same(got.toolCalls, expected.toolCalls))
    problems.push(`tool calls ${JSON.stringify(got.toolCalls)} vs ${JSON.stringify(expected.toolCalls)}`);
  if (expected.usage !== undefined && !same(got.usage, expected.usage)) {
    problems.push(`usage ${JSON.stringify(got.usage)} vs ${JSON.stringify(expected.usage)}`);
  }
  return problems;
}

// ---- replay -----------------------------------------------------------------------------------------------------

const openai = await startFakeOpenAI();
const anthropic = await startFakeAnthropic();
const options = { apiKey: 'recorded', retry: 0, timeout: 10_000 };
/** A fresh client per fixture (a recorded quota error retires its key for good). */
const clients: Record<Kind, () => MeteredLLM> = {
  chat: () => new AsyncGPTAPI({ model: 'recorded', baseURL: openai.baseURL, ...options }),
  responses: () => new AsyncOpenAIResponsesAPI({ model: 'recorded', baseURL: openai.baseURL, ...options }),
  anthropic: () =>
    new AsyncClaudeAPI({ model: 'recorded', baseURL: anthropic.url, cache: false, ...options }),
};
const messages = [{ role: 'user', content: 'replay' }];

/**
 * A `.chunks.txt` file's events: one JSON value a line (`data: ` lines too), or a value over several lines; a
 * Responses file may hold several responses.
 */
function eventsOf(text: string): any[] {
  const events: any[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.startsWith('data:') ? raw.slice(5) : raw;
    if (line.trim() === '' && pending === '') continue;
    pending += pending === '' ? line : `\n${line}`;
    try {
      events.push(JSON.parse(pending));
      pending = '';
    } catch {
      // the value goes on on the next line
    }
  }
  return events;
}

/** A Responses stream file split into its responses (each starts with `response.created`). */
function splitResponses(events: any[]): any[][] {
  const streams: any[][] = [];
  for (const event of events) {
    if (event.type === 'response.created' || streams.length === 0) streams.push([]);
    streams.at(-1)!.push(event);
  }
  return streams;
}

const results: { file: string; ok: boolean; problems: string[] }[] = [];

async function replayOne(
  file: string,
  kind: Kind,
  label: string,
  run: () => Promise<Got>,
  expected: Expected,
) {
  let got: Got;
  try {
    got = await run();
  } catch (error) {
    got = { ...empty(), error: (error as Error).message };
  }
  const problems = differences(expected, got);
  results.push({ file: `${file}${label}`, ok: problems.length === 0, problems });
  if (verbose || problems.length > 0)
    console.log(
      `${problems.length === 0 ? 'ok  ' : 'FAIL'} ${kind} ${file}${label}${problems.length ? `: ${problems.join('; ')}` : ''}`,
    );
}

for (const file of files) {
  const text = read(file);
  if (file.endsWith('.json')) {
    const json = JSON.parse(text);
    const isError = json.error !== undefined && json.output === undefined && json.choices === undefined;
    const kind: Kind | undefined = isError
      ? file.includes('/responses/')
        ? 'responses'
        : 'chat'
      : kindOf(json);
    if (kind === undefined) {
      results.push({ file, ok: true, problems: ['skipped: not a chat, Responses or Messages reply'] });
      if (verbose) console.log(`skip ${file}`);
      continue;
    }
    const status = isError ? (/quota/i.test(JSON.stringify(json.error)) ? 429 : 400) : 200;
    const expected = isError
      ? { ...empty(), error: json.error.message }
      : kind === 'chat'
        ? expectChat(json)
        : kind === 'responses'
          ? expectResponse(json)
          : expectAnthropic(json);
    const server = kind === 'anthropic' ? anthropic : openai;
    server.setScript({ status, body: text });
    await replayOne(
      file,
      kind,
      '',
      async () => {
        const llm = clients[kind]();
        const reply = await llm.generate(messages);
        return fromReply(reply, usageOf(llm));
      },
      expected,
    );
    continue;
  }
  const events = eventsOf(text);
  const kind = kindOf(events.find((event) => kindOf(event) !== undefined));
  if (kind === undefined) {
    results.push({ file, ok: true, problems: ['skipped: not a chat, Responses or Messages stream'] });
    continue;
  }
  const streams = kind === 'responses' ? splitResponses(events) : [events];
  for (const [index, stream] of streams.entries()) {
    const label = streams.length > 1 ? ` (response ${index + 1} of ${streams.length})` : '';
    const expected =
      kind === 'chat'
        ? expectChatStream(stream)
        : kind === 'responses'
          ? expectResponseStream(stream)
          : expectAnthropicStream(stream);
    if (kind === 'anthropic')
      anthropic.setScript({ events: stream.map((event) => ({ event: event.type, data: event })) });
    else
      openai.setScript({
        events: [...stream.map((event) => JSON.stringify(event)), ...(kind === 'chat' ? ['[DONE]'] : [])],
      });
    await replayOne(
      file,
      kind,
      label,
      async () => {
        const llm = clients[kind]();
        const chunks: StreamChunk[] = [];
        for await (const chunk of llm.streamChat(messages)) chunks.push(chunk);
        return fromChunks(chunks, usageOf(llm));
      },
      expected,
    );
  }
}

await openai.close();
await anthropic.close();
const replayed = results.filter((result) => !result.problems[0]?.startsWith('skipped'));
const passed = replayed.filter((result) => result.ok);
console.log(
  `\n${passed.length} of ${replayed.length} recorded answers replayed as recorded (${files.length} fixture files, ${results.length - replayed.length} skipped)`,
);
process.exit(passed.length === replayed.length ? 0 : 1);
