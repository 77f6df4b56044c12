import { type CallFrame, currentFrame, journal } from '../../core/call-context';
import { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { Memory } from '../../memory/memory';
import { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { Agent } from '../agent';
import { AsyncAgent } from '../async-agent';
import { appendHistory } from './default-aggregator';

/** Options of `TokenWindowAggregator`'s `summarize`. */
export interface SummarizeOptions {
  /** The model that writes the summaries (sync for sync agents; an async one is awaited by `compact`). */
  llm: BaseLLM | AsyncBaseLLM;
  /** Summarise once the history (without the system prompt) is over this many tokens. */
  triggerTokens: number;
  /**
   * The newest history kept as it is, in tokens; everything older goes into the summary (whole turns: a
   * tool-call message and its results stay together). @default half of `triggerTokens`
   */
  keepTokens?: number | undefined;
  /** The summariser's system prompt. @default {@link SUMMARY_INSTRUCTION} */
  instruction?: string | undefined;
  /** The summariser agent's name, also the sender of summary messages. @default 'Summarizer' */
  name?: string | undefined;
}

/** The summariser's default system prompt. */
export const SUMMARY_INSTRUCTION =
  'Summarise the conversation below for the assistant who will continue it. Keep every fact, decision, ' +
  'open question, tool result and user preference it may need; leave out pleasantries. Write plain text.';

/** The `formatted` of a summary message: what it stands for. */
export interface SummaryFormatted {
  summary: true;
  /** How many messages it replaced (a previous summary counts as one). */
  folded: number;
}

/** Whether a memory message is a summary written by `summarize`. */
export function isSummary(message: AgentMessage): boolean {
  const formatted = message.formatted as Partial<SummaryFormatted> | null | undefined;
  return formatted !== null && typeof formatted === 'object' && formatted.summary === true;
}

/** A validated `summarize` option, with its summariser agent. */
export class Summarizer {
  readonly triggerTokens: number;
  readonly keepTokens: number;
  readonly agent: Agent | AsyncAgent;
  /** A session per memory, so that summaries of different sessions never wait for each other. */
  readonly #sessions = new WeakMap<Memory, number>();
  #nextSession = 0;

  constructor(options: SummarizeOptions, maxTokens: number) {
    const { llm, triggerTokens } = options;
    if (!(llm instanceof BaseLLM) && !(llm instanceof AsyncBaseLLM)) {
      throw new ConfigurationError({ message: 'summarize.llm must be a model (BaseLLM or AsyncBaseLLM)' });
    }
    if (!Number.isInteger(triggerTokens) || triggerTokens <= 0) {
      throw new ConfigurationError({
        message: `summarize.triggerTokens must be a positive integer, got ${String(triggerTokens)}`,
      });
    }
    const keepTokens = options.keepTokens ?? Math.floor(triggerTokens / 2);
    if (!Number.isInteger(keepTokens) || keepTokens < 0 || keepTokens >= triggerTokens) {
      throw new ConfigurationError({
        message: `summarize.keepTokens must be an integer from 0 to triggerTokens - 1, got ${String(keepTokens)}`,
      });
    }
    if (keepTokens > maxTokens) {
      throw new ConfigurationError({
        message: `summarize.keepTokens (${keepTokens}) is more than maxTokens (${maxTokens})`,
      });
    }
    this.triggerTokens = triggerTokens;
    this.keepTokens = keepTokens;
    const agentOptions = {
      llm,
      template: options.instruction ?? SUMMARY_INSTRUCTION,
      memory: null,
      name: options.name ?? 'Summarizer',
    };
    this.agent =
      llm instanceof BaseLLM
        ? new Agent(agentOptions as ConstructorParameters<typeof Agent>[0])
        : new AsyncAgent(agentOptions as ConstructorParameters<typeof AsyncAgent>[0]);
  }

  /** Whether the summariser answers synchronously. */
  get isSync(): boolean {
    return this.agent instanceof Agent;
  }

  /**
   * Replaces `history[0..end)` of `memory` with one summary message, written by the summariser agent called
   * here (inside the current call, so it is traced and journaled like any sub-call); the undo is journaled
   * in `frame`, so a failure of that call puts the folded messages back. Returns a promise for an async
   * summariser.
   */
  fold(
    memory: Memory,
    history: readonly AgentMessage[],
    end: number,
    name: string,
    frame: CallFrame | undefined,
  ): void | Promise<void> {
    const folded = history.slice(0, end);
    const transcript = transcriptOf(folded, name);
    const sessionId = this.#sessionOf(memory);
    const apply = (reply: AgentMessage) => replace(memory, folded, this.#summaryOf(reply, folded), frame);
    if (this.agent instanceof Agent) {
      apply(this.agent.call(transcript, { sessionId }));
      return;
    }
    return this.agent.call(transcript, { sessionId }).then(apply);
  }

  #summaryOf(reply: AgentMessage, folded: readonly AgentMessage[]): AgentMessage {
    const text = typeof reply.content === 'string' ? reply.content : String(reply.content);
    const formatted: SummaryFormatted = { summary: true, folded: folded.length };
    return new AgentMessage({
      sender: this.agent.name,
      content: `Summary of the earlier conversation:\n${text}`,
      formatted,
    });
  }

  #sessionOf(memory: Memory): string {
    let session = this.#sessions.get(memory);
    if (session === undefined) {
      session = this.#nextSession++;
      this.#sessions.set(memory, session);
    }
    return `summary-${session}`;
  }
}

/** The folded messages as text for the summariser: one `role: text` paragraph per chat message. */
function transcriptOf(messages: readonly AgentMessage[], name: string): string {
  const chat: ChatMessage[] = [];
  appendHistory(chat, messages, name, 0);
  const parts: string[] = [];
  for (const message of chat) {
    let text = message.content ?? '';
    if (message.toolCalls !== undefined) {
      for (const call of message.toolCalls) {
        const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
        text += `${text ? '\n' : ''}[calls ${call.name}(${args})]`;
      }
    }
    const who = message.role === 'tool' ? `tool ${message.name ?? ''}`.trim() : message.role;
    parts.push(`${who}: ${text}`);
  }
  return parts.join('\n\n');
}

/**
 * Puts `summary` where `folded` were (they are the oldest messages), keeping every other message object as
 * it is, and journals the undo in `frame`.
 */
function replace(
  memory: Memory,
  folded: readonly AgentMessage[],
  summary: AgentMessage,
  frame: CallFrame | undefined,
): void {
  const all = memory.getMemory({ recentN: memory.length });
  const at = all.indexOf(folded[0]!);
  if (at === -1) return; // the history changed meanwhile: nothing to replace
  const next = [...all.slice(0, at), summary, ...all.slice(at + folded.length)];
  memory.clear();
  memory.add(next);
  const undo = {
    remove(): void {
      const now = memory.getMemory({ recentN: memory.length });
      const where = now.indexOf(summary);
      if (where === -1) return;
      memory.clear();
      memory.add([...now.slice(0, where), ...folded, ...now.slice(where + 1)]);
    },
  };
  if (frame === undefined) return;
  if (frame.failed) undo.remove();
  else journal(frame, { memory: undo, messages: [] });
}

/** The innermost call's frame, where a fold's undo is journaled. */
export function foldFrame(): CallFrame | undefined {
  return currentFrame();
}
